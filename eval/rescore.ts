// Rescoring saved responses (`metrl score`): read a JSONL file of rows (metrl's own results, a generated dataset with
// responses added, or the MET-Bench harness's result rows) or a harness run folder, and score every answer again,
// without a model. Rows are resolved as the harness's score command resolves them: the last row of each example
// (example_id, else metrl's item id, within its setting) replaces the earlier ones; a row with an error (the harness's
// `error`, or metrl's status 'error') is a failed request, counted and not scored; a row without a response and
// without an error is an invalid answer. Intervals cluster by example (example_id, episode_id, id, fingerprint, in that
// order; a row with none is its own example). Chess rows are parsed as their meta says (the lenient opt-in travels
// there) unless the caller decides: 'reference' (the harness's parsing, whatever the rows say) or 'lenient'.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { z, type ZodError } from 'zod';
import { UserError } from '../core/errors.ts';
import { readJsonl } from '../core/files.ts';
import { aggregateHarnessRows, type HarnessSummary } from '../core/harness-summary.ts';
import type { HarnessRow, Score, ScoredRow } from '../core/score.ts';
import { summarizeScores, type DomainSummary } from '../core/summary.ts';
import type { Env } from '../envs/env.ts';
import { getEnv } from '../envs/registry.ts';
import { LENIENT_PARSING } from '../rewards/chess.ts';
import { METBENCH_RESULTS_FILE, type MetbenchEntry } from './metbench-layout.ts';

const idSchema = z.union([z.string(), z.number().transform(String)]);
const textSchema = z.union([z.string(), z.number().transform(String)]);

const rowSchema = z.object({
  domain: z.string().min(1),
  target: textSchema,
  response: z.string().nullable().optional(),
  initial_state: textSchema.nullable().optional(),
  initialState: textSchema.nullable().optional(),
  meta: z.record(z.string(), z.unknown()).optional(),
  id: idSchema.optional(),
  episode_id: idSchema.optional(),
  example_id: idSchema.nullable().optional(),
  fingerprint: z.string().optional(),
  setting: z.string().optional(),
  task: z.string().optional(),
  status: z.string().optional(),
  error: z.unknown().optional(),
  finish_reason: z.string().nullable().optional(),
});

type Row = z.infer<typeof rowSchema>;

/** Python's truthiness, which the harness's `r.get("error")` applies. */
function truthy(value: unknown): boolean {
  if (value === null || value === undefined || value === false || value === 0 || value === '') return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object') return Object.keys(value).length > 0;
  return true;
}

export interface Rescored {
  line: number;
  original: Record<string, unknown>;
  row: Row;
  /** Where the harness's dict puts the row: at its example's first appearance (a later row replaces the value only). */
  order: number;
  /** null for a row that was not scored (why: skipped). */
  score: Score | null;
  skipped?: 'error' | 'perception' | 'replaced';
}

/** "missing field 'target'" or "field 'response' must be a string or null"; one line for one bad row. */
function describeRowError(error: ZodError, value: unknown): string {
  const issue = error.issues[0];
  const field = issue.path.join('.');
  if (issue.path.length === 0) return 'not a JSON object';
  if (issue.path.length === 1 && !Object.hasOwn(value as object, issue.path[0] as string))
    return `missing field '${field}'`;
  return `field '${field}': ${issue.message}`;
}

const isError = (row: Row): boolean => truthy(row.error) || row.status === 'error';
const initialOf = (row: Row): string | undefined => row.initial_state ?? row.initialState ?? undefined;

/** Which example a row answers, within its setting; null when it names none. */
function exampleOf(row: Row): string | null {
  const id = row.example_id ?? row.id;
  return id === undefined || id === null ? null : `${row.setting ?? ''}\u0000${id}`;
}

/** The cluster a row's answer belongs to for the intervals. */
function clusterOf(r: Rescored): string {
  const { row } = r;
  const key = row.example_id ?? row.episode_id ?? row.id ?? row.fingerprint;
  return key === undefined || key === null ? `\u0001line ${r.line}` : `${row.setting ?? ''}\u0000${key}`;
}

