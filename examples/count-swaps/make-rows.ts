// A tiny custom task for `metrl train --dataset` (docs/training.md's worked example): a list of one to three shell-game swaps
// ("1 swap 3", the actions the shell game writes) and the question how many swaps are listed; the answer is the count.
// Writes OUT/rows.jsonl: chat rows with the question as a text message, target "1"-"3", split train or test.
//   Usage: node bin/run-ts.js examples/count-swaps/make-rows.ts OUT [TRAIN_ROWS] [TEST_ROWS]
// Text only: asked about a picture of a swap, the built-in base transcribes the swap ("1 swap 3") whatever the
// question, so no answer of the right form ever came up to reward; asked about a list in text, it answers with a digit
// (its shell-game habit), a third of them right, which is the spread GRPO needs.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Rng } from '../../core/rng.ts';

const [out, trainRows = '96', testRows = '60'] = process.argv.slice(2);
if (!out) throw new Error('usage: make-rows.ts OUT [TRAIN_ROWS] [TEST_ROWS]');
mkdirSync(out, { recursive: true });

const SWAPS = ['1 swap 2', '2 swap 1', '1 swap 3', '3 swap 1', '2 swap 3', '3 swap 2'];
const rng = new Rng(0, 'count-swaps');
const rows: string[] = [];
for (const [split, count] of [
  ['train', Number(trainRows)],
  ['test', Number(testRows)],
] as const) {
  for (let i = 0; i < count; i++) {
    const n = 1 + rng.int(3);
    const swaps = Array.from({ length: n }, () => SWAPS[rng.int(SWAPS.length)]);
    const question = `Swaps:\n${swaps.join('\n')}\nHow many swaps are listed?`;
    rows.push(
      JSON.stringify({
        id: `${split}-${i}`,
        messages: [{ role: 'user', content: question }],
        target: String(n),
        split,
      }),
    );
  }
}
writeFileSync(join(out, 'rows.jsonl'), rows.join('\n') + '\n');
console.log(`${join(out, 'rows.jsonl')}: ${trainRows} train and ${testRows} test rows`);
