// `metrl score FILE.jsonl [--out FILE]`: rescore saved responses without a model. Each row needs `domain`, `target`
// and `response` (optionally `initial_state`/`initialState`, `meta`, and `episode_id`/`id` to cluster samples of one
// board). Prints a JSON summary per domain (core/summary.ts); with --out, writes every row back with its reward,
// validity, parsed prediction and metrics. Rows whose response is null (failed requests) and perception rows are
// skipped and counted. A row that does not parse or lacks a field stops the command with its line number.
import type { CommandModule } from 'yargs';
import { z, type ZodError } from 'zod';
import { handler } from '../command.ts';
import { UserError } from '../../core/errors.ts';
import { readJsonl, writeFileAtomic } from '../../core/files.ts';
import { getEnv } from '../../envs/registry.ts';
import type { Env } from '../../envs/env.ts';
import type { Score, ScoredRow } from '../../core/score.ts';
import { summarizeScores, type DomainSummary } from '../../core/summary.ts';

const schema = z.object({
  file: z.string().min(1),
  out: z.string().min(1).optional(),
});

type ScoreFlags = z.infer<typeof schema>;

const rowSchema = z.object({
  domain: z.string().min(1),
  target: z.union([z.string(), z.number().transform(String)]),
  response: z.string().nullable(),
  initial_state: z.string().optional(),
  initialState: z.string().optional(),
  meta: z.record(z.string(), z.unknown()).optional(),
  id: z.union([z.string(), z.number()]).optional(),
  episode_id: z.string().optional(),
  task: z.string().optional(),
});

type ScoreRow = z.infer<typeof rowSchema>;

interface Rescored {
  line: number;
  original: Record<string, unknown>;
  row: ScoreRow;
  score: Score | null;
  skipped?: 'no-response' | 'perception';
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

async function rescore(file: string): Promise<{ rescored: Rescored[]; envs: Map<string, Env> }> {
  const { rows } = readJsonl<unknown>(file);
  if (rows.length === 0) throw new UserError(`${file}: no rows to score`);
  const envs = new Map<string, Env>();
  const rescored: Rescored[] = [];
  for (const { line, value } of rows) {
    const where = `${file}:${line}`;
    const parsed = rowSchema.safeParse(value);
    if (!parsed.success) throw new UserError(`${where}: ${describeRowError(parsed.error, value)}`);
    const row = parsed.data;
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
    if (row.task === 'perception') {
      rescored.push({ line, original, row, score: null, skipped: 'perception' });
      continue;
    }
    if (row.response === null) {
      rescored.push({ line, original, row, score: null, skipped: 'no-response' });
      continue;
    }
    const initialState = row.initial_state ?? row.initialState;
    try {
      const score = env.score({
        target: row.target,
        response: row.response,
        ...(initialState !== undefined ? { initialState } : {}),
        ...(row.meta ? { meta: row.meta } : {}),
      });
      rescored.push({ line, original, row, score });
    } catch (error) {
      throw error instanceof UserError ? new UserError(`${where}: ${error.message}`) : error;
    }
  }
  return { rescored, envs };
}

export interface ScoreReport {
  file: string;
  count: number;
  skipped?: { noResponse: number; perception: number };
  domains: Record<string, DomainSummary>;
}

function report(file: string, rescored: Rescored[], envs: Map<string, Env>): ScoreReport {
  const domains: Record<string, DomainSummary> = {};
  for (const [domain, env] of envs) {
    const mine = rescored.filter((r) => r.row.domain === domain && r.score !== null);
    const scored: ScoredRow[] = mine.map((r) => ({
      input: {
        target: r.row.target,
        response: r.row.response ?? '',
        initialState: r.row.initial_state ?? r.row.initialState,
        meta: r.row.meta,
      },
      score: r.score!,
    }));
    const clusters = mine.map((r) =>
      String(r.row.episode_id ?? r.row.id ?? `${r.row.initial_state ?? r.row.initialState ?? ''}\u0000${r.row.target}`),
    );
    domains[domain] = summarizeScores(env, scored, { clusterOf: (_row, i) => clusters[i] });
  }
  const noResponse = rescored.filter((r) => r.skipped === 'no-response').length;
  const perception = rescored.filter((r) => r.skipped === 'perception').length;
  return {
    file,
    count: rescored.length - noResponse - perception,
    ...(noResponse + perception > 0 ? { skipped: { noResponse, perception } } : {}),
    domains,
  };
}

async function run(flags: ScoreFlags): Promise<void> {
  const { rescored, envs } = await rescore(flags.file);
  const summary = report(flags.file, rescored, envs);
  if (flags.out) {
    const lines = rescored.map((r) =>
      JSON.stringify(
        r.score
          ? {
              ...r.original,
              reward: r.score.reward,
              valid: r.score.valid,
              prediction: r.score.prediction,
              metrics: r.score.metrics,
            }
          : { ...r.original, reward: null, valid: null, prediction: null, metrics: null },
      ),
    );
    writeFileAtomic(flags.out, lines.join('\n') + '\n');
  }
  process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
}

const command: CommandModule = {
  command: 'score <file>',
  describe: 'Rescore saved responses (JSONL rows with domain, target, response) and print a JSON summary',
  builder: (y) =>
    y
      .positional('file', { type: 'string', describe: 'JSONL file: one row per response' })
      .option('out', {
        type: 'string',
        describe: 'write every row back with reward, valid, prediction and metrics (JSONL)',
      })
      .example('$0 score runs/eval/shell-text.jsonl', 'summary with 95% intervals')
      .example('$0 score answers.jsonl --out scored.jsonl', 'also write per-row rewards'),
  handler: handler(schema, run),
};

export default command;
