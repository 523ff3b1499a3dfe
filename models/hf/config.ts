// Hugging Face config.json → one normalised DecoderConfig for the language model of every supported architecture.
// Which model class a file holds, where its decoder keys are (the top level, or a composite config's `text_config`)
// and which decoder family reads them come from the architecture's descriptor (models/<arch>/architecture.ts, handed
// in as a ModelClassLookup); this file knows how each family's keys are read.
//
// transformers writes a key inside a composite config only when it differs from that sub-config class's default
// (real gemma-3-4b-it's text_config lists six keys), so every family carries its class defaults of transformers 4.57
// (in the descriptors; ../shared/fixtures/hf/hf_config.py lists them). A top-level decoder config always carries its
// shape keys; those are required there, and a missing one is a UserError naming config.json and the key.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { UserError, describeZodError } from '../../core/errors.ts';
import { readJson } from '../../core/files.ts';
import type { MropeSpec } from '../layers/mrope.ts';

type LayerType = 'full_attention' | 'sliding_attention';

/** The class defaults of the keys a (sub-)config may omit (transformers' config class of the decoder). */
type DecoderDefaults = Readonly<Record<string, unknown>>;

/**
 * How one decoder family's config keys are read: the family's class defaults and the rules that tell Llama, Qwen2,
 * Qwen3 and Gemma 3 apart. An architecture's descriptor (models/<arch>/architecture.ts) names one per model class.
 */
export interface DecoderFamily {
  /** A short name (graph names, messages): llama, qwen2, qwen3, gemma3. */
  name: string;
  /** transformers' class defaults (configuration_<model>.py); a missing key takes its default. */
  defaults: DecoderDefaults;
  /** q/k/v and o biases: the attention_bias key ('key'), or q/k/v always and o never (Qwen2: 'qkv'). */
  attentionBias: 'key' | 'qkv';
  /** Whether mlp_bias is read (Llama); else the MLP has no biases. */
  mlpBias: boolean;
  /**
   * Which layers slide: none ('full'), those from max_window_layers on when use_sliding_window (Qwen2, Qwen3), or every
   * layer but each sliding_window_pattern-th (Gemma 3); an explicit layer_types list wins where the family reads it.
   */
  layerTypes: 'full' | 'max_window_layers' | 'sliding_window_pattern';
  /** RMSNorm of q and k over head_dim before RoPE (Qwen3; Gemma 3 has them as part of `gemma`). */
  qkNorm: boolean;
  /**
   * Gemma: RMSNorm · (1 + w), sqrt(H) embedding scale, sandwich norms, q/k norms, query_pre_attn_scalar, the sliding
   * layers' own RoPE base, hidden_activation, soft-capping.
   */
  gemma: boolean;
  /**
   * Multimodal RoPE (Qwen-VL): rope_scaling holds mrope_section (type "mrope" in the Hub's flat files) rather than a
   * scaling, and the class's adjust sets DecoderConfig.mrope from it.
   */
  multimodalRope?: boolean;
}

/** How a model class's config.json holds its decoder (what parseHfConfig needs of an architecture's descriptor). */
export interface ModelClassConfig {
  /** The class name config.json's `architectures` lists (LlamaForCausalLM, …). */
  name: string;
  /**
   * Where the decoder's keys are: at the top level, in `text_config` (whose model_type, when written, must be one of
   * `textModelTypes`), or either (Qwen2.5-VL: nested as transformers 4.57 writes it, flat in the Hub's files).
   */
  text: 'top' | 'text_config' | 'either';
  textModelTypes?: readonly string[];
  decoder: DecoderFamily;
  /**
   * Fields of the decoder config that depend on the whole config.json (Qwen-VL: the multimodal RoPE, DeepStack), or
   * that the class sets whatever the file says (Gemma3ForConditionalGeneration drops final_logit_softcapping).
   */
  adjust?(text: DecoderConfig, raw: Record<string, unknown>, source: string): DecoderConfig;
  /** The id of the token image features replace (vision-language classes; the class default when the file has none). */
  imageTokenId?(raw: Record<string, unknown>): number;
}

/** The model classes parseHfConfig reads (models/hf/architecture.ts ArchitectureTable implements it). */
export interface ModelClassLookup {
  find(name: string): ModelClassConfig | undefined;
  /** Every class name, for the message that refuses another. */
  readonly classNames: readonly string[];
}

