// The shell game environment: episodes (targets follow the swaps, determinism, disjoint splits, modalities), the
// reference prompt wording for each style, few-shot turns, the perception probe and the registry entry.
import { describe, expect, it } from 'vitest';
import { shellEnv } from '../../envs/shell/index.ts';
import { applySwap, SWAP_PAIRS } from '../../envs/shell/episodes.ts';
import { SHELL_IMAGE_CAPTION, SHELL_INSTRUCTIONS } from '../../envs/shell/prompt.ts';
import { parseSwap } from '../../envs/shell/render.ts';
import { generateEpisodes } from '../../envs/generate.ts';
import { getEnv } from '../../envs/registry.ts';
import { fingerprint } from '../../core/fingerprint.ts';
import { UserError } from '../../core/errors.ts';
import { toChatMessages } from '../../core/chat.ts';
import type { Episode, PromptMessage } from '../../core/episode.ts';

const gen = (over: Partial<Parameters<typeof generateEpisodes>[1]> = {}) =>
  generateEpisodes(shellEnv, { n: 200, actions: 10, split: 'test', seed: 1, modality: 'text', ...over });

function textOf(messages: PromptMessage[]): string {
  return messages.map((m) => m.parts.map((p) => (p.type === 'text' ? p.text : '<image>')).join('')).join('\n---\n');
}

describe('shell episodes', () => {
  it('targets follow the swaps from the start; swaps are written "x swap y" with x < y', () => {
    for (const episode of gen()) {
      expect(['1', '2', '3']).toContain(episode.initialState);
      let ball = Number(episode.initialState);
      let moves = 0;
      for (const action of episode.actions) {
        expect(action.text).toMatch(/^([1-3]) swap ([1-3])$/);
        const swap = parseSwap(action.text)!;
        expect(swap[0]).toBeLessThan(swap[1]);
        const next = applySwap(ball, swap);
        if (next !== ball) moves++;
        ball = next;
      }
      expect(episode.target).toBe(String(ball));
      expect(episode.meta.ballMoves).toBe(moves);
    }
  });

  it('uses all starts and all three pairs', () => {
    const episodes = gen();
    expect(new Set(episodes.map((e) => e.initialState)).size).toBe(3);
    expect(new Set(episodes.flatMap((e) => e.actions.map((a) => a.text)))).toEqual(
      new Set(SWAP_PAIRS.map(([a, b]) => `${a} swap ${b}`)),
    );
  });

  it('is deterministic from the seed and changes with it', () => {
    expect(gen()).toEqual(gen());
    expect(gen({ seed: 2 })).not.toEqual(gen());
  });

  it('train and test never share an episode', () => {
    const key = (e: Episode) => fingerprint(e.initialState, e.actions.map((a) => a.text).join(' '));
    const train = new Set(gen({ split: 'train', n: 500, actions: 4 }).map(key));
    const test = gen({ split: 'test', n: 200, actions: 4 }).map(key);
    expect(test.filter((k) => train.has(k))).toEqual([]);
  });

  it('mixed modality draws images with the requested ratio', () => {
    const actions = gen({ modality: 'mixed', imageRatio: 0.3, n: 300 }).flatMap((e) => e.actions);
    const share = actions.filter((a) => a.modality === 'image').length / actions.length;
    expect(share).toBeGreaterThan(0.25);
    expect(share).toBeLessThan(0.35);
  });

  it('rejects chess-only options', () => {
    expect(() => gen({ extra: { games: 'x.pgn' } })).toThrow(UserError);
  });

  it('is registered under its domain name', async () => {
    expect(await getEnv('shell')).toBe(shellEnv);
  });
});

describe('shell prompts', () => {
  const episode: Episode = {
    id: 'shell-test-0',
    domain: 'shell',
    split: 'test',
    initialState: '2',
    target: '1',
    meta: {},
    actions: [
      { text: '1 swap 2', modality: 'text' },
      { text: '2 swap 3', modality: 'image' },
    ],
  };

  it('zero-shot: instructions, question, initial state, moves, question again', () => {
    const messages = shellEnv.prompt(episode, { style: 'zero-shot', shots: [] });
    expect(messages).toHaveLength(1);
    // The harness's zero-shot question and layout (metbench/prompts.py, ICML 2026 version).
    const question =
      'Now what is the final position of the ball? Only output the final ball location as a single number 1, 2, or 3. If there are no moves you must still just predict the location. Start the next message with FINAL ANSWER:';
    expect(textOf(messages)).toBe(
      `${SHELL_INSTRUCTIONS}\n\n${question}\nThe initial state is: 2\nHere are the moves played:\n1 swap 2\n<image>The shells with the numbers highlighted green are being swapped.\n\n${question}`,
    );
  });

  it('an image action becomes an image_url part followed by its caption', () => {
    const chat = toChatMessages(
      shellEnv.prompt(episode, { style: 'zero-shot', shots: [] }),
      (ref) => `images/${ref.episode.id}-${ref.index}.png`,
    );
    const parts = chat[0].content as Array<{ type: string; text?: string; image_url?: { url: string } }>;
    expect(parts.map((p) => p.type)).toEqual(['text', 'image_url', 'text']);
    expect(parts[1].image_url!.url).toBe('images/shell-test-0-1.png');
    expect(parts[2].text!.startsWith(`${SHELL_IMAGE_CAPTION}\n`)).toBe(true);
  });

  it('cot asks to think step by step and answer in the marker format', () => {
    expect(textOf(shellEnv.prompt(episode, { style: 'cot', shots: [] }))).toContain(
      'What is the final position of the ball? Think step by step then output the final ball location as FINAL ANSWER: [1, 2, or 3].',
    );
  });

  it('few-shot puts solved examples first as user/assistant turns', () => {
    const shots = gen({ split: 'train', n: 3, actions: 3 });
    const messages = shellEnv.prompt(episode, { style: 'few-shot', shots });
    expect(messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
      'user',
      'assistant',
      'user',
    ]);
    shots.forEach((shot, i) => {
      expect(textOf([messages[2 * i]])).toContain(`The initial state is: ${shot.initialState}\n`);
      expect(textOf([messages[2 * i + 1]])).toBe(`FINAL ANSWER: ${shot.target}`);
      expect(shellEnv.score({ target: shot.target, response: textOf([messages[2 * i + 1]]) }).reward).toBe(1);
    });
  });

  it('rejects a style it does not know (fen-trace is chess only)', () => {
    expect(() => shellEnv.prompt(episode, { style: 'fen-trace', shots: [] })).toThrow(UserError);
  });

  it('perception probe: one image, answer in "x swap y" form', () => {
    const probe = shellEnv.perceptionProbe!(episode, 1);
    expect(probe.target).toBe('2 swap 3');
    const parts = probe.messages[0].parts;
    expect(parts.filter((p) => p.type === 'image')).toEqual([{ type: 'image', ref: { episode, index: 1 } }]);
    expect(textOf(probe.messages)).toContain('which shells are being swapped in the image?');
    expect(textOf(probe.messages)).toContain("Only output a dash-separated pair like '1 swap 3' and nothing else.");
  });
});
