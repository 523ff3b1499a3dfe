// The built-in vision-language policy: tokenizer + transformer weights + optional
// LoRA adapters behind the Policy contract (models/policy.ts) that the trainer, the evaluator and `metrl serve` use.
// It is its own Sampler and Learner. Supervised pretraining trains trainableVariables('base') with LoRA off; GRPO
// trains trainableVariables('lora'), and `useLora: false` gives the frozen reference policy from the same weights.
// Episodes become prompts through the compact template (template.ts).
import * as tf from '@tensorflow/tfjs';
import { Rng } from '../../core/rng.ts';
import { UserError, parseOrFail } from '../../core/errors.ts';
import type { ChatMessage } from '../../core/chat.ts';
import type { Episode } from '../../core/episode.ts';
import type { Env } from '../../envs/env.ts';
import type {
  Completion,
  EncodedPrompt,
  ModelInput,
  SamplingOptions,
  SequenceBatchItem,
  TokenLogProbs,
  TokenLogProbsOptions,
} from '../types.ts';
import type { Policy } from '../policy.ts';
import { ArchitectureSchema, LoraConfigSchema, patchesPerImage, type Architecture, type LoraConfig } from './config.ts';
import { CharTokenizer } from './tokenizer.ts';
import { initWeights, weightEntries, countParameters, type ModelWeights } from './weights.ts';
import { createLora, disposeLora, loraVariables, mergeLora, type LoraHost, type LoraSet } from './lora.ts';
import { forward, logits, type TransformerModel } from './transformer.ts';
import { packPrompts, sampleGroups } from './sampling.ts';
import { completionLogProbs } from './scoring.ts';
import { imageToPatches, resizeImage } from './vision.ts';
import { chatToModelInput, episodeToModelInput, modelInputToChat, responseForScoring, targetText } from './template.ts';
import { ADAPTER_FILES, loadAdapter, saveAdapter } from './peft-adapter.ts';

export interface CreatePolicyOptions {
  architecture?: Partial<Architecture>;
  seed?: number | string;
  /** Attach fresh LoRA adapters with this configuration (B = 0, so the function is unchanged). */
  lora?: Partial<LoraConfig>;
  tokenizer?: CharTokenizer;
}

export class BuiltinPolicy implements Policy, TransformerModel, LoraHost {
  readonly arch: Architecture;
  readonly tokenizer: CharTokenizer;
  readonly weights: ModelWeights;
  lora: LoraSet | null = null;

  constructor(arch: Architecture, tokenizer: CharTokenizer, weights: ModelWeights) {
    if (tokenizer.vocabSize > arch.vocabSize)
      throw new UserError(`tokenizer has ${tokenizer.vocabSize} tokens but the model's vocabSize is ${arch.vocabSize}`);
    this.arch = arch;
    this.tokenizer = tokenizer;
    this.weights = weights;
  }

  /** A freshly initialised model (deterministic from the seed). */
  static create(options: CreatePolicyOptions = {}): BuiltinPolicy {
    const tokenizer = options.tokenizer ?? CharTokenizer.createDefault();
    const arch = ArchitectureSchema.parse({ vocabSize: tokenizer.vocabSize, ...options.architecture });
    const rng = new Rng(options.seed ?? 0, 'init');
    const policy = new BuiltinPolicy(arch, tokenizer, initWeights(arch, rng));
    if (options.lora) policy.attachLora(options.lora, new Rng(options.seed ?? 0, 'lora'));
    return policy;
  }

  get architecture(): Record<string, unknown> {
    return { ...this.arch };
  }

  get vocabSize(): number {
    return this.arch.vocabSize;
  }

  get contextLimit(): number {
    return this.arch.maxContext;
  }

  get imageSize(): number {
    return this.arch.imageSize;
  }

  get imageTokenId(): number | undefined {
    return this.arch.imageSize > 0 ? this.tokenizer.img : undefined;
  }

  get parameterCount(): number {
    return countParameters(weightEntries(this.weights).map((e) => e.variable));
  }

  /** Add fresh adapters (replacing any present). The base weights become frozen (trainable = false). */
  attachLora(config: Partial<LoraConfig> & { targets?: readonly string[] }, rng: Rng): LoraSet {
    const { targets, ...rest } = config;
    // Short names (q, up, …) as --lora-targets accepts them; the built-in model has no gate projection.
    const targetModules = targets?.map((t) => (/^(q|k|v|o|gate|up|down)$/.test(t) ? `${t}_proj` : t));
    const parsed = parseOrFail(
      LoraConfigSchema,
      { ...rest, ...(targetModules ? { targetModules } : {}) },
      'LoRA settings: ',
    );
    if (this.lora) disposeLora(this.lora);
    this.lora = createLora(this.weights, parsed, rng);
    this.setBaseFrozen(true);
    return this.lora;
  }

  /** Remove the adapters (without merging); the base becomes trainable again. */
  detachLora(): void {
    if (this.lora) disposeLora(this.lora);
    this.lora = null;
    this.setBaseFrozen(false);
  }

  /** A frozen variable gets no gradient computed (models/ops.ts), which saves a third of the backward pass. */
  private setBaseFrozen(frozen: boolean): void {
    for (const v of weightEntries(this.weights).map((e) => e.variable)) v.trainable = !frozen;
  }

  /** Fold the adapters into the base weights; the adapters stay attached with B = 0. */
  mergeLora(): void {
    if (this.lora) mergeLora(this.weights, this.lora);
  }

