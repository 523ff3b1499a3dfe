import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CharTokenizer } from '../../../models/builtin/tokenizer.ts';
import { UserError } from '../../../core/errors.ts';

const tok = CharTokenizer.createDefault();

describe('character tokenizer', () => {
  it('tokenises FEN, UCI and "x swap y" exactly, one token per character, no UNK', () => {
    for (const text of [
      'rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1',
      'e2e4 a7a8q e1g1',
      '1 swap 3\n2 swap 1',
    ]) {
      const ids = tok.encodeText(text);
      expect(ids).toHaveLength(text.length);
      expect(ids).not.toContain(tok.unk);
      expect(tok.decode(ids)).toBe(text);
    }
  });

  it('maps unknown characters to the fixed UNK fallback and drops special tokens when decoding', () => {
    const ids = tok.encodeText('a→b\té');
    expect(ids.filter((i) => i === tok.unk)).toHaveLength(3);
    expect(tok.decode([tok.bos, ...tok.encodeText('ab'), tok.img, tok.eos, tok.pad])).toBe('ab');
    expect(tok.decode(ids)).toBe('a?b??');
  });

  it('round-trips through a tokenizer.json file', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'metrl-tok-')), 'tokenizer.json');
    writeFileSync(path, JSON.stringify(tok.toJson()));
    const json = JSON.parse(readFileSync(path, 'utf8'));
    expect(json.model.type).toBe('WordLevel');
    expect(json.added_tokens.map((t: { content: string }) => t.content)).toEqual([
      '[PAD]',
      '[BOS]',
      '[EOS]',
      '[IMG]',
      '[UNK]',
    ]);
    const back = CharTokenizer.fromJson(json);
    expect(back.vocabSize).toBe(tok.vocabSize);
    expect([back.pad, back.bos, back.eos, back.img, back.unk]).toEqual([tok.pad, tok.bos, tok.eos, tok.img, tok.unk]);
    const text = 'r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4\n';
    expect(back.encodeText(text)).toEqual(tok.encodeText(text));
  });

  it('loads a hand-written WordLevel tokenizer.json with other special-token names', () => {
    const json = {
      version: '1.0',
      added_tokens: [
        { id: 0, content: '<pad>', special: true },
        { id: 1, content: '<s>', special: true },
        { id: 2, content: '</s>', special: true },
        { id: 3, content: '<image>', special: true },
      ],
      pre_tokenizer: { type: 'Split', pattern: { Regex: '[\\s\\S]' }, behavior: 'Isolated', invert: false },
      decoder: { type: 'Fuse' },
      model: { type: 'WordLevel', vocab: { '<unk>': 4, a: 5, b: 6, ' ': 7 }, unk_token: '<unk>' },
    };
    const t = CharTokenizer.fromJson(json);
    expect([t.pad, t.bos, t.eos, t.img, t.unk]).toEqual([0, 1, 2, 3, 4]);
    expect(t.encodeText('ab ba c')).toEqual([5, 6, 7, 6, 5, 7, 4]);
    expect(t.vocabSize).toBe(8);
  });

  it('rejects tokenizers it cannot represent with one clear line', () => {
    expect(() => CharTokenizer.fromJson({ model: { type: 'BPE', vocab: {}, merges: [] } }, 'x.json')).toThrow(
      UserError,
    );
    const noImage = {
      added_tokens: [
        { id: 0, content: '<pad>' },
        { id: 1, content: '<s>' },
        { id: 2, content: '</s>' },
      ],
      model: { type: 'WordLevel', vocab: { '<unk>': 3, a: 4 }, unk_token: '<unk>' },
    };
    expect(() => CharTokenizer.fromJson(noImage, 'x.json')).toThrow(/x.json: no IMG token/);
    const words = {
      added_tokens: [
        { id: 0, content: '<pad>' },
        { id: 1, content: '<s>' },
        { id: 2, content: '</s>' },
        { id: 3, content: '<image>' },
      ],
      model: { type: 'WordLevel', vocab: { '<unk>': 4, hello: 5 }, unk_token: '<unk>' },
    };
    expect(() => CharTokenizer.fromJson(words, 'x.json')).toThrow(/not a single character/);
  });
});