/** Everything the shared decoder (models/hf/decoder.ts) needs to know about one language model. */
export interface DecoderConfig {
  /** The decoder family's name (DecoderFamily.name): llama, qwen2, qwen3, gemma3. */
  family: string;
  vocabSize: number;
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  intermediateSize: number;
  /** MLP activation: SiLU (SwiGLU) or tanh-approximated GELU (GeGLU). */
  act: 'silu' | 'gelu_tanh';
  rmsNormEps: number;
  /** 'w': x̂ · w (Llama, Qwen2); 'one_plus_w': x̂ · (1 + w) (Gemma). */
  normStyle: 'w' | 'one_plus_w';
  ropeTheta: number;
  /** Linear RoPE scaling factor of the global (full-attention) layers, or null. */
  ropeLinearFactor: number | null;
  /** Gemma 3: RoPE base of the sliding layers (no scaling), or null when all layers share ropeTheta. */
  ropeLocalTheta: number | null;
  /** Keys a query may see in sliding layers, itself included (i - j < window); null when no layer slides. */
  slidingWindow: number | null;
  layerTypes: LayerType[];
  /** Multiplier of q·k: headDim^-0.5, or query_pre_attn_scalar^-0.5 for Gemma. */
  attnScale: number;
  /** Biases of q/k/v and of o (Qwen2: q/k/v only). */
  qkvBias: boolean;
  oBias: boolean;
  mlpBias: boolean;
  tieWordEmbeddings: boolean;
  /** Gemma: token embeddings are multiplied by sqrt(hidden) (as an fp32 constant); null otherwise. */
  embedScale: number | null;
  /** Qwen3, Gemma 3: RMSNorm of q and k over head_dim before RoPE. */
  qkNorm: boolean;
  /** Gemma: attention and MLP outputs normalised before the residual add (pre/post feed-forward norms). */
  sandwichNorm: boolean;
  finalLogitSoftcap: number | null;
  attnLogitSoftcap: number | null;
  /**
   * Qwen-VL: the frequency slots each position axis (temporal, height, width) drives (models/layers/mrope.ts), over
   * head_dim and rope_theta; the decoder then takes [3, B·T] positions. null: one position axis.
   */
  mrope: Pick<MropeSpec, 'section' | 'layout'> | null;
  /** Qwen3-VL DeepStack: the first layers after which image features are added to the image tokens' rows (else 0). */
  deepstackLayers: number;
  bosTokenId: number | null;
  eosTokenIds: number[];
  padTokenId: number | null;
  /** max_position_embeddings (the class default when the file leaves it out): prompt plus completion fit in it. */
  contextLength: number;
}

/** What config.json says about the whole checkpoint: the architecture, its decoder, and the raw JSON for the rest. */
export interface HfModelConfig {
  architecture: string;
  modelType: string;
  /** 'float32' | 'bfloat16' | 'float16' | … as written (key `dtype`, or `torch_dtype` before transformers 4.56). */
  dtype: string | null;
  text: DecoderConfig;
  /** Image placeholder token of the vision-language architectures (image_token_id / image_token_index), else null. */
  imageTokenId: number | null;
  /** The parsed config.json, for the parts other modules read (vision_config, scale_factor, mm_tokens_per_image). */
  raw: Record<string, unknown>;
}

const num = z.number();
const int = z.number().int();
const tokenIds = z.union([int, z.array(int)]).nullable();
const RopeScaling = z
  .object({ rope_type: z.string().optional(), type: z.string().optional(), factor: z.number().optional() })
  .loose()
  .nullable();

