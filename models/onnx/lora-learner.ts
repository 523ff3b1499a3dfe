// What both ONNX Runtime learners share (the built-in model's, builtin/builtin-learner.ts, and a Hugging Face
// checkpoint's, hf/hf-learner.ts): the LoRA gradients of a loss of the completion log-probabilities in three parts,
//   1. every job's forward: the log-probs (and entropies) of its completion tokens, from the very forward that step 3
//      differentiates;
//   2. the loss and g = dLoss/dlogp of each request (a learner chunk), in tfjs on those small [B, L] tensors, with the
//      caller's own loss function (logp-loss.ts), so every loss type of trainer/loss/loss.ts works unchanged: a loss
//      depends on the adapters only through the log-probs;
//   3. every job's forward + backward with g at its tokens, returning the gradient of Σ g · logp with respect to every
//      LoRA A and B, which by the chain rule is dLoss/dθ; the jobs' gradients summed in job order.
// A job is one prompt group: a prompt, a temperature and completions of it over all the pass's requests, so the prompt
// runs once a pass whatever chunks the caller cut (lossGradientsSum takes them all at once). What a job holds and how
// its graphs run are the learner's hooks (jobs, forward, backward). The tfjs variables stay the parameters: AdamW
// updates them, checkpoints save them, and their values are fed on every run, so no session is rebuilt after an
// update. Everything else of the Learner contract (tfjs tokenLogProbs, adapters, saving) is the wrapped policy's.
import * as tf from '@tensorflow/tfjs';
import type { Rng } from '../../core/rng.ts';
import type {
  Learner,
  LogProbLoss,
  LossGradients,
  LossRequest,
  LoraSettings,
  SummedLossGradients,
} from '../learner.ts';
import type { Policy } from '../policy.ts';
import type { EncodedPrompt, SequenceBatchItem, TokenLogProbs, TokenLogProbsOptions } from '../types.ts';
import { logpLossAndGradient } from './logp-loss.ts';
import type { Feeds } from './session.ts';

/** The requests of one pass, their temperatures and their [B, L] shapes (L: the longest completion). */
export interface LearnerPass {
  requests: LossRequest[];
  temperatures: number[];
  shapes: { B: number; L: number }[];
}

/** A prompt group: its members (request r, batch index b) in request order. */
export interface LearnerJob {
  prompt: EncodedPrompt;
  temperature: number;
  members: { r: number; b: number }[];
}

/** One job's forward: token j of member m's completion. */
export interface JobScores {
  logp(m: number, j: number): number;
  /** Asked for only when the member's request wants entropies. */
  entropy(m: number, j: number): number;
}

export abstract class OrtLoraLearner<P extends Policy, J extends LearnerJob> implements Learner {
  readonly adapterFiles: readonly string[];

  constructor(readonly policy: P) {
    this.adapterFiles = policy.adapterFiles;
  }

  /** Graph param name of every attached adapter variable, by variable name (a learner without adapters refuses). */
  protected abstract paramNames(requests: LossRequest[]): Map<string, string>;
  /** The graph output holding a param's gradient. */
  protected abstract gradName(param: string): string;
  protected abstract vocabSize(): number;
  /** The tfjs policy's own length check (the same error for both engines). */
  protected abstract checkLength(promptTokens: number, completionTokens: number): void;
  /** The pass's jobs, in the order their gradients are summed. */
  protected abstract jobs(pass: LearnerPass): J[];
  /** Step 1: every job's token log-probs (and entropies). */
  protected abstract forward(jobs: J[], pass: LearnerPass): JobScores[];
  /** Step 3: every job's gradients (`wanted`, graph output names), g(k, m, j) at token j of job k's member m. */
  protected abstract backward(
    jobs: J[],
    pass: LearnerPass,
    g: (k: number, m: number, j: number) => number,
    wanted: string[],
  ): Feeds[];

