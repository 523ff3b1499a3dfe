// The work that `npm run bench -- cores` times (bench/cores.bench.ts), shared with its two-process ceiling
// (bench/cores-half.ts): one GRPO step's three ONNX Runtime phases on the shipped base with adapters that do
// something, 4 prompts × 8 completions forced to 376 tokens (chess image) or 101 (shell text), EOS never drawn;
// reference log-probs and the learner over the loop's chunks (3 + 3 + 2 sequences per chess group, one chunk per shell
// group). `prompts` picks which of the 4 prompts a process works on (the ceiling's halves take 2 each).
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { loadBaseCheckpoint } from '../models/builtin/base-checkpoint.ts';
import { loraAdapters } from '../models/builtin/lora.ts';
import type { BuiltinPolicy } from '../models/builtin/policy.ts';
import type { BuiltinOrtLearner } from '../models/onnx/builtin/builtin-learner.ts';
import type { BuiltinOrtSampler } from '../models/onnx/builtin/builtin-sampler.ts';
import { CHECKPOINTS_DIR } from '../core/paths.ts';
import { getEnv } from '../envs/registry.ts';
import { generateEpisodes } from '../envs/generate.ts';
import { Rng } from '../core/rng.ts';
import type { EncodedPrompt, TokenLogProbs } from '../models/types.ts';

export const CORES_DOMAINS = [
  ['shell', 'text', 101],
  ['chess', 'image', 376],
] as const;
export type CoresDomain = (typeof CORES_DOMAINS)[number][0];
export const CORES_PHASES = ['rollout', 'reference', 'update (no AdamW)'] as const;
export type CoresPhase = (typeof CORES_PHASES)[number];

export interface CoresWorkload {
  policy: BuiltinPolicy;
  /** Runs one phase of repetition `rep` on this sampler and learner (a rollout first: the others score its completions). */
  phase(phase: CoresPhase, rep: number, sampler: BuiltinOrtSampler, learner: BuiltinOrtLearner): void;
}

export async function coresWorkload(domain: CoresDomain, which: [number, number] = [0, 4]): Promise<CoresWorkload> {
  const [, modality, tokens] = CORES_DOMAINS.find(([d]) => d === domain)!;
  const policy = loadBaseCheckpoint(join(CHECKPOINTS_DIR, 'base'));
  policy.attachLora({ r: 16, alpha: 32 }, new Rng(7, 'lora'));
  // Adapters that do something (fresh ones have B = 0), the same in every run.
  for (const [i, a] of loraAdapters(policy.lora!).entries())
    a.b.assign(tf.randomUniform(a.b.shape, -0.05, 0.05, 'float32', 11 + i));
  const env = await getEnv(domain);
  const prompts: EncodedPrompt[] = generateEpisodes(env, { n: 4, actions: 5, split: 'train', seed: 0, modality })
    .map((e) => policy.prompt(env, e))
    .slice(...which);
  Object.defineProperty(policy, 'tokenizer', {
    value: Object.create(policy.tokenizer, { eos: { value: -1 } }),
    configurable: true,
    writable: true,
  });
  const variables = policy.trainableVariables('lora');
  const loss = (lp: TokenLogProbs) =>
    tf.sum(tf.mul(lp.mask, tf.add(tf.mul(lp.logProbs, 0.3), tf.exp(lp.logProbs)))) as tf.Scalar;
  const cuts =
    domain === 'chess'
      ? [
          [0, 3],
          [3, 6],
          [6, 8],
        ]
      : [[0, 8]];
  let chunks: { prompt: EncodedPrompt; completion: number[] }[][] = [];
  return {
    policy,
    phase(phase, rep, sampler, learner) {
      if (phase === 'rollout') {
        const groups = sampler.sampleGroups(
          prompts,
          8,
          { temperature: 0.5, topP: 1, maxNewTokens: tokens },
          new Rng(rep),
        );
        const seqs = prompts.flatMap((p, k) => groups[k].map((c) => ({ prompt: p, completion: c.tokens })));
        chunks = prompts.flatMap((_, k) => cuts.map(([a, b]) => seqs.slice(k * 8 + a, k * 8 + b)));
      } else if (phase === 'reference') {
        sampler
          .tokenLogProbsMany(chunks, { useLora: false, temperature: 0.5 })
          .forEach((lp) => tf.dispose([lp.logProbs, lp.mask]));
      } else {
        const r = learner.lossGradientsSum(
          chunks.map((batch) => ({ batch, options: { useLora: true, withEntropy: true, temperature: 0.5 }, loss })),
          variables,
        );
        tf.dispose([...r.values, ...Object.values(r.grads)]);
      }
    },
  };
}
