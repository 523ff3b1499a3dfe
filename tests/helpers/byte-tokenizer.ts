// Test helper: a minimal Hugging Face tokenizer for the tiny fixture checkpoints (vocabulary 256, no tokenizer of
// their own). It writes a byte-level BPE tokenizer.json of exactly 256 tokens, id = byte value, no merges, so any
// UTF-8 text encodes to its bytes and back; plus a tokenizer_config.json with a small chat template. Image models
// need their image tokens (Idefics3 fixture: <image> 250, <fake_token_around_image> 251, <global-img> 252; Gemma 3
// fixture: <start_of_image> 253, <end_of_image> 254, <image_soft_token> 255): `specials` puts such tokens on ids
// 245-255, the byte values that never occur in UTF-8 (0xF5-0xFF), so text still round-trips.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ByteTokenizerOptions {
  /** Special tokens on ids 245-255 (bytes that UTF-8 never uses), e.g. { '<image>': 250 }. */
  specials?: Record<string, number>;
  /** The text the chat template writes for an image part (default "<image>"; Gemma 3: "<start_of_image>"). */
  imagePlaceholder?: string;
  /** The chat template; default: "Role: text\n" per message, then "Assistant:" for the generation prompt. */
  chatTemplate?: string;
}

/** The Idefics3 fixture's image tokens (../shared/fixtures/hf/idefics3/reference.json). */
export const IDEFICS3_SPECIALS = { '<image>': 250, '<fake_token_around_image>': 251, '<global-img>': 252 };
/** The Gemma 3 fixture's image tokens (../shared/fixtures/hf/gemma3/config.json). */
export const GEMMA3_SPECIALS = { '<start_of_image>': 253, '<end_of_image>': 254, '<image_soft_token>': 255 };
/** The Qwen-VL fixtures' ids (README section 8); the template writes start, pad, end for an image. */
export const QWEN_VL_SPECIALS = {
  '<|vision_start|>': 250,
  '<|vision_end|>': 251,
  '<|image_pad|>': 252,
  '<|video_pad|>': 253,
};

/** GPT-2's bytes_to_unicode: printable bytes stand for themselves, the others for code points from 256 on. */
function byteToUnicode(): string[] {
  const table: string[] = new Array(256);
  let next = 256;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    table[b] = String.fromCodePoint(printable ? b : next++);
  }
  return table;
}

function defaultChatTemplate(imagePlaceholder = '<image>'): string {
  return (
    '{% for message in messages %}{{ message.role | capitalize }}: ' +
    '{% if message.content is string %}{{ message.content }}{% else %}{% for part in message.content %}' +
    `{% if part.type == 'text' %}{{ part.text }}{% elif part.type == 'image' %}${imagePlaceholder}{% endif %}` +
    // The newline is an expression: trim_blocks (on in transformers and here) eats a literal newline after a tag.
    "{% endfor %}{% endif %}{{ '\\n' }}{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}"
  );
}

/** Write tokenizer.json and tokenizer_config.json into `dir` (created if needed). */
export function writeByteTokenizer(dir: string, options: ByteTokenizerOptions = {}): void {
  const specials = options.specials ?? {};
  const bySpecialId = new Map<number, string>();
  for (const [content, id] of Object.entries(specials)) {
    if (!Number.isInteger(id) || id < 245 || id > 255)
      throw new Error(`special token ${content}: id ${id} is not in 245-255`);
    bySpecialId.set(id, content);
  }
  const chars = byteToUnicode();
  const vocab: Record<string, number> = {};
  for (let id = 0; id < 256; id++) vocab[bySpecialId.get(id) ?? chars[id]] = id;
  const addedTokens = [...bySpecialId].map(([id, content]) => ({
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }));
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokens,
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: [],
    },
  };
  const config = {
    added_tokens_decoder: Object.fromEntries(addedTokens.map(({ id, ...rest }) => [String(id), rest])),
    additional_special_tokens: Object.keys(specials),
    chat_template: options.chatTemplate ?? defaultChatTemplate(options.imagePlaceholder),
    clean_up_tokenization_spaces: false,
    model_max_length: 4096,
    tokenizer_class: 'PreTrainedTokenizerFast',
  };
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tokenizer));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(config, null, 2));
}
