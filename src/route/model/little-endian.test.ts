import { describe, expect, it } from 'vitest';
import { readLittleEndian, writeLittleEndian, type NumberArray } from './little-endian.js';

const ARRAYS: NumberArray[] = [
  Uint32Array.from([0, 1, 0xdeadbeef, 0xffffffff]),
  Int32Array.from([-1, 2, -2147483648, 7]),
  Float32Array.from([0.1, -3.5, Number.POSITIVE_INFINITY, 1e-30]),
  Float64Array.from([Math.PI, -0, 1e300, Number.MIN_VALUE]),
];

describe('little-endian arrays', () => {
  it('writes the same bytes by the bulk copy and by the element-by-element path, little-endian', () => {
    for (const array of ARRAYS) {
      const fast = new Uint8Array(array.byteLength + 3);
      const slow = new Uint8Array(array.byteLength + 3);
      // An odd offset: files are read at whatever alignment their header leaves.
      expect(writeLittleEndian(fast, 3, array, true)).toBe(3 + array.byteLength);
      expect(writeLittleEndian(slow, 3, array, false)).toBe(3 + array.byteLength);
      expect(Buffer.from(slow).equals(Buffer.from(fast))).toBe(true);
    }
    const bytes = new Uint8Array(4);
    writeLittleEndian(bytes, 0, Uint32Array.from([0x04030201]), false);
    expect([...bytes]).toEqual([1, 2, 3, 4]);
  });

  it('reads back what it wrote by either path, at any offset', () => {
    for (const array of ARRAYS) {
      const bytes = new Uint8Array(array.byteLength + 5);
      writeLittleEndian(bytes, 5, array, false);
      for (const littleEndianHost of [true, false]) {
        const into = new (array.constructor as new (length: number) => NumberArray)(array.length);
        expect(readLittleEndian(bytes, 5, into, littleEndianHost)).toBe(5 + array.byteLength);
        expect([...into]).toEqual([...array]);
      }
    }
  });
});