/** How chess answers are parsed: as each row's meta says, or one way for every row. */
export type ChessParsing = 'as-recorded' | 'reference' | typeof LENIENT_PARSING;

/** A row's meta with the chess parsing decided. */
function metaFor(row: Row, parsing: ChessParsing): Record<string, unknown> | undefined {
  if (row.domain !== 'chess' || parsing === 'as-recorded') return row.meta;
  const { answerParsing: _recorded, ...rest } = row.meta ?? {};
  return parsing === LENIENT_PARSING ? { ...rest, answerParsing: LENIENT_PARSING } : rest;
}

/** Score every row of a file; the rows an example's later row replaces are kept, marked 'replaced'. */
export async function rescoreFile(
  file: string,
  parsing: ChessParsing = 'as-recorded',
): Promise<{ rescored: Rescored[]; envs: Map<string, Env> }> {
  const { rows } = readJsonl<unknown>(file);
  if (rows.length === 0) throw new UserError(`${file}: no rows to score`);
  const envs = new Map<string, Env>();
  const rescored: Rescored[] = [];
  const latest = new Map<string, number>();
  const first = new Map<string, number>();
  for (const { line, value } of rows) {
    const where = `${file}:${line}`;
    const parsed = rowSchema.safeParse(value);
    if (!parsed.success) throw new UserError(`${where}: ${describeRowError(parsed.error, value)}`);
    const row = { ...parsed.data, meta: metaFor(parsed.data, parsing) };
    if (row.response === undefined && !isError(row)) throw new UserError(`${where}: missing field 'response'`);
    const original = value as Record<string, unknown>;
    let env = envs.get(row.domain);
    if (!env) {
      try {
        env = await getEnv(row.domain);
      } catch (error) {
        throw error instanceof UserError ? new UserError(`${where}: ${error.message}`) : error;
      }
      envs.set(row.domain, env);
    }
    const example = exampleOf(row);
    let order = rescored.length;
    if (example !== null) {
      const before = latest.get(example);
      if (before !== undefined) rescored[before] = { ...rescored[before], score: null, skipped: 'replaced' };
      latest.set(example, rescored.length);
      order = first.get(example) ?? order;
      first.set(example, order);
    }
    if (row.task === 'perception') {
      rescored.push({ line, original, row, order, score: null, skipped: 'perception' });
      continue;
    }
    if (isError(row)) {
      rescored.push({ line, original, row, order, score: null, skipped: 'error' });
      continue;
    }
    const initialState = initialOf(row);
    try {
      const score = env.score({
        target: row.target,
        response: row.response ?? '',
        ...(initialState !== undefined ? { initialState } : {}),
        ...(row.meta ? { meta: row.meta } : {}),
      });
      rescored.push({ line, original, row, order, score });
    } catch (error) {
      throw error instanceof UserError ? new UserError(`${where}: ${error.message}`) : error;
    }
  }
  return { rescored, envs };
}

export interface ScoreReport {
  file: string;
  count: number;
  skipped?: { errors: number; perception: number; replaced: number };
  domains: Record<string, DomainSummary>;
}

const scoredRow = (r: Rescored): ScoredRow => ({
  input: {
    target: r.row.target,
    response: r.row.response ?? '',
    initialState: initialOf(r.row),
    meta: r.row.meta,
  },
  score: r.score!,
  finishReason: r.row.finish_reason ?? null,
});

/** The scored rows in the harness's order. */
const answered = (rescored: Rescored[]): Rescored[] =>
  rescored.filter((r) => r.score !== null).sort((a, b) => a.order - b.order);

