// A Hugging Face checkpoint folder as a metrl Policy: the Sampler that `metrl train`, `evaluate` and
// `serve` generate with, the Learner GRPO updates (LoRA adapters in PEFT layout), and the PromptFormat that turns an
// episode into the checkpoint's own chat prompt. What it wires together:
//   config.json           models/hf/config.ts (the model class, found in the architecture table, and its decoder)
//   the network           models/hf/decoder.ts, and for vision-language classes the architecture's image model
//                         (models/hf/image-model.ts: processor, tower, merge), loaded by its descriptor's vision side
//   tokenizer + template  models/hf/chat-prompt.ts (tokenizer.json, the Jinja chat template, image placeholders)
//   images                the image model's processor → pixel values → image features (vision tower frozen)
//   log-probs             models/hf/score.ts; sampling via models/token-sampling.ts like the built-in model
// Episodes are shown in the environment's reference wording (env.prompt, zero-shot), the words hosted chat models get,
// and completions are scored as written (a chat model writes its own "FINAL ANSWER:" line).
import * as tf from '@tensorflow/tfjs';
import { join } from 'node:path';
import type { ChatMessage } from '../../core/chat.ts';
import type { Episode } from '../../core/episode.ts';
import type { Rng } from '../../core/rng.ts';
import { UserError } from '../../core/errors.ts';
import type { Env } from '../../envs/env.ts';
import { finalAnswerResponse } from '../../rewards/final-answer.ts';
import type { LoraSettings } from '../learner.ts';
import type { LoadOptions, Policy } from '../policy.ts';
import { sampleToken, topLogProbs } from '../token-sampling.ts';
import type {
  Completion,
  EncodedPrompt,
  ModelInput,
  SamplingOptions,
  SequenceBatchItem,
  TokenLogProbs,
  TokenLogProbsOptions,
  TopLogProb,
} from '../types.ts';
import {
  chatMessagesWithImages,
  chatToTemplatePrompt,
  envRenderer,
  toTemplatePrompt,
  type TemplatePrompt,
} from './chat-messages.ts';
import type { ArchitectureTable } from './architecture.ts';
import { loadChatPromptKit, type ChatPromptKit } from './chat-prompt.ts';
import type { ChatTemplateMessage } from './chat-template.ts';
import { readHfConfig, type HfModelConfig } from './config.ts';
import type { HfDecoder } from './decoder.ts';
import { generate, type GenerateOptions, type GenerateResult } from './generate.ts';
import { expandImagePlaceholders } from './image-placeholders.ts';
import { loadHfDecoder } from './load-decoder.ts';
import {
  ADAPTER_CONFIG,
  ADAPTER_WEIGHTS,
  createLora,
  DEFAULT_LORA_TARGETS,
  loadPeftAdapter,
  savePeftAdapter,
} from './peft.ts';
import type { EngineTower, ImageFeatures, ImageModel, ImagePrefill } from './image-model.ts';
import { completionLogProbs, promptRuns, type ScoreItem } from './score.ts';
import type { SessionOptions } from '../onnx/session.ts';

/** Images kept encoded (vision tower output) between the passes of a step: rollouts, reference, old policy, learner. */
const FEATURE_CACHE_SIZE = 64;

/** What HfPolicy.prefillInputs gives another engine for a prompt batch's first pass, as plain arrays. */
export interface OrtPrefillInputs {
  /** [B · T · H] embeddings, image features merged. */
  embeds: Float32Array;
  tokenTypeIds?: ArrayLike<number>[];
  /** Qwen-VL: [3, B · T] positions and each row's rope delta (decoding at T + step + delta). */
  mropePositions?: Int32Array;
  ropeDeltas?: number[];
  /** Qwen3-VL: DeepStack features [M, H] per tapped layer at rows b · T + t. */
  deepstack?: { rows: Int32Array; features: Float32Array[] };
}

/**
 * Above this many floats held for the backward pass the learner recomputes blocks instead (score.ts `recompute`).
 * Counted: activations (tokens × hidden × layers) plus the base parameters, because without recomputation tfjs's tape
 * also computes a gradient for every frozen weight on the path (it differentiates every input of a recorded op: each
 * layer's projections and the [H, vocab] head). For SmolVLM-256M (135 M text parameters) that alone filled the WASM
 * heap on one 284-token sequence; with recomputation only the LoRA gradients are formed.
 */
const RECOMPUTE_ABOVE = 2 ** 25;

