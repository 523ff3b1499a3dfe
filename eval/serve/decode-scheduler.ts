// How `metrl serve` decodes: every request in flight advances together, a few tokens per round. A round is one
// sampleGroups call per kind of request (same temperature, top-p, round length and top-logprobs; a request that names
// a seed alone, with its own Rng, so that its answer does not depend on what else is in flight); then the event loop
// turns: streamed text goes out, new requests join the next round, a request whose client hung up leaves, a choice
// that wrote a stop string ends there. The samplers are synchronous and keep no cache between calls, so a choice goes
// on in the next round from its prompt followed by what it wrote so far, prefilled again: rounds grow from FIRST_ROUND
// to MAX_ROUND tokens, so a short answer costs a prefill or two and a long one a prefill every MAX_ROUND tokens. What
// a round cannot do is stop inside the sampler's call: a client that leaves costs at most the round under way.
// Bounds: at most maxRows choices decode at once (later requests wait for room, first come first served), and at most
// maxWaiting requests wait; one more is ServerBusy (a 503 with Retry-After).
import { Rng } from '../../core/rng.ts';
import type { Sampler } from '../../models/sampler.ts';
import type { Completion, EncodedPrompt, SamplingOptions, TopLogProb } from '../../models/types.ts';

export interface DecodeRequest {
  prompt: EncodedPrompt;
  temperature: number;
  topP: number;
  /** vLLM's top_k and min_p (absent: off). */
  truncation?: Pick<SamplingOptions, 'topK' | 'minP'>;
  /** Tokens per choice at most, already fitted to the model's context (≥ 1). */
  maxTokens: number;
  n: number;
  /** null: drawn from the server's Rng. */
  seed: number | null;
  /** A choice ends before the first of these it writes (OpenAI's `stop`). */
  stop: readonly string[];
  /** The k most likely tokens of every draw (0: none). */
  topLogProbs: number;
  /** Aborted when the client hung up: the request leaves at the next round and decode() rejects with ClientGone. */
  signal?: AbortSignal;
  /** After every round: each choice's text that is final so far (it only grows), and whether it has ended. */
  onProgress?(choices: readonly ChoiceProgress[]): void;
}

export interface ChoiceProgress {
  text: string;
  finishReason: 'stop' | 'length' | null;
}

export interface DecodedChoice {
  /** Generated ids: ending with EOS when the model stopped, with the token that completed a stop string when one did. */
  tokens: number[];
  /** Log-prob of each token (temperature 1), and the most likely tokens at each draw when asked for. */
  logProbs: number[];
  topLogProbs: TopLogProb[][] | null;
  /** Decoded text, cut before the stop string. */
  text: string;
  finishReason: 'stop' | 'length';
  /** The stop string that ended it (null: EOS or the length limit). */
  stopReason: string | null;
}

/** decode() of a request whose client hung up. */
export class ClientGone extends Error {
  constructor() {
    super('the client hung up');
    this.name = 'ClientGone';
  }
}

/** decode() when maxWaiting requests already wait for room. */
export class ServerBusy extends Error {
  constructor(waiting: number) {
    super(`the server is decoding at capacity and ${waiting} requests are waiting; retry shortly`);
    this.name = 'ServerBusy';
  }
}

export interface SchedulerLimits {
  /** Choices decoding at once (memory grows with rows × context). */
  maxRows: number;
  /** Requests waiting for room. */
  maxWaiting: number;
}

const DEFAULT_LIMITS: SchedulerLimits = { maxRows: 256, maxWaiting: 256 };

/** Tokens of a choice's first round, and the most of any round: round r decodes FIRST_ROUND · 2^r, capped. */
const FIRST_ROUND = 16;
const MAX_ROUND = 64;
/** Rows of one sampleGroups call (a round of many requests is several calls). */
const MAX_CALL_ROWS = 64;
/** Longest a round waits for announced requests (still decoding their images) to join it. */
const MAX_GATHER_MS = 25;

interface Row {
  tokens: number[];
  logProbs: number[];
  top: TopLogProb[][] | null;
  text: string;
  finishReason: 'stop' | 'length' | null;
  stopReason: string | null;
}

interface Entry {
  id: number;
  request: DecodeRequest;
  rows: Row[];
  rng: Rng | null;
  rounds: number;
  arrived: number;
  resolve(choices: DecodedChoice[]): void;
  reject(error: unknown): void;
}

/** One sampleGroups call of a round, and which entry's rows each of its prompts serves. */
interface Call {
  rng: Rng;
  group: number;
  options: SamplingOptions;
  prompts: EncodedPrompt[];
  targets: { entry: Entry; rows: number[] }[];
}

