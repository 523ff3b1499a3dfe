// The Sampler contract: what generates. It encodes prompts, draws completions (rollouts, evaluation,
// `metrl serve`) and scores given completions without gradients (the reference and old-policy log-probs of GRPO).
// Every policy is a Sampler on tfjs; ONNX Runtime's samplers (models/onnx/) and rollout servers (models/remote/) are
// others for the same architecture, their LoRA weights synced from the Learner after each update.
import type { Rng } from '../core/rng.ts';
import type { PromptFormat } from './prompt-format.ts';
import type {
  Completion,
  EncodedPrompt,
  ModelInput,
  SamplingOptions,
  SequenceBatchItem,
  TokenLogProbs,
  TokenLogProbsOptions,
} from './types.ts';

export interface Sampler extends PromptFormat {
  /** Longest sequence (prompt + completion, in tokens) the model is used with; longer requests are refused. */
  readonly contextLimit: number;
  /** Width and height in pixels of the images the model reads (environments render image actions at this size); 0 for a text-only model. */
  readonly imageSize: number;
  /** The token id a prompt holds at each image position (undefined for a text-only model): image tokens are counted by it. */
  readonly imageTokenId?: number;
  /** Tokenise a model input (text and images in order). */
  encode(input: ModelInput): EncodedPrompt;
  decode(tokens: number[]): string;
  /** Sample `group` completions of one prompt; the prompt is run once and its KV cache shared by the group. */
  sampleGroup(prompt: EncodedPrompt, group: number, options: SamplingOptions, rng: Rng): Completion[];
  /**
   * Several prompts' groups (result per prompt, in order). An engine that decodes prompts together does it in one
   * batch (each decoding step serves every prompt); one that cannot uses sampleEachPrompt below.
   */
  sampleGroups(prompts: EncodedPrompt[], group: number, options: SamplingOptions, rng: Rng): Completion[][];
  /**
   * Optional: sampleGroups on something outside the process (rollout servers over HTTP, models/remote/), which can only
   * answer asynchronously. The trainer's rollout phase awaits it where present; everything else (evaluation, scoring)
   * stays synchronous and in-process. Completions may say where they were sampled (Completion.origin).
   */
  sampleGroupsAsync?(
    prompts: EncodedPrompt[],
    group: number,
    options: SamplingOptions,
    rng: Rng,
  ): Promise<Completion[][]>;
  /** Log-probabilities of given completions, for use without gradients (reference and old policy in GRPO). */
  tokenLogProbs(batch: SequenceBatchItem[], options: TokenLogProbsOptions): TokenLogProbs;
  /**
   * Optional: tokenLogProbs of several batches at once (the trainer's learner chunks), each result the one tokenLogProbs
   * gives for its batch; an engine that spreads them over cores has it (models/onnx/builtin/builtin-sampler.ts).
   */
  tokenLogProbsMany?(batches: SequenceBatchItem[][], options: TokenLogProbsOptions): TokenLogProbs[];
  /** Free the weights (tensors, sessions). */
  dispose(): void;
}

/** The default sampleGroups: one sampleGroup call per prompt, in order (the same Rng draws as calling it yourself). */
export function sampleEachPrompt(
  sampler: Pick<Sampler, 'sampleGroup'>,
  prompts: EncodedPrompt[],
  group: number,
  options: SamplingOptions,
  rng: Rng,
): Completion[][] {
  return prompts.map((p) => sampler.sampleGroup(p, group, options, rng));
}
