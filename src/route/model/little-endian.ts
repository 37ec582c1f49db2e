/**
 * Typed arrays to and from little-endian bytes, the byte order of every serialized model, so a cache
 * written on one machine reads on another. On a little-endian host (x86, ARM as Node runs it) that is
 * one copy of the bytes; element by element through a DataView, as elsewhere, it was the larger part
 * of loading a cached model in a CLI process, whose code runs before the JIT has compiled it.
 */

/** Arrays of 4- or 8-byte elements that a model stores. */
export type NumberArray = Uint32Array | Int32Array | Float32Array | Float64Array;

const HOST_IS_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * Writes `array` into `bytes` at `offset`, little-endian; returns the offset after it. `littleEndianHost`
 * is a test seam: false takes the element-by-element path a big-endian host takes.
 */
export function writeLittleEndian(
  bytes: Uint8Array,
  offset: number,
  array: NumberArray,
  littleEndianHost = HOST_IS_LITTLE_ENDIAN,
): number {
  if (littleEndianHost) {
    bytes.set(new Uint8Array(array.buffer, array.byteOffset, array.byteLength), offset);
    return offset + array.byteLength;
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const size = array.BYTES_PER_ELEMENT;
  for (let index = 0; index < array.length; index++) {
    const value = array[index] as number;
    const at = offset + index * size;
    if (array instanceof Float64Array) view.setFloat64(at, value, true);
    else if (array instanceof Float32Array) view.setFloat32(at, value, true);
    else if (array instanceof Int32Array) view.setInt32(at, value, true);
    else view.setUint32(at, value, true);
  }
  return offset + array.byteLength;
}

/** Fills `into` from the little-endian bytes at `offset` (any alignment); returns the offset after them. */
export function readLittleEndian(
  bytes: Uint8Array,
  offset: number,
  into: NumberArray,
  littleEndianHost = HOST_IS_LITTLE_ENDIAN,
): number {
  if (littleEndianHost) {
    new Uint8Array(into.buffer, into.byteOffset, into.byteLength).set(
      bytes.subarray(offset, offset + into.byteLength),
    );
    return offset + into.byteLength;
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const size = into.BYTES_PER_ELEMENT;
  for (let index = 0; index < into.length; index++) {
    const at = offset + index * size;
    if (into instanceof Float64Array) into[index] = view.getFloat64(at, true);
    else if (into instanceof Float32Array) into[index] = view.getFloat32(at, true);
    else if (into instanceof Int32Array) into[index] = view.getInt32(at, true);
    else into[index] = view.getUint32(at, true);
  }
  return offset + into.byteLength;
}
