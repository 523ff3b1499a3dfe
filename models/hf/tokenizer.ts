// The tokenizer of a Hugging Face checkpoint folder. It reads the folder's tokenizer.json through
// @huggingface/tokenizers, the settings in tokenizer_config.json (special_tokens_map.json for older folders) and the
// generation ids in generation_config.json, and answers what the rest of metrl asks of a tokenizer: text <-> ids,
// token <-> id, which ids are special (BOS, EOS, PAD, image tokens), and the special-token variables a chat template
// reads. Encoding adds only what the tokenizer's post-processor adds (nothing for SmolVLM; BOS for Llama or Gemma);
// text rendered from a chat template already holds its special tokens and is encoded with addSpecialTokens: false.
//
// One correction around the library: its Digits pre-tokenizer splits ASCII digits only, while the Rust `tokenizers`
// library (what transformers runs) splits every char::is_numeric character, i.e. Unicode categories Nd, Nl and No
// ("²", "½", "٣"). withUnicodeDigits() gives each Digits step the Rust pattern; tests keep a case that needs it.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { Tokenizer } from '@huggingface/tokenizers';
import { UserError, describeZodError } from '../../core/errors.ts';

const TOKENIZER_JSON = 'tokenizer.json';
export const TOKENIZER_CONFIG = 'tokenizer_config.json';
const SPECIAL_TOKENS_MAP = 'special_tokens_map.json';
const GENERATION_CONFIG = 'generation_config.json';

/** A token the tokenizer gives a role to (BOS, EOS, …): its text and id. */
export interface NamedToken {
  token: string;
  id: number;
}

export interface EncodeOptions {
  /** Let the post-processor add its tokens (BOS for Llama/Gemma; nothing for SmolVLM). Default true, as in transformers. */
  addSpecialTokens?: boolean;
}

export interface DecodeOptions {
  /** Drop added tokens marked special (BOS, EOS, image tokens, …). Default false, as in transformers. */
  skipSpecialTokens?: boolean;
}

// --- the files, as far as metrl reads them -------------------------------------------------------------------------

/** A special token in tokenizer_config.json / special_tokens_map.json: its text, or an AddedToken object. */
const tokenSpecSchema = z.union([z.string(), z.object({ content: z.string() }).loose()]);
type TokenSpec = z.infer<typeof tokenSpecSchema>;

const addedTokenSchema = z
  .object({ id: z.number().int().nonnegative(), content: z.string(), special: z.boolean().optional() })
  .loose();

const tokenizerJsonSchema = z
  .object({
    model: z.object({ type: z.string().optional(), vocab: z.unknown() }).loose(),
    added_tokens: z.array(addedTokenSchema).default([]),
    pre_tokenizer: z.unknown().optional(),
  })
  .loose();

const tokenizerConfigSchema = z
  .object({
    bos_token: tokenSpecSchema.nullish(),
    eos_token: tokenSpecSchema.nullish(),
    pad_token: tokenSpecSchema.nullish(),
    unk_token: tokenSpecSchema.nullish(),
    additional_special_tokens: z.array(tokenSpecSchema).nullish(),
    // transformers 4.x writes a name -> token record; v5 may write a list of tokens.
    extra_special_tokens: z.union([z.record(z.string(), tokenSpecSchema), z.array(tokenSpecSchema)]).nullish(),
    added_tokens_decoder: z.record(z.string(), z.unknown()).nullish(),
    clean_up_tokenization_spaces: z.boolean().nullish(),
  })
  .loose();
type TokenizerConfig = z.infer<typeof tokenizerConfigSchema>;

const tokenIdsSchema = z.union([z.number().int(), z.array(z.number().int())]).nullish();
const generationConfigSchema = z
  .object({ bos_token_id: tokenIdsSchema, eos_token_id: tokenIdsSchema, pad_token_id: tokenIdsSchema })
  .loose();

/** The special-token roles of tokenizer_config.json, in the order transformers lists them. */
const ROLES = ['bos_token', 'eos_token', 'unk_token', 'pad_token'] as const;

function readJson(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UserError(`${path}: cannot read (${(error as Error).message})`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UserError(`${path}: not valid JSON (${oneLine((error as Error).message)})`);
  }
}

function readJsonIfExists(path: string): unknown {
  return existsSync(path) ? readJson(path) : undefined;
}

function parseFile<T>(schema: z.ZodType<T>, value: unknown, path: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new UserError(describeZodError(result.error, `${path}: `, value));
}

function oneLine(message: string): string {
  return message.replace(/\s*\n\s*/g, ' ').trim();
}

function tokenText(spec: TokenSpec | null | undefined): string | null {
  if (spec === null || spec === undefined) return null;
  return typeof spec === 'string' ? spec : spec.content;
}

function idList(ids: number | number[] | null | undefined): number[] | null {
  if (ids === null || ids === undefined) return null;
  return Array.isArray(ids) ? ids : [ids];
}