  encode(input: ModelInput): EncodedPrompt {
    const tokens = [this.tokenizer.bos];
    const images: Float32Array[] = [];
    for (const part of input) {
      // A loop, not push(...ids): a spread of a very long text's ids overflows the call stack.
      if (part.type === 'text') for (const id of this.tokenizer.encodeText(part.text)) tokens.push(id);
      else {
        images.push(imageToPatches(part.image, this.arch));
        for (let i = 0; i < patchesPerImage(this.arch); i++) tokens.push(this.tokenizer.img);
      }
    }
    return { tokens, images };
  }

  /**
   * Token ids of a target text followed by EOS: what supervised training asks the model to write. Without `eos` the
   * target is the beginning of a longer answer (a partial trace) and does not end there.
   */
  encodeTarget(text: string, options: { eos?: boolean } = {}): number[] {
    const tokens = this.tokenizer.encodeText(text);
    return options.eos === false ? tokens : [...tokens, this.tokenizer.eos];
  }

  decode(tokens: number[]): string {
    return this.tokenizer.decode(tokens);
  }

  /** The compact template, image actions rendered at the environment's model size (template.ts). */
  prompt(env: Env, episode: Episode): EncodedPrompt {
    return this.encode(episodeToModelInput(env, episode));
  }

  /**
   * Texts joined by newlines, images of exactly imageSize (the model read only its own renderings at that size; a
   * 512-px picture shrunk to 64 is misread, so it is refused), the answer cue appended when missing (template.ts).
   */
  async chatPrompt(messages: ChatMessage[]): Promise<EncodedPrompt> {
    return this.encode(
      await chatToModelInput(messages, { imageSize: this.arch.imageSize, answerCue: true, exactSize: true }),
    );
  }

  /**
   * The compact template as one user message (template.ts modelInputToChat), each image already at the size the model
   * reads (as encode resizes it), which chatPrompt then takes as it is: chatPrompt of it is prompt(env, episode).
   */
  promptMessages(env: Env, episode: Episode): Promise<ChatMessage[]> {
    const size = this.arch.imageSize;
    return modelInputToChat(
      episodeToModelInput(env, episode).map((p) =>
        p.type === 'image' ? { type: 'image', image: resizeImage(p.image, size, size) } : p,
      ),
    );
  }

  /** The template's prompt ends with the answer cue, so the completion is the answer's tail: the cue goes back in front. */
  responseOf(env: Env, completionText: string): string {
    return responseForScoring(env, completionText);
  }

  referenceTokens(env: Env, episode: Episode): number {
    return this.encodeTarget(targetText(env, episode)).length;
  }

  sampleGroup(prompt: EncodedPrompt, group: number, options: SamplingOptions, rng: Rng): Completion[] {
    return this.sampleGroups([prompt], group, options, rng)[0];
  }

  /** The architecture's maxContext is the longest sequence the model is used with: refuse longer ones plainly. */
  private checkLength(promptTokens: number, newTokens: number): void {
    if (promptTokens + newTokens > this.arch.maxContext) {
      throw new UserError(
        `a prompt of ${promptTokens} tokens plus ${newTokens} new tokens exceeds the model's context of ${this.arch.maxContext} tokens`,
      );
    }
  }

  /** Several prompts' groups decoded as one batch (fewer, larger steps than one sampleGroup per prompt). */
  sampleGroups(prompts: EncodedPrompt[], group: number, options: SamplingOptions, rng: Rng): Completion[][] {
    for (const p of prompts) this.checkLength(p.tokens.length, options.maxNewTokens);
    return sampleGroups(this, this.tokenizer, this.lora, prompts, group, options, rng);
  }

  /** Completion log-probabilities (see models/builtin/scoring.ts for the batch layout). */
  tokenLogProbs(items: SequenceBatchItem[], options: TokenLogProbsOptions): TokenLogProbs {
    for (const it of items) this.checkLength(it.prompt.tokens.length, it.completion.length);
    return completionLogProbs(
      this,
      this.tokenizer,
      options.useLora ? this.lora : null,
      items,
      options.withEntropy ?? false,
      options.temperature ?? 1,
    );
  }

  /** Logits at every position of one sequence (a prompt, possibly followed by generated tokens): for tests. */
  sequenceLogits(prompt: EncodedPrompt, useLora = true): tf.Tensor2D {
    return tf.tidy(() => {
      const { batch } = packPrompts(this, this.tokenizer, [prompt]);
      return logits(this, forward(this, batch, useLora ? this.lora : null).hidden);
    });
  }

  readonly adapterFiles = ADAPTER_FILES;

  saveAdapter(dir: string, options: { baseModel?: string } = {}): void {
    saveAdapter(this, dir, options);
  }

  loadAdapter(dir: string): LoraConfig {
    return loadAdapter(this, dir);
  }

  trainableVariables(scope: 'lora' | 'base'): tf.Variable[] {
    if (scope === 'base') {
      if (this.lora)
        throw new Error(
          'trainableVariables("base"): the base is frozen while LoRA adapters are attached (detachLora or mergeLora first)',
        );
      return weightEntries(this.weights).map((e) => e.variable);
    }
    if (!this.lora)
      throw new Error('trainableVariables("lora"): no LoRA adapters attached (call attachLora or load an adapter)');
    return loraVariables(this.lora);
  }

  dispose(): void {
    for (const e of weightEntries(this.weights)) e.variable.dispose();
    if (this.lora) disposeLora(this.lora);
    this.lora = null;
  }
}
