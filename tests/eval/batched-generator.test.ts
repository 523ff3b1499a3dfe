// The generator shared by the in-process checkpoint source and `metrl serve`: prompts that arrive together are
// decoded as one batch, and greedy answers do not depend on what else was in the batch (left padding is masked).
import { beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../models/backend.ts';
import { BuiltinPolicy } from '../../models/builtin/policy.ts';
import { BatchedGenerator } from '../../eval/batched-generator.ts';

let policy: BuiltinPolicy;
const greedy = { temperature: 0, topP: 1, maxNewTokens: 6 };
const texts = [
  'shell\n1\n',
  'shell\n2\n1 swap 2\n2 swap 3\n',
  'chess\nrnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1\ne2e4\n',
  'shell\n3\n1 swap 3\n',
];

beforeAll(async () => {
  await initBackend(undefined, null);
  policy = BuiltinPolicy.create({
    architecture: { dModel: 32, nLayers: 2, nHeads: 2, dMlp: 64, maxContext: 256, imageSize: 32, patchSize: 16 },
    seed: 11,
  });
});

describe('BatchedGenerator', () => {
  it('decodes concurrent prompts in one batch, with the answers each gets alone', async () => {
    const prompts = texts.map((t) => policy.encode([{ type: 'text', text: `${t}FINAL ANSWER: ` }]));
    const alone: string[] = [];
    const sequential = new BatchedGenerator(policy, 0);
    for (const p of prompts) alone.push((await sequential.generate(p, greedy))[0].text);
    expect(sequential.stats).toEqual({ batches: 4, prompts: 4 });

    const together = new BatchedGenerator(policy, 0);
    const batched = await Promise.all(prompts.map((p) => together.generate(p, greedy)));
    expect(together.stats).toEqual({ batches: 1, prompts: 4 });
    expect(batched.map((c) => c[0].text)).toEqual(alone);
  });

  it('keeps different sampling settings and seeded requests apart', async () => {
    const generator = new BatchedGenerator(policy, 0);
    const prompt = policy.encode([{ type: 'text', text: 'shell\n1\nFINAL ANSWER: ' }]);
    const [a, b, c, d] = await Promise.all([
      generator.generate(prompt, greedy),
      generator.generate(prompt, { ...greedy, maxNewTokens: 3 }),
      generator.generate(prompt, { temperature: 1, topP: 1, maxNewTokens: 6 }, 3, 42),
      generator.generate(prompt, { temperature: 1, topP: 1, maxNewTokens: 6 }, 3, 42),
    ]);
    expect(generator.stats.batches).toBe(4);
    expect(b[0].tokens.length).toBeLessThanOrEqual(3);
    expect(a[0].text.startsWith(b[0].text)).toBe(true);
    expect(c).toHaveLength(3);
    // The same seed gives the same samples whatever else is in flight.
    expect(c.map((x) => x.text)).toEqual(d.map((x) => x.text));
  });
});