/**
 * tokenizer_config.json with special_tokens_map.json applied as transformers 4.57 applies it: a folder whose
 * tokenizer_config.json has `added_tokens_decoder` (everything saved since transformers 4.34) is read from that file
 * alone; in an older folder the map's roles override the config's.
 */
function mergeSpecialTokensMap(config: TokenizerConfig, map: TokenizerConfig | undefined): TokenizerConfig {
  if (!map || config.added_tokens_decoder) return config;
  const merged: TokenizerConfig = { ...config };
  for (const role of [...ROLES, 'additional_special_tokens'] as const) {
    const value = map[role];
    if (value !== undefined && value !== null) (merged as Record<string, unknown>)[role] = value;
  }
  return merged;
}

// --- the Unicode digit correction ----------------------------------------------------------------------------------

/**
 * Give every Digits pre-tokenizer (alone or inside Sequences) the Rust library's notion of a digit. Rust's Digits
 * splits on char::is_numeric, which is Unicode Nd | Nl | No = JavaScript's \p{N}; individual_digits isolates each
 * one, otherwise a run of them stays one piece. The library's own pattern uses \d, which in JavaScript is [0-9].
 * The pre-tokenizer classes are not in the package's type exports under NodeNext resolution, so the steps are
 * recognised by the public fields their declarations give them (Digits: config and pattern; Sequence: tokenizers);
 * the caller checks that every Digits step of tokenizer.json was reached.
 */
interface DigitsStep {
  config: { type: 'Digits'; individual_digits?: boolean };
  pattern: RegExp;
}

function isDigitsStep(step: unknown): step is DigitsStep {
  // The library's steps are callable objects (functions), so look at fields rather than typeof.
  const s = step as Partial<DigitsStep> | null | undefined;
  return s?.config?.type === 'Digits' && s.pattern instanceof RegExp;
}

function sequenceSteps(step: unknown): unknown[] | null {
  const inner = (step as { tokenizers?: unknown } | null)?.tokenizers;
  return Array.isArray(inner) ? inner : null;
}

/** Patch the Digits steps of a built pre-tokenizer; returns how many it patched. */
function withUnicodeDigits(step: unknown): number {
  if (isDigitsStep(step)) {
    step.pattern = step.config.individual_digits ? /[^\p{N}]+|\p{N}/gu : /[^\p{N}]+|\p{N}+/gu;
    return 1;
  }
  return (sequenceSteps(step) ?? []).reduce((n: number, inner) => n + withUnicodeDigits(inner), 0);
}

/** How many Digits steps a tokenizer.json pre_tokenizer configuration holds. */
function countDigitsConfigs(config: unknown): number {
  if (typeof config !== 'object' || config === null) return 0;
  const c = config as { type?: unknown; pretokenizers?: unknown };
  if (c.type === 'Digits') return 1;
  return Array.isArray(c.pretokenizers)
    ? c.pretokenizers.reduce((n: number, inner) => n + countDigitsConfigs(inner), 0)
    : 0;
}

// --- the tokenizer -------------------------------------------------------------------------------------------------

