// The model side of a rollout for some of its prompts: prefill, then one decode
// step per drawn token, with each row's own key/value cache kept here. A rollout split over sessions (builtin-sampler.ts)
// gives each part contiguous prompts; a part runs on the main thread or in a worker (worker-main.ts) and, with
// rollout(), draws its own rows too, from its own copy of the rollout's Rng stream at the place the single session's
// draws of those rows take (rollout-board.ts says how the parts learn it), so the samples are those of one session
// while the parts decode on their own cores. Prompts are padded to the whole rollout's longest prompt, so a part's
// rows see exactly the shapes and masks they would in one batch.
import { headDim } from '../../builtin/config.ts';
import { Rng, type RngState } from '../../../core/rng.ts';
import type { SamplingOptions } from '../../types.ts';
import {
  PositionCursor,
  type CursorState,
  type CursorTokenizer,
  type PositionScheme,
} from '../../builtin/positions.ts';
import { RowDraws, type DrawnRows, type DrawTokens } from '../../builtin/row-draws.ts';
import type { BuiltinOrtModel, KVCache, PatchSlot } from './builtin-session.ts';
import { RolloutBoard } from './rollout-board.ts';

/** Prompts right-padded to `length` (at least the longest) with positions and image slots (rows within the part). */
export interface PartPrompts {
  count: number;
  length: number;
  tokens: Int32Array;
  positions: Int32Array;
  slots: PatchSlot[];
  lengths: number[];
}

/** How a part draws its rows (plain data: it crosses threads). */
export interface PartPlan {
  /** This part's place among the rollout's parts (row order) and every part's row count. */
  index: number;
  rows: number[];
  group: number;
  options: SamplingOptions;
  /** The rollout's Rng state at its start: every part walks the same stream. */
  rng: RngState;
  tokens: DrawTokens;
  /** How positions continue: the scheme, the tokenizer as the text of each id, and the part's prompts' end cursors. */
  positions: { scheme: PositionScheme; newline: number; texts: string[]; ends: CursorState[] };
  /** The rollout's board (rollout-board.ts), shared by every part. */
  board: Int32Array;
}

/** A tokenizer for position cursors from the text of each id (what decode gives for it alone). */
function textTokenizer(texts: string[], tokens: DrawTokens): CursorTokenizer {
  return {
    bos: tokens.bos,
    decode: (ids: number[]) => ids.map((id) => texts[id] ?? '').join(''),
    encodeText: (text: string) =>
      Array.from(text, (ch) => {
        const id = texts.indexOf(ch);
        return id < 0 ? tokens.unk : id;
      }),
  };
}

/** Own-cache capacity grows in steps of this many positions (unfilled ones are masked). */
const OWN_CHUNK = 16;

export class RolloutPart {
  /** Own-cache buffers (k and v per layer), kept across rollouts (fresh arrays cost more in page faults than a step). */
  private buffers: { k: Float32Array[]; v: Float32Array[] } | null = null;
  private state: {
    group: number;
    cache: KVCache;
    valid: Int32Array;
    slots: number;
    own: { k: Float32Array[]; v: Float32Array[]; capacity: number; filled: number };
  } | null = null;

  constructor(readonly model: BuiltinOrtModel) {}

  private ownBuffers(size: number): { k: Float32Array[]; v: Float32Array[] } {
    const layers = this.model.arch.nLayers;
    if (!this.buffers || this.buffers.k[0].length < size) {
      this.buffers = {
        k: Array.from({ length: layers }, () => new Float32Array(size)),
        v: Array.from({ length: layers }, () => new Float32Array(size)),
      };
    }
    return this.buffers;
  }

  /** Prefill the prompts (with LoRA) and make room for `maxNewTokens`; returns each prompt's next-token logits [count, V]. */
  start(prompts: PartPrompts, group: number, maxNewTokens: number): Float32Array {
    const { arch } = this.model;
    const V = arch.vocabSize;
    const { count: U, length: P } = prompts;
    const out = this.model.forward({
      rows: U,
      seq: P,
      tokens: prompts.tokens,
      positions: prompts.positions,
      slots: prompts.slots,
      useLora: true,
    });
    const last = new Float32Array(U * V);
    for (let u = 0; u < U; u++)
      last.set(out.logits.subarray((u * P + prompts.lengths[u] - 1) * V, (u * P + prompts.lengths[u]) * V), u * V);
    // Each row's own keys/values, group-major (row r = u·G + g at slot m = (u·H + h)·G + g): k and v
    // [U·H·G, capacity, dh]; the capacity grows by OWN_CHUNK positions, re-laid out in place.
    const slots = U * group * arch.nHeads;
    const most = Math.ceil(Math.max(1, maxNewTokens - 1) / OWN_CHUNK) * OWN_CHUNK;
    this.ownBuffers(slots * most * headDim(arch));
    this.state = {
      group,
      cache: { count: U, length: P, k: out.keys, v: out.values },
      valid: Int32Array.from(prompts.lengths),
      slots,
      own: { k: [], v: [], capacity: 0, filled: 0 },
    };
    return last;
  }

