import { describe, expect, it } from 'vitest';
import sharp from 'sharp';
import {
  ANSWER_CUE,
  TRACE_CUE,
  actionLabel,
  chatToModelInput,
  episodeToModelInput,
  perceptionToModelInput,
  responseForScoring,
  targetText,
  type TemplateEnv,
} from '../../../models/builtin/template.ts';
import { shellEnv } from '../../../envs/shell/index.ts';
import { chessEnv } from '../../../envs/chess/index.ts';
import { generateEpisodes } from '../../../envs/generate.ts';
import type { Episode } from '../../../core/episode.ts';
import type { RawImage } from '../../../core/image.ts';
import { blankImage } from '../../../core/image.ts';
import { UserError } from '../../../core/errors.ts';

const episode: Episode = {
  id: 'shell-train-00000-abcd',
  domain: 'shell',
  split: 'train',
  initialState: '2',
  actions: [
    { text: '1 swap 2', modality: 'text' },
    { text: '2 swap 3', modality: 'image' },
    { text: '1 swap 3', modality: 'text' },
  ],
  target: '1',
  meta: {},
};

const imageOf = (_e: Episode, _i: number) => blankImage(64, 64);
/** An environment without traces (boxes, MCST…), answered in one shot. */
const oneShotEnv: TemplateEnv = { renderAction: (e, i) => imageOf(e, i), imageSizes: { chat: 512, model: 64 } };

