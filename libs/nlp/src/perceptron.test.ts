import { describe, expect, it } from 'vitest';
import { Perceptron } from './perceptron.js';

describe('Perceptron.score', () => {
  it('gives bit for bit the sums of adding each run into a Float32Array, for every class count and at the wrap', () => {
    for (const classes of [1, 2, 3, 4, 7, 8, 13, 51]) {
      const perceptron = new Perceptron(classes, 8);
      for (let index = 0; index < perceptron.weights.length; index++) perceptron.weights[index] = Math.sin(index * 7.1) * 1000;
      for (const features of [Int32Array.from([5, 77, 100, 1 << 20, -200]), Int32Array.from([5, 255, 250])]) {
        const expected = new Float32Array(classes);
        for (const feature of features)
          for (let classIndex = 0; classIndex < classes; classIndex++) expected[classIndex]! += perceptron.weights[((feature & 255) + classIndex) & 255]!;
        const out = new Float32Array(classes).fill(Number.NaN);
        perceptron.score(features, features.length, out);
        expect(Array.from(out)).toEqual(Array.from(expected));
      }
    }
  });
});

describe('Perceptron.mean', () => {
  const trained = (seed: number): Perceptron => {
    const perceptron = new Perceptron(3, 8);
    for (let index = 0; index < perceptron.weights.length; index++) perceptron.weights[index] = Math.sin(seed * 1000 + index);
    return perceptron;
  };

  it('scores every feature vector as the mean of the perceptrons it mixes', () => {
    const members = [trained(1), trained(2), trained(3)];
    const mean = Perceptron.mean(members);
    const features = Int32Array.from([5, 77, 254, 1 << 20]);
    const out = new Float32Array(3);
    const expected = [0, 0, 0];
    for (const member of members) {
      member.score(features, features.length, out);
      out.forEach((score, classIndex) => (expected[classIndex]! += score / members.length));
    }
    mean.score(features, features.length, out);
    out.forEach((score, classIndex) => expect(score).toBeCloseTo(expected[classIndex]!, 5));
  });

  it('names the shape it expects when the perceptrons differ', () => {
    expect(() => Perceptron.mean([new Perceptron(3, 8), new Perceptron(4, 8)])).toThrow(/3 classes and 8 bits/);
    expect(() => Perceptron.mean([])).toThrow(/at least one/);
  });
});