export class HfPolicy implements Policy {
  readonly adapterFiles = [ADAPTER_CONFIG, ADAPTER_WEIGHTS] as const;
  private loraSettings: LoraSettings | null = null;
  private readonly features = new Map<Float32Array, ImageFeatures>();
  /** The towers engines asked for (useOrtVisionTower), the last in use; none: the image model's tfjs tower. */
  private readonly towers: EngineTower[] = [];

  private constructor(
    readonly dir: string,
    readonly config: HfModelConfig,
    readonly decoder: HfDecoder,
    /** The image side (processor, vision tower, merge) of a vision-language class; null for text-only ones. */
    readonly image: ImageModel | null,
    readonly kit: ChatPromptKit,
  ) {}

  /**
   * Load a checkpoint folder: config, weights (shapes checked first), tokenizer and chat template. `hostWeights`: the
   * weights go to tfjs's CPU backend (host arrays, read by the ONNX Runtime graphs without a copy) instead of the
   * active backend, whose WASM heap caps at 4 GB; ops that need them there move them on first use.
   */
  static async load(dir: string, table: ArchitectureTable, options: LoadOptions = {}): Promise<HfPolicy> {
    const previous = tf.getBackend();
    const onHost = options.hostWeights === true && previous !== 'cpu';
    if (onHost) {
      await tf.setBackend('cpu');
      // Its first write prints a banner recommending tfjs-node on stderr; here it only holds arrays, so say nothing.
      (tf.findBackend('cpu') as unknown as { firstUse?: boolean }).firstUse = false;
    }
    try {
      return await HfPolicy.read(dir, table);
    } finally {
      if (onHost) await tf.setBackend(previous);
    }
  }

  private static async read(dir: string, table: ArchitectureTable): Promise<HfPolicy> {
    const config = readHfConfig(dir, table);
    const cls = table.modelClass(config);
    const vision = cls.vision;
    // The tokenizer and template are checked before the weights are read: a broken tokenizer.json fails in a second.
    const configFile = join(dir, 'config.json');
    const kit = loadChatPromptKit(
      dir,
      vision && ((tokenizer) => vision.placeholders(config.raw, configFile, tokenizer)),
    );
    // So is the template: one user turn rendered now, so that a template which cannot render fails the load (one
    // line naming its file) instead of every prompt of a run, after the run folder has been written.
    const probe = kit.template.render(
      [{ role: 'user', content: kit.layout ? [{ type: 'text', text: 'Hello.' }] : 'Hello.' }],
      { addGenerationPrompt: true },
    );
    if (kit.tokenizer.encode(probe, { addSpecialTokens: false }).length === 0)
      throw new UserError(`${kit.template.file}: the chat template renders an empty prompt for a user's "Hello."`);
    const { decoder, tensors } = loadHfDecoder(dir, config, cls.layouts);
    if (!vision) return new HfPolicy(dir, config, decoder, null, kit);
    try {
      return new HfPolicy(dir, config, decoder, await vision.load(dir, config, decoder, tensors), kit);
    } catch (error) {
      decoder.dispose();
      throw error;
    }
  }

  // ---- Sampler ---------------------------------------------------------------------------------------------------

  /** max_position_embeddings of the language model (transformers' class default when the config leaves it out). */
  get vocabSize(): number {
    return this.decoder.config.vocabSize;
  }

  get contextLimit(): number {
    return this.config.text.contextLength;
  }

  /** The width the processor gives images (episodes are rendered at the chat size and resized by it); 0 for text models. */
  get imageSize(): number {
    return this.image?.imageSize ?? 0;
  }

  get imageTokenId(): number | undefined {
    return this.image?.imageTokenId;
  }

  encode(input: ModelInput): EncodedPrompt {
    // A bare model input is one user turn: its text and images in order.
    const images = input.filter((p) => p.type === 'image').map((p) => p.image);
    const content = input.map((p) =>
      p.type === 'text' ? { type: 'text' as const, text: p.text } : { type: 'image' as const },
    );
    const message: ChatTemplateMessage = this.kit.layout
      ? { role: 'user', content }
      : { role: 'user', content: input.map((p) => (p.type === 'text' ? p.text : '')).join('') };
    if (!this.kit.layout && images.length > 0)
      throw new UserError(`${this.dir}: ${this.config.architecture} is a text model and cannot read images`);
    return this.encodeTemplate({ messages: [message], images });
  }

  decode(tokens: number[]): string {
    return this.kit.tokenizer.decode(tokens, { skipSpecialTokens: true });
  }

