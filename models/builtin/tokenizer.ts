// The built-in model's character-level tokenizer. Every character is one token, so FENs, UCI moves and "x swap y"
// tokenise exactly (no merges that could split a square name oddly). Special tokens: PAD, BOS, EOS, IMG (one per image
// patch position) and UNK, the fixed fallback for characters outside the vocabulary. It is saved and loaded as a
// Hugging Face tokenizer.json (WordLevel model over single characters, a per-character Split pre-tokenizer, a Fuse
// decoder, special tokens in added_tokens), so `tokenizers` in Python reads the same file.
import { z } from 'zod';
import { UserError, describeZodError } from '../../core/errors.ts';

const SPECIAL_TOKENS = { pad: '[PAD]', bos: '[BOS]', eos: '[EOS]', img: '[IMG]', unk: '[UNK]' } as const;
type SpecialName = keyof typeof SPECIAL_TOKENS;

/** Names other tokenizer.json files commonly use for the same roles. */
const SPECIAL_ALIASES: Record<SpecialName, string[]> = {
  pad: ['[PAD]', '<pad>', '<|pad|>'],
  bos: ['[BOS]', '<s>', '<bos>', '<|startoftext|>'],
  eos: ['[EOS]', '</s>', '<eos>', '<|endoftext|>'],
  img: ['[IMG]', '<image>', '<img>', '<|image|>'],
  unk: ['[UNK]', '<unk>', '<|unk|>'],
};

/** The default character set: newline and printable ASCII. */
function defaultCharacters(): string[] {
  const chars = ['\n'];
  for (let c = 32; c <= 126; c++) chars.push(String.fromCharCode(c));
  return chars;
}

const AddedTokenSchema = z
  .object({ id: z.number().int().nonnegative(), content: z.string(), special: z.boolean().optional() })
  .loose();
const TokenizerJsonSchema = z
  .object({
    added_tokens: z.array(AddedTokenSchema).default([]),
    model: z
      .object({
        type: z.literal('WordLevel'),
        vocab: z.record(z.string(), z.number().int().nonnegative()),
        unk_token: z.string().nullish(),
      })
      .loose(),
  })
  .loose();

export class CharTokenizer {
  readonly pad: number;
  readonly bos: number;
  readonly eos: number;
  readonly img: number;
  readonly unk: number;
  readonly vocabSize: number;
  private readonly charToId: Map<string, number>;
  private readonly idToText: string[];
  private readonly specialIds: Set<number>;

  /** `vocab` maps each token (a single character, or a special token's name) to its id. */
  constructor(vocab: Map<string, number>, specials: Record<SpecialName, number>) {
    this.pad = specials.pad;
    this.bos = specials.bos;
    this.eos = specials.eos;
    this.img = specials.img;
    this.unk = specials.unk;
    this.specialIds = new Set(Object.values(specials));
    this.vocabSize = Math.max(...vocab.values()) + 1;
    this.charToId = new Map();
    this.idToText = new Array(this.vocabSize).fill('');
    for (const [token, id] of vocab) {
      if (this.specialIds.has(id)) continue;
      if ([...token].length === 1) this.charToId.set(token, id);
      this.idToText[id] = token;
    }
    this.idToText[this.unk] = '?';
  }

  /** The default tokenizer: PAD 0, BOS 1, EOS 2, IMG 3, UNK 4, then newline and printable ASCII. */
  static createDefault(): CharTokenizer {
    const vocab = new Map<string, number>();
    const names: SpecialName[] = ['pad', 'bos', 'eos', 'img', 'unk'];
    names.forEach((n, i) => vocab.set(SPECIAL_TOKENS[n], i));
    defaultCharacters().forEach((c, i) => vocab.set(c, names.length + i));
    return new CharTokenizer(vocab, { pad: 0, bos: 1, eos: 2, img: 3, unk: 4 });
  }

  /** Load from a tokenizer.json object (WordLevel over single characters). `source` names the file in errors. */
  static fromJson(json: unknown, source = 'tokenizer.json'): CharTokenizer {
    const parsed = TokenizerJsonSchema.safeParse(json);
    if (!parsed.success) throw new UserError(describeZodError(parsed.error, `${source}: `));
    const vocab = new Map<string, number>(Object.entries(parsed.data.model.vocab));
    for (const t of parsed.data.added_tokens) vocab.set(t.content, t.id);
    const specials = {} as Record<SpecialName, number>;
    for (const name of Object.keys(SPECIAL_ALIASES) as SpecialName[]) {
      const candidates =
        name === 'unk' && parsed.data.model.unk_token
          ? [parsed.data.model.unk_token, ...SPECIAL_ALIASES.unk]
          : SPECIAL_ALIASES[name];
      const found = candidates.find((c) => vocab.has(c));
      if (found === undefined)
        throw new UserError(
          `${source}: no ${name.toUpperCase()} token (expected one of ${SPECIAL_ALIASES[name].join(', ')})`,
        );
      specials[name] = vocab.get(found)!;
    }
    for (const [token] of vocab) {
      const isSpecial =
        Object.values(SPECIAL_ALIASES).some((list) => list.includes(token)) || token === parsed.data.model.unk_token;
      if (!isSpecial && [...token].length !== 1)
        throw new UserError(
          `${source}: token ${JSON.stringify(token)} is not a single character (only character-level vocabularies are supported)`,
        );
    }
    return new CharTokenizer(vocab, specials);
  }

  /** Token ids of a text, one per character; characters outside the vocabulary become UNK. */
  encodeText(text: string): number[] {
    const ids: number[] = [];
    for (const ch of text) ids.push(this.charToId.get(ch) ?? this.unk);
    return ids;
  }

  /** Text of token ids; PAD, BOS, EOS and IMG are dropped, UNK shows as "?". */
  decode(ids: number[]): string {
    let out = '';
    for (const id of ids) {
      if (id === this.unk) out += '?';
      else if (!this.specialIds.has(id)) out += this.idToText[id] ?? '';
    }
    return out;
  }

  /** The Hugging Face tokenizer.json representation. */
  toJson(): Record<string, unknown> {
    const specials: [SpecialName, number][] = [
      ['pad', this.pad],
      ['bos', this.bos],
      ['eos', this.eos],
      ['img', this.img],
      ['unk', this.unk],
    ];
    const vocab: Record<string, number> = {};
    for (const [name, id] of specials) vocab[SPECIAL_TOKENS[name]] = id;
    for (const [ch, id] of this.charToId) vocab[ch] = id;
    return {
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: specials
        .sort((a, b) => a[1] - b[1])
        .map(([name, id]) => ({
          id,
          content: SPECIAL_TOKENS[name],
          single_word: false,
          lstrip: false,
          rstrip: false,
          normalized: false,
          special: true,
        })),
      normalizer: null,
      // Every character is its own piece; WordLevel then maps each piece to its id.
      pre_tokenizer: { type: 'Split', pattern: { Regex: '[\\s\\S]' }, behavior: 'Isolated', invert: false },
      post_processor: null,
      decoder: { type: 'Fuse' },
      model: { type: 'WordLevel', vocab, unk_token: SPECIAL_TOKENS.unk },
    };
  }
}