export class DecodeScheduler {
  private readonly active: Entry[] = [];
  private readonly waiting: Entry[] = [];
  private running = false;
  private preparing = 0;
  private nextId = 0;
  private readonly rng: Rng;
  /** Requests answered and sampleGroups calls made, for the shutdown line. */
  readonly stats = { requests: 0, batches: 0 };

  constructor(
    /** The engine's sampler now (it changes when an adapter of another shape is loaded). */
    private readonly sampler: () => Sampler,
    seed: number,
    private readonly limits: SchedulerLimits = DEFAULT_LIMITS,
  ) {
    this.rng = new Rng(seed, 'generator');
  }

  /** Requests decoding or waiting now. */
  get inFlight(): number {
    return this.active.length + this.waiting.length;
  }

  /**
   * Announce a request that will call decode() soon (one still decoding its images): a round about to start waits for
   * it (at most MAX_GATHER_MS) so that simultaneous requests start together. Call the returned function first.
   */
  announce(): () => void {
    this.preparing++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.preparing--;
    };
  }

  decode(request: DecodeRequest): Promise<DecodedChoice[]> {
    if (request.signal?.aborted) return Promise.reject(new ClientGone());
    if (this.waiting.length >= this.limits.maxWaiting) return Promise.reject(new ServerBusy(this.waiting.length));
    return new Promise((resolve, reject) => {
      this.waiting.push({
        id: this.nextId++,
        request,
        rows: Array.from({ length: request.n }, () => ({
          tokens: [],
          logProbs: [],
          top: request.topLogProbs > 0 ? [] : null,
          text: '',
          finishReason: null,
          stopReason: null,
        })),
        rng: request.seed !== null ? new Rng(request.seed, 'request') : null,
        rounds: 0,
        arrived: performance.now(),
        resolve,
        reject,
      });
      if (!this.running) {
        this.running = true;
        setImmediate(() => void this.loop());
      }
    });
  }

  private async loop(): Promise<void> {
    try {
      while (this.active.length + this.waiting.length > 0) {
        while (
          this.preparing > 0 &&
          this.waiting.length > 0 &&
          performance.now() - this.waiting[0].arrived < MAX_GATHER_MS
        )
          await new Promise((done) => setTimeout(done, 1));
        this.admit();
        try {
          this.round();
        } catch (error) {
          // A failure outside the sampler calls (decoding a choice's text): every request of the round gets it.
          for (const entry of this.active.splice(0)) entry.reject(error);
        }
        // Let the event loop through: streamed text leaves, hang-ups are seen, new requests arrive.
        await new Promise((done) => setImmediate(done));
      }
    } finally {
      this.running = false;
    }
  }

  /** Waiting requests join while there is room (an oversized one when nothing else decodes); left ones go. */
  private admit(): void {
    for (const list of [this.active, this.waiting])
      for (let i = list.length - 1; i >= 0; i--)
        if (list[i].request.signal?.aborted) list.splice(i, 1)[0].reject(new ClientGone());
    let rows = this.active.reduce((s, e) => s + e.rows.filter((r) => r.finishReason === null).length, 0);
    while (
      this.waiting.length > 0 &&
      (this.active.length === 0 || rows + this.waiting[0].request.n <= this.limits.maxRows)
    ) {
      const entry = this.waiting.shift()!;
      rows += entry.request.n;
      this.active.push(entry);
    }
  }

  private round(): void {
    const calls = this.plan();
    const sampler = this.sampler();
    const failed = new Set<Entry>();
    for (const call of calls) {
      if (call.targets.some((t) => failed.has(t.entry))) continue;
      let results: Completion[][];
      try {
        results = sampler.sampleGroups(call.prompts, call.group, call.options, call.rng);
        this.stats.batches++;
      } catch (error) {
        for (const { entry } of call.targets) {
          if (failed.has(entry)) continue;
          failed.add(entry);
          entry.reject(error);
        }
        continue;
      }
      call.targets.forEach(({ entry, rows }, k) =>
        rows.forEach((r, j) => this.extend(entry, entry.rows[r], results[k][j])),
      );
    }
    const decoding = this.active.splice(0);
    for (const entry of decoding) {
      if (failed.has(entry)) continue;
      entry.rounds++;
      const done = entry.rows.every((r) => r.finishReason !== null);
      try {
        entry.request.onProgress?.(entry.rows.map((r) => progressOf(r, entry.request.stop)));
      } catch (error) {
        entry.reject(error); // its stream could not be written: the request ends here
        continue;
      }
      if (!done) {
        this.active.push(entry);
        continue;
      }
      this.stats.requests++;
      entry.resolve(
        entry.rows.map((r) => ({
          tokens: r.tokens,
          logProbs: r.logProbs,
          topLogProbs: r.top,
          text: r.text,
          finishReason: r.finishReason!,
          stopReason: r.stopReason,
        })),
      );
    }
  }

  /** This round's calls: a request's first round samples its n choices from one prefill, later rounds each open choice. */
  private plan(): Call[] {
    const calls: Call[] = [];
    // The call still filling for each kind of prompt.
    const filling = new Map<string, Call>();
    const add = (
      key: string,
      entry: Entry,
      group: number,
      options: SamplingOptions,
      prompt: EncodedPrompt,
      rows: number[],
    ) => {
      let call = filling.get(key);
      if (!call || (call.prompts.length + 1) * group > Math.max(group, MAX_CALL_ROWS)) {
        call = { rng: entry.rng ?? this.rng, group, options, prompts: [], targets: [] };
        filling.set(key, call);
        calls.push(call);
      }
      call.prompts.push(prompt);
      call.targets.push({ entry, rows });
    };
    for (const entry of this.active) {
      const { request } = entry;
      const open = entry.rows.flatMap((r, i) => (r.finishReason === null ? [i] : []));
      const written = entry.rows[open[0]].tokens.length;
      const length = Math.min(MAX_ROUND, FIRST_ROUND * 2 ** entry.rounds, request.maxTokens - written);
      const options: SamplingOptions = {
        temperature: request.temperature,
        topP: request.topP,
        ...request.truncation,
        maxNewTokens: length,
        ...(request.topLogProbs > 0 ? { topLogProbs: request.topLogProbs } : {}),
      };
      const kind = `${request.temperature}|${request.topP}|${request.truncation?.topK ?? 0}|${request.truncation?.minP ?? 0}|${length}|${request.topLogProbs}`;
      const who = entry.rng ? `seed#${entry.id}` : 'shared';
      if (entry.rounds === 0) {
        add(`${who}|first|${request.n}|${kind}`, entry, request.n, options, request.prompt, open);
        continue;
      }
      for (const r of open) {
        const prompt = { tokens: [...request.prompt.tokens, ...entry.rows[r].tokens], images: request.prompt.images };
        add(`${who}|more|${kind}`, entry, 1, options, prompt, [r]);
      }
    }
    return calls;
  }

  /** A choice after a round: its new tokens, its text, and whether it ended (EOS, a stop string, its length). */
  private extend(entry: Entry, row: Row, c: Completion): void {
    const { request } = entry;
    row.tokens.push(...c.tokens);
    row.logProbs.push(...c.logProbs);
    if (row.top) row.top.push(...(c.topLogProbs ?? c.tokens.map(() => [])));
    const decode = (tokens: number[]) => this.sampler().decode(tokens);
    row.text = decode(row.tokens);
    const hit = firstStop(row.text, request.stop);
    if (hit !== null) {
      // The tokens up to the one that completed the stop string; the text before it.
      const end = hit.at + hit.stop.length;
      let lo = 1;
      let hi = row.tokens.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (decode(row.tokens.slice(0, mid)).length >= end) hi = mid;
        else lo = mid + 1;
      }
      row.tokens.length = lo;
      row.logProbs.length = lo;
      if (row.top) row.top.length = lo;
      row.text = row.text.slice(0, hit.at);
      row.finishReason = 'stop';
      row.stopReason = hit.stop;
    } else if (c.finished) row.finishReason = 'stop';
    else if (row.tokens.length >= request.maxTokens) row.finishReason = 'length';
  }
}

/** The earliest stop string in `text` (null: none). */
function firstStop(text: string, stops: readonly string[]): { at: number; stop: string } | null {
  let best: { at: number; stop: string } | null = null;
  for (const stop of stops) {
    if (stop === '') continue;
    const at = text.indexOf(stop);
    if (at >= 0 && (best === null || at < best.at)) best = { at, stop };
  }
  return best;
}

/**
 * What of an open choice's text may be sent: not a tail that could still become a stop string, nor a trailing
 * replacement character (a multi-byte character whose last bytes are in the next token).
 */
function progressOf(row: Row, stops: readonly string[]): ChoiceProgress {
  if (row.finishReason !== null) return { text: row.text, finishReason: row.finishReason };
  let text = row.text.replace(/\uFFFD+$/, '');
  let hold = 0;
  for (const stop of stops)
    for (let k = Math.min(stop.length - 1, text.length); k > hold; k--)
      if (text.endsWith(stop.slice(0, k))) {
        hold = k;
        break;
      }
  text = text.slice(0, text.length - hold);
  return { text, finishReason: null };
}
