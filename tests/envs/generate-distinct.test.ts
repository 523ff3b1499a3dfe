// A dataset (`distinct`, as metrl generate asks) holds distinct episodes whenever the source has enough of them; it
// repeats an episode only when the source has fewer distinct ones than asked (shell with 0 actions has three).
import { describe, expect, it } from 'vitest';
import { generateEpisodes } from '../../envs/generate.ts';
import { shellEnv } from '../../envs/shell/index.ts';

const key = (e: { initialState: string; actions: { text: string }[] }) =>
  `${e.initialState}|${e.actions.map((a) => a.text).join(',')}`;

describe('generateEpisodes: distinct episodes', () => {
  it.each([0, 1, 2, 3])('shell, 3 actions, seed %i: 3 test episodes, all different', (seed) => {
    const episodes = generateEpisodes(shellEnv, {
      n: 3,
      actions: 3,
      split: 'test',
      seed,
      modality: 'text',
      distinct: true,
    });
    expect(new Set(episodes.map(key)).size).toBe(3);
  });

  it('shell, 2 actions, 20 train episodes: all different (the source has 27 in all)', () => {
    const episodes = generateEpisodes(shellEnv, {
      n: 20,
      actions: 2,
      split: 'train',
      seed: 0,
      modality: 'text',
      distinct: true,
    });
    expect(new Set(episodes.map(key)).size).toBe(20);
  });

  it('shell, 0 actions: more episodes than exist are still made, every distinct one among them', () => {
    const episodes = generateEpisodes(shellEnv, {
      n: 10,
      actions: 0,
      split: 'train',
      seed: 0,
      modality: 'text',
      distinct: true,
    });
    expect(episodes).toHaveLength(10);
    const distinct = new Set(episodes.map(key));
    expect(distinct.size).toBeGreaterThan(0);
    // The first episodes are the distinct ones; repeats only come after the source ran out.
    expect(new Set(episodes.slice(0, distinct.size).map(key)).size).toBe(distinct.size);
  });

  it('a split with fewer distinct episodes than asked still fills up (shell, 2 actions, test seed 1234: one distinct)', () => {
    const episodes = generateEpisodes(shellEnv, {
      n: 4,
      actions: 2,
      split: 'test',
      seed: 1234,
      modality: 'text',
      distinct: true,
    });
    expect(episodes).toHaveLength(4);
  });
});
