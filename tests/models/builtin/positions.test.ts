import { beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../../models/backend.ts';
import { BuiltinPolicy } from '../../../models/builtin/policy.ts';
import { CharTokenizer } from '../../../models/builtin/tokenizer.ts';
import { PositionCursor, ROW_STRIDE, TRACE_FIRST_ROW } from '../../../models/builtin/positions.ts';
import { episodeToModelInput, targetText } from '../../../models/builtin/template.ts';
import { shellEnv } from '../../../envs/shell/index.ts';
import type { Episode } from '../../../core/episode.ts';
import { Rng } from '../../../core/rng.ts';

const tokenizer = CharTokenizer.createDefault();
const episode: Episode = {
  id: 'shell-test-00000-abcd',
  domain: 'shell',
  split: 'test',
  initialState: '2',
  actions: [
    { text: '1 swap 2', modality: 'text' },
    { text: '2 swap 3', modality: 'text' },
    { text: '1 swap 3', modality: 'text' },
  ],
  target: '3',
  meta: {},
};

/** Text and position of every character of a prompt + completion, in the given scheme. */
function placed(scheme: 'sequence' | 'grid'): { text: string; positions: number[] } {
  const prompt = episodeToModelInput(shellEnv, episode)
    .map((p) => (p.type === 'text' ? p.text : ''))
    .join('');
  const text = prompt + targetText(shellEnv, episode);
  const cursor = new PositionCursor(scheme, tokenizer);
  return { text, positions: cursor.pushAll(tokenizer.encodeText(text)) };
}

describe('position schemes', () => {
  it('sequence: one position per token, in order', () => {
    const { text, positions } = placed('sequence');
    expect(positions).toEqual(Array.from({ length: text.length }, (_, i) => i));
  });

  it('grid: each trace line sits on the positions of its action in the prompt, line 0 on the initial state', () => {
    const { text, positions } = placed('grid');
    const at = (needle: string, from = 0): number => {
      const i = text.indexOf(needle, from);
      expect(i).toBeGreaterThanOrEqual(0);
      return i;
    };
    const traceStart = at('trace\n') + 'trace\n'.length;
    for (const [i, label] of ['A', 'C', 'D'].entries()) {
      const listed = `${label}: ${episode.actions[i].text}`;
      const inPrompt = at(`${listed}\n`);
      const inTrace = at(`${listed} -> `, traceStart);
      expect(positions.slice(inTrace, inTrace + listed.length)).toEqual(
        positions.slice(inPrompt, inPrompt + listed.length),
      );
      expect(positions[inPrompt]).toBe((TRACE_FIRST_ROW + 1 + i) * ROW_STRIDE);
    }
    // Line 0 (`start -> 2`) is on the initial state's row; the initial state is the prompt's second line.
    expect(positions[traceStart]).toBe(TRACE_FIRST_ROW * ROW_STRIDE);
    expect(positions[at('\n2\n') + 1]).toBe(TRACE_FIRST_ROW * ROW_STRIDE);
    // A line that only begins like the cue does not restart the rows.
    const other = new PositionCursor('grid', tokenizer).pushAll(tokenizer.encodeText('a\ntraces\nx'));
    expect(other[other.length - 1]).toBe(2 * ROW_STRIDE);
  });

  it('a clone continues independently of its original', () => {
    const cursor = new PositionCursor('grid', tokenizer);
    cursor.pushAll(tokenizer.encodeText('shell\n'));
    const copy = cursor.clone();
    expect(copy.pushAll(tokenizer.encodeText('ab\nc'))).toEqual([
      ROW_STRIDE,
      ROW_STRIDE + 1,
      ROW_STRIDE + 2,
      2 * ROW_STRIDE,
    ]);
    expect(cursor.push(tokenizer.encodeText('x')[0])).toBe(ROW_STRIDE);
  });
});

describe('a grid-position model', () => {
  let policy: BuiltinPolicy;
  beforeAll(async () => {
    await initBackend('wasm', null);
    policy = BuiltinPolicy.create({
      architecture: { dModel: 32, nLayers: 2, nHeads: 2, dMlp: 64, imageSize: 16, patchSize: 8, positions: 'grid' },
      seed: 5,
    });
  });

  it('cached decoding, scoring and a full pass agree across lines and the trace cue', () => {
    const prompt = policy.encode([{ type: 'text', text: 'shell\n2\nA: 1 swap 2\ntrace\nstart -> 2\n' }]);
    const group = policy.sampleGroup(prompt, 8, { temperature: 3, topP: 1, maxNewTokens: 40 }, new Rng(4));
    // The check only means something if some completion went on to a new line (its positions jump to the next row).
    expect(group.some((c) => c.text.includes('\n'))).toBe(true);
    const scored = policy.tokenLogProbs(
      group.map((c) => ({ prompt, completion: c.tokens })),
      { useLora: false },
    );
    const scoredRows = scored.logProbs.arraySync();
    group.forEach((c, r) => {
      const full = policy.sequenceLogits({ tokens: [...prompt.tokens, ...c.tokens], images: [] }, false);
      const logp = tf.tidy(() => tf.logSoftmax(full).arraySync() as number[][]);
      full.dispose();
      c.tokens.forEach((token, j) => {
        expect(c.logProbs[j]).toBeCloseTo(logp[prompt.tokens.length - 1 + j][token], 4);
        expect(scoredRows[r][j]).toBeCloseTo(c.logProbs[j], 4);
      });
    });
    tf.dispose([scored.logProbs, scored.mask]);
  });

  it('differs from the same weights on sequence positions (the scheme is used, not just recorded)', () => {
    const prompt = policy.encode([{ type: 'text', text: 'shell\n2\nA: 1 swap 2\ntrace\nstart -> 2\n' }]);
    const onSequence = new BuiltinPolicy({ ...policy.arch, positions: 'sequence' }, policy.tokenizer, policy.weights);
    const a = policy.sequenceLogits(prompt, false);
    const b = onSequence.sequenceLogits(prompt, false);
    expect(tf.tidy(() => tf.max(tf.abs(tf.sub(a, b))).dataSync()[0])).toBeGreaterThan(1e-5);
    tf.dispose([a, b]);
  });
});
