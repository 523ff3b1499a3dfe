// The draws of a batch of decoding rows: each unfinished row draws its next token from its logits with
// the caller's Rng, rows in order, until it draws EOS. Shared by every engine that runs the built-in model (tfjs in
// sampling.ts, ONNX Runtime in models/onnx/builtin/builtin-sampler.ts and, for its own rows, a rollout part in a worker thread:
// models/onnx/builtin/rollout-part.ts), so all of them draw the same tokens from the same Rng. No tfjs here: worker threads
// load this file.
import type { Rng } from '../../core/rng.ts';
import type { Completion, SamplingOptions, TopLogProb } from '../types.ts';
import { sampleToken, topLogProbs } from '../token-sampling.ts';
import type { CharTokenizer } from './tokenizer.ts';

/** The special ids a draw needs (a worker thread gets these, not the tokenizer). */
export type DrawTokens = Pick<CharTokenizer, 'pad' | 'bos' | 'eos' | 'img' | 'unk'>;

/**
 * What rows drew, as plain data (it crosses threads): tokens and their log-probs per row (at temperature 1, and as
 * sampled: token-sampling.ts), and which rows drew EOS.
 */
export interface DrawnRows {
  tokens: number[][];
  logProbs: number[][];
  samplingLogProbs: number[][];
  finished: boolean[];
  /** With SamplingOptions.topLogProbs: per row, per drawn token, the most likely tokens at that draw. */
  top?: TopLogProb[][][];
}

export class RowDraws {
  private readonly drawn: DrawnRows;
  /** PAD, BOS, IMG and UNK are never a valid output. */
  private readonly banned: ReadonlySet<number>;
  private open: number;

  constructor(
    private readonly rows: number,
    private readonly tokenizer: DrawTokens,
  ) {
    this.drawn = {
      tokens: Array.from({ length: rows }, () => []),
      logProbs: Array.from({ length: rows }, () => []),
      samplingLogProbs: Array.from({ length: rows }, () => []),
      finished: new Array<boolean>(rows).fill(false),
    };
    this.banned = new Set([tokenizer.pad, tokenizer.bos, tokenizer.img, tokenizer.unk]);
    this.open = rows;
  }

  /** Each unfinished row draws its next token from its logits; returns the tokens to feed (PAD for finished rows). */
  step(rowLogits: (row: number) => Float32Array, options: SamplingOptions, rng: Rng): Int32Array {
    const { tokens, logProbs, samplingLogProbs, finished } = this.drawn;
    const fed = new Int32Array(this.rows).fill(this.tokenizer.pad);
    const k = options.topLogProbs ?? 0;
    if (k > 0) this.drawn.top ??= Array.from({ length: this.rows }, () => []);
    for (let r = 0; r < this.rows; r++) {
      if (finished[r]) continue;
      const logits = rowLogits(r);
      const { token, logProb, samplingLogProb } = sampleToken(logits, options, rng, this.banned);
      if (k > 0) this.drawn.top![r].push(topLogProbs(logits, k, this.banned));
      tokens[r].push(token);
      logProbs[r].push(logProb);
      samplingLogProbs[r].push(samplingLogProb);
      fed[r] = token;
      if (token === this.tokenizer.eos) {
        finished[r] = true;
        this.open--;
      }
    }
    return fed;
  }

  /** Rows that have not drawn EOS: the draws (and Rng values) the next step takes. */
  unfinished(): number {
    return this.open;
  }

  allFinished(): boolean {
    return this.open === 0;
  }

  get data(): DrawnRows {
    return this.drawn;
  }

  /** The completions per prompt (rows prompt by prompt, `group` each), texts decoded by `tokenizer`. */
  completions(prompts: number, group: number, tokenizer: Pick<CharTokenizer, 'decode'>): Completion[][] {
    return completionsOf(this.drawn, prompts, group, tokenizer);
  }
}

/** Completions per prompt of drawn rows (rows prompt by prompt, `group` each), their texts decoded by `tokenizer`. */
export function completionsOf(
  drawn: DrawnRows,
  prompts: number,
  group: number,
  tokenizer: Pick<CharTokenizer, 'decode'>,
): Completion[][] {
  const out: Completion[][] = Array.from({ length: prompts }, () => []);
  drawn.tokens.forEach((tokens, r) => {
    out[Math.floor(r / group)].push({
      tokens,
      text: tokenizer.decode(tokens),
      logProbs: Float32Array.from(drawn.logProbs[r]),
      samplingLogProbs: Float32Array.from(drawn.samplingLogProbs[r]),
      finished: drawn.finished[r],
      ...(drawn.top ? { topLogProbs: drawn.top[r] } : {}),
    });
  });
  return out;
}
