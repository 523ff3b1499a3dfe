import { describe, expect, it } from 'vitest';
import { UserError } from '../../core/errors.ts';
import { Rng } from '../../core/rng.ts';
import { randomBaselineAccuracy, sampleRandomBaseline } from '../../envs/boxes/baseline.ts';
import { boxesEnv } from '../../envs/boxes/index.ts';
import { SPLIT_KINDS, type SplitKind } from '../../envs/boxes/episodes.ts';
import { generateEpisodes } from '../../envs/generate.ts';
import type { Episode } from '../../core/episode.ts';
import type { ScoredRow } from '../../core/score.ts';
import { resimulate, targetObjects } from './boxes-resimulate.ts';

const make = (
  kind: SplitKind,
  split: 'train' | 'test',
  actions: number,
  n = 140,
  seed: number | string = 5,
): Episode[] => generateEpisodes(boxesEnv, { n, actions, split, seed, modality: 'text', extra: { splitKind: kind } });

describe('boxes generator', () => {
  it('answers agree with an independent re-simulation of the episode text, in every split kind', () => {
    let checked = 0;
    let changed = 0;
    for (const kind of SPLIT_KINDS) {
      for (const split of ['train', 'test'] as const) {
        const actions = split === 'train' && kind.includes('numops') ? 2 : 12;
        for (const episode of make(kind, split, actions)) {
          const sim = resimulate(episode);
          expect(targetObjects(episode.target), episode.id).toEqual(sim.answer);
          expect(episode.actions.length).toBe(actions);
          expect(episode.meta.opsAffectingBox).toBe(sim.opsAffectingBox);
          const isChanged = sim.answer.join('|') !== sim.initial[sim.box].slice().sort().join('|');
          expect(episode.meta.changed).toBe(isChanged);
          expect(episode.meta.signature).toBe(sim.initial.map((b) => b.length).join(''));
          checked++;
          if (isChanged) changed++;
        }
      }
    }
    expect(checked).toBe(SPLIT_KINDS.length * 2 * 140);
    // Questions about changed boxes must be common enough to measure tracking (not just copying the initial state).
    expect(changed / checked).toBeGreaterThan(0.3);
  });

  it('uses every operation kind, several objects per Put/Remove, and Move-contents only in its split kind', () => {
    const texts = (kind: SplitKind) => make(kind, 'test', 12, 70).flatMap((e) => e.actions.map((a) => a.text));
    const base = texts('base');
    for (const re of [/^Move the \w/, /^Remove /, /^Put /, / and the .* into Box/, /^Remove the .* and the /])
      expect(base.some((t) => re.test(t))).toBe(true);
    expect(base.some((t) => t.includes('contents'))).toBe(false);
    expect(texts('movecontents').some((t) => /^Move the contents of Box \d to Box \d\.$/.test(t))).toBe(true);
  });

  it('AmbiRef drops the adjective only where the noun is unique in the source box, and answers carry adjectives', () => {
    const episodes = make('ambiref', 'test', 12, 140);
    const sentences = episodes.flatMap((e) => e.actions.map((a) => a.text));
    // Both bare and adjective-qualified references occur (resimulate() already checked each resolves uniquely).
    expect(sentences.some((t) => /^Move the [a-z-]+ from/.test(t))).toBe(true);
    expect(
      sentences.some((t) => /^(?:Move|Remove) the (?:red|blue|green|yellow|black|white|big|small) [a-z-]+ /.test(t)),
    ).toBe(true);
    for (const e of episodes) for (const o of targetObjects(e.target)) expect(o.split(' ')).toHaveLength(2);
  });

  it('is deterministic from the seed and varies with it', () => {
    const a = make('base', 'train', 6, 20, 'x');
    const b = make('base', 'train', 6, 20, 'x');
    const c = make('base', 'train', 6, 20, 'y');
    expect(a).toEqual(b);
    expect(a.map((e) => e.id)).not.toEqual(c.map((e) => e.id));
  });

  it('long sequences (length sweeps up to 100 operations) stay valid in every split kind', () => {
    for (const kind of ['base', 'ambiref', 'movecontents', 'altforms'] as const) {
      for (const e of make(kind, 'test', 100, 14)) expect(targetObjects(e.target)).toEqual(resimulate(e).answer);
    }
  });

  it('--prefixes upto mixes prefix lengths 0..T', () => {
    const episodes = generateEpisodes(boxesEnv, {
      n: 200,
      actions: 4,
      split: 'test',
      seed: 2,
      modality: 'text',
      extra: { splitKind: 'base', prefixes: 'upto' },
    });
    expect(new Set(episodes.map((e) => e.actions.length))).toEqual(new Set([0, 1, 2, 3, 4]));
    for (const e of episodes) expect(targetObjects(e.target)).toEqual(resimulate(e).answer);
  });

  it('rejects bad options and image modalities with a UserError', () => {
    expect(() => make('base', 'train', 101, 1)).toThrow(UserError);
    expect(() =>
      generateEpisodes(boxesEnv, {
        n: 1,
        actions: 3,
        split: 'train',
        seed: 1,
        modality: 'text',
        extra: { splitKind: 'nope' },
      }),
    ).toThrow(/split-kind/);
    expect(() => generateEpisodes(boxesEnv, { n: 1, actions: 3, split: 'train', seed: 1, modality: 'image' })).toThrow(
      /text actions only/,
    );
    expect(() => generateEpisodes(boxesEnv, { n: 1, actions: 3, split: 'train', seed: 1, modality: 'mixed' })).toThrow(
      UserError,
    );
    const [episode] = make('base', 'test', 2, 1);
    expect(() => boxesEnv.renderAction(episode, 0, 64)).toThrow(UserError);
    expect(boxesEnv.modalities).toEqual(['text']);
  });
});

