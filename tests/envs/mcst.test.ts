import { describe, expect, it } from 'vitest';
import { UserError } from '../../core/errors.ts';
import { generateEpisodes } from '../../envs/generate.ts';
import { DOMAIN_KEYS } from '../../envs/mcst/domains.ts';
import { mcstEnv, withoutNegations } from '../../envs/mcst/index.ts';
import { LEVELS } from '../../envs/mcst/levels.ts';
import { QUESTION_TYPES } from '../../envs/mcst/questions.ts';
import type { Episode } from '../../core/episode.ts';
import { answer, parseEpisode, simulate } from './mcst-resimulate.ts';

const make = (
  extra: Record<string, unknown>,
  n = 150,
  split: 'train' | 'test' = 'test',
  seed: number | string = 7,
): Episode[] => generateEpisodes(mcstEnv, { n, actions: 10, split, seed, modality: 'text', extra });

const byLevel = new Map(LEVELS.map((l) => [l.level, make({ level: l.level }, 160)]));

describe('mcst generator', () => {
  it('answers agree with an independent re-simulation of the episode text, at every level', () => {
    for (const [level, episodes] of byLevel) {
      for (const e of episodes) {
        const sim = simulate(e); // also checks every action, negated or not, is legal where it occurs
        expect(answer(sim, e.question!), `${e.id}: ${e.question}`).toBe(e.target);
        expect(e.meta.level).toBe(level);
      }
    }
  });

  it('never asks a question answerable from the initial state (verification aside), and has no ties', () => {
    for (const episodes of byLevel.values()) {
      for (const e of episodes) {
        const sim = simulate(e);
        expect(e.target).not.toBe('tie');
        if (e.meta.questionType !== 'verification')
          expect(answer(sim, e.question!, 'initial'), e.question).not.toBe(e.target);
        expect(answer(sim, e.question!, 'initial')).toBe(e.meta.initialAnswer);
      }
    }
  });

  it('follows the level table: entities, objects, actions, negation rate and grid', () => {
    for (const spec of LEVELS) {
      const episodes = byLevel.get(spec.level)!;
      let negated = 0;
      let actions = 0;
      for (const e of episodes) {
        const p = parseEpisode(e);
        expect(p.entities.length).toBeGreaterThanOrEqual(spec.entities[0]);
        expect(p.entities.length).toBeLessThanOrEqual(spec.entities[1]);
        expect(p.objects.length).toBeGreaterThanOrEqual(spec.objects[0]);
        expect(p.objects.length).toBeLessThanOrEqual(spec.objects[1]);
        expect(p.actions.length).toBeGreaterThanOrEqual(spec.actions[0]);
        expect(p.actions.length).toBeLessThanOrEqual(spec.actions[1]);
        expect(p.gridSize).toBe(spec.gridSize);
        expect(p.actions.filter((a) => a.negated).map((_, i) => i).length).toBe(
          (e.meta.negatedIndices as number[]).length,
        );
        negated += p.actions.filter((a) => a.negated).length;
        actions += p.actions.length;
      }
      expect(Math.abs(negated / actions - spec.negationRate)).toBeLessThan(0.05);
    }
  });

  it('keeps the negation-blind answer, and at least 40% of questions with negation are negation-sensitive', () => {
    let withNegation = 0;
    let sensitive = 0;
    for (const level of [2, 3, 4, 5]) {
      for (const e of byLevel.get(level)!) {
        if (!e.meta.negation) continue;
        withNegation++;
        const blind = answer(simulate(e), e.question!, 'blind');
        expect(e.meta.negationBlindAnswer).toBe(blind);
        if (blind !== null && blind !== e.target) sensitive++;
        expect(e.meta.negationSensitive).toBe(blind !== null && blind !== e.target);
      }
    }
    expect(withNegation).toBeGreaterThan(500);
    expect(sensitive / withNegation).toBeGreaterThanOrEqual(0.4);
  });

  it('covers the nine question types (grid ones only on grid levels), the twelve domains and several name regions', () => {
    const all = [...byLevel.values()].flat();
    expect(new Set(all.map((e) => e.meta.questionType))).toEqual(new Set(QUESTION_TYPES));
    expect(new Set(all.map((e) => e.meta.domain))).toEqual(new Set(DOMAIN_KEYS));
    expect(new Set(all.map((e) => e.meta.nameRegion)).size).toBeGreaterThanOrEqual(6);
    for (const e of all)
      if (e.meta.questionType === 'direction' || e.meta.questionType === 'position')
        expect(e.meta.level).toBeGreaterThanOrEqual(3);
    const typed = make({ level: 4, 'question-type': 'backward,comparison' }, 40);
    expect(new Set(typed.map((e) => e.meta.questionType))).toEqual(new Set(['backward', 'comparison']));
    for (const e of typed) expect(answer(simulate(e), e.question!)).toBe(e.target);
    expect(make({ mcstDomain: 'retail' }, 10).every((e) => e.meta.domain === 'retail')).toBe(true);
  });

  it('makes matched pairs: the same scenario and question without the negated sentences, same answer and split', () => {
    const episodes = make({ level: 3, negation: 'paired' }, 120);
    const pairs = new Map<string, Episode[]>();
    for (const e of episodes) pairs.set(e.meta.pairId as string, [...(pairs.get(e.meta.pairId as string) ?? []), e]);
    let complete = 0;
    for (const members of pairs.values()) {
      if (members.length < 2) continue;
      complete++;
      const [withNeg, without] = members;
      expect(withNeg.meta.pairRole).toBe('with-negation');
      expect(without.meta.pairRole).toBe('without-negation');
      expect(without.target).toBe(withNeg.target);
      expect(without.question).toBe(withNeg.question);
      expect(without.actions.map((a) => a.text)).toEqual(withoutNegations(withNeg).actions.map((a) => a.text));
      expect(without.actions.some((a) => /does not|doesn't|does NOT|did not|refuses to/.test(a.text))).toBe(false);
      expect(answer(simulate(without), without.question!)).toBe(without.target);
    }
    expect(complete).toBeGreaterThan(50);
    const off = make({ level: 5, negation: 'off' }, 20);
    expect(off.every((e) => e.meta.negation === false && e.meta.pairRole === 'without-negation')).toBe(true);
  });

  it('keeps scenarios (and so matched pairs) out of the other split, and is deterministic from the seed', () => {
    const train = make({ negation: 'paired' }, 300, 'train', 1);
    const test = make({ negation: 'paired' }, 100, 'test', 1);
    const trainPairs = new Set(train.map((e) => e.meta.pairId));
    expect(test.some((e) => trainPairs.has(e.meta.pairId))).toBe(false);
    const trainScenarios = new Set(train.map((e) => e.initialState));
    expect(test.some((e) => trainScenarios.has(e.initialState))).toBe(false);
    expect(make({}, 20, 'train', 'a')).toEqual(make({}, 20, 'train', 'a'));
    expect(make({}, 20, 'train', 'a').map((e) => e.id)).not.toEqual(make({}, 20, 'train', 'b').map((e) => e.id));
  });

  it('single-factor ablations override one level parameter', () => {
    const episodes = make({ level: 3, 'negation-rate': 0.4, 'mcst-actions': '18', 'mcst-grid': 'none' }, 40);
    let negated = 0;
    for (const e of episodes) {
      const p = parseEpisode(e);
      expect(p.actions).toHaveLength(18);
      expect(p.gridSize).toBe(0);
      expect(p.entities).toHaveLength(4); // the rest of level 3 stays
      negated += p.actions.filter((a) => a.negated).length;
      expect(answer(simulate(e), e.question!)).toBe(e.target);
    }
    expect(negated).toBe(episodes.length * Math.round(0.4 * 18));
    expect(
      make({ level: 1, mcstGrid: 7, questionType: 'position' }, 5).every((e) => parseEpisode(e).gridSize === 7),
    ).toBe(true);
    expect(() => make({ 'negation-rate': 0.9 }, 1)).toThrow(/negation-rate/);
    expect(() => make({ 'mcst-actions': '9-3' }, 1)).toThrow(/mcst-actions/);
    expect(() => make({ 'mcst-grid': 'huge' }, 1)).toThrow(/mcst-grid/);
  });

  it('rejects bad options and image modalities with one clear UserError', () => {
    expect(() => make({ level: 6 }, 1)).toThrow(/mcst: --level/);
    expect(() => make({ level: 'x' }, 1)).toThrow(UserError);
    expect(() => make({ negation: 'maybe' }, 1)).toThrow(/negation/);
    expect(() => make({ mcstDomain: 'space' }, 1)).toThrow(/mcst-domain/);
    expect(() => make({ questionType: 'weather' }, 1)).toThrow(/question-type/);
    expect(() => make({ level: 1, questionType: 'direction' }, 1)).toThrow(/needs a grid/);
    expect(() => make({ level: 4, mcstGrid: 'none', questionType: 'position' }, 1)).toThrow(/needs a grid/);
    expect(() => generateEpisodes(mcstEnv, { n: 1, actions: 1, split: 'test', seed: 1, modality: 'image' })).toThrow(
      /text actions only/,
    );
    expect(() => mcstEnv.renderAction(byLevel.get(1)![0], 0, 64)).toThrow(UserError);
  });
});

describe('mcst prompts', () => {
  const e = byLevel.get(3)!.find((x) => x.meta.negation)!;
  const text = (style: string, shots: Episode[] = []) =>
    mcstEnv
      .prompt(e, { style, shots })
      .map((m) => m.parts.map((p) => (p.type === 'text' ? p.text : '')).join(''))
      .join('\n---\n');
  it('direct, cot and state-tracking share the scenario and question and differ in their instructions', () => {
    for (const style of ['direct', 'cot', 'state-tracking']) {
      const t = text(style);
      expect(t).toContain(`Scenario: ${e.initialState}\n${e.actions.map((a) => a.text).join('\n')}`);
      expect(t).toContain(`Question: ${e.question}`);
      expect(t).toContain('FINAL ANSWER:');
    }
    expect(text('cot')).toContain("Let's think step by step");
    expect(text('state-tracking')).toContain('Update the world state ONLY for executed actions');
    expect(text('direct')).not.toContain('EXECUTED');
    expect(text('zero-shot')).toBe(text('direct'));
    expect(text('stp')).toBe(text('state-tracking'));
    const shot = byLevel.get(1)![0];
    expect(mcstEnv.prompt(e, { style: 'few-shot', shots: [shot] }).map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'user',
    ]);
    expect(() => text('fen-trace')).toThrow(UserError);
  });
});
