// The Learner contract: what trains. Differentiable log-probabilities of completions under the
// policy, the variables an optimiser updates, and the LoRA adapters GRPO trains, saved and loaded in PEFT layout
// (adapter_config.json + adapter_model.safetensors) so a run's checkpoints are readable by PEFT. See
// models/sampler.ts for the generating side.
import * as tf from '@tensorflow/tfjs';
import type { Rng } from '../core/rng.ts';
import type { SequenceBatchItem, TokenLogProbs, TokenLogProbsOptions } from './types.ts';

/** The LoRA settings a run chooses (the target modules are the architecture's). */
export interface LoraSettings {
  r: number;
  alpha: number;
  /** Projections that get adapters (PEFT module names q_proj … down_proj, or q, k, v, o, gate, up, down); default: the architecture's. */
  targets?: readonly string[];
}

/** A loss of the completion log-probabilities (the GRPO objective of one learner chunk). */
export type LogProbLoss = (lp: TokenLogProbs) => tf.Scalar;

/** One chunk of lossGradientsSum: its sequences, how to score them, its loss. */
export interface LossRequest {
  batch: SequenceBatchItem[];
  options: TokenLogProbsOptions;
  loss: LogProbLoss;
}

/** The loss value and its gradient per trainable variable, keyed by variable name (as tf.variableGrads gives them). */
export interface LossGradients {
  value: tf.Scalar;
  grads: tf.NamedTensorMap;
}

/** The losses of several chunks, in chunk order, and the gradient of their sum per trainable variable. */
export interface SummedLossGradients {
  values: tf.Scalar[];
  grads: tf.NamedTensorMap;
}

export interface Learner {
  /**
   * Log-probabilities of the completion tokens. Differentiable with respect to the trainable variables when called
   * inside tf.variableGrads / tf.grads. `useLora: false` gives the reference policy (the frozen base).
   */
  tokenLogProbs(batch: SequenceBatchItem[], options: TokenLogProbsOptions): TokenLogProbs;
  /**
   * Optional: the tokens one tokenLogProbs pass over `batch` runs through the network, when that is not the sum of
   * the sequences' lengths (a Hugging Face policy runs a group's shared prompt once). The trainer bounds its learner
   * chunks by this instead of by the sum; a learner without it (the built-in model) is chunked by the sum.
   */
  passTokens?(batch: readonly SequenceBatchItem[]): number;
  /** Variables the optimiser updates: the LoRA adapters in RL, all base weights in supervised pretraining. */
  trainableVariables(scope: 'lora' | 'base'): tf.Variable[];
  /** Attach fresh adapters (B = 0, so the function is unchanged), replacing any present; the base becomes frozen. */
  attachLora(settings: LoraSettings, rng: Rng): void;
  /** Files saveAdapter writes, all of which must exist for a saved adapter to be complete. */
  readonly adapterFiles: readonly string[];
  /** Write the adapters in PEFT layout; `baseModel` goes into adapter_config.json's base_model_name_or_path. */
  saveAdapter(dir: string, options?: { baseModel?: string }): void;
  /** Attach the adapters stored in `dir` (UserError when they do not fit the model); returns their settings. */
  loadAdapter(dir: string): LoraSettings;
  /**
   * The loss of `batch`'s log-probabilities (computed with `options`) and its gradients with respect to `variables`
   * (trainableVariables('lora') in RL). Optional: a learner without it is differentiated by tfjs autodiff
   * (lossGradients below); the ONNX Runtime learner (models/onnx/builtin/builtin-learner.ts) computes them in ORT.
   */
  lossGradients?(
    batch: SequenceBatchItem[],
    options: TokenLogProbsOptions,
    loss: LogProbLoss,
    variables: tf.Variable[],
  ): LossGradients;
  /**
   * Optional: the losses of several chunks at once (evaluated in chunk order) and the gradient of their sum, which is
   * what one pass of the trainer needs: a learner may then run a prompt group whose completions fall in several
   * chunks once (its prompt computed once a pass), or spread the work over cores (models/onnx/builtin/builtin-learner.ts).
   */
  lossGradientsSum?(requests: LossRequest[], variables: tf.Variable[]): SummedLossGradients;
  /**
   * Optional: build now what the first gradient pass would otherwise build (the ONNX Runtime learners' sessions for
   * the attached adapters), so that a run opens them before its first step's clock starts and a step's time is that
   * step's work. Calling it again with the same adapters does nothing.
   */
  open?(): void;
  dispose(): void;
}

/** The learner's own lossGradients, or tfjs autodiff through its tokenLogProbs (the reference implementation). */
export function lossGradients(
  learner: Learner,
  batch: SequenceBatchItem[],
  options: TokenLogProbsOptions,
  loss: LogProbLoss,
  variables: tf.Variable[],
): LossGradients {
  if (learner.lossGradients) return learner.lossGradients(batch, options, loss, variables);
  return tf.variableGrads(() => loss(learner.tokenLogProbs(batch, options)), variables);
}

/**
 * The losses of the chunks (in chunk order) and the sum of their gradients: the learner's lossGradientsSum, or one chunk
 * after another, each chunk's gradients added to the running sum and disposed, so that a learner without it (tfjs,
 * Hugging Face models, whose LoRA gradients per chunk are tens of MB of a tight WASM heap) holds one chunk's gradients
 * besides the sum.
 */
export function summedLossGradients(
  learner: Learner,
  requests: LossRequest[],
  variables: tf.Variable[],
): SummedLossGradients {
  if (learner.lossGradientsSum) return learner.lossGradientsSum(requests, variables);
  const values: tf.Scalar[] = [];
  let grads: tf.NamedTensorMap | null = null;
  for (const r of requests) {
    const one = lossGradients(learner, r.batch, r.options, r.loss, variables);
    values.push(one.value);
    if (grads === null) grads = one.grads;
    else {
      const sum: tf.NamedTensorMap = {};
      for (const name of Object.keys(one.grads)) sum[name] = tf.add(grads[name], one.grads[name]);
      tf.dispose([...Object.values(grads), ...Object.values(one.grads)]);
      grads = sum;
    }
  }
  return { values, grads: grads ?? {} };
}
