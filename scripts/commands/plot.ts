// `metrl plot RUN_DIR… [--out FILE]`: figures from run folders, written as FILE.svg and FILE.png. Each kind of run
// folder has a plotter that recognises it and builds a Vega-Lite spec; all folders given must be of one kind.
// Today: training runs (learning curves, the paper's Figure 5) and `metrl evaluate` sweeps (accuracy against the
// number of actions or the share of image actions). Wiring only: specs live beside the code that writes the data
// (trainer/logs/curves.ts, eval/plot-sweeps.ts), rendering in core/plot.ts.
import type { CommandModule } from 'yargs';
import { existsSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { z } from 'zod';
import { handler } from '../command.ts';
import { UserError } from '../../core/errors.ts';
import { readJson } from '../../core/files.ts';
import { writePlot, type TopLevelSpec } from '../../core/plot.ts';
import { readMetrics } from '../../trainer/logs/metrics.ts';
import { learningCurveSpec } from '../../trainer/logs/curves.ts';
import { isEvalRun, readRunReport, sweepSpec } from '../../eval/plot-sweeps.ts';

interface Plotter {
  /** What the plot shows, for messages. */
  name: string;
  /** True when the folder is of this plotter's kind. */
  recognises(dir: string): boolean;
  build(dirs: string[]): TopLevelSpec;
}

/** One entry per kind of run folder. */
const plotters: Plotter[] = [
  {
    name: 'training learning curves',
    recognises: (dir) => existsSync(join(dir, 'metrics.jsonl')),
    build: (dirs) =>
      learningCurveSpec(
        dirs.map((dir) => {
          const path = join(dir, 'metrics.jsonl');
          // A kill leaves a torn last line; the curves are drawn without it, and the user is told what was left out.
          const rows = readMetrics(path, (line) =>
            process.stderr.write(
              `plot: ${path}:${line}: left out a torn last line (what a killed or still running training leaves)\n`,
            ),
          );
          if (!rows.some((r) => r.type === 'eval'))
            throw new UserError(`${dir}: no evaluation rows yet in metrics.jsonl`);
          return { label: runLabel(dir), domain: runDomain(dir), rows };
        }),
      ),
  },
  {
    // `metrl evaluate` runs with several --actions or --image-ratio values: accuracy against length or image share.
    name: 'evaluation sweeps',
    recognises: isEvalRun,
    build: (dirs) => sweepSpec(dirs.map(readRunReport)),
  },
];

/** The run's environment from its config.json, or undefined when it cannot be read. */
function runDomain(dir: string): string | undefined {
  try {
    const { domain } = readJson(join(dir, 'config.json'), z.object({ domain: z.unknown() }).loose());
    return typeof domain === 'string' ? domain : undefined;
  } catch {
    return undefined;
  }
}

/** "shell-text-20261121-2300 (shell, text)" from the run's config.json when it has one. */
function runLabel(dir: string): string {
  const name = basename(resolve(dir));
  try {
    const config = readJson(join(dir, 'config.json'), z.object({ domain: z.unknown(), modality: z.unknown() }).loose());
    if (config.domain && config.modality && !name.includes(`${config.domain}-${config.modality}`))
      return `${name} (${config.domain}, trained on ${config.modality})`;
  } catch {
    // no or unreadable config.json: the folder name alone
  }
  return name;
}

const schema = z.object({
  runs: z.array(z.string().min(1)).min(1, 'name at least one run folder'),
  out: z.string().min(1).optional(),
});

export async function plotRuns(dirs: string[], out?: string): Promise<{ svg: string; png: string }> {
  for (const dir of dirs) if (!existsSync(dir)) throw new UserError(`${dir}: no such run folder`);
  const kinds = dirs.map((dir) => plotters.find((p) => p.recognises(dir)));
  const unknown = dirs.find((_, i) => !kinds[i]);
  if (unknown !== undefined)
    throw new UserError(
      `${unknown}: not a run folder metrl can plot (neither a training run's metrics.jsonl nor an evaluation run)`,
    );
  const plotter = kinds[0]!;
  if (kinds.some((k) => k !== plotter)) throw new UserError('plot runs of one kind at a time');
  const file = out ?? join(dirs.length === 1 ? dirs[0] : '.', dirs.length === 1 ? 'curves' : 'runs-curves');
  return writePlot(plotter.build(dirs), file);
}

const command: CommandModule = {
  command: 'plot <runs..>',
  describe:
    'Plot run folders as SVG and PNG: learning curves of training runs (test accuracy of both modalities with 95% CIs), or accuracy against length or image share for `metrl evaluate` sweeps',
  builder: (y) =>
    y
      .positional('runs', { type: 'string', array: true, describe: 'run folders (several are drawn side by side)' })
      .option('out', {
        type: 'string',
        describe: 'output path without extension (default: RUN_DIR/curves, or ./runs-curves for several runs)',
      })
      .example('$0 plot runs/chess-image', 'learning curves: runs/chess-image/curves.svg and .png')
      .example(
        '$0 plot runs/eval-a runs/eval-b --out sweep',
        'two evaluation sweeps side by side: sweep.svg and sweep.png',
      ),
  handler: handler(schema, async ({ runs, out }) => {
    const written = await plotRuns(runs, out);
    process.stdout.write(`wrote ${written.svg} and ${written.png}\n`);
  }),
};

export default command;
