import { describe, expect, it } from 'vitest';
import { generateEpisodes } from '../../envs/generate.ts';
import { mcstEnv } from '../../envs/mcst/index.ts';
import type { ScoredRow } from '../../core/score.ts';
import { normaliseMcstAnswer, scoreMcst } from '../../rewards/mcst.ts';

const episodes = [1, 2, 3, 4, 5].flatMap((level) =>
  generateEpisodes(mcstEnv, { n: 120, actions: 0, split: 'test', seed: 21, modality: 'text', extra: { level } }),
);

describe('mcst reward', () => {
  it('gives reward 1 to "FINAL ANSWER: <target>" for generated episodes of every level and question type', () => {
    const types = new Set<string>();
    for (const e of episodes) {
      const s = mcstEnv.score({ target: e.target, response: `Reasoning…\nFINAL ANSWER: ${e.target}`, meta: e.meta });
      expect(s.reward, `${e.meta.questionType}: ${e.target}`).toBe(1);
      // Also without meta: the target's shape is enough.
      expect(scoreMcst({ target: e.target, response: `FINAL ANSWER: ${e.target}` }).reward).toBe(1);
      types.add(e.meta.questionType as string);
    }
    expect(types.size).toBe(9);
  });

  it('normalises surface forms of each answer kind', () => {
    const v = { entities: ['Emma', 'Noah'], places: ['desk', 'filing cabinet', 'shelf'] };
    expect(normaliseMcstAnswer('Emma has it.', 'name', v)).toBe('emma');
    expect(normaliseMcstAnswer('Nobody', 'name', v)).toBe('no one');
    expect(normaliseMcstAnswer('Emma or Noah', 'name', v)).toBeNull();
    expect(normaliseMcstAnswer('**True**', 'boolean')).toBe('true');
    expect(normaliseMcstAnswer('Yes', 'boolean')).toBeNull();
    expect(normaliseMcstAnswer('It is in the filing cabinet.', 'place', v)).toBe('filing cabinet');
    expect(normaliseMcstAnswer('on the shelf', 'place')).toBe('shelf');
    expect(normaliseMcstAnswer('two', 'number')).toBe('2');
    expect(normaliseMcstAnswer('Emma has 3 objects', 'number')).toBe('3');
    expect(normaliseMcstAnswer('2 or 3', 'number')).toBeNull();
    expect(normaliseMcstAnswer('(5,7)', 'coordinates')).toBe('(5, 7)');
    expect(normaliseMcstAnswer('x = 5, y = 7', 'coordinates')).toBe('(5, 7)');
    expect(normaliseMcstAnswer('She is facing West.', 'direction')).toBe('west');
    expect(normaliseMcstAnswer('north or east', 'direction')).toBeNull();
  });

  it('scores wrong and unparseable answers 0 and reports negation blindness', () => {
    const meta = {
      answerKind: 'place',
      places: ['desk', 'shelf', 'drawer'],
      entities: ['Emma'],
      negationBlindAnswer: 'shelf',
      initialAnswer: 'drawer',
    };
    const right = scoreMcst({ target: 'desk', response: 'FINAL ANSWER: the desk', meta });
    expect(right.reward).toBe(1);
    const blind = scoreMcst({ target: 'desk', response: 'FINAL ANSWER: on the shelf', meta });
    expect(blind).toMatchObject({
      reward: 0,
      valid: true,
      prediction: 'shelf',
      metrics: { negationBlind: true, initialCopy: false },
    });
    const copy = scoreMcst({ target: 'desk', response: 'FINAL ANSWER: drawer', meta });
    expect(copy.metrics).toMatchObject({ negationBlind: false, initialCopy: true });
    expect(scoreMcst({ target: 'desk', response: 'FINAL ANSWER: desk or shelf', meta }).valid).toBe(false);
    expect(scoreMcst({ target: '2', response: 'I am not sure\nmaybe', meta: { answerKind: 'number' } }).valid).toBe(
      false,
    );
    expect(scoreMcst({ target: 'True', response: 'FINAL ANSWER: False' }).reward).toBe(0);
    expect(scoreMcst({ target: '(3, 4)', response: 'FINAL ANSWER: (4, 3)' }).reward).toBe(0);
  });
});

describe('mcst summary', () => {
  it('breaks accuracy down by level, type, domain and negation, and over matched pairs', () => {
    const paired = generateEpisodes(mcstEnv, {
      n: 200,
      actions: 0,
      split: 'test',
      seed: 5,
      modality: 'text',
      extra: { level: 4, negation: 'paired' },
    });
    // A negation-blind "model": answers the negation-blind answer when there is one, else the target.
    const rows: ScoredRow[] = paired.map((e) => {
      const blind = e.meta.negationBlindAnswer;
      const input = {
        target: e.target,
        response: `FINAL ANSWER: ${typeof blind === 'string' ? blind : e.target}`,
        meta: e.meta,
      };
      return { input, score: mcstEnv.score(input) };
    });
    const s = mcstEnv.summarize!(rows) as Record<string, any>;
    expect(Object.keys(s.byLevel)).toEqual(['4']);
    expect(s.byNegation['without-negation'].accuracy).toBe(1);
    expect(s.byNegation['with-negation'].accuracy).toBeLessThan(1);
    expect(s.negationBlindness.share).toBe(1);
    expect(s.matchedPairs.pairs).toBeGreaterThan(50);
    expect(s.matchedPairs.withoutNegation.accuracy).toBe(1);
    expect(s.matchedPairs.drop).toBeGreaterThan(0.2);
    expect(s.byQuestionType.possession.ci95).not.toBeNull();
    expect(Object.values(s.byDomain as Record<string, { n: number }>).reduce((t, c) => t + c.n, 0)).toBe(rows.length);
  });
});
