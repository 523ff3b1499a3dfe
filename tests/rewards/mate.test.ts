// MATE reward: `{"answer": "<target>"}` scores 1 on every generated item, numbers are compared at the precision the
// prompt shows, wrong answers score 0, and the out-of-scene error separates "another object's value" from values
// that exist nowhere in the scene.
import { describe, expect, it } from 'vitest';
import { canonicalAnswer, extractAnswer, scoreMate } from '../../rewards/mate.ts';
import { summarizeMate } from '../../envs/mate/summary.ts';
import { mateEnv } from '../../envs/mate/index.ts';
import { generateEpisodes } from '../../envs/generate.ts';
import type { ScoredRow } from '../../core/score.ts';
import { Rng } from '../../core/rng.ts';

const episodes = generateEpisodes(mateEnv, {
  n: 400,
  actions: 1,
  split: 'train',
  seed: 21,
  modality: 'image',
  extra: { 'mate-task': 'all' },
});

describe('mate reward', () => {
  it('gives 1 to {"answer": "<target>"} on every generated item, and also without meta', () => {
    for (const e of episodes) {
      const response = `{"answer": "${e.target}"}`;
      expect(scoreMate({ target: e.target, response, meta: e.meta }).reward, e.target).toBe(1);
      expect(scoreMate({ target: e.target, response }).reward, e.target).toBe(1);
      expect(mateEnv.score({ target: e.target, response: `Sure.\n${response}`, meta: e.meta }).reward).toBe(1);
    }
  });

  it('gives 0 to another object of the scene, reported as an in-scene error', () => {
    let checked = 0;
    for (const e of episodes) {
      const attribute = e.meta.targetAttribute as string;
      const scene = e.meta.scene as Record<string, unknown>[];
      const other = scene.find((o) => {
        const v = o[attribute];
        return (Array.isArray(v) ? `[${v.join(', ')}]` : String(v)) !== e.target;
      });
      if (!other) continue;
      const v = other[attribute];
      const wrong = Array.isArray(v) ? `[${v.join(', ')}]` : String(v);
      const s = scoreMate({ target: e.target, response: `{"answer": "${wrong}"}`, meta: e.meta });
      expect(s.reward).toBe(0);
      expect(s.valid).toBe(true);
      expect(s.metrics.outOfScene).toBe(false);
      checked++;
    }
    expect(checked).toBeGreaterThan(300);
  });

  it('compares numbers at the precision shown', () => {
    const meta = (targetAttribute: string) => ({ targetAttribute });
    expect(scoreMate({ target: '274.5', response: '{"answer": "274.50"}', meta: meta('rotation') }).reward).toBe(1);
    expect(scoreMate({ target: '274.5', response: '{"answer": 274.504}', meta: meta('rotation') }).reward).toBe(1);
    expect(scoreMate({ target: '274.5', response: '{"answer": "274.51"}', meta: meta('rotation') }).reward).toBe(0);
    expect(scoreMate({ target: '0.351', response: '{"answer": "0.35"}', meta: meta('size') }).reward).toBe(0);
    expect(scoreMate({ target: '0.7', response: '{"answer": 0.700}', meta: meta('size') }).reward).toBe(1);
    expect(scoreMate({ target: '0.7', response: '{"answer": 0.701}', meta: meta('size') }).reward).toBe(0);
    expect(scoreMate({ target: '[1.2, -0.45, 0.7]', response: '{"answer": [1.20, -0.45, 0.70]}' }).reward).toBe(1);
    expect(scoreMate({ target: '[1.2, -0.45, 0.7]', response: '{"answer": "[1.2, -0.46, 0.7]"}' }).reward).toBe(0);
    expect(scoreMate({ target: 'Object_3', response: '{"answer": "object 3"}' }).reward).toBe(1);
    expect(scoreMate({ target: 'Object_3', response: '{"answer": "Object_13"}' }).reward).toBe(0);
    expect(scoreMate({ target: 'red', response: "{'answer': 'Red'}" }).reward).toBe(1);
  });

  it('reads the last answer and rejects unreadable ones', () => {
    expect(extractAnswer('format {"answer": "COLOR"} ... so {"answer": "blue"}')).toBe('blue');
    expect(extractAnswer('no answer here')).toBeNull();
    expect(scoreMate({ target: '0.35', response: 'It is small.', meta: { targetAttribute: 'size' } }).valid).toBe(
      false,
    );
    expect(canonicalAnswer('big', 'size')).toBeNull();
    expect(canonicalAnswer('[1, 2]', 'coords')).toBeNull();
    // The built-in model answers after the reference marker "FINAL ANSWER: " (models/builtin/template.ts): read that too.
    expect(scoreMate({ target: 'Object_3', response: 'FINAL ANSWER: Object_3' }).reward).toBe(1);
    expect(scoreMate({ target: '[1.2, -0.45, 0.7]', response: 'FINAL ANSWER: [1.2, -0.45, 0.7]' }).reward).toBe(1);
  });

  it('counts values that exist nowhere in the scene as out-of-scene errors, and summarises their rate', () => {
    const e = episodes.find((x) => x.meta.targetAttribute === 'name')!;
    const hallucinated = scoreMate({ target: e.target, response: '{"answer": "Object_42"}', meta: e.meta });
    expect(hallucinated.metrics.outOfScene).toBe(true);
    const rows: ScoredRow[] = [
      { input: { target: e.target, response: '', meta: e.meta }, score: hallucinated },
      {
        input: { target: e.target, response: '', meta: e.meta },
        score: scoreMate({ target: e.target, response: `{"answer": "${e.target}"}`, meta: e.meta }),
      },
      {
        input: { target: e.target, response: '', meta: e.meta },
        score: scoreMate({ target: e.target, response: 'I do not know', meta: e.meta }),
      },
    ];
    const summary = summarizeMate(rows) as Record<string, any>;
    expect(summary.outOfSceneErrorRate).toBe(1);
    expect(summary.byTask[e.meta.task as string]).toMatchObject({ count: 3, accuracy: 1 / 3 });
    expect(summary.byObjectCount[String(e.meta.objectCount)].count).toBe(3);
  });

  it('has a random baseline near the paper chance level (1/8 colours, 1/4 shapes, a random object otherwise)', () => {
    const rng = new Rng(2);
    const cross = episodes.filter((e) => e.meta.task === 'img2txt' || e.meta.task === 'txt2img');
    let right = 0;
    for (const e of cross) {
      const answer = mateEnv.baselineAnswer!(e, 'random', rng);
      const s = scoreMate({ target: e.target, response: `FINAL ANSWER: ${answer}`, meta: e.meta });
      expect(s.valid).toBe(true);
      right += s.reward;
    }
    expect(right / cross.length).toBeGreaterThan(0.12);
    expect(right / cross.length).toBeLessThan(0.35);
  });
});
