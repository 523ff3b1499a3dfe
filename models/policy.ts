// The Policy contract: one model that both samples (models/sampler.ts, with its prompt format) and
// learns (models/learner.ts). What models/registry.ts loads, what `metrl train`, `metrl evaluate` and `metrl serve`
// use; the trainer uses the Sampler side for rollouts and no-grad log-probs and the Learner side for the update, and an
// engine (models/engine.ts: ONNX Runtime, rollout servers) may take either side's place. Implemented by BuiltinPolicy
// (models/builtin/) and HfPolicy (models/hf/policy.ts).
import type { Learner } from './learner.ts';
import type { Sampler } from './sampler.ts';

/** How a loader (models/registry.ts) places a checkpoint's weights. */
export interface LoadOptions {
  /**
   * The policy will run on ONNX Runtime (--engine ort): a Hugging Face checkpoint's weights are held in host memory
   * (tfjs's CPU backend, plain arrays the ORT graphs are built from) rather than in the WASM heap, which caps at 4 GB.
   */
  hostWeights?: boolean;
}

export interface Policy extends Sampler, Learner {
  /** Token ids the model has embeddings for: 0 … vocabSize − 1 (what an id from outside is checked against). */
  readonly vocabSize: number;
  /** Both sides free the same weights. */
  dispose(): void;
}
