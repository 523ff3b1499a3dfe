// The gradient of the GRPO loss with respect to the LoRA weights, as tfjs computes it
// through the real built-in policy (a tiny configuration, LoRA B non-zero so every adapter path carries gradient,
// one prompt with an image), matches central finite differences of the same loss: for every loss type × importance
// sampling level (TRL 1.9's types at the levels the config accepts), with an asymmetric clip,
// once more with truncation masking and the entropy mask on, and once with delta, the off-policy mask and
// the bias-corrected KL. (The entropy bonus's gradient through this tiny policy's entropy is below float32 finite
// differences' resolution, its entropies being near ln V; tests/trainer/grpo/loop-trl19.test.ts checks that it flows.)
import { describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { BuiltinPolicy } from '../../../models/builtin/policy.ts';
import { Rng } from '../../../core/rng.ts';
import { grpoLoss, IMPORTANCE_SAMPLING_LEVELS, LOSS_TYPES, type LossOptions } from '../../../trainer/loss/loss.ts';
import { stepNormalisers } from '../../../trainer/loss/loss-normalisers.ts';
import { entropyThreshold } from '../../../trainer/loss/entropy-mask.ts';
import type { SequenceBatchItem } from '../../../models/types.ts';
import { blankImage } from '../../../core/image.ts';

function tinyPolicy(): BuiltinPolicy {
  const policy = BuiltinPolicy.create({
    architecture: { dModel: 16, nLayers: 2, nHeads: 2, dMlp: 32, imageSize: 8, patchSize: 4, maxContext: 64 },
    seed: 3,
    lora: { r: 2, alpha: 4 },
  });
  // Fresh adapters have B = 0; give B values so the A path has a gradient too and the policy differs from the reference.
  const rng = new Rng(7, 'lora-b');
  for (const v of policy.trainableVariables('lora')) {
    v.assign(
      tf.tensor(
        Float32Array.from({ length: v.size }, () => rng.normal() * 0.3),
        v.shape,
      ),
    );
  }
  return policy;
}

function batchOf(policy: BuiltinPolicy): SequenceBatchItem[] {
  const image = blankImage(8, 8, [30, 200, 90]);
  image.data[5] = 250;
  const withImage = policy.encode([
    { type: 'text', text: '2|' },
    { type: 'image', image },
    { type: 'text', text: ':' },
  ]);
  const textOnly = policy.encode([{ type: 'text', text: '1|1 swap 3|2 swap 3:' }]);
  return [
    { prompt: textOnly, completion: policy.encodeTarget('2') },
    { prompt: textOnly, completion: policy.encodeTarget('13') },
    { prompt: withImage, completion: policy.encodeTarget('3') },
    { prompt: withImage, completion: policy.encodeTarget('1') },
  ];
}

describe('GRPO loss gradient (built-in policy, tiny)', () => {
  const cases: { name: string; options: Partial<LossOptions> }[] = [
    // Sequence ratios here are 1.076, 0.989, 0.956, 0.999 (advantages +, −, +, −): ε = 0.03 / ε_high = 0.05 clips the
    // first from above and leaves every ratio at least 0.014 from a bound.
    // TRL 1.9's types at the levels the config accepts: cispo and vespo at token level, luspo at sequence
    // level. cispo's weight min(ρ, ε_max) is detached; with ε_max = 0.12 every ratio is clipped, so it is the constant
    // 0.12 and the loss's own derivative is the gradient. vespo's φ is detached too; with k = λ = 0 (λ floored at
    // 1e-4) it is 1 to 1e-4, so the finite differences check the rest of its path (tests/trainer/loss/loss-family-trl19.test.ts
    // pins φ itself).
    ...LOSS_TYPES.flatMap((lossType) =>
      IMPORTANCE_SAMPLING_LEVELS.filter(
        (level) => !(level === 'sequence' ? ['cispo', 'vespo'] : ['luspo']).includes(lossType),
      ).map((level) => ({
        name: `${lossType}, ${level} level`,
        options: {
          ...(level === 'token'
            ? { lossType, importanceSamplingLevel: level, epsilonHigh: 0.12 }
            : { lossType, importanceSamplingLevel: level, epsilon: 0.03, epsilonHigh: 0.05 }),
          ...(lossType === 'vespo' ? { vespo: { kPos: 0, lambdaPos: 0, kNeg: 0, lambdaNeg: 0 } } : {}),
        },
      })),
    ),
    {
      name: 'grpo, token level, delta, off-policy mask and bias-corrected KL',
      options: {
        lossType: 'grpo',
        epsilonHigh: 0.12,
        delta: 1.13,
        offPolicyMaskThreshold: 0.01,
        useBiasCorrectionKl: true,
      },
    },
    {
      name: 'dapo, token level, truncation and entropy masks',
      options: { lossType: 'dapo', epsilonHigh: 0.12, maskTruncatedCompletions: true, topEntropyQuantile: 0.5 },
    },
  ];
  for (const { name, options } of cases) {
    it(`matches finite differences (${name})`, () => {
      const policy = tinyPolicy();
      const batch = batchOf(policy);
      const variables = policy.trainableVariables('lora');
      // The "old" policy: the adapters a little away from the current ones, so ratios differ from 1 (by up to 15%: with ε = 0.1 one token is clipped, none is near a boundary).
      const saved = variables.map((v) => v.dataSync().slice() as Float32Array);
      variables.forEach((v, i) =>
        v.assign(
          tf.tensor(
            saved[i].map((x, j) => x * (j % 2 ? 0.2 : 1.8)),
            v.shape,
          ),
        ),
      );
      const old = tf.keep(tf.tidy(() => policy.tokenLogProbs(batch, { useLora: true }).logProbs));
      variables.forEach((v, i) => v.assign(tf.tensor(saved[i], v.shape)));
      const ref = tf.keep(tf.tidy(() => policy.tokenLogProbs(batch, { useLora: false }).logProbs));
      const advantages = tf.keep(tf.tensor1d([1.2, -0.7, 0.9, -1.4]));
      // Step-wide divisors as the loop computes them: two local batches of two completions; the second completion
      // "hit the token limit", which only matters when truncated completions are masked.
      const finished = [true, false, true, true];
      const step = stepNormalisers(
        batch.map((b, i) => ({ tokens: b.completion.length, finished: finished[i] })),
        2,
        options.maskTruncatedCompletions ?? false,
      );
      // Entropies are constants of the step (no gradient), and so is the threshold they give.
      const entropies = tf.keep(
        tf.tidy(() => policy.tokenLogProbs(batch, { useLora: true, withEntropy: true }).entropy!),
      );
      const all: LossOptions = {
        epsilon: 0.1,
        beta: 0.1,
        lossType: 'grpo',
        maxCompletionTokens: 4,
        totalSequences: 4,
        totalTokens: step.totalTokens,
        localBatches: step.localBatches,
        ...options,
      };
      const lossWith = () => {
        const lp = policy.tokenLogProbs(batch, { useLora: true });
        const threshold =
          all.topEntropyQuantile !== undefined
            ? entropyThreshold(entropies, lp.mask, all.topEntropyQuantile)
            : undefined;
        return grpoLoss(
          {
            logProbs: lp.logProbs,
            oldLogProbs: old,
            refLogProbs: ref,
            mask: lp.mask,
            advantages,
            finished,
            entropies,
            localBatchTokens: step.localBatchTokens,
          },
          { ...all, entropyThreshold: threshold },
        );
      };
      const lossOf = () => lossWith().loss;
      const { grads } = tf.variableGrads(lossOf, variables);
      // Both branches of the clipped surrogate occur in this batch.
      const clipped = tf.tidy(() => {
        const out = lossWith();
        return [out.sums.clipRegion.dataSync()[0], out.sums.clipUnits.dataSync()[0]];
      });
      expect(clipped[0]).toBeGreaterThan(0);
      expect(clipped[0]).toBeLessThan(clipped[1]);
      const lossAt = () => tf.tidy(() => lossOf().dataSync()[0]);

      const rng = new Rng(11, 'coords');
      const h = 5e-3;
      const analytics: number[] = [];
      const numerics: number[] = [];
      for (let k = 0; k < 24; k++) {
        const vi = rng.int(variables.length);
        const v = variables[vi];
        const j = rng.int(v.size);
        const analytic = grads[v.name].dataSync()[j];
        const values = v.dataSync().slice() as Float32Array;
        const at = (x: number) => {
          const copy = values.slice();
          copy[j] = x;
          v.assign(tf.tensor(copy, v.shape));
          return lossAt();
        };
        const numeric = (at(values[j] + h) - at(values[j] - h)) / (2 * h);
        v.assign(tf.tensor(values, v.shape));
        analytics.push(analytic);
        numerics.push(numeric);
        // float32 central differences: the loss is ~1 with round-off ~1e-7, so ~2e-5 / h of noise, plus truncation ~h².
        expect(
          Math.abs(analytic - numeric),
          `variable ${vi} index ${j}: analytic ${analytic} numeric ${numeric}`,
        ).toBeLessThan(5e-5 + 0.03 * Math.abs(numeric));
      }
      // Over all sampled coordinates: relative error of the gradient vector under 2%, and real (non-zero) gradients.
      const norm = (xs: number[]) => Math.sqrt(xs.reduce((s, x) => s + x * x, 0));
      const error = norm(analytics.map((a, i) => a - numerics[i]));
      expect(error / norm(numerics)).toBeLessThan(0.02);
      expect(Math.max(...analytics.map(Math.abs))).toBeGreaterThan(1e-3);
    });
  }
});
