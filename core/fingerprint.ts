// Train/test splitting by fingerprint. An episode's split is a pure function of its content (initial state and
// action sequence), so train and test can never share an episode, whatever seeds or sizes are asked for: generators
// draw candidates and keep those whose fingerprint falls in the requested split.
import { createHash } from 'node:crypto';

export type Split = 'train' | 'test';

/** Share of the fingerprint space that belongs to the test split. */
const TEST_FRACTION = 0.2;

export function fingerprint(...parts: (string | number)[]): string {
  return createHash('sha256').update(parts.map(String).join('\u001f')).digest('hex').slice(0, 16);
}

/** Which split a fingerprint belongs to. */
export function splitOf(fp: string): Split {
  const bucket = parseInt(fp.slice(0, 8), 16) / 0x100000000;
  return bucket < TEST_FRACTION ? 'test' : 'train';
}
