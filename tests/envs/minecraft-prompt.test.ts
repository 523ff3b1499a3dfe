// The Minecraft image prompt's message structure against the MET-Bench harness's build_minecraft_context
// (metbench/prompts.py, "visual" mode): the same parts in the same order, every text its own part as the harness sends
// it ("Candidate next frames:" and "Choice 1:" are two parts, not one), through the chat conversion every model path
// uses (core/chat.ts). The harness's list for a zero-shot item, written out by hand from that function, is the reference.
import { describe, expect, it } from 'vitest';
import { toChatMessages } from '../../core/chat.ts';
import type { Episode } from '../../core/episode.ts';
import { minecraftEnv } from '../../envs/minecraft/index.ts';
import { chessEnv } from '../../envs/chess/index.ts';

const episode = (modality: 'text' | 'image'): Episode => ({
  id: 'mc',
  domain: 'minecraft',
  split: 'test',
  initialState: '{"z": 0}',
  actions: [{ text: 'Turn left', modality }],
  target: '3',
  meta: { candidate_states: ['{"z": 1}', '{"z": 2}', '{"z": 3}', '{"z": 4}'] },
});
/** An image part's URL names the slot it shows: 0 the input frame, i candidate i. */
const url = (ref: { index: number }) => `frame-${ref.index}`;
const image = (index: number) => ({ type: 'image_url', image_url: { url: `frame-${index}` } });
const text = (t: string) => ({ type: 'text', text: t });

describe('Minecraft prompt as the harness sends it', () => {
  it('image modality: each text its own part, in the harness order', () => {
    const chat = toChatMessages(minecraftEnv.prompt(episode('image'), { style: 'zero-shot', shots: [] }), url);
    expect(chat).toEqual([
      {
        role: 'user',
        content: [
          text(
            'You are evaluating a Minecraft gameplay trajectory. You will see a first-person screenshot from the game and an action that was performed. ' +
              'Your task is to identify which of the candidate images shows the correct next frame after the action was taken.\n\nAction performed: Turn left\n\nInput frame:',
          ),
          image(0),
          text('\nCandidate next frames:'),
          text('\nChoice 1:'),
          image(1),
          text('\nChoice 2:'),
          image(2),
          text('\nChoice 3:'),
          image(3),
          text('\nChoice 4:'),
          image(4),
          text(
            '\nWhich image (1-4) shows the correct next frame after the action "Turn left"? Output only a single number 1-4. Start the next message with FINAL ANSWER:',
          ),
        ],
      },
    ]);
  });

  it('text modality: one string, as the harness sends it', () => {
    const chat = toChatMessages(minecraftEnv.prompt(episode('text'), { style: 'zero-shot', shots: [] }), url);
    expect(chat).toHaveLength(1);
    expect(typeof chat[0].content).toBe('string');
    expect(chat[0].content).toContain(
      'Input state:\n{"z": 0}\n\nCandidate next states:\n\nChoice 1:\n{"z": 1}\n\nChoice 2:',
    );
  });

  it('other domains still merge adjacent text parts into one block (chess moves, as the harness accumulates them)', () => {
    const chess: Episode = {
      id: 'c',
      domain: 'chess',
      split: 'test',
      initialState: 'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1',
      actions: [
        { text: 'e4', modality: 'text' },
        { text: 'e5', modality: 'text' },
      ],
      target: '',
      meta: {},
    };
    const prompt = chessEnv.prompt(chess, { style: 'zero-shot', shots: [] });
    expect(prompt[0].parts.length).toBeGreaterThan(1);
    const chat = toChatMessages(prompt, url);
    expect(typeof chat[0].content).toBe('string');
    expect(chat[0].content).toContain('Here are the moves played:\ne4\ne5\n\n');
  });
});
