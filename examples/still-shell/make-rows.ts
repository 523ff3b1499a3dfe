// A tiny custom task for `metrl train --dataset` (the README's worked example): one picture of a swap of two of the
// three shells, drawn by the shell game's own renderer; the question asks for the shell the swap leaves in place.
// Writes OUT/rows.jsonl (chat rows: a text part and an image part, the image by path; target "1"-"3"; split) and
// OUT/images/*.png.   Usage: node bin/run-ts.js examples/still-shell/make-rows.ts OUT [TRAIN_ROWS] [TEST_ROWS]
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodePng } from '../../core/image.ts';
import { Rng } from '../../core/rng.ts';
import { renderSwap, type Swap } from '../../envs/shell/render.ts';

const [out, trainRows = '96', testRows = '30'] = process.argv.slice(2);
if (!out) throw new Error('usage: make-rows.ts OUT [TRAIN_ROWS] [TEST_ROWS]');
mkdirSync(join(out, 'images'), { recursive: true });

// The six ordered swaps, each drawn at the built-in model's image size (64 px), as the shell game draws them.
const SWAPS: Swap[] = [[1, 2], [2, 1], [1, 3], [3, 1], [2, 3], [3, 2]];
for (const [a, b] of SWAPS) writeFileSync(join(out, 'images', `${a}-swap-${b}.png`), await encodePng(renderSwap([a, b], 64)));

const QUESTION = 'The picture swaps two of the three shells. Which shell stays where it is?';
const rng = new Rng(0, 'still-shell');
const rows: string[] = [];
for (const [split, count] of [['train', Number(trainRows)], ['test', Number(testRows)]] as const) {
  for (let i = 0; i < count; i++) {
    const [a, b] = SWAPS[rng.int(SWAPS.length)];
    const still = 6 - a - b; // 1 + 2 + 3 = 6
    rows.push(JSON.stringify({
      id: `${split}-${i}`,
      messages: [{ role: 'user', content: [{ type: 'text', text: QUESTION }, { type: 'image_url', image_url: { url: `images/${a}-swap-${b}.png` } }] }],
      target: String(still),
      split,
    }));
  }
}
writeFileSync(join(out, 'rows.jsonl'), rows.join('\n') + '\n');
console.log(`${join(out, 'rows.jsonl')}: ${trainRows} train and ${testRows} test rows`);
