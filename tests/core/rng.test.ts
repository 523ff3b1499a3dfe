import { describe, expect, it } from 'vitest';
import { Rng } from '../../core/rng.ts';

describe('Rng', () => {
  it('is deterministic per seed and label, and differs across them', () => {
    const a = Array.from(
      { length: 5 },
      (
        (r) => () =>
          r.nextUint32()
      )(new Rng(7, 'x')),
    );
    const b = Array.from(
      { length: 5 },
      (
        (r) => () =>
          r.nextUint32()
      )(new Rng(7, 'x')),
    );
    const c = Array.from(
      { length: 5 },
      (
        (r) => () =>
          r.nextUint32()
      )(new Rng(7, 'y')),
    );
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
  });

  it('resumes exactly from a saved state', () => {
    const r = new Rng('seed');
    for (let i = 0; i < 10; i++) r.next();
    const copy = Rng.fromState(r.state());
    expect(Array.from({ length: 20 }, () => copy.next())).toEqual(Array.from({ length: 20 }, () => r.next()));
  });

  it('draws uniform integers in range with roughly equal frequency', () => {
    const r = new Rng(1);
    const counts = [0, 0, 0];
    for (let i = 0; i < 30000; i++) counts[r.int(3)]++;
    for (const c of counts) expect(Math.abs(c - 10000)).toBeLessThan(400);
    expect(() => r.int(0)).toThrow();
  });

  it('shuffles into a permutation', () => {
    const out = new Rng(3).shuffle([1, 2, 3, 4, 5, 6]);
    expect(out.slice().sort()).toEqual([1, 2, 3, 4, 5, 6]);
  });
});
