import { describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { ANSWER_CUE, chatToModelInput, episodeToModelInput, responseForScoring, targetText } from '../../models/template.ts';
import type { Episode, RawImage } from '../../envs/types.ts';
import { blankImage } from '../../core/image.ts';
import { UserError } from '../../core/errors.ts';

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

describe('prompt template', () => {
  it('lays out an episode compactly: domain, state, one action per line (images in place), answer cue', () => {
    const rendered: number[] = [];
    const input = episodeToModelInput(episode, (_e, i) => {
      rendered.push(i);
      return blankImage(64, 64);
    });
    expect(rendered).toEqual([1]);
    expect(input.map((p) => (p.type === 'text' ? p.text : '<img>'))).toEqual(['shell\n2\n1 swap 2\n', '<img>', '\n1 swap 3\nFINAL ANSWER: ']);
    expect(targetText(episode)).toBe('1');
    expect(responseForScoring('1')).toBe('FINAL ANSWER: 1');
  });

  it('puts the question before the answer cue when the episode has one', () => {
    const input = episodeToModelInput({ ...episode, actions: [], question: 'Box 0 contains' }, () => blankImage(64, 64));
    expect(input).toEqual([{ type: 'text', text: 'shell\n2\nBox 0 contains\nFINAL ANSWER: ' }]);
  });

  it('reduces chat messages with data-URL images to a model input, resizing images', async () => {
    const png = await sharp(Buffer.alloc(32 * 32 * 3, 200), { raw: { width: 32, height: 32, channels: 3 } }).png().toBuffer();
    const url = `data:image/png;base64,${png.toString('base64')}`;
    const input = await chatToModelInput(
      [
        { role: 'system', content: 'You track shells.' },
        { role: 'user', content: [{ type: 'text', text: 'Start 1.' }, { type: 'image_url', image_url: { url } }, { type: 'text', text: 'Where?' }] },
      ],
      { imageSize: 64, answerCue: true },
    );
    expect(input.map((p) => (p.type === 'text' ? p.text : 'IMG'))).toEqual(['You track shells.\nStart 1.', 'IMG', `Where?${ANSWER_CUE}`]);
    const image = (input[1] as { image: RawImage }).image;
    expect([image.width, image.height, image.data.length]).toEqual([64, 64, 64 * 64 * 3]);
    expect(image.data[100]).toBe(200);
    await expect(chatToModelInput([{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/x.png' } }] }])).rejects.toThrow(UserError);
  });
});