export class HfTokenizer {
  /** One past the largest id the tokenizer knows (the model's embedding may have more rows: reserved ids). */
  readonly vocabSize: number;
  /** Every added token marked special (what skipSpecialTokens drops), by text. */
  readonly specialTokens: ReadonlyMap<string, number>;
  readonly specialIds: ReadonlySet<number>;
  /** The tokenizer's BOS / EOS / PAD / UNK (tokenizer_config.json), as the chat template sees them. */
  readonly bosToken: NamedToken | null;
  readonly eosToken: NamedToken | null;
  readonly padToken: NamedToken | null;
  readonly unkToken: NamedToken | null;
  /** Ids generation starts from and stops at: generation_config.json when it says, else the tokenizer's tokens. */
  readonly bosId: number | null;
  readonly eosIds: readonly number[];
  readonly padId: number | null;

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly config: TokenizerConfig,
    generation: z.infer<typeof generationConfigSchema> | undefined,
    addedTokens: z.infer<typeof addedTokenSchema>[],
  ) {
    let maxId = -1;
    for (const id of tokenizer.get_vocab(true).values()) maxId = Math.max(maxId, id);
    this.vocabSize = maxId + 1;
    const special = new Map<string, number>();
    for (const t of addedTokens) if (t.special) special.set(t.content, t.id);
    this.specialTokens = special;
    this.specialIds = new Set(special.values());
    this.bosToken = this.named(config.bos_token);
    this.eosToken = this.named(config.eos_token);
    this.padToken = this.named(config.pad_token);
    this.unkToken = this.named(config.unk_token);
    this.bosId = idList(generation?.bos_token_id)?.[0] ?? this.bosToken?.id ?? null;
    this.eosIds = idList(generation?.eos_token_id) ?? (this.eosToken ? [this.eosToken.id] : []);
    this.padId = idList(generation?.pad_token_id)?.[0] ?? this.padToken?.id ?? null;
  }

  private named(spec: TokenSpec | null | undefined): NamedToken | null {
    const token = tokenText(spec);
    if (token === null) return null;
    const id = this.tokenToId(token);
    return id === undefined ? null : { token, id };
  }

  /** Token ids of a text. Added and special tokens written in the text are recognised (leftmost-longest). */
  encode(text: string, options: EncodeOptions = {}): number[] {
    return this.tokenizer.encode(text, { add_special_tokens: options.addSpecialTokens ?? true }).ids;
  }

  /** The token strings of a text (byte-level tokens read as GPT-2's byte alphabet: "Ġ" is a space). */
  tokenize(text: string, options: EncodeOptions = {}): string[] {
    return this.tokenizer.encode(text, { add_special_tokens: options.addSpecialTokens ?? true }).tokens;
  }

  /**
   * Text of token ids. Ids the tokenizer does not know (reserved rows of a larger embedding) are dropped, as the Rust
   * library does.
   */
  decode(ids: readonly number[], options: DecodeOptions = {}): string {
    const known = ids.filter(
      (id) => this.tokenizer.id_to_token(id) !== undefined && !(options.skipSpecialTokens && this.specialIds.has(id)),
    );
    if (known.length === 0) return '';
    return this.tokenizer.decode(known, {
      skip_special_tokens: false,
      clean_up_tokenization_spaces: this.config.clean_up_tokenization_spaces ?? false,
    });
  }

  tokenToId(token: string): number | undefined {
    return this.tokenizer.token_to_id(token);
  }

  idToToken(id: number): string | undefined {
    return this.tokenizer.id_to_token(id);
  }

  /**
   * The special-token variables transformers hands a chat template (its special_tokens_map): bos_token, eos_token,
   * unk_token, pad_token as strings, additional_special_tokens, and the named extras (Gemma 3: boi_token, …).
   */
  templateVariables(): Record<string, unknown> {
    const vars: Record<string, unknown> = {};
    for (const role of ROLES) {
      const text = tokenText(this.config[role]);
      if (text !== null) vars[role] = text;
    }
    const additional = (this.config.additional_special_tokens ?? [])
      .map(tokenText)
      .filter((t): t is string => t !== null);
    if (additional.length > 0) vars.additional_special_tokens = additional;
    const extra = this.config.extra_special_tokens;
    if (extra && !Array.isArray(extra)) {
      for (const [name, spec] of Object.entries(extra)) vars[name] ??= tokenText(spec);
    }
    return vars;
  }
}

/**
 * Load the tokenizer of a checkpoint folder: tokenizer.json (required), tokenizer_config.json,
 * special_tokens_map.json and generation_config.json (each optional). Bad files are UserErrors naming the file.
 */
export function loadHfTokenizer(dir: string): HfTokenizer {
  const jsonPath = join(dir, TOKENIZER_JSON);
  if (!existsSync(jsonPath))
    throw new UserError(`${dir}: no ${TOKENIZER_JSON} (a Hugging Face checkpoint folder needs one)`);
  const raw = readJson(jsonPath);
  const parsed = parseFile(tokenizerJsonSchema, raw, jsonPath);

  const configPath = join(dir, TOKENIZER_CONFIG);
  const mapPath = join(dir, SPECIAL_TOKENS_MAP);
  const generationPath = join(dir, GENERATION_CONFIG);
  const ownConfig = parseFile(tokenizerConfigSchema, readJsonIfExists(configPath) ?? {}, configPath);
  const mapRaw = readJsonIfExists(mapPath);
  const map = mapRaw === undefined ? undefined : parseFile(tokenizerConfigSchema, mapRaw, mapPath);
  const config = mergeSpecialTokensMap(ownConfig, map);
  const generationRaw = readJsonIfExists(generationPath);
  const generation =
    generationRaw === undefined ? undefined : parseFile(generationConfigSchema, generationRaw, generationPath);

  let tokenizer: Tokenizer;
  try {
    // The library reads `additional_special_tokens` as strings; give it the texts whatever form the file uses.
    const libraryConfig = {
      ...config,
      additional_special_tokens: (config.additional_special_tokens ?? []).map(tokenText),
    };
    tokenizer = new Tokenizer(raw as object, libraryConfig);
  } catch (error) {
    throw new UserError(`${jsonPath}: not a tokenizer this library reads (${oneLine((error as Error).message)})`);
  }
  const digitSteps = countDigitsConfigs(parsed.pre_tokenizer);
  if (withUnicodeDigits(tokenizer.pre_tokenizer) !== digitSteps) {
    throw new Error(
      `@huggingface/tokenizers changed its pre-tokenizer objects: the Unicode digit correction found no Digits step to patch (${jsonPath})`,
    );
  }
  return new HfTokenizer(tokenizer, config, generation, parsed.added_tokens);
}
