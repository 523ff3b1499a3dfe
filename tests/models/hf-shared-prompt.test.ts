// The learner's shared-prompt pass and its chunking (models/hf/score.ts, HfPolicy.tokenLogProbs/passTokens,
// trainer/chunks.ts chunksByCost) on the tiny fixture models: a GRPO group packed into one row over one prompt pass
// gives the log-probabilities, entropies and LoRA gradients of one row per completion; the blockwise output head with
// recomputed blocks gives those of the plain head; and the gradient summed over learner chunks is the unchunked one
// for every chunk budget. LoRA B is set non-zero first, so every adapter matrix has a gradient to compare. Also: an
// image is encoded by the vision tower once, however many passes read it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { Rng } from '../../core/rng.ts';
import { initBackend } from '../../models/backend.ts';
import type { HfDecoder } from '../../models/hf/decoder.ts';
import { HfPolicy } from '../../models/hf/policy.ts';
import { completionLogProbs, type ScoreItem, type ScoreOptions } from '../../models/hf/score.ts';
import type { VisionLanguageModel } from '../../models/hf/vision-language-model.ts';
import { loadPolicy } from '../../models/load.ts';
import type { EncodedPrompt, SequenceBatchItem } from '../../models/types.ts';
import { chunksByCost, chunksWithin } from '../../trainer/chunks.ts';
import { hfCheckpointCopy, removeHfCopies } from '../helpers/hf-checkpoint-copy.ts';
import { readReference } from './hf-fixture.ts';

const opened: HfPolicy[] = [];
beforeAll(async () => {
  await initBackend('wasm', null);
});
afterAll(() => {
  opened.forEach((p) => p.dispose());
  removeHfCopies();
});

async function policyOf(name: string): Promise<HfPolicy> {
  const { policy } = await loadPolicy(hfCheckpointCopy(name, { context: null }), { log: () => {} });
  opened.push(policy as HfPolicy);
  // Fresh adapters have B = 0 (no gradient reaches A): give every matrix random values so all of them are compared.
  policy.attachLora({ r: 4, alpha: 8 }, new Rng(3, 'lora'));
  const rng = new Rng(4, 'lora-values');
  for (const v of policy.trainableVariables('lora'))
    v.assign(
      tf.tensor(
        Float32Array.from({ length: v.size }, () => (rng.next() - 0.5) * 0.2),
        v.shape,
      ),
    );
  return policy as HfPolicy;
}

/** Token ids below 200 (no image or special token of the byte tokenizers), `n` of them. */
const tokens = (rng: Rng, n: number) => Array.from({ length: n }, () => Math.floor(rng.next() * 200));

/** Two prompts × three completions of different lengths (one empty), in GRPO order: each prompt object repeated. */
function groups(prompts: EncodedPrompt[], seed: number): SequenceBatchItem[] {
  const rng = new Rng(seed, 'completions');
  return prompts.flatMap((prompt, k) => [5, 0, 3 + k].map((n) => ({ prompt, completion: tokens(rng, n) })));
}

/** Σ a·logp + b·entropy over one item's row [1, L] with fixed weights a, b per token (the same for any padding L). */
function weightedLoss(lp: tf.Tensor2D, entropy: tf.Tensor2D, seed: number): tf.Scalar {
  const rng = new Rng(seed, 'weights');
  const L = lp.shape[1];
  const a = Float32Array.from({ length: 512 }, () => rng.next() - 0.5);
  const b = Float32Array.from({ length: 512 }, () => rng.next() - 0.5);
  return tf.add(
    tf.sum(tf.mul(lp, tf.tensor2d(a.subarray(0, L), [1, L]))),
    tf.sum(tf.mul(entropy, tf.tensor2d(b.subarray(0, L), [1, L]))),
  ) as tf.Scalar;
}

interface Grads {
  values: Float32Array[];
  grads: Map<string, Float32Array>;
}

/** Log-probs/entropies of each item and the gradient of Σ weightedLoss over `chunks` (each one pass, summed). */
function passes(
  vars: tf.Variable[],
  chunks: number[][],
  run: (indices: number[]) => { logProbs: tf.Tensor2D; entropy?: tf.Tensor2D; mask: tf.Tensor2D },
  lengths: number[],
): Grads {
  const values: Float32Array[] = new Array(lengths.length);
  const grads = new Map<string, Float32Array>();
  for (const chunk of chunks) {
    if (chunk.every((i) => lengths[i] === 0)) {
      // Nothing to score: no gradient (tfjs refuses a loss that does not depend on the variables).
      for (const i of chunk) values[i] = new Float32Array(0);
      continue;
    }
    const { value, grads: g } = tf.variableGrads(() => {
      const r = run(chunk);
      const lp = r.logProbs.arraySync();
      const ent = r.entropy!.arraySync();
      chunk.forEach(
        (i, row) => (values[i] = Float32Array.from([...lp[row], ...ent[row]].slice(0, 2 * r.logProbs.shape[1]))),
      );
      // One weight per (item, token): the same whatever the chunk, so the chunks' losses sum to the whole batch's.
      return tf.addN(
        chunk.map((i, row) =>
          weightedLoss(tf.slice(r.logProbs, [row, 0], [1, -1]), tf.slice(r.entropy!, [row, 0], [1, -1]), i),
        ),
      ) as tf.Scalar;
    }, vars);
    value.dispose();
    for (const v of vars) {
      const d = g[v.name].dataSync() as Float32Array;
      const sum = grads.get(v.name);
      grads.set(v.name, sum ? sum.map((x, k) => x + d[k]) : d.slice());
    }
    tf.dispose(Object.values(g));
  }
  return { values, grads };
}

