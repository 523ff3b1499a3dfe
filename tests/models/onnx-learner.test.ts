// The ONNX Runtime learner (models/onnx/builtin/builtin-learner.ts, its training graph builtin-train-graph.ts and the autodiff
// under it, autodiff.ts) against tfjs autodiff through the BuiltinPolicy learner (tf.variableGrads over
// tokenLogProbs), the reference: the loss value and every LoRA A and B gradient within 1e-4 relative (to the
// variable's largest gradient), on a tiny random model with text and two images per prompt, completions of unequal
// lengths (padding, a one-token completion), a temperature, adapters on every projection and on some only; a
// central finite difference on a few coordinates; and on the shipped base (checkpoints/base) with a real chess image
// prompt and the GRPO loss of trainer/loss/loss.ts.
import { beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import { BuiltinPolicy } from '../../models/builtin/policy.ts';
import { loadBaseCheckpoint } from '../../models/builtin/base-checkpoint.ts';
import { loraAdapters } from '../../models/builtin/lora.ts';
import { BuiltinOrtLearner } from '../../models/onnx/builtin/builtin-learner.ts';
import { lossGradients, type LogProbLoss } from '../../models/learner.ts';
import { grpoLoss } from '../../trainer/loss/loss.ts';
import { CHECKPOINTS_DIR } from '../../core/paths.ts';
import { getEnv } from '../../envs/registry.ts';
import { generateEpisodes } from '../../envs/generate.ts';
import { Rng } from '../../core/rng.ts';
import type { RawImage } from '../../core/image.ts';
import type { EncodedPrompt, SequenceBatchItem, TokenLogProbs } from '../../models/types.ts';
import { relativeError } from '../helpers/relative-error.ts';

const TINY = { dModel: 32, nLayers: 2, nHeads: 2, dMlp: 64, imageSize: 16, patchSize: 8, positions: 'grid' as const };

function randomImage(seed: number): RawImage {
  const rng = new Rng(seed, 'image');
  return { width: 16, height: 16, channels: 3, data: Uint8Array.from({ length: 16 * 16 * 3 }, () => rng.int(256)) };
}

function randomCompletion(rng: Rng, length: number, vocab: number): number[] {
  return Array.from({ length }, () => 3 + rng.int(vocab - 3));
}

/** A loss nonlinear in the log-probs (so g depends on them), masked like the GRPO loss. */
function testLoss(seed: number): LogProbLoss {
  return (lp: TokenLogProbs) => {
    const [B, L] = lp.logProbs.shape;
    const c = tf.randomNormal([B, L], 0, 1, 'float32', seed);
    const e = tf.randomNormal([B, L], 0, 1, 'float32', seed + 1);
    return tf.sum(tf.mul(lp.mask, tf.add(tf.mul(c, lp.logProbs), tf.mul(e, tf.exp(lp.logProbs))))) as tf.Scalar;
  };
}

function compare(
  policy: BuiltinPolicy,
  learner: BuiltinOrtLearner,
  items: SequenceBatchItem[],
  loss: LogProbLoss,
  temperature: number,
) {
  const variables = policy.trainableVariables('lora');
  const options = { useLora: true, withEntropy: true, temperature };
  const want = tf.variableGrads(() => loss(policy.tokenLogProbs(items, options)), variables);
  const got = learner.lossGradients(items, options, loss, variables);
  return { want, got, variables };
}

describe('ONNX Runtime learner, tiny random model (grid positions, two images per prompt, LoRA)', () => {
  let policy: BuiltinPolicy;
  let learner: BuiltinOrtLearner;
  let items: SequenceBatchItem[];

  beforeAll(async () => {
    await initBackend('wasm', null);
    policy = BuiltinPolicy.create({ architecture: TINY, seed: 7, lora: { r: 4, alpha: 8 } });
    for (const [i, a] of loraAdapters(policy.lora!).entries())
      a.b.assign(tf.randomNormal(a.b.shape, 0, 0.3, 'float32', 1 + i));
    const prompt: EncodedPrompt = policy.encode([
      { type: 'text', text: 'chess\n8/8/8/8/8/8/8/8 w - - 0 1\n' },
      { type: 'image', image: randomImage(1) },
      { type: 'text', text: '\ne2e4\n' },
      { type: 'image', image: randomImage(2) },
      { type: 'text', text: '\ntrace\nFINAL ANSWER: ' },
    ]);
    const other = policy.encode([
      { type: 'text', text: 'shell\n2\n' },
      { type: 'image', image: randomImage(3) },
      { type: 'text', text: '\nFINAL ANSWER: ' },
    ]);
    const text = policy.encode([{ type: 'text', text: 'boxes\nno image here\nFINAL ANSWER: ' }]);
    const rng = new Rng(11, 'completions');
    const V = policy.arch.vocabSize;
    items = [
      ...[17, 9, 17].map((n) => ({ prompt, completion: randomCompletion(rng, n, V) })),
      ...[1, 12].map((n) => ({ prompt: other, completion: randomCompletion(rng, n, V) })),
      { prompt: text, completion: randomCompletion(rng, 6, V) },
    ];
    learner = new BuiltinOrtLearner(policy, { threads: 1 });
  });

  it('gives the loss value and the LoRA gradients of tfjs autodiff (every projection adapted, T = 0.7)', () => {
    // The log-probs, mask and entropies the loss is given: those of tfjs tokenLogProbs.
    const seen: { logProbs: Float32Array; mask: Float32Array; entropy: Float32Array }[] = [];
    const base = testLoss(5);
    const recording: LogProbLoss = (lp) => {
      seen.push({
        logProbs: Float32Array.from(lp.logProbs.dataSync()),
        mask: Float32Array.from(lp.mask.dataSync()),
        entropy: Float32Array.from(lp.entropy!.dataSync()),
      });
      return base(lp);
    };
    const { want, got } = compare(policy, learner, items, recording, 0.7);
    expect(seen).toHaveLength(2);
    const [tfjs, ort] = seen;
    expect(Array.from(ort.mask)).toEqual(Array.from(tfjs.mask));
    const close = (a: Float32Array, b: Float32Array) => a.every((x, i) => Math.abs(x - b[i]) < 1e-4);
    expect(close(ort.logProbs, tfjs.logProbs)).toBe(true);
    // Entropies at real tokens (tfjs pads with the pad row's entropy, the ORT learner with 0).
    expect(
      close(
        ort.entropy.map((x, i) => x * tfjs.mask[i]),
        tfjs.entropy.map((x, i) => x * tfjs.mask[i]),
      ),
    ).toBe(true);
    expect(Math.abs(got.value.dataSync()[0] - want.value.dataSync()[0])).toBeLessThan(
      1e-4 * Math.max(1, Math.abs(want.value.dataSync()[0])),
    );
    expect(relativeError(got.grads, want.grads)).toBeLessThan(1e-4);
  });

  it('agrees with central finite differences of the loss on a few A and B coordinates', () => {
    const loss = testLoss(21);
    const options = { useLora: true, temperature: 1 };
    const variables = policy.trainableVariables('lora');
    const { grads } = learner.lossGradients(items, options, loss, variables);
    // The loss in float64 from the float32 log-probs of a tfjs forward: a step of 1e-2 keeps rounding small.
    const lossAt = () => tf.tidy(() => loss(policy.tokenLogProbs(items, options)).dataSync()[0]);
    const h = 1e-2;
    const picks: Array<[number, number]> = [
      [0, 5],
      [1, 3],
      [6, 40],
      [9, 2],
      [variables.length - 1, 7],
      [variables.length - 2, 1],
    ];
    for (const [k, index] of picks) {
      const v = variables[k];
      const saved = v.clone();
      const at = (delta: number) => {
        const data = Float32Array.from(saved.dataSync());
        data[index] += delta;
        v.assign(tf.tensor(data, v.shape));
        return lossAt();
      };
      const numeric = (at(h) - at(-h)) / (2 * h);
      v.assign(saved);
      saved.dispose();
      const analytic = grads[v.name].dataSync()[index];
      expect(Math.abs(analytic - numeric)).toBeLessThan(2e-3 * Math.max(1, Math.abs(numeric)));
    }
  });

  it('follows an adapter update without a new session, and handles adapters on some projections only', () => {
    const a = loraAdapters(policy.lora!)[2];
    a.a.assign(tf.add(a.a, 0.1));
    const { want, got } = compare(policy, learner, items, testLoss(8), 1);
    expect(relativeError(got.grads, want.grads)).toBeLessThan(1e-4);

    const partial = BuiltinPolicy.create({
      architecture: TINY,
      seed: 3,
      lora: { r: 2, alpha: 6, targetModules: ['q_proj', 'v_proj', 'up_proj'] },
    });
    for (const [i, ad] of loraAdapters(partial.lora!).entries())
      ad.b.assign(tf.randomNormal(ad.b.shape, 0, 0.3, 'float32', 20 + i));
    const other = new BuiltinOrtLearner(partial, { threads: 1 });
    try {
      const r = compare(partial, other, items, testLoss(9), 0.5);
      expect(relativeError(r.got.grads, r.want.grads)).toBeLessThan(1e-4);
    } finally {
      other.dispose();
      partial.dispose();
    }
  });

  it("refuses a sequence longer than the model's context, as the tfjs learner does", () => {
    const long = [{ prompt: items[0].prompt, completion: new Array(policy.arch.maxContext).fill(5) }];
    const variables = policy.trainableVariables('lora');
    const options = { useLora: true, temperature: 1 };
    const tfjsError = (() => {
      try {
        policy.tokenLogProbs(long, options);
      } catch (e) {
        return e as Error;
      }
    })();
    expect(tfjsError?.message).toMatch(/exceeds the model's context/);
    expect(() => learner.lossGradients(long, options, testLoss(1), variables)).toThrow(tfjsError!.message);
  });

  it('is what lossGradients uses for it; a learner without its own seam is differentiated by tfjs', () => {
    const variables = policy.trainableVariables('lora');
    const options = { useLora: true, temperature: 1 };
    const viaSeam = lossGradients(learner, items, options, testLoss(3), variables);
    const viaTfjs = lossGradients(policy, items, options, testLoss(3), variables);
    expect(relativeError(viaSeam.grads, viaTfjs.grads)).toBeLessThan(1e-4);
  });
});

describe.skipIf(!existsSync(join(CHECKPOINTS_DIR, 'base', 'model.safetensors')))(
  'ONNX Runtime learner, shipped base with a chess image prompt, GRPO loss',
  () => {
    it('gives the tfjs GRPO loss and LoRA gradients (β 0.04, T 0.5, two groups of 3)', async () => {
      await initBackend('wasm', null);
      const policy = loadBaseCheckpoint(join(CHECKPOINTS_DIR, 'base'));
      policy.attachLora({ r: 16, alpha: 32 }, new Rng(0, 'lora-init'));
      for (const [i, a] of loraAdapters(policy.lora!).entries())
        a.b.assign(tf.randomUniform(a.b.shape, -0.05, 0.05, 'float32', i));
      const env = await getEnv('chess');
      const episodes = generateEpisodes(env, { n: 2, actions: 5, split: 'train', seed: 0, modality: 'image' });
      const prompts = episodes.map((e) => policy.prompt(env, e));
      const groups = policy.sampleGroups(
        prompts,
        3,
        { temperature: 0.5, topP: 1, maxNewTokens: 60 },
        new Rng(4, 'draws'),
      );
      const items = groups.flatMap((g, u) => g.map((c) => ({ prompt: prompts[u], completion: c.tokens })));
      const ref = policy.tokenLogProbs(items, { useLora: false, temperature: 0.5 }).logProbs;
      const advantages = tf.tensor1d([1, -0.5, -0.5, 0.3, 0.7, -1]);
      const loss: LogProbLoss = (lp) =>
        grpoLoss(
          {
            logProbs: lp.logProbs,
            oldLogProbs: tf.tensor(lp.logProbs.dataSync(), lp.logProbs.shape) as tf.Tensor2D,
            refLogProbs: ref,
            mask: lp.mask,
            advantages,
          },
          { epsilon: 0.2, beta: 0.04, lossType: 'dapo', maxCompletionTokens: 60, totalSequences: 6, totalTokens: 300 },
        ).loss;
      const learner = new BuiltinOrtLearner(policy, { threads: 1 });
      try {
        const { want, got } = compare(policy, learner, items, loss, 0.5);
        expect(Math.abs(got.value.dataSync()[0] - want.value.dataSync()[0])).toBeLessThan(
          1e-4 * Math.max(1, Math.abs(want.value.dataSync()[0])),
        );
        expect(relativeError(got.grads, want.grads)).toBeLessThan(1e-4);
      } finally {
        learner.dispose();
        policy.dispose();
      }
    }, 120_000);
  },
);
