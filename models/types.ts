// The contract between the built-in policy (models/), the GRPO trainer (trainer/), the evaluator (eval/) and
// `metrl serve`. A policy reads a ModelInput — text and raw images in order, the form any chat message reduces to —
// and produces token completions with their log-probabilities. The trainer only ever sees this interface, so another
// engine (ONNX Runtime, a remote server) can generate while tfjs learns.
import type * as tf from '@tensorflow/tfjs';
import type { RawImage } from '../core/image.ts';
import type { Rng } from '../core/rng.ts';

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
  maxNewTokens: number;
}

export interface Completion {
  /** Generated token ids, ending with EOS when the model stopped by itself. */
  tokens: number[];
  /** Decoded text (without EOS). */
  text: string;
  /** Log-probability of each generated token under the sampling policy (temperature 1 softmax of the logits). */
  logProbs: Float32Array;
  /** True when generation stopped at EOS, false when it hit maxNewTokens. */
  finished: boolean;
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

export interface Policy {
  /** Architecture description, saved with checkpoints and checked on load. */
  readonly architecture: Record<string, unknown>;
  /** Tokenise a model input (text parts character by character, images as patch tokens). */
  encode(input: ModelInput): EncodedPrompt;
  decode(tokens: number[]): string;
  /** Sample `group` completions of one prompt; the prompt is run once and its KV cache shared by the group. */
  sampleGroup(prompt: EncodedPrompt, group: number, options: SamplingOptions, rng: Rng): Completion[];
  /**
   * Optional: several prompts' groups decoded as one batch (result per prompt, in order). Same samples as calling
   * sampleGroup prompt by prompt with greedy decoding; faster, as each decoding step serves every prompt.
   */
  sampleGroups?(prompts: EncodedPrompt[], group: number, options: SamplingOptions, rng: Rng): Completion[][];
  /**
   * Log-probabilities of the completion tokens. Differentiable with respect to the trainable variables when called
   * inside tf.variableGrads / tf.grads. `useLora: false` gives the reference policy (the frozen base).
   */
  tokenLogProbs(batch: SequenceBatchItem[], options: TokenLogProbsOptions): TokenLogProbs;
  /** Variables the optimiser updates: the LoRA adapters in RL, all base weights in supervised pretraining. */
  trainableVariables(scope: 'lora' | 'base'): tf.Variable[];
}