// Keys shared by the three decoder config classes; all optional here, defaults applied per class below.
const DecoderJson = z
  .object({
    model_type: z.string().optional(),
    vocab_size: int.positive().optional(),
    hidden_size: int.positive().optional(),
    intermediate_size: int.positive().optional(),
    num_hidden_layers: int.positive().optional(),
    num_attention_heads: int.positive().optional(),
    num_key_value_heads: int.positive().nullable().optional(),
    head_dim: int.positive().nullable().optional(),
    hidden_act: z.string().optional(),
    hidden_activation: z.string().nullable().optional(),
    rms_norm_eps: num.positive().optional(),
    rope_theta: num.positive().optional(),
    rope_scaling: RopeScaling.optional(),
    rope_local_base_freq: num.positive().optional(),
    attention_bias: z.boolean().optional(),
    mlp_bias: z.boolean().optional(),
    tie_word_embeddings: z.boolean().optional(),
    bos_token_id: tokenIds.optional(),
    eos_token_id: tokenIds.optional(),
    pad_token_id: tokenIds.optional(),
    sliding_window: int.positive().nullable().optional(),
    use_sliding_window: z.boolean().optional(),
    max_window_layers: int.nonnegative().optional(),
    layer_types: z.array(z.enum(['full_attention', 'sliding_attention'])).optional(),
    sliding_window_pattern: int.positive().optional(),
    _sliding_window_pattern: int.positive().optional(),
    query_pre_attn_scalar: num.positive().optional(),
    final_logit_softcapping: num.positive().nullable().optional(),
    attn_logit_softcapping: num.positive().nullable().optional(),
    use_bidirectional_attention: z.boolean().nullable().optional(),
    pretraining_tp: int.optional(),
    max_position_embeddings: int.positive().optional(),
  })
  .loose();
type DecoderJson = z.infer<typeof DecoderJson>;

const TopJson = z
  .object({
    architectures: z.array(z.string()).min(1).optional(),
    model_type: z.string().optional(),
    dtype: z.string().nullable().optional(),
    torch_dtype: z.string().nullable().optional(),
    text_config: z.record(z.string(), z.unknown()).optional(),
  })
  .loose();

const REQUIRED_TOP_LEVEL = [
  'vocab_size',
  'hidden_size',
  'intermediate_size',
  'num_hidden_layers',
  'num_attention_heads',
] as const;