/** Largest |a - b| relative to the largest |a| (per compared set), and that scale. */
function compare(a: Grads, b: Grads): { values: number; grads: number; scale: number } {
  let values = 0;
  a.values.forEach((v, i) => {
    // Rows are padded to each call's longest completion: compare the real tokens (the shorter array's length).
    const w = b.values[i];
    const L = Math.min(v.length, w.length) / 2;
    for (let j = 0; j < L; j++)
      values = Math.max(values, Math.abs(v[j] - w[j]), Math.abs(v[v.length / 2 + j] - w[w.length / 2 + j]));
  });
  let scale = 0;
  let grads = 0;
  for (const [name, g] of a.grads) {
    const h = b.grads.get(name)!;
    g.forEach((x, k) => {
      scale = Math.max(scale, Math.abs(x));
      grads = Math.max(grads, Math.abs(x - h[k]));
    });
  }
  return { values, grads: grads / scale, scale };
}

function policyRun(policy: HfPolicy, batch: SequenceBatchItem[]) {
  return (indices: number[]) =>
    policy.tokenLogProbs(
      indices.map((i) => batch[i]),
      { useLora: true, withEntropy: true, temperature: 0.8 },
    );
}

/** An image prompt of a VLM fixture (its reference ids and pixels) cut at `cut` tokens, and a text prompt. */
function imagePrompts(name: 'idefics3' | 'gemma3'): EncodedPrompt[] {
  const ref = readReference(name);
  const key = name === 'idefics3' ? 'one_image' : 'image';
  const ids: number[] = ref.json[key].input_ids[0];
  return [
    { tokens: ids.slice(0, -2), images: [ref.get(`${key}.pixel_values`).data] },
    { tokens: ids.slice(0, 3), images: [] },
  ];
}

