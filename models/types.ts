// The data every model exchanges with the trainer (trainer/), the evaluator (eval/) and `metrl serve`:
// a ModelInput (text and raw images in order, the form any chat message reduces to), its tokenised EncodedPrompt, the
// Completions a sampler draws and the per-token log-probabilities a learner computes. The contracts that use them are
// models/sampler.ts, models/learner.ts and models/policy.ts.
import type * as tf from '@tensorflow/tfjs';
import type { RawImage } from '../core/image.ts';
import type { PromptPrint } from './prompt-print.ts';

/** What the model reads: text and images interleaved, in order. */
export type ModelInputPart = { type: 'text'; text: string } | { type: 'image'; image: RawImage };
export type ModelInput = ModelInputPart[];

/** A prompt after tokenisation: token ids (image positions hold the image token) and the image patches in order. */
export interface EncodedPrompt {
  tokens: number[];
  /** One entry per image, each [patchesPerImage * patchDim] pixel values scaled to [0, 1]. */
  images: Float32Array[];
}

export interface SamplingOptions {
  temperature: number; // 0 = greedy
  topP: number; // nucleus sampling, 1 = off
  /** Draw from the k most probable tokens only (TRL's and vLLM's top_k); unset or 0 = off. */
  topK?: number;
  /** Draw only tokens at least minP × the most probable token's probability (TRL's and vLLM's min_p); unset or 0 = off. */
  minP?: number;
  maxNewTokens: number;
  /** Also keep the k most likely tokens of every draw (OpenAI's top_logprobs; absent or 0: none). */
  topLogProbs?: number;
}

/** One of the most likely tokens at a draw, with its log-probability at temperature 1. */
export interface TopLogProb {
  token: number;
  logProb: number;
}

export interface Completion {
  /** Generated token ids, ending with EOS when the model stopped by itself. */
  tokens: number[];
  /** Decoded text (without EOS). */
  text: string;
  /**
   * Log-probability of each generated token: at temperature 1 from the in-process samplers, as the server returns them
   * from a rollout server (at the rollout temperature with vLLM's processed_logprobs).
   */
  logProbs: Float32Array;
  /**
   * Log-probability of each token under the distribution the sampler drew it from, on the learner's support:
   * softmax(logits / T) over the whole vocabulary, what the learner's tokenLogProbs gives at the rollout temperature
   * (models/token-sampling.ts); a rollout server's own log-probs. The trainer compares them with the learner's.
   */
  samplingLogProbs?: Float32Array;
  /** From a rollout server: the prompt the server was sent, as the trainer's processor reads it (models/prompt-print.ts). */
  sentPrompt?: PromptPrint;
  /** True when generation stopped at EOS, false when it hit maxNewTokens. */
  finished: boolean;
  /** With SamplingOptions.topLogProbs k: for each generated token, the k most likely tokens at its draw, best first. */
  topLogProbs?: TopLogProb[][];
  /** Sampled on a rollout server (models/remote/): its URL and the adapter version (optimiser updates) it held. */
  origin?: { server: string; adapterVersion: number };
}

export interface SequenceBatchItem {
  prompt: EncodedPrompt;
  completion: number[];
}

/** Per-token quantities for a batch of (prompt, completion) pairs, padded to the longest completion. */
export interface TokenLogProbs {
  /** [batch, maxCompletionLen] log p(token) at temperature 1. */
  logProbs: tf.Tensor2D;
  /** [batch, maxCompletionLen] 1 for real tokens, 0 for padding. */
  mask: tf.Tensor2D;
  /** [batch, maxCompletionLen] entropy of the next-token distribution (for logging; no gradient needed). */
  entropy?: tf.Tensor2D;
}

export interface TokenLogProbsOptions {
  useLora: boolean;
  withEntropy?: boolean;
  /** Log-probabilities of softmax(logits / temperature): the policy that samples at this temperature (default 1). */
  temperature?: number;
}
