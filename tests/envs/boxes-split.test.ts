import { describe, expect, it } from 'vitest';
import type { Rng } from '../../core/rng.ts';
import { boxesEnv } from '../../envs/boxes/index.ts';
import { COMMON_NOUNS, RARE_NOUNS } from '../../envs/boxes/nouns.ts';
import { SPLIT_KINDS, type SplitKind } from '../../envs/boxes/episodes.ts';
import { generateEpisodes } from '../../envs/generate.ts';
import type { Candidate, Env } from '../../envs/env.ts';
import type { Episode } from '../../core/episode.ts';
import { parseInitial } from './boxes-resimulate.ts';

const make = (kind: SplitKind, split: 'train' | 'test', actions: number, n = 210): Episode[] =>
  generateEpisodes(boxesEnv, { n, actions, split, seed: 11, modality: 'text', extra: { splitKind: kind } });

// The signature is recomputed from the text, not taken from meta.
const signatureOf = (e: Episode) =>
  parseInitial(e.initialState)
    .map((b) => b.length)
    .join('');
const nounsOf = (e: Episode) =>
  parseInitial(e.initialState)
    .flat()
    .map((o) => o.split(' ').pop()!);

describe('boxes train/test splits', () => {
  it('no initial-state signature occurs in both train and test, in any split kind', () => {
    const train = new Set<string>();
    const test = new Set<string>();
    for (const kind of SPLIT_KINDS) {
      const trainActions = kind.includes('numops') ? 2 : 6;
      make(kind, 'train', trainActions).forEach((e) => train.add(signatureOf(e)));
      make(kind, 'test', 6).forEach((e) => test.add(signatureOf(e)));
    }
    expect(train.size).toBeGreaterThan(100);
    expect(test.size).toBeGreaterThan(50);
    for (const s of test) expect(train.has(s)).toBe(false);
  });

  it('Vocab and AltForms train on rare nouns and test on common ones; AltForms also changes the phrasing', () => {
    for (const kind of ['vocab', 'altforms', 'altforms-numops'] as const) {
      const train = make(kind, 'train', 2, 70);
      const test = make(kind, 'test', 8, 70);
      for (const e of train) for (const n of nounsOf(e)) expect(RARE_NOUNS).toContain(n);
      for (const e of test) for (const n of nounsOf(e)) expect(COMMON_NOUNS).toContain(n);
      const altTrain = kind !== 'vocab';
      for (const e of train) expect(e.initialState.startsWith('Box 0')).toBe(!altTrain);
      for (const e of test) expect(e.initialState.startsWith('Box 0')).toBe(true);
      if (altTrain) {
        const words = (es: Episode[]) =>
          new Set(
            es.flatMap(
              (e) =>
                [e.initialState, e.question!, ...e.actions.map((a) => a.text)]
                  .join(' ')
                  .toLowerCase()
                  .match(/[a-z-]+/g)!,
            ),
          );
        const shared = [...words(train)].filter((w) => words(test).has(w));
        // As in the paper, the two phrasings share only function words: "the", "into", "and" (which joins objects in
        // both, as in the paper's prompts), "is" ("Box 6 is empty" / "is in Container A"), "contains" (the cloze) and "nothing".
        expect(shared).toContain('the');
        for (const w of shared) expect(['the', 'into', 'and', 'is', 'nothing', 'contains']).toContain(w);
      }
    }
  });

  it('NumOps trains on at most 2 operations and tests on up to 12', () => {
    // Asked for longer train episodes (e.g. few-shot examples for a T = 12 test), the train split draws 0-2.
    for (const kind of ['numops', 'altforms-numops'] as const) {
      expect(new Set(make(kind, 'train', 12, 140).map((e) => e.actions.length))).toEqual(new Set([0, 1, 2]));
    }
    expect(make('numops', 'train', 2, 7).every((e) => e.actions.length === 2)).toBe(true);
    expect(make('numops', 'test', 12, 7).every((e) => e.actions.length === 12)).toBe(true);
  });
});

describe('shared generator: splitKey', () => {
  // A fake environment whose candidates differ in content but share one of two split keys.
  const fake = (key: (i: number) => string): Env => ({
    ...boxesEnv,
    *candidates(rng: Rng): Iterable<Candidate> {
      for (let i = 0; ; i++)
        yield {
          initialState: `s${i}-${rng.int(1000)}`,
          actionTexts: [],
          target: 'x',
          splitKey: key(i),
          meta: { key: key(i) },
        };
    },
  });

  it('decides the split by the key when present, so a key never crosses train and test', () => {
    const env = fake((i) => `k${i % 50}`);
    const train = generateEpisodes(env, { n: 200, actions: 0, split: 'train', seed: 1, modality: 'text' });
    const test = generateEpisodes(env, { n: 40, actions: 0, split: 'test', seed: 1, modality: 'text' });
    const trainKeys = new Set(train.map((e) => e.meta.key));
    expect(test.every((e) => !trainKeys.has(e.meta.key))).toBe(true);
    expect(trainKeys.size + new Set(test.map((e) => e.meta.key)).size).toBe(50);
  });
});