describe('shared-prompt learner passes', () => {
  for (const name of ['idefics3', 'gemma3', 'llama'] as const) {
    it(`${name}: a packed group gives one row per completion's log-probs, entropies and LoRA gradients`, async () => {
      const policy = await policyOf(name);
      const prompts =
        name === 'llama'
          ? [
              { tokens: tokens(new Rng(9, 'p'), 9), images: [] },
              { tokens: tokens(new Rng(8, 'p'), 4), images: [] },
            ]
          : imagePrompts(name);
      const batch = groups(prompts, 1);
      const vars = policy.trainableVariables('lora');
      const all = batch.map((_, i) => i);
      const shared = passes(
        vars,
        [all],
        policyRun(policy, batch),
        batch.map((it) => it.completion.length),
      );
      // One sequence per pass: nothing to share, the layout every fixture test checks against the references.
      const single = passes(
        vars,
        all.map((i) => [i]),
        policyRun(policy, batch),
        batch.map((it) => it.completion.length),
      );
      const d = compare(single, shared);
      expect(d.scale).toBeGreaterThan(1e-3);
      expect(d.values).toBeLessThan(1e-5);
      expect(d.grads).toBeLessThan(1e-5);
      // And what a pass costs: each prompt once.
      const P = prompts.map((p) => p.tokens.length);
      expect(policy.passTokens(batch)).toBe(P[0] + P[1] + batch.reduce((n, it) => n + it.completion.length, 0));
    });
  }

  it('the blockwise head with recomputed blocks gives the plain head, with temperature, entropy and a soft-cap', async () => {
    const policy = await policyOf('gemma3'); // sliding window 3: the packed rows' window is measured in positions
    const decoder: HfDecoder = policy.decoder;
    const rng = new Rng(5, 'items');
    const p1 = tokens(rng, 7);
    const p2 = tokens(rng, 2);
    const items: ScoreItem[] = [6, 1, 4]
      .map((n) => ({ prompt: p1, completion: tokens(rng, n) }))
      .concat([{ prompt: p2, completion: tokens(rng, 300) }]);
    const vars = policy.trainableVariables('lora');
    const all = items.map((_, i) => i);
    const config = decoder.config as { finalLogitSoftcap: number | null };
    for (const cap of [null, 2]) {
      config.finalLogitSoftcap = cap;
      try {
        const run = (options: ScoreOptions) => (indices: number[]) =>
          completionLogProbs(
            decoder,
            indices.map((i) => items[i]),
            { withEntropy: true, temperature: 0.7, ...options },
          );
        const plain = passes(
          vars,
          [all],
          run({ sharePrompts: false }),
          items.map((it) => it.completion.length),
        );
        // 300 completion tokens: two blocks of the lean head's rows.
        const lean = passes(
          vars,
          [all],
          run({ leanHead: true, recompute: true }),
          items.map((it) => it.completion.length),
        );
        const d = compare(plain, lean);
        expect(d.scale).toBeGreaterThan(1e-3);
        expect(d.values).toBeLessThan(2e-5);
        expect(d.grads).toBeLessThan(1e-5);
      } finally {
        config.finalLogitSoftcap = null;
      }
    }
  });

  it('the gradient summed over learner chunks is the unchunked gradient for every chunk budget', async () => {
    const policy = await policyOf('idefics3');
    const batch = groups(imagePrompts('idefics3'), 2);
    const vars = policy.trainableVariables('lora');
    const indexed = batch.map((seq, i) => ({ seq, i }));
    const plan = (maxItems: number, maxTokens: number) =>
      chunksByCost(indexed, (chunk) => policy.passTokens(chunk.map((c) => c.seq)), maxItems, maxTokens).map((c) =>
        c.map((x) => x.i),
      );
    const whole = passes(
      vars,
      plan(8, 100000),
      policyRun(policy, batch),
      batch.map((it) => it.completion.length),
    );
    expect(plan(8, 100000)).toEqual([[0, 1, 2, 3, 4, 5]]);
    // Prompt 0 has 12 tokens and completions of 5, 0, 3; prompt 1 has 3 and 5, 0, 4: under 18 tokens a pass the first
    // group needs two passes (its prompt runs in both), under 2 sequences a pass the middle one holds both prompts.
    const plans = [plan(8, 18), plan(2, 100000), plan(8, 1)];
    expect(plans).toEqual([
      [[0, 1], [2], [3, 4, 5]],
      [
        [0, 1],
        [2, 3],
        [4, 5],
      ],
      [[0], [1], [2], [3], [4], [5]],
    ]);
    for (const chunks of plans) {
      const d = compare(
        whole,
        passes(
          vars,
          chunks,
          policyRun(policy, batch),
          batch.map((it) => it.completion.length),
        ),
      );
      expect(d.scale).toBeGreaterThan(1e-3);
      expect(d.values).toBeLessThan(1e-5);
      expect(d.grads).toBeLessThan(1e-5);
    }
  });

  it('chunksByCost with a summed cost is chunksWithin (the built-in model keeps its chunks)', () => {
    const rng = new Rng(6, 'sizes');
    const sizes = Array.from({ length: 40 }, () => 1 + Math.floor(rng.next() * 700));
    for (const [maxItems, maxSize] of [
      [8, 2048],
      [3, 1000],
      [8, 100],
      [1, 5000],
    ]) {
      const sum = (chunk: readonly number[]) => chunk.reduce((s, x) => s + x, 0);
      expect(chunksByCost(sizes, sum, maxItems, maxSize)).toEqual(chunksWithin(sizes, (x) => x, maxItems, maxSize));
    }
  });

  it('an image goes through the vision tower once, however many passes read it (the tower is frozen)', async () => {
    const policy = await policyOf('idefics3');
    const images = (policy.image as VisionLanguageModel).images;
    const encode = images.encode.bind(images);
    let calls = 0;
    images.encode = (...a: Parameters<typeof encode>) => (calls++, encode(...a));
    const prompts = imagePrompts('idefics3');
    const other = { tokens: prompts[0].tokens, images: [prompts[0].images[0].map((x) => -x)] };
    const rollout = policy.sampleGroups(
      [prompts[0], other],
      3,
      { temperature: 1, topP: 1, maxNewTokens: 3 },
      new Rng(7, 'sample'),
    );
    expect(calls).toBe(2);
    const batch = [prompts[0], other].flatMap((prompt, k) => rollout[k].map((c) => ({ prompt, completion: c.tokens })));
    const drop = (r: object) => tf.dispose(Object.values(r).filter((t): t is tf.Tensor => t instanceof tf.Tensor));
    drop(policy.tokenLogProbs(batch, { useLora: false }));
    drop(policy.tokenLogProbs(batch.slice(0, 2), { useLora: true }));
    const { value, grads } = tf.variableGrads(
      () => tf.sum(policy.tokenLogProbs(batch, { useLora: true }).logProbs) as tf.Scalar,
      policy.trainableVariables('lora'),
    );
    tf.dispose([value, ...Object.values(grads)]);
    expect(calls).toBe(2);
  });
});
