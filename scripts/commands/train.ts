// `metrl train`: GRPO with LoRA adapters on a checkpoint (the built-in model or a Hugging Face one) for one domain
// and modality, on generated episodes or on a dataset (--dataset: envs/dataset-reader.ts). Wiring only: the flags
// (scripts/train-flags.ts) become the run's settings, fresh or resumed (scripts/train-settings.ts), the run folder is
// laid out, progress is shown (scripts/train-progress.ts); the work lives in trainer/.
//   RUN_DIR/config.json    domain, modality, base checkpoint, tfjs backend, ONNX Runtime device and threads (with
//                          engine 'ort'), the full training config (its `engine` included)
//   RUN_DIR/metrics.jsonl  one row per step (type "train") and per evaluation (type "eval", with its modality)
//   RUN_DIR/samples.jsonl  sample completions with their rewards
//   RUN_DIR/checkpoints/   step-N/ (PEFT adapter, optimizer and RNG state) and `latest`
import type { CommandModule } from 'yargs';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { handler } from '../command.ts';
import { UserError } from '../../core/errors.ts';
import { TrainFlagsSchema, trainFlagOptions, type TrainFlags } from '../train-flags.ts';
import { runSettings } from '../train-settings.ts';
import { progressView } from '../train-progress.ts';
import { writeJsonAtomic } from '../../core/files.ts';
import { getEnv } from '../../envs/registry.ts';
import { backendLine, initBackend } from '../../models/backend.ts';
import { chooseEngine } from '../../models/engine.ts';
import { resolveCheckpoint } from '../../models/load.ts';
import { modelTypeOf } from '../../models/registry.ts';
import { assertReadsModality, loadTrainingPolicy, train, type TrainEvent } from '../../trainer/grpo/loop.ts';
import { loadRewardFunctions } from '../../trainer/grpo/reward-functions.ts';

async function run(flags: TrainFlags): Promise<void> {
  const log = (line: string) => process.stderr.write(line + '\n');
  const settings = await runSettings(flags);
  const { domain, modality, runDir, checkpointDir, envExtra, datasetPath, dataset } = settings;
  // The engine is settled below, once the checkpoint's model type is known.
  let { config } = settings;

  const env = await getEnv(domain);
  // Every environment trains; one whose actions have a single form (boxes and MCST are text, MATE and REM images)
  // trains in that form and has no transfer modality.
  if (env.modalities && !env.modalities.includes(modality)) {
    throw new UserError(
      `--modality ${modality}: ${env.domain} shows its actions as ${env.modalities.join(' or ')} only`,
    );
  }
  // Reward modules load before anything is written: a missing file or a module without a function is one line.
  const rewards = await loadRewardFunctions(config.reward, process.cwd(), config.rewardTimeout);
  // The engine fits the model: ONNX Runtime runs the built-in model and the Hugging Face decoders it has a graph for
  // (unnamed, the engine is the model's default: models/engine.ts); --threads and --device set ONNX Runtime and need it. config.json records the engine chosen.
  const ort = { threads: flags.threads, device: flags.device };
  const modelType = modelTypeOf(
    existsSync(join(checkpointDir, 'adapter_config.json')) ? resolveCheckpoint(checkpointDir).base : checkpointDir,
  );
  config = { ...config, engine: chooseEngine(config.engine, modelType, ort) };
  const backend = await initBackend(flags.backend, null);
  const setup = await loadTrainingPolicy(checkpointDir, config);
  assertReadsModality(setup.policy, modality);
  // Once the run has started (the checkpoint loaded, the episodes made, a resumed state read), and not before: an error
  // up to there is then the only line on stderr and leaves nothing on disk. config.json comes before the first
  // checkpoint, so that an interrupted run can always be resumed.
  const started = (engineLine: string, learner: string) => {
    if (!flags.resume) {
      writeJsonAtomic(join(runDir, 'config.json'), {
        domain,
        modality,
        checkpoint: checkpointDir,
        backend: backend.name,
        ...(config.engine === 'ort' ? { ort: { device: flags.device ?? 'cpu', threads: flags.threads ?? null } } : {}),
        envExtra,
        ...(datasetPath !== undefined ? { dataset: datasetPath } : {}),
        config,
        createdAt: new Date().toISOString(),
      });
    }
    if (!flags.quiet) {
      log(backendLine(backend));
      if (config.engine === 'ort') log(`inference engine: ${engineLine} (the learner: ${learner})`);
      log(`run folder: ${runDir} (Ctrl-C stops it at any moment; --resume --out ${runDir} continues it)`);
    }
  };
  const progress = flags.quiet ? null : progressView(config, modality, log);
  // Where the run stands, for the Ctrl-C message: the last finished step and the last checkpoint written.
  let lastStep = 0;
  let lastCheckpoint: string | null = null;
  const onEvent = (event: TrainEvent) => {
    if (event.kind === 'start') {
      lastStep = event.fromStep;
      started(event.engine, event.learner);
    }
    if (event.kind === 'step') lastStep = event.row.step;
    if (event.kind === 'checkpoint') lastCheckpoint = `step-${event.step}`;
    progress?.onEvent(event);
  };
  // Every file of a run is written atomically or repaired on resume, so stopping between two of the loop's phases loses
  // nothing finished: say where the run stands and how to continue, and exit 130 as a shell expects after Ctrl-C.
  const onSignal = (signal: string) => {
    progress?.stop();
    const where = lastCheckpoint ? `its last checkpoint is ${lastCheckpoint}` : 'no checkpoint was written yet';
    log(
      `train: ${signal === 'SIGINT' ? 'interrupted' : signal} after step ${lastStep} of ${config.steps}; ${where}, and finished evaluations are kept. Continue with: metrl train --resume --out ${runDir}`,
    );
    process.exit(130);
  };
  const onSigint = () => onSignal('SIGINT');
  const onSigterm = () => onSignal('SIGTERM');
  process.once('SIGINT', onSigint);
  process.once('SIGTERM', onSigterm);
  try {
    await train({
      env,
      ...setup,
      config,
      modality,
      runDir,
      resume: flags.resume,
      envExtra,
      rewards,
      dataset,
      onEvent,
      ort,
    });
  } finally {
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigterm);
    progress?.stop();
  }
  if (!flags.quiet) log(`done: ${runDir} (plot it with: metrl plot ${runDir})`);
}

const command: CommandModule = {
  command: 'train',
  describe:
    'GRPO-train LoRA adapters on the built-in policy or a Hugging Face checkpoint, on any environment (text or image actions) or a --dataset, tracking the transfer modality',
  builder: (y) =>
    trainFlagOptions(y)
      .example(
        '$0 train --domain chess --modality image --out runs/chess-image',
        'the built-in policy from checkpoints/base; text is the transfer modality',
      )
      .example(
        '$0 train --checkpoint path/to/SmolVLM-256M-Instruct --domain chess --modality image',
        'LoRA on a Hugging Face checkpoint (a save_pretrained folder)',
      )
      .example(
        '$0 train --resume --out runs/chess-image --steps 80',
        'continue a stopped run from its last checkpoint (--steps may extend it)',
      ),
  handler: handler(TrainFlagsSchema, (flags) => run(flags as TrainFlags)),
};

export default command;