function tokenList(v: number | number[] | null | undefined): number[] {
  if (v === null || v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}
function firstToken(v: number | number[] | null | undefined): number | null {
  return tokenList(v)[0] ?? null;
}

function activation(name: string, source: string, key: string): 'silu' | 'gelu_tanh' {
  if (name === 'silu' || name === 'swish') return 'silu';
  if (name === 'gelu_pytorch_tanh' || name === 'gelu_tanh' || name === 'gelu_new') return 'gelu_tanh';
  throw new UserError(`${source}: ${key} '${name}' is not supported (silu, gelu_pytorch_tanh)`);
}

/** Linear scaling factor of a rope_scaling entry; other RoPE types are refused. */
function linearFactor(scaling: z.infer<typeof RopeScaling> | undefined, source: string, key: string): number | null {
  if (!scaling) return null;
  const type = scaling.rope_type ?? scaling.type ?? 'default';
  if (type === 'default') return null;
  if (type !== 'linear') throw new UserError(`${source}: ${key}.rope_type '${type}' is not supported (linear or none)`);
  if (scaling.factor === undefined) throw new UserError(`${source}: ${key}.factor is missing`);
  return scaling.factor;
}

/** Normalise one decoder config. `where` prefixes key names in messages ('' or 'text_config.'). */
function decoderFrom(family: DecoderFamily, json: DecoderJson, source: string, where: string): DecoderConfig {
  const d = family.defaults;
  const get = <T>(key: keyof DecoderJson): T => (json[key] !== undefined ? json[key] : d[key as string]) as T;
  const numHeads = get<number>('num_attention_heads');
  const hiddenSize = get<number>('hidden_size');
  const numKvHeads = (json.num_key_value_heads ?? (d.num_key_value_heads as number | undefined) ?? numHeads) as number;
  const headDim = (json.head_dim ?? (d.head_dim as number | undefined) ?? hiddenSize / numHeads) as number;
  if (!Number.isInteger(headDim))
    throw new UserError(
      `${source}: ${where}hidden_size ${hiddenSize} is not a multiple of num_attention_heads ${numHeads}`,
    );
  if (numHeads % numKvHeads !== 0)
    throw new UserError(
      `${source}: ${where}num_attention_heads ${numHeads} is not a multiple of num_key_value_heads ${numKvHeads}`,
    );
  if (headDim % 2 !== 0) throw new UserError(`${source}: ${where}head_dim ${headDim} is odd (RoPE needs an even size)`);
  const numLayers = get<number>('num_hidden_layers');
  const gemma = family.gemma;

  let layerTypes: LayerType[];
  let slidingWindow: number | null;
  if (family.layerTypes === 'sliding_window_pattern') {
    slidingWindow = get<number | null>('sliding_window');
    const pattern = json.sliding_window_pattern ?? json._sliding_window_pattern ?? 6;
    // Older Gemma 3 configs have only the pattern: layer i is global iff (i + 1) % pattern == 0.
    layerTypes =
      json.layer_types ??
      Array.from({ length: numLayers }, (_, i) => ((i + 1) % pattern ? 'sliding_attention' : 'full_attention'));
  } else if (family.layerTypes === 'max_window_layers') {
    const useSliding = get<boolean>('use_sliding_window');
    slidingWindow = useSliding ? get<number | null>('sliding_window') : null;
    const maxWindow = get<number>('max_window_layers');
    layerTypes =
      json.layer_types ??
      Array.from({ length: numLayers }, (_, i) =>
        slidingWindow !== null && i >= maxWindow ? 'sliding_attention' : 'full_attention',
      );
  } else {
    slidingWindow = null;
    layerTypes = Array.from({ length: numLayers }, () => 'full_attention' as const);
  }
  if (gemma && json.use_bidirectional_attention)
    throw new UserError(`${source}: ${where}use_bidirectional_attention (EmbeddingGemma) is not supported`);
  if (layerTypes.length !== numLayers)
    throw new UserError(`${source}: ${where}layer_types has ${layerTypes.length} entries for ${numLayers} layers`);
  if (layerTypes.includes('sliding_attention') && !slidingWindow)
    throw new UserError(`${source}: ${where}sliding_window is missing for sliding_attention layers`);
  if (!layerTypes.includes('sliding_attention')) slidingWindow = null;

  const attnBias = family.attentionBias === 'qkv' ? true : get<boolean>('attention_bias');
  const actName = gemma ? (json.hidden_activation ?? (d.hidden_activation as string)) : get<string>('hidden_act');
  const context = json.max_position_embeddings ?? (d.max_position_embeddings as number);
  return {
    family: family.name,
    vocabSize: get('vocab_size'),
    hiddenSize,
    numLayers,
    numHeads,
    numKvHeads,
    headDim,
    intermediateSize: get('intermediate_size'),
    act: activation(actName, source, `${where}${gemma ? 'hidden_activation' : 'hidden_act'}`),
    rmsNormEps: get('rms_norm_eps'),
    normStyle: gemma ? 'one_plus_w' : 'w',
    ropeTheta: get('rope_theta'),
    ropeLinearFactor: family.multimodalRope ? null : linearFactor(json.rope_scaling, source, `${where}rope_scaling`),
    ropeLocalTheta: gemma ? get<number>('rope_local_base_freq') : null,
    slidingWindow,
    layerTypes,
    attnScale: gemma ? get<number>('query_pre_attn_scalar') ** -0.5 : headDim ** -0.5,
    qkvBias: attnBias,
    oBias: family.attentionBias === 'qkv' ? false : attnBias,
    mlpBias: family.mlpBias ? get<boolean>('mlp_bias') : false,
    tieWordEmbeddings: get('tie_word_embeddings'),
    embedScale: gemma ? Math.fround(Math.sqrt(hiddenSize)) : null,
    qkNorm: gemma || family.qkNorm,
    sandwichNorm: gemma,
    finalLogitSoftcap: gemma ? (json.final_logit_softcapping ?? null) : null,
    attnLogitSoftcap: gemma ? (json.attn_logit_softcapping ?? null) : null,
    mrope: null,
    deepstackLayers: 0,
    bosTokenId: firstToken(get('bos_token_id')),
    eosTokenIds: tokenList(get('eos_token_id')),
    padTokenId: firstToken(get('pad_token_id')),
    contextLength: context,
  };
}

function parseDecoderJson(value: unknown, source: string, where: string): DecoderJson {
  const result = DecoderJson.safeParse(value);
  if (!result.success) throw new UserError(describeZodError(result.error, `${source}: ${where}`, value));
  return result.data;
}

/**
 * The model class a config.json names: the first of `architectures`, else text_config's (transformers 4.57 writes
 * Qwen2.5-VL's `architectures` into text_config only), or null.
 */
function configArchitecture(json: Record<string, unknown>): string | null {
  const list = (json.architectures ?? (json.text_config as Record<string, unknown> | undefined)?.architectures) as
    | unknown[]
    | undefined;
  return Array.isArray(list) && typeof list[0] === 'string' ? list[0] : null;
}

/**
 * Parse a config.json object with the model classes of `classes` (the architecture table, models/registry.ts).
 * `source` (the file's path) names the file in error messages.
 */
export function parseHfConfig(json: unknown, classes: ModelClassLookup, source = 'config.json'): HfModelConfig {
  if (json === null || typeof json !== 'object' || Array.isArray(json))
    throw new UserError(`${source}: not a JSON object`);
  const top = TopJson.safeParse(json);
  if (!top.success) throw new UserError(describeZodError(top.error, `${source}: `, json));
  const raw = json as Record<string, unknown>;
  const architecture = configArchitecture(raw);
  if (!architecture) throw new UserError(`${source}: missing key 'architectures'`);
  const cls = classes.find(architecture);
  if (!cls) {
    throw new UserError(
      `${source}: architecture ${architecture} is not supported (supported: ${classes.classNames.join(', ')})`,
    );
  }
  const dtype = top.data.dtype ?? top.data.torch_dtype ?? null;
  const modelType = top.data.model_type ?? '';
  const nested = cls.text === 'text_config' || (cls.text === 'either' && top.data.text_config !== undefined);
  let text: DecoderConfig;
  if (nested) {
    // A composite config builds its text config from class defaults when text_config is absent; real files carry it.
    if (!top.data.text_config) throw new UserError(`${source}: missing key 'text_config'`);
    const sub = parseDecoderJson(top.data.text_config, source, 'text_config.');
    const expected = cls.textModelTypes ?? [];
    if (sub.model_type !== undefined && expected.length > 0 && !expected.includes(sub.model_type)) {
      throw new UserError(
        `${source}: text_config.model_type '${sub.model_type}' is not supported for ${architecture} (expected ${expected.join(' or ')})`,
      );
    }
    text = decoderFrom(cls.decoder, sub, source, 'text_config.');
  } else {
    const sub = parseDecoderJson(json, source, '');
    for (const key of REQUIRED_TOP_LEVEL)
      if (sub[key] === undefined) throw new UserError(`${source}: missing key '${key}'`);
    text = decoderFrom(cls.decoder, sub, source, '');
  }
  if (cls.adjust) text = cls.adjust(text, raw, source);
  return { architecture, modelType, dtype, text, imageTokenId: cls.imageTokenId?.(raw) ?? null, raw };
}

/** Read and parse `<dir>/config.json` with the model classes of `classes`. */
export function readHfConfig(dir: string, classes: ModelClassLookup): HfModelConfig {
  const path = join(dir, 'config.json');
  if (!existsSync(path))
    throw new UserError(`${path}: no such file (a Hugging Face checkpoint folder has a config.json)`);
  return parseHfConfig(readJson(path, z.unknown()), classes, path);
}

/** Special tokens for generation: generation_config.json when present (chat models list several EOS ids there, e.g.
 *  Gemma 3's [1, 106]), else config.json's decoder values. */
export interface GenerationTokens {
  bosTokenId: number | null;
  eosTokenIds: number[];
  padTokenId: number | null;
}

const GenerationJson = z
  .object({ bos_token_id: tokenIds.optional(), eos_token_id: tokenIds.optional(), pad_token_id: tokenIds.optional() })
  .loose();

export function readGenerationTokens(dir: string, config: HfModelConfig): GenerationTokens {
  const fallback = {
    bosTokenId: config.text.bosTokenId,
    eosTokenIds: config.text.eosTokenIds,
    padTokenId: config.text.padTokenId,
  };
  const path = join(dir, 'generation_config.json');
  if (!existsSync(path)) return fallback;
  const g = readJson(path, GenerationJson);
  return {
    bosTokenId: g.bos_token_id !== undefined ? firstToken(g.bos_token_id) : fallback.bosTokenId,
    eosTokenIds: g.eos_token_id !== undefined ? tokenList(g.eos_token_id) : fallback.eosTokenIds,
    padTokenId: g.pad_token_id !== undefined ? firstToken(g.pad_token_id) : fallback.padTokenId,
  };
}
