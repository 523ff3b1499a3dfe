// `metrl generate`: write a dataset of one environment's episodes to disk (metadata.jsonl + images/*.png, see
// envs/dataset.ts). Wiring only: flags are validated here, the work lives in envs/.
import type { CommandModule } from 'yargs';
import { z } from 'zod';
import { handler } from '../command.ts';
import { generatedDomains, getEnv } from '../../envs/registry.ts';
import { writeDataset, checkOutputDir, validatePromptStyle } from '../../envs/dataset.ts';
import { MODALITY_SETTINGS } from '../../core/episode.ts';
import { UserError } from '../../core/errors.ts';
import { envExtraFromFlags, envFlagOptions, envFlagShape } from '../../envs/cli-options.ts';

const schema = z.object({
  domain: z.string().min(1),
  modality: z.enum(MODALITY_SETTINGS),
  'image-ratio': z.number().min(0).max(1),
  // Bounds a dataset on disk and in memory can hold (1e9 rows ran the process out of memory), and the longest
  // episodes any benchmark uses (evaluate's --actions has the same bound).
  n: z.number().int().positive().max(1_000_000, 'at most 1,000,000 episodes per dataset'),
  actions: z.number().int().min(0).max(1000, 'at most 1000 actions per episode'),
  split: z.enum(['train', 'test']),
  seed: z.number().int().min(0),
  out: z.string().min(1),
  games: z.string().min(1).optional(),
  offset: z.enum(['start', 'random']).optional(),
  prompt: z.string().min(1),
  shots: z.number().int().positive().max(50),
  'image-size': z.number().int().min(32).max(2048).optional(),
  force: z.boolean(),
  quiet: z.boolean(),
  ...envFlagShape,
});

type GenerateFlags = z.infer<typeof schema>;

/** Progress on stderr: a rewritten line on a terminal, a line every few seconds otherwise; silent for short runs. */
function progressReporter(quiet: boolean): { update(done: number, total: number): void; finish(): void } {
  const start = Date.now();
  let last = start;
  let shown = false;
  // The rate is measured from the first written episode: sampling all episodes comes before it.
  let first: { time: number; done: number } | null = null;
  const tty = process.stderr.isTTY === true;
  return {
    update(done, total) {
      const now = Date.now();
      first ??= { time: now, done };
      if (quiet || now - last < (tty ? 200 : 5000) || now - start < 1000 || now === first.time) return;
      last = now;
      shown = true;
      const rate = (done - first.done) / ((now - first.time) / 1000);
      const eta = rate > 0 ? Math.round((total - done) / rate) : 0;
      const line = `generate: ${done}/${total} episodes, ${rate.toFixed(0)}/s, ETA ${eta}s`;
      process.stderr.write(tty ? `\r${line}\u001b[K` : `${line}\n`);
    },
    finish() {
      if (shown && tty) process.stderr.write('\n');
    },
  };
}

async function run(flags: GenerateFlags): Promise<void> {
  const env = await getEnv(flags.domain);
  // Cheap checks first, so a typo fails before any generation work.
  checkOutputDir(flags.out, flags.force);
  validatePromptStyle(env, flags.prompt);
  if (flags['image-size'] !== undefined && flags.modality === 'text') {
    throw new UserError('--image-size needs image actions (--modality image or mixed)');
  }
  const progress = progressReporter(flags.quiet);
  const extra: Record<string, unknown> = {};
  if (flags.games !== undefined) extra.games = flags.games;
  if (flags.offset !== undefined) extra.offset = flags.offset;
  Object.assign(extra, envExtraFromFlags([env.domain], flags)[env.domain]);
  const result = await writeDataset(env, {
    n: flags.n,
    actions: flags.actions,
    split: flags.split,
    seed: flags.seed,
    modality: flags.modality,
    imageRatio: flags['image-ratio'],
    extra,
    prompt: flags.prompt,
    shots: flags.shots,
    imageSize: flags['image-size'] ?? env.imageSizes.chat,
    out: flags.out,
    force: flags.force,
    onProgress: progress.update,
  });
  progress.finish();
  process.stdout.write(`wrote ${result.rows} ${flags.split} rows and ${result.images} images to ${result.dir}\n`);
}

const command: CommandModule = {
  command: 'generate',
  describe: 'Write a dataset of episodes (metadata.jsonl + images/*.png, loadable with Python datasets)',
  builder: (y) =>
    y
      .option('domain', {
        type: 'string',
        demandOption: true,
        describe: `environment: ${generatedDomains().join(' | ')}`,
      })
      .option('modality', {
        type: 'string',
        demandOption: true,
        describe: 'text | image | mixed: how actions are shown',
      })
      .option('image-ratio', {
        type: 'number',
        default: 0.5,
        describe: 'with --modality mixed: probability that an action is an image',
      })
      .option('n', { type: 'number', demandOption: true, describe: 'number of episodes' })
      .option('actions', { type: 'number', default: 10, describe: 'actions per episode (T)' })
      .option('split', { type: 'string', default: 'test', describe: 'train | test (disjoint by content fingerprint)' })
      .option('seed', { type: 'number', default: 0, describe: 'seed: the same seed gives the same dataset' })
      .option('out', {
        type: 'string',
        demandOption: true,
        describe: 'output directory (must be empty or absent unless --force)',
      })
      .option('games', {
        type: 'string',
        describe: 'chess: PGN or one-game-per-line UCI file (default: built-in synthetic games)',
      })
      .option('offset', {
        type: 'string',
        describe: 'chess: start (the game start, default) | random (a random ply into the game)',
      })
      .option('prompt', {
        type: 'string',
        default: 'zero-shot',
        describe:
          "the messages column's prompt: zero-shot | few-shot | cot (rem: zero-shot | cot) | fen-trace (chess) | direct | state-tracking | stp (mcst)",
      })
      .option('shots', {
        type: 'number',
        default: 5,
        describe: 'with --prompt few-shot: solved train-split examples before each question',
      })
      .option('image-size', { type: 'number', describe: 'image width in pixels (default: the chat size, 512)' })
      .option('force', { type: 'boolean', default: false, describe: 'replace a non-empty output directory' })
      .option('quiet', { type: 'boolean', default: false, describe: 'no progress on stderr' })
      .options(envFlagOptions())
      .example(
        '$0 generate --domain shell --modality image --n 500 --out data/shell-test',
        '500 test episodes, 10 image swaps each',
      )
      .example(
        '$0 generate --domain chess --modality mixed --image-ratio 0.3 --n 100 --split train --prompt few-shot --out data/chess',
        '100 train episodes, about 30% of the actions as images, few-shot messages',
      ),
  handler: handler(schema, run),
};

export default command;
