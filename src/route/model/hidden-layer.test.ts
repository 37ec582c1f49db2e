import { describe, expect, it } from 'vitest';
import { TextClassifier, type TrainingExample } from './text-classifier.js';

/**
 * A routing task no linear model over n-grams can learn: the route depends on which colour goes
 * with which vehicle, the two words apart with a filler between, in either order. Every single word
 * and every adjacent pair appears equally often under both routes, so only their combination tells.
 */
const COLOURS = ['red', 'blue'];
const VEHICLES = ['car', 'bike'];
const FILLERS = ['old', 'new', 'small', 'fast', 'shiny', 'cheap', 'heavy', 'quiet', 'spare', 'rented'];

function route(colour: string, vehicle: string): string {
  return (colour === 'red') === (vehicle === 'car') ? 'garage' : 'shop';
}

function examples(fillers: readonly string[]): TrainingExample[] {
  const rows: TrainingExample[] = [];
  for (const colour of COLOURS) {
    for (const vehicle of VEHICLES) {
      for (const filler of fillers) {
        const label = route(colour, vehicle);
        rows.push({ text: `${colour} ${filler} ${vehicle}`, label });
        rows.push({ text: `${vehicle} ${filler} ${colour}`, label });
      }
    }
  }
  return rows;
}

const TRAINING = examples(FILLERS.slice(0, 8));
const HELD_OUT = examples(FILLERS.slice(8));

function accuracy(model: TextClassifier, rows: readonly TrainingExample[]): number {
  return rows.filter((row) => model.predict(row.text, 1)[0]?.label === row.label).length / rows.length;
}

describe('the network model', () => {
  // 32 examples per route: enough for the network, which is the default at 20 or more.
  const network = TextClassifier.train(TRAINING);
  const linear = TextClassifier.train(TRAINING, { model: 'linear' });

  it('learns a route set by two words together, which the linear model cannot', () => {
    expect(accuracy(network, HELD_OUT)).toBe(1);
    expect(accuracy(linear, HELD_OUT)).toBeLessThanOrEqual(0.75);
  });

  it('round-trips through serialize/deserialize with identical probabilities', () => {
    const bytes = network.serialize();
    const restored = TextClassifier.deserialize(bytes);
    for (const text of ['red old car', 'bike rented blue', 'nothing like it', '']) {
      expect(restored.probabilities(text)).toEqual(network.probabilities(text));
    }
    expect(() => TextClassifier.deserialize(bytes.subarray(0, bytes.length - 9))).toThrow(/checksum|length/);
  });

  it('stores its weights as int8: the file is about a quarter of float32 weights', () => {
    const bytes = network.serialize();
    const headerLength = new DataView(bytes.buffer, bytes.byteOffset).getUint32(8, true);
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + headerLength))) as {
      featureCount: number;
      hiddenUnits: number;
      networkCount: number;
      model: string;
    };
    expect(header).toMatchObject({ model: 'network', networkCount: 2, hiddenUnits: 128 });
    const float32Bytes = header.networkCount * 4 * header.hiddenUnits * (header.featureCount + 2);
    expect(bytes.length - 12 - headerLength).toBeLessThan(float32Bytes * 0.45);
  });
});
