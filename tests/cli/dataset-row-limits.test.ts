// Chat rows checked as they are read, through `metrl train --dataset`: a row with more text than any context takes
// (unchecked, such a row is tokenised at length and fails only after config.json, a checkpoint and metrics.jsonl are
// written),
// a row whose prompt does not fit the model's context with the completion budget (once found only at its first
// rollout, after the run folder was written), and a data: URL that cannot be an image (once reported without its
// row) are one line naming file:line, exit 2, nothing written.
import { describe, expect, it } from 'vitest';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectUserError, metrl, scratchDir } from './helpers.ts';
import { tinyBaseCheckpoint } from '../trainer/tiny-base.ts';
import { MAX_ROW_TEXT_CHARS } from '../../envs/dataset-reader.ts';

const base = tinyBaseCheckpoint();
const TINY = [
  '--domain',
  'shell',
  '--checkpoint',
  base,
  '--backend',
  'wasm',
  '--steps',
  '1',
  '--group-size',
  '2',
  '--prompts-per-step',
  '1',
  '--max-completion-tokens',
  '2',
  '--quiet',
];
const good = { messages: [{ role: 'user', content: 'Where is the ball?' }], target: '2' };
const imageRow = (url: string) => ({
  ...good,
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'Where?' },
        { type: 'image_url', image_url: { url } },
      ],
    },
  ],
});

async function trainOn(rows: unknown[], pattern: RegExp): Promise<void> {
  const root = scratchDir('row-limits');
  const file = join(root, 'rows.jsonl');
  const out = join(root, 'run');
  writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  expectUserError(await metrl(['train', ...TINY, '--dataset', file, '--out', out]), pattern);
  expect(existsSync(out)).toBe(false);
}

describe('metrl train --dataset: rows checked while they are read', () => {
  it('a row with more text than a row may hold', async () => {
    const big = { ...good, messages: [{ role: 'user', content: 'x'.repeat(MAX_ROW_TEXT_CHARS + 1) }] };
    await trainOn(
      [good, big],
      /rows\.jsonl:2: the row's messages hold 262,145 characters of text; a row may hold at most 262,144/,
    );
  }, 60_000);

  it("a row whose prompt, though under the size limit, leaves no room in the model's context", async () => {
    const long = { ...good, messages: [{ role: 'user', content: 'where is the ball? '.repeat(2000) }] };
    await trainOn(
      [good, long],
      /rows\.jsonl:2: its prompt of \d+ tokens and the completion budget of 2 exceed the model's context of \d+ tokens$/,
    );
  }, 60_000);

  it('data: URLs that do not decode to an image', async () => {
    await trainOn(
      [good, imageRow('data:image/png;base64,not base64 at all!')],
      /rows\.jsonl:2: image data: URL: its data is not valid base64/,
    );
    await trainOn(
      [imageRow(`data:image/png;base64,${Buffer.from('hello, world').toString('base64')}`)],
      /rows\.jsonl:1: image data: URL: its bytes are no PNG, JPEG, WebP or GIF image/,
    );
    await trainOn(
      [imageRow('data:image/png,rawbytes')],
      /rows\.jsonl:1: image data: URL: expected data:image\/<type>;base64,<data>/,
    );
  }, 120_000);
});