  sampleGroup(prompt: EncodedPrompt, group: number, options: SamplingOptions, rng: Rng): Completion[] {
    return this.sampleGroups([prompt], group, options, rng)[0];
  }

  /**
   * All prompts decode as one left-padded batch: each prompt is prefilled once and its KV cache copied to its G rows.
   * Tokens are drawn row by row (prompt 0's G rows first) from the caller's Rng.
   */
  sampleGroups(prompts: EncodedPrompt[], group: number, options: SamplingOptions, rng: Rng): Completion[][] {
    return this.sampleGroupsWith(prompts, group, options, rng, (ids, attentionMask, generateOptions) =>
      this.withImageFeatures(prompts, (features) => this.generateBatch(ids, attentionMask, features, generateOptions)),
    );
  }

  /**
   * sampleGroups around a decoding engine: the prompts left-padded (pad id, mask 0), the draws (sampleToken, row by
   * row from `rng`), EOS handling and decoding are this policy's; `run` decodes (tfjs here, ONNX Runtime in
   * models/onnx/hf/hf-sampler.ts), so both engines draw the same tokens from the same logits.
   */
  sampleGroupsWith(
    prompts: EncodedPrompt[],
    group: number,
    options: SamplingOptions,
    rng: Rng,
    run: (ids: number[][], attentionMask: number[][], options: GenerateOptions) => GenerateResult,
  ): Completion[][] {
    if (prompts.length === 0) return [];
    for (const p of prompts) this.checkLength(p.tokens.length, options.maxNewTokens);
    const P = Math.max(...prompts.map((p) => p.tokens.length));
    const pad = this.padId();
    const ids = prompts.map((p) => [...new Array<number>(P - p.tokens.length).fill(pad), ...p.tokens]);
    const attentionMask = prompts.map((p) => [
      ...new Array<number>(P - p.tokens.length).fill(0),
      ...new Array<number>(p.tokens.length).fill(1),
    ]);
    const logProbs: number[][] = Array.from({ length: prompts.length * group }, () => []);
    const k = options.topLogProbs ?? 0;
    const top = k > 0 ? Array.from({ length: prompts.length * group }, (): TopLogProb[][] => []) : null;
    const samplingLogProbs: number[][] = Array.from({ length: prompts.length * group }, () => []);
    const choose = (row: Float32Array, b: number): number => {
      const { token, logProb, samplingLogProb } = sampleToken(row, options, rng);
      logProbs[b].push(logProb);
      top?.[b].push(topLogProbs(row, k));
      samplingLogProbs[b].push(samplingLogProb);
      return token;
    };
    const generateOptions: GenerateOptions = {
      maxNewTokens: options.maxNewTokens,
      choose,
      stopIds: [...this.kit.tokenizer.eosIds],
      group,
    };
    const result = run(ids, attentionMask, generateOptions);
    const eos = new Set(this.kit.tokenizer.eosIds);
    const completions = result.tokens.map((tokens, b): Completion => {
      const body = result.finished[b] && eos.has(tokens[tokens.length - 1]) ? tokens.slice(0, -1) : tokens;
      return {
        tokens,
        text: this.decode(body),
        logProbs: Float32Array.from(logProbs[b]),
        samplingLogProbs: Float32Array.from(samplingLogProbs[b]),
        finished: result.finished[b],
        ...(top ? { topLogProbs: top[b].slice(0, tokens.length) } : {}),
      };
    });
    return prompts.map((_, k) => completions.slice(k * group, (k + 1) * group));
  }

  /**
   * The first pass's inputs for another engine: embeddings [B · T · H] of left-padded `ids` (one row per prompt, Gemma's
   * scaling applied, image features merged: the vision tower runs here, on tfjs) and Gemma 3's token type ids.
   */
  prefillInputs(
    prompts: EncodedPrompt[],
    ids: number[][],
    attentionMask?: readonly ArrayLike<number>[],
  ): OrtPrefillInputs {
    return this.withImageFeatures(prompts, (features) => {
      const prefill: ImagePrefill =
        features && this.image ? this.image.prefill(ids, features, attentionMask) : { embeds: this.decoder.embed(ids) };
      const embeds = (prefill.embeds.dataSync() as Float32Array).slice();
      const deepstack = prefill.deepstack && {
        rows: prefill.deepstack.rows,
        features: prefill.deepstack.features.map((f) => (f.dataSync() as Float32Array).slice()),
      };
      tf.dispose([prefill.embeds, ...(prefill.deepstack?.features ?? [])]);
      return {
        embeds,
        ...(prefill.tokenTypeIds ? { tokenTypeIds: prefill.tokenTypeIds } : {}),
        ...(prefill.mrope ? { mropePositions: prefill.mrope.positions, ropeDeltas: prefill.mrope.ropeDeltas } : {}),
        ...(deepstack ? { deepstack } : {}),
      };
    });
  }