describe('prompt template', () => {
  it('one-shot layout: domain, state, one action per line (images in place), answer cue', () => {
    const rendered: number[] = [];
    const input = episodeToModelInput(oneShotEnv, episode, (_e, i) => {
      rendered.push(i);
      return blankImage(64, 64);
    });
    expect(rendered).toEqual([1]);
    expect(input.map((p) => (p.type === 'text' ? p.text : '<img>'))).toEqual([
      'shell\n2\n1 swap 2\n',
      '<img>',
      '\n1 swap 3\nFINAL ANSWER: ',
    ]);
    expect(targetText(oneShotEnv, episode)).toBe('1');
    expect(responseForScoring(oneShotEnv, '1')).toBe('FINAL ANSWER: 1');
  });

  it('puts the question before the answer cue when the episode has one', () => {
    const input = episodeToModelInput(oneShotEnv, { ...episode, actions: [], question: 'Box 0 contains' });
    expect(input).toEqual([{ type: 'text', text: 'shell\n2\nBox 0 contains\nFINAL ANSWER: ' }]);
  });

  it('trace layout (shell): letter-labelled actions, line 0 in the prompt, one line per action with its state, the answer', () => {
    const input = episodeToModelInput(shellEnv, episode, imageOf);
    expect(input.map((p) => (p.type === 'text' ? p.text : '<img>'))).toEqual([
      'shell\n2\nA: 1 swap 2\nC: ',
      '<img>',
      `\nD: 1 swap 3\n${TRACE_CUE}start -> 2\n`,
    ]);
    // 2 → (1 swap 2) 1 → (2 swap 3) 1 → (1 swap 3) 3; the episode's stated target "1" is deliberately not used for states.
    expect(targetText(shellEnv, episode)).toBe('A: 1 swap 2 -> 1\nC: 2 swap 3 -> 1\nD: 1 swap 3 -> 3\nFINAL ANSWER: 1');
  });

  it('labels are capitals that no FEN, UCI move or swap uses, two of them after the twentieth action', () => {
    const labels = Array.from({ length: 45 }, (_, i) => actionLabel(i));
    expect(labels.slice(0, 5)).toEqual(['A', 'C', 'D', 'E', 'F']);
    expect(new Set(labels).size).toBe(45);
    for (const label of labels) expect(label).toMatch(/^[ACDEFGHIJLMOSTUVWXYZ]{1,2}$/);
    expect(labels[20]).toBe('AA');
    expect(() => actionLabel(-1)).toThrow(RangeError);
  });

  it('trace layout (chess): line 0 is the initial placement, states are placements, the answer is the full FEN', () => {
    const [e] = generateEpisodes(chessEnv, {
      n: 1,
      actions: 2,
      split: 'train',
      seed: 3,
      modality: 'text',
      extra: { offset: 'random' },
    });
    const prompt = episodeToModelInput(chessEnv, e)
      .map((p) => (p.type === 'text' ? p.text : '<img>'))
      .join('');
    expect(prompt.endsWith(`${TRACE_CUE}start -> ${e.initialState.split(' ')[0]}\n`)).toBe(true);
    const text = targetText(chessEnv, e);
    const lines = text.split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0].startsWith(`A: ${e.actions[0].text} -> `)).toBe(true);
    expect(lines[1]).toBe(`C: ${e.actions[1].text} -> ${e.target.split(' ')[0]}`);
    expect(lines[2]).toBe(`FINAL ANSWER: ${e.target}`);
    // The trace scores as its final answer: full marks for the reference, nothing for a trace cut before the answer.
    expect(chessEnv.score({ target: e.target, response: responseForScoring(chessEnv, text) }).reward).toBe(1);
    expect(responseForScoring(chessEnv, lines.slice(0, 2).join('\n'))).toBe('');
    expect(
      chessEnv.score({ target: e.target, response: responseForScoring(chessEnv, lines.slice(0, 2).join('\n')) }).reward,
    ).toBe(0);
  });

  it('perception probe: one image answered after the marker; several labelled, the asked label last', () => {
    const one = perceptionToModelInput('chess', [blankImage(64, 64)], 0);
    expect(one.map((p) => (p.type === 'text' ? p.text : '<img>'))).toEqual([
      'chess\nread\n',
      '<img>',
      `\n${ANSWER_CUE}`,
    ]);
    const input = perceptionToModelInput('chess', [blankImage(64, 64), blankImage(64, 64)], 1);
    expect(input.map((p) => (p.type === 'text' ? p.text : '<img>'))).toEqual([
      'chess\nread\nA: ',
      '<img>',
      '\nC: ',
      '<img>',
      '\nC: ',
    ]);
    expect(() => perceptionToModelInput('chess', [blankImage(64, 64)], 1)).toThrow(RangeError);
  });

  it('reduces chat messages with data-URL images to a model input, resizing images', async () => {
    const png = await sharp(Buffer.alloc(32 * 32 * 3, 200), { raw: { width: 32, height: 32, channels: 3 } })
      .png()
      .toBuffer();
    const url = `data:image/png;base64,${png.toString('base64')}`;
    const input = await chatToModelInput(
      [
        { role: 'system', content: 'You track shells.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Start 1.' },
            { type: 'image_url', image_url: { url } },
            { type: 'text', text: 'Where?' },
          ],
        },
      ],
      { imageSize: 64, answerCue: true },
    );
    expect(input.map((p) => (p.type === 'text' ? p.text : 'IMG'))).toEqual([
      'You track shells.\nStart 1.',
      'IMG',
      `Where?${ANSWER_CUE}`,
    ]);
    const image = (input[1] as { image: RawImage }).image;
    expect([image.width, image.height, image.data.length]).toEqual([64, 64, 64 * 64 * 3]);
    expect(image.data[100]).toBe(200);
    await expect(
      chatToModelInput([
        { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/x.png' } }] },
      ]),
    ).rejects.toThrow(UserError);
  });

  it("adds the answer cue to chat input only when it does not already end with one of the template's cues", async () => {
    const ends = async (text: string) => {
      const input = await chatToModelInput([{ role: 'user', content: text }], { answerCue: true });
      return (input[input.length - 1] as { text: string }).text;
    };
    expect(await ends('shell\n2\nA: 1 swap 2\ntrace\nstart -> 2\n')).toBe('shell\n2\nA: 1 swap 2\ntrace\nstart -> 2\n');
    expect(await ends('chess\nread\nA: x\nA: ')).toBe('chess\nread\nA: x\nA: ');
    expect(await ends('Where is the ball?')).toBe(`Where is the ball?${ANSWER_CUE}`);
  });

  it("with exactSize refuses an image that is not the model's size (a resized picture is misread), naming both sizes", async () => {
    const png = await sharp(Buffer.alloc(512 * 512 * 3, 200), { raw: { width: 512, height: 512, channels: 3 } })
      .png()
      .toBuffer();
    const message = [
      {
        role: 'user' as const,
        content: [
          { type: 'image_url' as const, image_url: { url: `data:image/png;base64,${png.toString('base64')}` } },
        ],
      },
    ];
    await expect(chatToModelInput(message, { imageSize: 64, exactSize: true })).rejects.toThrow(
      /image_url is 512×512 pixels; the built-in model reads only metrl's own 64×64 renderings/,
    );
    expect((await chatToModelInput(message, { imageSize: 64 })).length).toBe(1);
  });
});
