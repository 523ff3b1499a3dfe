// `metrl score PATH [--out FILE] [--format metrl|metbench] [--chess-answer reference|lenient]`: rescore saved
// responses without a model (eval/rescore.ts).
// PATH is a JSONL file (each row needs `domain`, `target` and `response`; optionally `initial_state`/`initialState`,
// `meta`, `example_id`/`episode_id`/`id`, `setting`, `error`, `finish_reason`) or a MET-Bench harness run folder
// (`<domain>-<modality>.jsonl` files beside summary.json). Prints metrl's summary per domain, or with --format metbench
// what the harness itself prints (`evaluate.py score FILE`) or writes (summary.json, for a folder). With --out, writes
// every row of a file back with its reward, validity, parsed prediction and metrics. A row that does not parse or
// lacks a field stops the command with its line number.
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandModule } from 'yargs';
import { z } from 'zod';
import { handler } from '../command.ts';
import { writeFileAtomic } from '../../core/files.ts';
import { UserError } from '../../core/errors.ts';
import { scoreOutput, summaryJson, type MetbenchEntry } from '../../eval/metbench-layout.ts';
import {
  harnessScore,
  metbenchEntry,
  metbenchFiles,
  rescoreFile,
  scoreReport,
  type ChessParsing,
  type Rescored,
} from '../../eval/rescore.ts';

const schema = z.object({
  file: z.string().min(1),
  out: z.string().min(1).optional(),
  format: z.enum(['metrl', 'metbench'], { error: 'unknown format; expected metrl or metbench' }),
  'chess-answer': z.enum(['reference', 'lenient'], { error: 'expected reference or lenient' }).optional(),
});

type ScoreFlags = z.infer<typeof schema>;

function scoredLines(rescored: Rescored[]): string {
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
  return `${lines.join('\n')}\n`;
}

/** The chess parsing: the harness's for its own output format, else the flag's, else as the rows recorded it. */
function parsingOf(flags: ScoreFlags): ChessParsing {
  if (flags.format === 'metbench') {
    if (flags['chess-answer'] === 'lenient')
      throw new UserError("--format metbench prints the harness's scores; --chess-answer lenient is not its parsing");
    return 'reference';
  }
  return flags['chess-answer'] ?? 'as-recorded';
}

async function scoreFolder(dir: string, flags: ScoreFlags): Promise<string> {
  const files = metbenchFiles(dir);
  const parsing = parsingOf(flags);
  if (flags.format === 'metbench') {
    const entries: Record<string, MetbenchEntry> = {};
    for (const { name, key } of files)
      entries[key] = metbenchEntry(dir, key, (await rescoreFile(join(dir, name), parsing)).rescored);
    return summaryJson(entries);
  }
  const reports: Record<string, unknown> = {};
  for (const { name, key } of files) {
    const { rescored, envs } = await rescoreFile(join(dir, name), parsing);
    reports[key] = scoreReport(join(dir, name), rescored, envs);
  }
  return `${JSON.stringify({ dir, files: reports }, null, 2)}\n`;
}

async function run(flags: ScoreFlags): Promise<void> {
  const folder = (() => {
    try {
      return statSync(flags.file).isDirectory();
    } catch {
      return false;
    }
  })();
  if (folder) {
    if (flags.out !== undefined)
      throw new UserError('--out writes the rows of one file; give a .jsonl file, not a folder');
    process.stdout.write(await scoreFolder(flags.file, flags));
    return;
  }
  const { rescored, envs } = await rescoreFile(flags.file, parsingOf(flags));
  // Everything is computed before anything is written: a file the harness cannot score leaves no --out behind.
  const text =
    flags.format === 'metbench'
      ? `${scoreOutput(harnessScore(rescored))}\n`
      : `${JSON.stringify(scoreReport(flags.file, rescored, envs), null, 2)}\n`;
  if (flags.out) writeFileAtomic(flags.out, scoredLines(rescored));
  process.stdout.write(text);
}

const command: CommandModule = {
  command: 'score <file>',
  describe: 'Rescore saved responses (a JSONL file, or a MET-Bench harness run folder) and print a JSON summary',
  builder: (y) =>
    y
      .positional('file', {
        type: 'string',
        describe: 'JSONL file (one row per response) or a harness run folder (<domain>-<modality>.jsonl files)',
      })
      .option('out', {
        type: 'string',
        describe: 'write every row back with reward, valid, prediction and metrics (JSONL; for a file)',
      })
      .option('format', {
        type: 'string',
        default: 'metrl',
        describe:
          "metrl (the summary per domain, with the harness's numbers under `harness`) | metbench (what the harness prints for a file, its summary.json for a folder)",
      })
      .option('chess-answer', {
        type: 'string',
        describe:
          "chess: reference (the harness's parsing for every row) | lenient (the opt-in for every row); default: as each row's meta says (always reference with --format metbench)",
      })
      .example('$0 score runs/eval/shell-text.jsonl', 'summary with 95% intervals')
      .example('$0 score answers.jsonl --out scored.jsonl', 'also write per-row rewards')
      .example('$0 score harness-run/ --format metbench', "the harness's summary.json, recomputed"),
  handler: handler(schema, run),
};

export default command;
