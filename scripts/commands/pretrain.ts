// `metrl pretrain [--out DIR] [--steps N] [--config FILE] [--resume] …`: rebuild the built-in policy's base
// checkpoint by supervised pretraining (trainer/pretrain/pretrain.ts). Writes DIR/config.json (architecture, the pretraining
// config, the command, the backend and the base's measured accuracies), DIR/model.safetensors, DIR/tokenizer.json,
// DIR/pretrain-metrics.jsonl and a resumable state in DIR/.pretrain-state/.
import type { CommandModule } from 'yargs';
import { z } from 'zod';
import { existsSync, readdirSync } from 'node:fs';
import { claimDir } from '../../core/files.ts';
import { join, resolve } from 'node:path';
import { handler } from '../command.ts';
import { UserError } from '../../core/errors.ts';
import { CHECKPOINTS_DIR } from '../../core/paths.ts';
import { getEnv } from '../../envs/registry.ts';
import { loadPretrainConfig } from '../../trainer/pretrain/config.ts';
import type { BaseMeasurement } from '../../trainer/pretrain/eval.ts';

const schema = z.object({
  out: z.string().min(1),
  steps: z.number().int().positive().optional(),
  batchSize: z.number().int().positive().optional(),
  lr: z.number().positive().optional(),
  seed: z.number().int().min(0).optional(),
  evalEvery: z.number().int().positive().optional(),
  evalSize: z.number().int().positive().optional(),
  config: z.string().min(1).optional(),
  resume: z.boolean().default(false),
  force: z.boolean().default(false),
  backend: z.string().optional(),
  quiet: z.boolean().default(false),
});

type PretrainFlags = z.infer<typeof schema>;

function formatMeasurement(m: BaseMeasurement): string {
  const ci = m.low !== null && m.high !== null ? ` [${(100 * m.low).toFixed(1)}, ${(100 * m.high).toFixed(1)}]` : '';
  return `${m.domain} ${m.skill}: ${(100 * m.accuracy).toFixed(1)}%${ci} (n=${m.n})`;
}

async function run(flags: PretrainFlags): Promise<void> {
  const outDir = resolve(flags.out);
  const config = loadPretrainConfig(flags.config, {
    steps: flags.steps,
    batchSize: flags.batchSize,
    learningRate: flags.lr,
    seed: flags.seed,
    evalEvery: flags.evalEvery,
    evalSize: flags.evalSize,
  });
  if (!flags.resume && existsSync(outDir) && readdirSync(outDir).length > 0 && !flags.force) {
    throw new UserError(
      `--out ${flags.out} exists and is not empty (use --resume to continue it or --force to overwrite)`,
    );
  }
  // The folder is made before the backend, the environments and the model (seconds of set-up), so that an --out that
  // cannot be written is the first thing said; a run that fails before writing anything leaves no folder behind.
  const release = claimDir(outDir, flags.out);
  try {
    await pretrainInto(outDir, flags, config);
  } catch (error) {
    release();
    throw error;
  }
}

async function pretrainInto(
  outDir: string,
  flags: PretrainFlags,
  config: ReturnType<typeof loadPretrainConfig>,
): Promise<void> {
  const { initBackend, backendLine } = await import('../../models/backend.ts');
  const backend = await initBackend(flags.backend, null);
  const envs = await Promise.all(config.domains.map((d) => getEnv(d)));
  const { pretrain } = await import('../../trainer/pretrain/pretrain.ts');
  const log = (line: string) => {
    if (!flags.quiet) process.stderr.write(line + '\n');
  };
  const started = Date.now();
  let firstStep = 1; // steps before it were done by an earlier, resumed-from run
  const measurements = await pretrain({
    envs,
    config,
    outDir,
    resume: flags.resume,
    provenance: { command: `metrl ${process.argv.slice(2).join(' ')}`, backend: backend.name },
    onEvent(event) {
      if (event.kind === 'start') firstStep = event.fromStep + 1;
      // Printed once the run has started, so that an error before it is the only line a user sees.
      if (event.kind === 'start') log(backendLine(backend));
      if (event.kind === 'start')
        log(
          `pretrain: ${event.parameters.toLocaleString('en')} parameters, steps ${event.fromStep + 1}-${event.steps}`,
        );
      if (event.kind === 'step' && (event.row.step % 10 === 0 || event.row.step === 1)) {
        const r = event.row;
        const elapsed = (Date.now() - started) / 1000;
        const done = r.step - firstStep + 1;
        const eta = ((config.steps - r.step) * elapsed) / done;
        log(
          `step ${r.step}/${config.steps} loss ${r.loss.toFixed(3)} (perception ${r.perceptionLoss?.toFixed(3) ?? '-'}, tracking ${r.trackingLoss?.toFixed(3) ?? '-'}) ` +
            `lr ${r.learningRate.toExponential(1)} ${r.tokensPerSecond.toFixed(0)} tok/s, ${elapsed.toFixed(0)} s, ETA ${Math.round(eta / 60)} min`,
        );
      }
      if (event.kind === 'eval')
        for (const m of event.measurements) log(`eval step ${event.step}: ${formatMeasurement(m)}`);
      if (event.kind === 'checkpoint') log(`checkpoint: step ${event.step} → ${outDir}`);
    },
  });
  process.stdout.write(JSON.stringify({ out: outDir, measurements }, null, 2) + '\n');
}

const command: CommandModule = {
  command: 'pretrain',
  describe:
    'Rebuild the base checkpoint of the built-in policy by supervised pretraining on chess and the shell game (perception: an image action → its text; tracking: short traces of states)',
  builder: (y) =>
    y
      .option('out', { type: 'string', default: join(CHECKPOINTS_DIR, 'base'), describe: 'checkpoint folder to write' })
      .option('steps', { type: 'number', describe: 'optimiser updates (default 3000)' })
      .option('batch-size', { type: 'number', describe: 'sequences per update (default 16)' })
      .option('lr', { type: 'number', describe: 'peak learning rate (default 1e-3)' })
      .option('seed', { type: 'number', describe: 'seed of initialisation and data (default 0)' })
      .option('eval-every', { type: 'number', describe: 'measure the base every N steps (default 500)' })
      .option('eval-size', { type: 'number', describe: 'test episodes per measured skill (default 64)' })
      .option('config', {
        type: 'string',
        describe: 'JSON file with pretraining config fields (see trainer/pretrain/config.ts)',
      })
      .option('resume', { type: 'boolean', default: false, describe: 'continue from the last checkpoint in --out' })
      .option('force', { type: 'boolean', default: false, describe: 'overwrite a non-empty --out' })
      .option('backend', {
        type: 'string',
        describe: 'tfjs backend: node-gpu, node, wasm or cpu (default: best that loads)',
      })
      .option('quiet', { type: 'boolean', default: false, describe: 'no progress lines' }),
  handler: handler(schema, run) as never,
};

export default command;