describe('boxes prompts', () => {
  const [episode, shot] = make('base', 'test', 3, 2);
  it('shows the description, the cloze question and the answer format', () => {
    const [message] = boxesEnv.prompt(episode, { style: 'zero-shot', shots: [] });
    const text = message.parts.map((p) => (p.type === 'text' ? p.text : '')).join('');
    expect(text).toContain(`Description: ${episode.initialState} ${episode.actions.map((a) => a.text).join(' ')}`);
    expect(text).toContain(`Statement: ${episode.question}`);
    expect(text).toContain('FINAL ANSWER:');
  });
  it('few-shot puts solved episodes first; cot asks for reasoning; unknown styles are rejected', () => {
    const messages = boxesEnv.prompt(episode, { style: 'few-shot', shots: [shot] });
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(messages[1].parts[0]).toEqual({ type: 'text', text: `FINAL ANSWER: ${shot.target}` });
    const cot = boxesEnv.prompt(episode, { style: 'cot', shots: [] })[0].parts[0];
    expect(cot.type === 'text' && cot.text.includes('step by step')).toBe(true);
    expect(() => boxesEnv.prompt(episode, { style: 'fen-trace', shots: [] })).toThrow(UserError);
  });
});

describe('boxes random baseline and summary', () => {
  it('the expected baseline accuracy matches sampling the baseline', () => {
    const rng = new Rng(3);
    const cases: Array<[string[], string[]]> = [
      [
        ['a', 'b'],
        ['a', 'b', 'c', 'd'],
      ],
      [[], ['a', 'b']],
      [['a'], ['a']],
      [
        ['a', 'b', 'c'],
        ['a', 'b', 'c', 'd', 'e'],
      ],
    ];
    for (const [answer, clause] of cases) {
      const expected = randomBaselineAccuracy(answer, clause);
      const target = answer.length === 0 ? 'nothing' : answer.map((x) => `the ${x}`).join(' and ');
      let hits = 0;
      const draws = 20000;
      for (let i = 0; i < draws; i++) if (sampleRandomBaseline(rng, clause) === target) hits++;
      expect(Math.abs(hits / draws - expected)).toBeLessThan(0.015);
    }
    expect(randomBaselineAccuracy(['z'], ['a', 'b'])).toBe(0);
  });

  it('summarize splits accuracy by operations affecting the box, for changed and unchanged boxes', () => {
    const episodes = make('base', 'test', 12, 140);
    // A model that always repeats the initial contents: right on unchanged boxes, wrong on changed ones.
    const rows: ScoredRow[] = episodes.map((e) => {
      const input = { target: e.target, response: `FINAL ANSWER: ${e.meta.initialContents}`, meta: e.meta };
      return { input, score: boxesEnv.score(input) };
    });
    const summary = boxesEnv.summarize!(rows) as Record<
      string,
      Record<string, { n: number; accuracy: number; baseline: number }>
    >;
    for (const cell of Object.values(summary.changedByOpsAffectingBox)) expect(cell.accuracy).toBe(0);
    for (const cell of Object.values(summary.unchangedByOpsAffectingBox)) expect(cell.accuracy).toBe(1);
    expect(Object.keys(summary.changedByOpsAffectingBox).length).toBeGreaterThan(2);
    const total =
      Object.values(summary.changedByOpsAffectingBox).reduce((s, c) => s + c.n, 0) +
      Object.values(summary.unchangedByOpsAffectingBox).reduce((s, c) => s + c.n, 0);
    expect(total).toBe(rows.length);
    expect(summary.changedByOpsAffectingBox['1'].baseline).toBeGreaterThan(0);
    expect((summary as unknown as { wrongChangedRepeatingInitial: number }).wrongChangedRepeatingInitial).toBe(1);
  });
});