  /** The id left padding uses. */
  get padTokenId(): number {
    return this.padId();
  }

  /**
   * Completion log-probabilities (models/hf/score.ts). Differentiable with respect to the LoRA variables. Consecutive
   * items with the same prompt object (a GRPO group) share one pass over the prompt, and its images are merged once.
   */
  tokenLogProbs(batch: SequenceBatchItem[], options: TokenLogProbsOptions): TokenLogProbs {
    for (const it of batch) this.checkLength(it.prompt.tokens.length, it.completion.length);
    const tokens = this.passTokens(batch);
    const recompute =
      options.useLora &&
      tokens * this.config.text.hiddenSize * this.config.text.numLayers + this.baseParameters() > RECOMPUTE_ABOVE;
    // The blockwise head forms no gradient for the output head: used whenever only LoRA variables (or none) can
    // receive one, i.e. with recomputed blocks, or for the frozen base with LoRA off.
    const leanHead = recompute || (!options.useLora && !this.baseTrainable());
    // tidy frees the merged prompt embeddings; the returned tensors (log-probs, mask, entropy) survive it.
    return tf.tidy(() => {
      const merged = new Map<EncodedPrompt, Pick<ScoreItem, 'prompt' | 'promptEmbeds' | 'promptTokenTypeIds'>>();
      const items: ScoreItem[] = batch.map((it) => {
        let prompt = merged.get(it.prompt);
        if (!prompt) merged.set(it.prompt, (prompt = { prompt: it.prompt.tokens, ...this.promptImages(it.prompt) }));
        return { ...prompt, completion: it.completion };
      });
      const scores = completionLogProbs(this.decoder, items, {
        useLora: options.useLora,
        temperature: options.temperature,
        withEntropy: options.withEntropy,
        recompute,
        leanHead,
      });
      return { ...scores } as unknown as tf.TensorContainer;
    }) as unknown as TokenLogProbs;
  }

  /**
   * Tokens one learner pass over `batch` runs through the network: each run of consecutive items with the same prompt
   * object counts its prompt once (score.ts packs them into one row). The trainer sizes its learner chunks by this.
   */
  passTokens(batch: readonly SequenceBatchItem[]): number {
    return promptRuns(batch, (a, b) => a.prompt === b.prompt).reduce(
      (n, run) => n + batch[run[0]].prompt.tokens.length + run.reduce((c, i) => c + batch[i].completion.length, 0),
      0,
    );
  }

  // ---- PromptFormat ----------------------------------------------------------------------------------------------

  /** The environment's reference prompt (zero-shot) through the checkpoint's chat template, images at the chat size. */
  prompt(env: Env, episode: Episode): EncodedPrompt {
    const messages = env.prompt(episode, { style: 'zero-shot', shots: [] });
    return this.encodeTemplate(
      toTemplatePrompt(messages, envRenderer(env), { content: this.kit.layout ? 'parts' : 'string' }),
    );
  }

  async chatPrompt(messages: ChatMessage[]): Promise<EncodedPrompt> {
    return this.encodeTemplate(await chatToTemplatePrompt(messages, { content: this.kit.layout ? 'parts' : 'string' }));
  }

  /** The same zero-shot prompt as OpenAI messages, images rendered at the chat size as PNG data URLs. */
  promptMessages(env: Env, episode: Episode): Promise<ChatMessage[]> {
    return chatMessagesWithImages(env.prompt(episode, { style: 'zero-shot', shots: [] }), envRenderer(env));
  }

  /** A chat model writes its whole answer, "FINAL ANSWER:" line included: it is scored as written. */
  responseOf(_env: Env, completionText: string): string {
    return completionText;
  }

  /** Tokens of "FINAL ANSWER: <target>" and EOS: the shortest complete answer (the budget adds room for reasoning). */
  referenceTokens(_env: Env, episode: Episode): number {
    return this.kit.tokenizer.encode(finalAnswerResponse(episode.target), { addSpecialTokens: false }).length + 1;
  }

  // ---- Learner ---------------------------------------------------------------------------------------------------