  tokenLogProbs(batch: SequenceBatchItem[], options: TokenLogProbsOptions): TokenLogProbs {
    return this.policy.tokenLogProbs(batch, options);
  }
  trainableVariables(scope: 'lora' | 'base'): tf.Variable[] {
    return this.policy.trainableVariables(scope);
  }
  attachLora(settings: LoraSettings, rng: Rng): void {
    this.policy.attachLora(settings, rng);
  }
  saveAdapter(dir: string, options?: { baseModel?: string }): void {
    this.policy.saveAdapter(dir, options);
  }
  loadAdapter(dir: string): LoraSettings {
    return this.policy.loadAdapter(dir);
  }

  lossGradients(
    batch: SequenceBatchItem[],
    options: TokenLogProbsOptions,
    loss: LogProbLoss,
    variables: tf.Variable[],
  ): LossGradients {
    const { values, grads } = this.lossGradientsSum([{ batch, options, loss }], variables);
    return { value: values[0], grads };
  }

  /** The losses of the requests (chunks), evaluated in request order, and the gradient of their sum. */
  lossGradientsSum(requests: LossRequest[], variables: tf.Variable[]): SummedLossGradients {
    const paramOf = this.paramNames(requests);
    for (const v of variables)
      if (!paramOf.has(v.name))
        throw new Error(`the ONNX Runtime learner has no gradient for ${v.name} (LoRA adapters only)`);
    for (const { batch } of requests)
      for (const it of batch) this.checkLength(it.prompt.tokens.length, it.completion.length);
    const V = this.vocabSize();
    const temperatures = requests.map(({ options }) => {
      const T = options.temperature ?? 1;
      if (!(T > 0)) throw new Error(`temperature must be positive, got ${T}`);
      return T;
    });
    for (const { batch } of requests)
      for (const it of batch)
        for (const t of it.completion)
          if (!(t >= 0 && t < V)) throw new Error(`completion token ${t} outside the vocabulary`);
    const shapes = requests.map(({ batch }) => ({
      B: batch.length,
      L: Math.max(0, ...batch.map((it) => it.completion.length)),
    }));
    const pass: LearnerPass = { requests, temperatures, shapes };
    const jobs = this.jobs(pass);

    // 1. Every job's forward, into its requests' [B, L] arrays.
    const lps = shapes.map(({ B, L }) => ({
      logp: new Float32Array(B * L),
      entropy: new Float32Array(B * L),
      mask: new Float32Array(B * L),
    }));
    this.forward(jobs, pass).forEach((scores, k) =>
      jobs[k].members.forEach(({ r, b }, m) => {
        const { L } = shapes[r];
        const { logp, entropy, mask } = lps[r];
        const withEntropy = requests[r].options.withEntropy ?? false;
        for (let j = 0; j < requests[r].batch[b].completion.length; j++) {
          logp[b * L + j] = scores.logp(m, j);
          mask[b * L + j] = 1;
          if (withEntropy) entropy[b * L + j] = scores.entropy(m, j);
        }
      }),
    );
    // 2. The losses and g = dLoss/dlogp, request by request, in tfjs.
    const losses = requests.map(({ options, loss }, r) => logpLossAndGradient(lps[r], shapes[r], options, loss));
    // 3. Every job's forward + backward with g at its tokens; the gradients summed in job order.
    const wanted = variables.map((v) => this.gradName(paramOf.get(v.name)!));
    const g = (k: number, m: number, j: number) => {
      const { r, b } = jobs[k].members[m];
      return losses[r].g[b * shapes[r].L + j];
    };
    const sums = new Map<string, Float32Array>();
    for (const out of this.backward(jobs, pass, g, wanted)) {
      for (const name of wanted) {
        const data = out[name].data as Float32Array;
        const sum = sums.get(name);
        if (sum) for (let i = 0; i < data.length; i++) sum[i] += data[i];
        else sums.set(name, Float32Array.from(data));
      }
    }
    const grads: tf.NamedTensorMap = {};
    for (const v of variables) {
      const sum = sums.get(this.gradName(paramOf.get(v.name)!));
      grads[v.name] = sum ? tf.tensor(sum, v.shape) : tf.zerosLike(v);
    }
    return { values: losses.map(({ value }) => value), grads };
  }

  /** Releases the ORT sessions; the wrapped policy stays its owner's to dispose. */
  abstract dispose(): void;
}
