// The MET-Bench harness's run folder (evaluate.py at 16f2bf30), which `metrl score` reads and `metrl evaluate
// --metbench-files` writes: `<domain>-<modality>.jsonl` with one row per request (domain, modality, prompt, example_id,
// source_row, fingerprint, target, initial_state, then response, finish_reason and usage, or error and status_code
// for a failed request) and summary.json keyed "domain/modality" (summarize() plus expected and status). Both are
// written as Python's json.dumps writes them, floats as floats, so that the files match the harness's byte for byte
// where the values do.
import { PyFloat, pyDumps, type PyValue } from '../core/python-json.ts';
import type { HarnessSummary } from '../core/harness-summary.ts';

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