  trainableVariables(scope: 'lora' | 'base'): tf.Variable[] {
    if (scope === 'base') {
      // Supervised training of the whole language model (the built-in policy's contract): the weights are loaded
      // frozen (inference, LoRA), so they are unfrozen here, and only while no adapter is attached.
      if (this.decoder.loraVariables().length > 0)
        throw new Error('trainableVariables("base"): the base is frozen while LoRA adapters are attached');
      const variables = this.decoder.baseVariables();
      for (const v of variables) v.trainable = true;
      return variables;
    }
    const variables = this.decoder.loraVariables();
    if (variables.length === 0)
      throw new Error('trainableVariables("lora"): no LoRA adapters attached (call attachLora or load an adapter)');
    return variables;
  }

  attachLora(settings: LoraSettings, rng: Rng): void {
    this.freezeBase();
    createLora(
      this.decoder,
      { r: settings.r, alpha: settings.alpha, targets: settings.targets ?? DEFAULT_LORA_TARGETS },
      rng,
    );
    this.loraSettings = { r: settings.r, alpha: settings.alpha };
  }

  saveAdapter(dir: string, options: { baseModel?: string } = {}): void {
    if (!this.loraSettings) throw new Error('saveAdapter: no LoRA adapters attached');
    savePeftAdapter(this.decoder, dir, {
      baseModelNameOrPath: options.baseModel ?? this.dir,
      r: this.loraSettings.r,
      alpha: this.loraSettings.alpha,
    });
  }

  loadAdapter(dir: string): LoraSettings {
    this.freezeBase();
    const config = loadPeftAdapter(this.decoder, dir);
    this.loraSettings = { r: config.r, alpha: config.alpha };
    return this.loraSettings;
  }

  dispose(): void {
    this.dropFeatures();
    if (this.image) this.image.dispose();
    else this.decoder.dispose();
  }

  /**
   * Run the vision tower on ONNX Runtime (the image model's ortTower, opened at its first image) until the returned
   * release is called, then the tower that ran before (tfjs at the bottom); the release disposes this one. Features
   * already encoded are dropped at each change, so every pass reads features of the tower now in use. Returns the
   * tower (null for a text model) and its release.
   */
  useOrtVisionTower(options: SessionOptions): { tower: EngineTower | null; release: () => void } {
    const image = this.image;
    if (!image) return { tower: null, release: () => {} };
    const tower = image.ortTower(options);
    this.towers.push(tower);
    const apply = () => {
      image.setTower(this.towers.at(-1) ?? null);
      this.dropFeatures();
    };
    apply();
    const release = () => {
      const at = this.towers.indexOf(tower);
      if (at < 0) return;
      this.towers.splice(at, 1);
      apply();
      tower.dispose();
    };
    return { tower, release };
  }

  private dropFeatures(): void {
    for (const f of this.features.values()) tf.dispose([f.features, ...(f.deepstack ?? [])]);
    this.features.clear();
  }

  // ---- internals -------------------------------------------------------------------------------------------------

  /** Base weights frozen again (after supervised training unfroze them): GRPO updates the adapters only. */
  private freezeBase(): void {
    for (const v of this.decoder.baseVariables()) v.trainable = false;
  }

  /** Whether supervised training unfroze the base (trainableVariables('base')). */
  private baseTrainable(): boolean {
    return this.decoder.baseVariables().some((v) => v.trainable);
  }

  private baseParameterCount: number | null = null;

  /** Parameters of the language model (what a non-recomputed backward pass forms gradients for). */
  private baseParameters(): number {
    this.baseParameterCount ??= this.decoder.baseVariables().reduce((n, v) => n + v.size, 0);
    return this.baseParameterCount;
  }

  private padId(): number {
    return this.kit.tokenizer.padId ?? this.config.text.padTokenId ?? 0;
  }

  checkLength(promptTokens: number, newTokens: number): void {
    if (promptTokens + newTokens > this.contextLimit) {
      throw new UserError(
        `a prompt of ${promptTokens} tokens plus ${newTokens} new tokens exceeds the model's context of ${this.contextLimit} tokens`,
      );
    }
  }

  /** Template messages + images → token ids and, per image, its pixel values (the processor's output). */
  private encodeTemplate({ messages, images }: TemplatePrompt): EncodedPrompt {
    const rendered = this.kit.template.render(messages, { addGenerationPrompt: true });
    if (images.length > 0 && !this.image)
      throw new UserError(`${this.dir}: ${this.config.architecture} is a text model and cannot read images`);
    const processed = images.length > 0 ? this.image!.preprocess(images) : { pixels: [], tokens: [] };
    const text = this.kit.layout ? expandImagePlaceholders(rendered, this.kit.layout, processed.tokens) : rendered;
    return { tokens: this.kit.tokenizer.encode(text, { addSpecialTokens: false }), images: processed.pixels };
  }

