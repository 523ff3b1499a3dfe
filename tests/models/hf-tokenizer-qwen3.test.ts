// The Hugging Face tokenizer loader (models/hf/tokenizer.ts) and chat template (models/hf/chat-template.ts) against the
// real Qwen3 tokenizer in ../shared/fixtures/hf/tokenizer-qwen3 (read in place): the 25 id and token sequences of
// cases.json (digits split one by one, NFC, contractions, the VL image-token layout, <think>), the 25 sequences
// transformers.js publishes for the same vocabulary, the special tokens Qwen-VL prompts use, and the four chat-template
// renderings (thinking switched off and left to the template).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SHARED_DIR } from '../../core/paths.ts';
import { type ChatTemplateMessage, loadChatTemplate } from '../../models/hf/chat-template.ts';
import { loadHfTokenizer } from '../../models/hf/tokenizer.ts';

const QWEN3 = join(SHARED_DIR, 'fixtures', 'hf', 'tokenizer-qwen3');

interface Case {
  name: string;
  text: string;
  ids: number[];
  tokens: string[];
  decoded?: string;
}
const read = (file: string) => JSON.parse(readFileSync(join(QWEN3, file), 'utf8'));
const fixture = read('cases.json') as {
  cases: Case[];
  chat_template_examples: {
    messages: ChatTemplateMessage[];
    add_generation_prompt: boolean;
    enable_thinking: boolean | null;
    rendered: string;
    ids: number[];
  }[];
};
const published = read('published_cases.json') as { cases: Case[] };
const tok = loadHfTokenizer(QWEN3);

describe('Qwen3 tokenizer: cases.json', () => {
  it('holds the 25 cases and 4 chat renderings the fixture README counts', () => {
    expect(fixture.cases).toHaveLength(25);
    expect(fixture.chat_template_examples).toHaveLength(4);
  });

  it.each(fixture.cases.map((c) => [c.name, c] as const))('%s: ids and tokens exact, decodes back', (_name, c) => {
    expect(tok.encode(c.text)).toEqual(c.ids);
    expect(tok.tokenize(c.text)).toEqual(c.tokens);
    expect(tok.decode(c.ids)).toBe(c.text.normalize('NFC'));
  });

  it('splits every digit and keeps the space before a number its own token', () => {
    expect(tok.tokenize('e2e4')).toEqual(['e', '2', 'e', '4']);
    expect(tok.tokenize(' 3')).toEqual(['Ġ', '3']);
  });
});

describe('Qwen3 tokenizer: the sequences transformers.js publishes (same vocabulary)', () => {
  it.each(published.cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    expect(tok.encode(c.text)).toEqual(c.ids);
    expect(tok.tokenize(c.text)).toEqual(c.tokens);
  });
});

describe('Qwen3 tokenizer: special tokens and chat template', () => {
  it('maps the added tokens Qwen-VL prompts use both ways', () => {
    const ids = {
      '<|endoftext|>': 151643,
      '<|im_start|>': 151644,
      '<|im_end|>': 151645,
      '<|vision_start|>': 151652,
      '<|vision_end|>': 151653,
      '<|image_pad|>': 151655,
      '<think>': 151667,
    };
    for (const [token, id] of Object.entries(ids)) {
      expect(tok.tokenToId(token), token).toBe(id);
      expect(tok.idToToken(id), token).toBe(token);
    }
  });

  it.each(fixture.chat_template_examples.map((e, i) => [i, e] as const))(
    'rendering %i: the text and ids of the reference',
    (_i, e) => {
      const template = loadChatTemplate(QWEN3, tok);
      const variables = e.enable_thinking === null ? {} : { enable_thinking: e.enable_thinking };
      const text = template.render(e.messages, { addGenerationPrompt: e.add_generation_prompt, variables });
      expect(text).toBe(e.rendered);
      expect(tok.encode(text)).toEqual(e.ids);
    },
  );
});