  private grow(capacity: number): void {
    const { own, slots } = this.state!;
    const dh = headDim(this.model.arch);
    const buffers = this.buffers!;
    const old = own.capacity;
    for (const buffer of [...buffers.k, ...buffers.v]) {
      // Last slot first: slot m moves up to m·capacity·dh, never onto a lower slot's data not yet moved.
      for (let m = slots - 1; m >= 0; m--)
        buffer.copyWithin(m * capacity * dh, m * old * dh, (m * old + own.filled) * dh);
    }
    own.capacity = capacity;
    own.k = buffers.k.map((b) => b.subarray(0, slots * capacity * dh));
    own.v = buffers.v.map((b) => b.subarray(0, slots * capacity * dh));
  }

  /** Decode step `step` (0, 1, …): one token per row at its position; returns the rows' next logits [rows, V]. */
  step(step: number, tokens: Int32Array, positions: Int32Array): Float32Array {
    const state = this.state;
    if (!state) throw new Error('rollout part: step before start');
    const { arch } = this.model;
    const dh = headDim(arch);
    const { own, slots } = state;
    if (step >= own.capacity) this.grow(own.capacity + OWN_CHUNK);
    const out = this.model.decodeStep({
      group: state.group,
      tokens,
      positions,
      useLora: true,
      prompt: { cache: state.cache, valid: state.valid },
      own,
    });
    // Append this step's key and value at position `step` (keys/values [U, H, G, dh] = [slots, dh]).
    const T = own.capacity;
    for (let i = 0; i < arch.nLayers; i++) {
      const [k, v, ok, ov] = [out.keys[i], out.values[i], own.k[i], own.v[i]];
      for (let m = 0; m < slots; m++) {
        const o = (m * T + step) * dh;
        for (let j = 0; j < dh; j++) {
          ok[o + j] = k[m * dh + j];
          ov[o + j] = v[m * dh + j];
        }
      }
    }
    own.filled = step + 1;
    return out.logits;
  }

  /**
   * Prefill `prompts`, then step by step: `draw` gives the tokens the rows feed from their logits (after the prefill a
   * row's logits are its prompt's last, after a decode step its own), and the rows decode them, until `finished()` or
   * the `maxNewTokens`-th draw. Both rollouts run this loop: the single session's (builtin-sampler.ts) and a part's (rollout).
   */
  decode(
    prompts: PartPrompts,
    group: number,
    maxNewTokens: number,
    cursors: PositionCursor[],
    draw: (rowLogits: (row: number) => Float32Array, step: number) => Int32Array,
    finished: () => boolean,
  ): void {
    const V = this.model.arch.vocabSize;
    const positions = new Int32Array(cursors.length);
    try {
      let logits = this.start(prompts, group, maxNewTokens);
      let rowLogits = (r: number) => logits.subarray(Math.floor(r / group) * V, (Math.floor(r / group) + 1) * V);
      for (let step = 0; step < maxNewTokens; step++) {
        const fed = draw(rowLogits, step);
        if (finished() || step === maxNewTokens - 1) break;
        for (let r = 0; r < cursors.length; r++) positions[r] = cursors[r].push(fed[r]);
        logits = this.step(step, fed, positions);
        rowLogits = (r: number) => logits.subarray(r * V, (r + 1) * V);
      }
    } finally {
      this.finish();
    }
  }

  /**
   * The whole rollout of this part's rows (decode), each step's draws taken from the Rng stream where the single
   * session takes them (the board says how many draws come before). Returns what the rows drew.
   */
  rollout(prompts: PartPrompts, plan: PartPlan): DrawnRows {
    const { index: k, group, options } = plan;
    const n = plan.rows.length;
    const board = new RolloutBoard(plan.board, n, options.maxNewTokens);
    const rows = plan.rows[k];
    const draws = new RowDraws(rows, plan.tokens);
    const tokenizer = textTokenizer(plan.positions.texts, plan.tokens);
    const cursors = Array.from({ length: rows }, (_, r) =>
      PositionCursor.resume(
        plan.positions.scheme,
        tokenizer,
        plan.positions.newline,
        plan.positions.ends[Math.floor(r / group)],
      ),
    );
    const rng = Rng.fromState(plan.rng);
    // Values of the stream this part's copy has passed, and each draw's (sampleToken takes one unless greedy).
    let taken = 0;
    const perDraw = options.temperature > 0 ? 1 : 0;
    // Draws of the steps before this one, all parts.
    let before = 0;
    const draw = (rowLogits: (row: number) => Float32Array, step: number): Int32Array => {
      for (let j = 0; j < n; j++) if (j !== k) board.waitFor(j, j < k ? step : step - 1);
      if (step > 0) for (let j = 0; j < n; j++) before += board.unfinished(j, step - 1);
      let first = before;
      for (let j = 0; j < k; j++) first += board.unfinished(j, step);
      for (; taken < first * perDraw; taken++) rng.next();
      taken += draws.unfinished() * perDraw;
      const fed = draws.step(rowLogits, options, rng);
      board.publish(k, step + 1, draws.unfinished());
      return fed;
    };
    try {
      this.decode(prompts, group, options.maxNewTokens, cursors, draw, () => draws.allFinished());
    } finally {
      board.done(k);
    }
    return draws.data;
  }

  /** Drops the rollout's caches (the buffers stay for the next). */
  finish(): void {
    this.state = null;
  }
}
