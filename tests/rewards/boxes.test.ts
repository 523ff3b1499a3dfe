import { describe, expect, it } from 'vitest';
import { boxesEnv } from '../../envs/boxes/index.ts';
import { SPLIT_KINDS } from '../../envs/boxes/episodes.ts';
import { generateEpisodes } from '../../envs/generate.ts';
import { parseBoxContents, scoreBoxes } from '../../rewards/boxes.ts';
import { shortAnswerLine as boxesAnswerText } from '../../rewards/final-answer.ts';

const score = (target: string, response: string, meta?: Record<string, unknown>) =>
  scoreBoxes({ target, response, meta });

describe('boxes reward', () => {
  it('gives reward 1 to "FINAL ANSWER: <target>" for generated episodes of every split kind', () => {
    for (const kind of SPLIT_KINDS) {
      for (const split of ['train', 'test'] as const) {
        const actions = split === 'train' && kind.includes('numops') ? 2 : 9;
        for (const e of generateEpisodes(boxesEnv, {
          n: 60,
          actions,
          split,
          seed: 4,
          modality: 'text',
          extra: { splitKind: kind },
        })) {
          const s = boxesEnv.score({ target: e.target, response: `FINAL ANSWER: ${e.target}`, meta: e.meta });
          expect(s.reward, `${kind} ${e.target}`).toBe(1);
          expect(s.prediction).toBe(e.target);
        }
      }
    }
  });

  it('is lenient about order, articles, separators, echoes and the empty box', () => {
    const target = 'the bell and the car and the egg';
    for (const response of [
      'FINAL ANSWER: the egg and the car and the bell',
      'FINAL ANSWER: egg, car, bell',
      'FINAL ANSWER: the car, the bell, and the egg.',
      'Let me think.\nBox 3 contains the car.\nFINAL ANSWER:\n**Box 3 contains the bell, the egg and the car**',
      'contains the bell and the car and the egg.',
      'Final Answer: `bell & car & egg`',
    ]) {
      expect(score(target, response).reward, response).toBe(1);
    }
    for (const response of [
      'FINAL ANSWER: nothing',
      'FINAL ANSWER: empty',
      'FINAL ANSWER: Box 6 is empty.',
      'FINAL ANSWER: None',
    ]) {
      expect(score('nothing', response).reward, response).toBe(1);
    }
    expect(score('the big bell', 'FINAL ANSWER: the big bell').reward).toBe(1);
  });

  it('requires exactly the right set', () => {
    const target = 'the bell and the car';
    expect(score(target, 'FINAL ANSWER: the bell').reward).toBe(0);
    expect(score(target, 'FINAL ANSWER: the bell and the car and the egg').reward).toBe(0);
    expect(score(target, 'FINAL ANSWER: the bell and the bell').reward).toBe(0);
    expect(score(target, 'FINAL ANSWER: nothing').reward).toBe(0);
    expect(score('nothing', 'FINAL ANSWER: the bell').reward).toBe(0);
    expect(score('the big bell', 'FINAL ANSWER: the bell').reward).toBe(0);
    // The last marker counts.
    expect(score(target, 'FINAL ANSWER: the bell and the car\nWait.\nFINAL ANSWER: the car').reward).toBe(0);
  });

  it('marks unparseable answers invalid', () => {
    for (const response of ['', 'FINAL ANSWER:', 'I think\nit has\nseveral things', 'FINAL ANSWER: the']) {
      const s = score('the bell', response);
      expect(s.valid, JSON.stringify(response)).toBe(false);
      expect(s.reward).toBe(0);
      expect(s.prediction).toBeNull();
    }
    expect(boxesAnswerText('one line answer')).toBe('one line answer');
    expect(parseBoxContents('the yo-yo and the big bell')).toEqual(['yo-yo', 'big bell']);
  });

  it('reports when a prediction repeats the initial contents', () => {
    const meta = { initialContents: 'the bell' };
    expect(score('the car', 'FINAL ANSWER: the bell', meta).metrics.repeatsInitial).toBe(true);
    expect(score('the car', 'FINAL ANSWER: the egg', meta).metrics.repeatsInitial).toBe(false);
  });
});