/** metrl's report: one summary per domain (the harness's numbers where it scores the domain). */
export function scoreReport(file: string, rescored: Rescored[], envs: Map<string, Env>): ScoreReport {
  const domains: Record<string, DomainSummary> = {};
  for (const [domain, env] of envs) {
    const mine = answered(rescored).filter((r) => r.row.domain === domain);
    const errors = rescored.filter((r) => r.row.domain === domain && r.skipped === 'error').length;
    domains[domain] = summarizeScores(env, mine.map(scoredRow), { clusterOf: (_row, i) => clusterOf(mine[i]), errors });
  }
  const count = (why: Rescored['skipped']) => rescored.filter((r) => r.skipped === why).length;
  const skipped = { errors: count('error'), perception: count('perception'), replaced: count('replaced') };
  return {
    file,
    count: rescored.filter((r) => r.score !== null).length,
    ...(skipped.errors + skipped.perception + skipped.replaced > 0 ? { skipped } : {}),
    domains,
  };
}

/** What the harness's `evaluate.py score FILE` computes: summarize() over the file's latest rows, all domains together. */
export function harnessScore(rescored: Rescored[]): HarnessSummary {
  const scored = answered(rescored);
  const missing = scored.find((r) => !r.score!.harness);
  if (missing)
    throw new UserError(
      `${missing.row.domain}: the MET-Bench harness does not score this domain (--format metbench is for chess, shell and minecraft)`,
    );
  return {
    ...aggregateHarnessRows(
      scored.map((r) => r.score!.harness as HarnessRow),
      scored.map(clusterOf),
    ),
    completed: scored.length,
    errors: rescored.filter((r) => r.skipped === 'error').length,
    truncated: scored.filter((r) => r.row.finish_reason === 'length').length,
  };
}

/** The results files of a harness run folder, in summary.json's order when it has one. */
export function metbenchFiles(dir: string): { name: string; key: string }[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new UserError(`${dir}: no such folder`);
  const names = readdirSync(dir)
    .filter((f) => METBENCH_RESULTS_FILE.test(f))
    .sort();
  if (names.length === 0)
    throw new UserError(
      `${dir}: no <domain>-<modality>.jsonl results files (chess, shell or minecraft; text or image)`,
    );
  const order = Object.keys(readSummaryJson(dir) ?? {});
  const files = names.map((name) => ({ name, key: name.replace(/\.jsonl$/, '').replace('-', '/') }));
  const rank = (key: string) => (order.includes(key) ? order.indexOf(key) : order.length);
  return files.sort((a, b) => rank(a.key) - rank(b.key));
}

function readSummaryJson(dir: string): Record<string, { expected?: unknown }> | null {
  const path = join(dir, 'summary.json');
  if (!existsSync(path)) return null;
  try {
    const value = JSON.parse(readFileSync(path, 'utf8')) as unknown;
    return value !== null && typeof value === 'object' ? (value as Record<string, { expected?: unknown }>) : null;
  } catch {
    throw new UserError(`${path}: not valid JSON`);
  }
}

/**
 * summary.json's entry for one results file of a harness folder: its summary, the examples the run asked for (the
 * `<domain>-selection.json` list, else summary.json's own `expected`, else the examples in the file) and its status.
 */
export function metbenchEntry(dir: string, key: string, rescored: Rescored[]): MetbenchEntry {
  const summary = harnessScore(rescored);
  const [domain] = key.split('/');
  let expected: number | null = null;
  const selection = join(dir, `${domain}-selection.json`);
  if (existsSync(selection)) {
    try {
      const examples = (JSON.parse(readFileSync(selection, 'utf8')) as { examples?: unknown }).examples;
      if (Array.isArray(examples)) expected = examples.length;
    } catch {
      throw new UserError(`${selection}: not valid JSON`);
    }
  }
  const stored = readSummaryJson(dir)?.[key]?.expected;
  if (expected === null && typeof stored === 'number') expected = stored;
  if (expected === null) expected = new Set(rescored.map((r) => exampleOf(r.row) ?? `line ${r.line}`)).size;
  return { ...summary, expected, status: summary.completed === expected ? 'complete' : 'incomplete' };
}