  /** One image's features [its image tokens, H] (and grid, DeepStack), encoded once and kept (the tower is frozen). */
  private imageFeatures(pixels: Float32Array): ImageFeatures {
    const kept = this.features.get(pixels);
    if (kept) {
      this.features.delete(pixels); // re-insert: the map's order is least recently used first
      this.features.set(pixels, kept);
      return kept;
    }
    const encoded = this.image!.encode(pixels);
    const entry: ImageFeatures = {
      features: tf.keep(encoded.features),
      ...(encoded.grids ? { grids: encoded.grids } : {}),
      ...(encoded.deepstack ? { deepstack: encoded.deepstack.map((t) => tf.keep(t)) } : {}),
    };
    this.features.set(pixels, entry);
    while (this.features.size > FEATURE_CACHE_SIZE) {
      const [oldest, old] = this.features.entries().next().value as [Float32Array, ImageFeatures];
      tf.dispose([old.features, ...(old.deepstack ?? [])]);
      this.features.delete(oldest);
    }
    return entry;
  }

  /** Several images' features in order, as one ImageFeatures (new tensors: the caller disposes them). */
  private concatFeatures(images: readonly Float32Array[]): ImageFeatures {
    const each = images.map((img) => this.imageFeatures(img));
    const layers = each[0].deepstack?.length ?? 0;
    return {
      features: tf.concat(
        each.map((e) => e.features),
        0,
      ) as tf.Tensor2D,
      ...(each[0].grids ? { grids: each.flatMap((e) => e.grids ?? []) } : {}),
      ...(layers > 0
        ? {
            deepstack: Array.from(
              { length: layers },
              (_, j) => tf.concat(each.map((e) => e.deepstack![j])) as tf.Tensor2D,
            ),
          }
        : {}),
    };
  }

  /**
   * Prompt embeddings [P, H] with the image rows merged (and Gemma's token types, Qwen-VL's 3-D positions and DeepStack
   * features), for the learner's batch; inside its tidy.
   */
  private promptImages(
    prompt: EncodedPrompt,
  ): Pick<ScoreItem, 'promptEmbeds' | 'promptTokenTypeIds' | 'promptMrope' | 'promptDeepstack'> {
    if (prompt.images.length === 0 || !this.image) return {};
    const prefill = this.image.prefill([prompt.tokens], this.concatFeatures(prompt.images)); // embeds [1, P, H]
    return {
      promptEmbeds: tf.reshape(prefill.embeds, [prompt.tokens.length, this.config.text.hiddenSize]) as tf.Tensor2D,
      ...(prefill.tokenTypeIds ? { promptTokenTypeIds: prefill.tokenTypeIds[0] } : {}),
      ...(prefill.mrope
        ? { promptMrope: { positions: prefill.mrope.positions, ropeDelta: prefill.mrope.ropeDeltas[0] } }
        : {}),
      ...(prefill.deepstack ? { promptDeepstack: prefill.deepstack } : {}),
    };
  }

  /** Run `f` with the batch's image features in row order ([Σ tokens, H]), or none for a text batch. */
  private withImageFeatures<T>(prompts: EncodedPrompt[], f: (features: ImageFeatures | null) => T): T {
    const all = prompts.flatMap((p) => p.images);
    if (all.length === 0 || !this.image) return f(null);
    const features = this.concatFeatures(all);
    try {
      return f(features);
    } finally {
      tf.dispose([features.features, ...(features.deepstack ?? [])]);
    }
  }

  private generateBatch(
    ids: number[][],
    attentionMask: number[][],
    features: ImageFeatures | null,
    options: GenerateOptions,
  ): GenerateResult {
    if (!features || !this.image) return generate(this.decoder, { ids, attentionMask }, options);
    const { embeds, tokenTypeIds, mrope, deepstack } = this.image.prefill(ids, features, attentionMask);
    try {
      return generate(
        this.decoder,
        { ids, attentionMask, inputsEmbeds: embeds, tokenTypeIds, mrope, deepstack },
        options,
      );
    } finally {
      tf.dispose([embeds, ...(deepstack?.features ?? [])]);
    }
  }
}
