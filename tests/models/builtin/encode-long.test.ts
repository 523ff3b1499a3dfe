// Encoding a very long text (a 300,000-character prompt sent to metrl serve) must give its token ids, not overflow the
// call stack: the ids are appended one by one, never spread into a call's arguments.
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../../models/backend.ts';
import { BuiltinPolicy } from '../../../models/builtin/policy.ts';

beforeAll(async () => {
  await initBackend('wasm', null);
});

describe('BuiltinPolicy.encode', () => {
  it('encodes a 300,000-character text', () => {
    const policy = BuiltinPolicy.create({
      architecture: { dModel: 32, nLayers: 1, nHeads: 2, dMlp: 64, imageSize: 16, patchSize: 8 },
      seed: 1,
    });
    try {
      const text = 'shell\n'.repeat(50_000);
      const { tokens } = policy.encode([{ type: 'text', text }]);
      expect(tokens.length).toBe(
        1 + policy.encode([{ type: 'text', text: 'shell\n' }]).tokens.length * 50_000 - 50_000,
      );
    } finally {
      policy.dispose();
    }
  });
});
