// Qwen2.5-VL and Qwen3-VL as HfPolicy assembles them from a checkpoint folder (the fixtures with the byte tokenizer
// of tests/helpers/byte-tokenizer.ts): the processor reads the PNG the references were made from, the chat prompt
// expands each image to its own number of <|image_pad|> tokens, and with the fixture's prompt ids the whole chain
// (processor → tfjs tower → merged embeddings → 3-D positions → decoder, DeepStack included) gives the references:
// greedy sampling continues with the fixture's ids, and the learner's log-probs of that continuation are the
// log-softmax of the fixture's step logits within 1e-4, for one and for two images.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodePng } from '../../core/image.ts';
import { Rng } from '../../core/rng.ts';
import { initBackend } from '../../models/backend.ts';
import type { HfPolicy } from '../../models/hf/policy.ts';
import { loadHfPolicy } from '../../models/registry.ts';
import { HF_FIXTURES, hfCheckpointCopy, removeHfCopies } from '../helpers/hf-checkpoint-copy.ts';
import { maxAbsDiff, readFixtureTensors } from './hf-vision-fixtures.ts';

const TOL = 1e-4;
const IMAGE_PAD = 252;

beforeAll(async () => {
  await initBackend('wasm', null);
});
afterAll(() => removeHfCopies());

describe.each(['qwen2_5_vl', 'qwen3_vl'])('%s through HfPolicy (tfjs)', (folder) => {
  let policy: HfPolicy;
  let ref: Record<string, { input_ids: number[][]; greedy: { new_ids: number[]; max_new_tokens: number } }>;
  let tensors: ReturnType<typeof readFixtureTensors>;
  const png = (name: string) => decodePng(readFileSync(join(HF_FIXTURES, folder, 'preprocess', name)));
  beforeAll(async () => {
    policy = await loadHfPolicy(hfCheckpointCopy(folder));
    ref = JSON.parse(readFileSync(join(HF_FIXTURES, folder, 'reference.json'), 'utf8'));
    tensors = readFixtureTensors(join(HF_FIXTURES, folder, 'reference.safetensors'));
  });
  afterAll(() => policy?.dispose());

  it('expands each image of a chat prompt to its own token count', async () => {
    const encoded = policy.encode([
      { type: 'text', text: 'Track the pieces. ' },
      { type: 'image', image: await png('image_a.png') },
      { type: 'image', image: await png('image_b.png') },
    ]);
    expect(encoded.images).toHaveLength(2);
    // image_a: grid (1, 8, 12) → 24 tokens; image_b: (1, 10, 6) → 15 (fixture README section 8).
    expect(encoded.tokens.filter((t) => t === IMAGE_PAD)).toHaveLength(24 + 15);
    expect(policy.imageSize).toBeGreaterThan(0);
  });

  it.each([
    ['one_image', ['image_a.png']],
    ['two_images', ['image_a.png', 'image_b.png']],
  ])('%s: greedy sampling and the learner log-probs give the references', async (key, images) => {
    const inputs = await Promise.all(images.map(png));
    // The policy's own processing of the images, under the fixture's prompt ids.
    const pixels = policy.encode(inputs.flatMap((image) => [{ type: 'image' as const, image }])).images;
    const prompt = { tokens: ref[key].input_ids[0], images: pixels };
    const { new_ids: expectedIds, max_new_tokens: n } = ref[key].greedy;
    const [[greedy]] = policy.sampleGroups(
      [prompt],
      1,
      { maxNewTokens: n, temperature: 0, topP: 1 },
      new Rng(1, 'greedy'),
    );
    expect(greedy.tokens.slice(0, n)).toEqual(expectedIds);
    const scores = policy.tokenLogProbs([{ prompt, completion: expectedIds }], { useLora: false });
    const got = Array.from(scores.logProbs.dataSync());
    tf.dispose([scores.logProbs, scores.mask]);
    const V = 256;
    const steps = tensors.get(`${key}.greedy.step_logits`)!.data as Float32Array;
    const expected = expectedIds.map((id, t) => {
      const row = steps.subarray(t * V, (t + 1) * V);
      const max = Math.max(...row);
      return row[id] - max - Math.log(row.reduce((s, v) => s + Math.exp(v - max), 0));
    });
    expect(maxAbsDiff(got, expected)).toBeLessThan(TOL);
  });
});
