// The MET-Bench harness's run folder (evaluate.py at 16f2bf30), which `metrl score` reads and `metrl evaluate
// --metbench-files` writes: `<domain>-<modality>.jsonl` with one row per request (domain, modality, prompt, example_id,
// source_row, fingerprint, target, initial_state, then response, finish_reason and usage, or error and status_code
// for a failed request) and summary.json keyed "domain/modality" (summarize() plus expected and status). Both are
// written as Python's json.dumps writes them, floats as floats, so that the files match the harness's byte for byte
// where the values do.
import { PyFloat, pyDumps, type PyValue } from '../core/python-json.ts';
import type { HarnessSummary } from '../core/harness-summary.ts';
import type { ItemRow } from './types.ts';

/** `<domain>-<modality>.jsonl` for the harness's domains and modalities. */
export const METBENCH_RESULTS_FILE = /^(chess|shell|minecraft)-(text|image)\.jsonl$/;

/** summary.json's entry: the harness's summary of a file's rows, how many examples were asked, and whether all came back. */
export type MetbenchEntry = HarnessSummary & { expected: number; status: 'complete' | 'incomplete' };

/** The harness's summary keys that hold Python floats (the others are ints, strings or None). */
const FLOAT_KEYS = new Set([
  'accuracy',
  'accuracy_pm',
  'accuracy_ci_lower',
  'accuracy_ci_upper',
  'exact_match',
  'exact_match_pm',
  'exact_board_match',
  'exact_board_match_pm',
  'changed_square_accuracy',
  'changed_square_accuracy_pm',
  'changed_square_accuracy_ci_lower',
  'changed_square_accuracy_ci_upper',
  'exact_match_accuracy',
  'changed_sq_accuracy',
  'changed_sq_pm',
  'legal_board_rate',
  'legal_board_pm',
]);

/** A summary as Python holds it: floats as floats, counts as ints. */
function pySummary(summary: HarnessSummary | MetbenchEntry): PyValue {
  const out: Record<string, PyValue> = {};
  for (const [key, value] of Object.entries(summary)) {
    if (typeof value === 'number') out[key] = FLOAT_KEYS.has(key) ? new PyFloat(value) : BigInt(value);
    else out[key] = value as string | null;
  }
  return out;
}

/** What `evaluate.py score FILE` prints: json.dumps(summarize(rows), indent=2). */
export function scoreOutput(summary: HarnessSummary): string {
  return pyDumps(pySummary(summary), { indent: 2 });
}

/** summary.json as the harness writes it: json.dumps(summaries, indent=2) and a newline. */
export function summaryJson(entries: Record<string, MetbenchEntry>): string {
  const value: Record<string, PyValue> = {};
  for (const [key, entry] of Object.entries(entries)) value[key] = pySummary(entry);
  return `${pyDumps(value, { indent: 2 })}\n`;
}

/** The harness's name for a prompt style ('cot' is its "chain-of-thought"). */
const metbenchPrompt = (style: string): string => (style === 'cot' ? 'chain-of-thought' : style);

/** A state or target as the published sets hold it: the shell game's and Minecraft's choices are integers. */
function metbenchValue(domain: string, text: string): PyValue {
  return domain !== 'chess' && /^\d+$/.test(text) ? BigInt(text) : text;
}

/** A JSON value read back from a run's files, as Python would hold it (integers stay integers). */
function toPy(value: unknown): PyValue {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : new PyFloat(value);
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (Array.isArray(value)) return value.map(toPy);
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, toPy(v)]));
}

/** What a harness row is made of: one of metrl's result rows, or an item a fatal stop left unasked. */
export type MetbenchSource = Pick<
  ItemRow,
  'domain' | 'modality' | 'prompt' | 'episode_id' | 'meta' | 'target' | 'initial_state' | 'status' | 'error'
> &
  Partial<Pick<ItemRow, 'response' | 'finish_reason' | 'usage' | 'status_code'>>;

/**
 * One of metrl's result rows in the harness's row layout: the task's identity (the official set's example_id,
 * source_row and fingerprint; a generated episode's id, its place in the setting and id), then the reply, or the
 * failure (metrl's message where the harness writes the exception's type name).
 */
export function metbenchRow(row: MetbenchSource, index: number): string {
  const meta = row.meta ?? {};
  const out: Record<string, PyValue> = {
    domain: row.domain,
    modality: row.modality,
    prompt: metbenchPrompt(row.prompt),
    example_id: toPy(meta.example_id ?? row.episode_id),
    source_row: toPy(meta.source_row ?? index),
    fingerprint: toPy(meta.fingerprint ?? row.episode_id),
    target: metbenchValue(row.domain, row.target),
    initial_state: metbenchValue(row.domain, row.initial_state),
  };
  if (row.status === 'ok') {
    out.response = row.response ?? '';
    out.finish_reason = row.finish_reason ?? null;
    out.usage = toPy(row.usage);
  } else {
    out.error = row.error ?? 'error';
    out.status_code = toPy(row.status_code ?? null);
  }
  return pyDumps(out, { spaced: true });
}
