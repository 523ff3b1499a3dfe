// A tiny built-in policy saved as a base checkpoint, for tests that run the real training path in seconds.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BuiltinPolicy } from '../../models/builtin/policy.ts';
import { saveBaseCheckpoint } from '../../models/builtin/base-checkpoint.ts';
import type { Architecture } from '../../models/builtin/config.ts';

export const TINY_ARCHITECTURE: Partial<Architecture> = {
  dModel: 32,
  nLayers: 2,
  nHeads: 2,
  dMlp: 64,
  imageSize: 16,
  patchSize: 8,
  maxContext: 256,
};

/** Save a freshly initialised tiny model (or the given one) as a base checkpoint; returns its folder. */
export function tinyBaseCheckpoint(
  policy: BuiltinPolicy = BuiltinPolicy.create({ architecture: TINY_ARCHITECTURE, seed: 1 }),
): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'metrl-base-')), 'base');
  saveBaseCheckpoint(policy, dir);
  return dir;
}
