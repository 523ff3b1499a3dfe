// The run's state: what changes from step to step (step, RNG, data order, optimiser, NaN streak),
// which is what a checkpoint saves. startOrResume gives a fresh state or the newest checkpoint's, with the logs cut
// back to its step; checkpoint writes the state of a step, so that `resume` reproduces the uninterrupted run.
import type * as tf from '@tensorflow/tfjs';
import { cpSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { Rng } from '../../core/rng.ts';
import { UserError } from '../../core/errors.ts';
import { AdamW } from '../adamw.ts';
import { startEntropyControl, type EntropyControl } from '../loss/entropy-control.ts';
import { DataOrder } from '../data-order.ts';
import {
  latestCheckpointDir,
  readCheckpoint,
  ROLLOUT_ADAPTERS_DIR,
  saveCheckpoint,
  TRAINER_STATE_VERSION,
  type Checkpoint,
} from '../logs/checkpoint.ts';
import type { RolloutQueue, RoundAhead } from './rollout-queue.ts';
import { truncateLogAfterStep, type EvalRow } from '../logs/metrics.ts';
import type { Run } from './run.ts';

/** What changes from step to step; everything but `evals` is saved in checkpoints. */
export interface RunState {
  step: number;
  nanStreak: number;
  /** The rollout sampling RNG. */
  rng: Rng;
  order: DataOrder;
  optimizer: AdamW;
  /** The learner's LoRA variables, in the optimiser's order. */
  variables: tf.Variable[];
  evals: EvalRow[];
  /**
   * Rows already in metrics.jsonl for the step the run starts from ('baseline', 'eval:<modality>'): written before an
   * interruption, they are kept and not computed again.
   */
  logged: Set<string>;
  /** The entropy bonus's coefficient and the last update's entropy (entropy-control.ts). */
  entropyControl: EntropyControl;
  /** Prompt and completion tokens of every completion drawn so far (TRL's num_tokens, num_input_tokens_seen). */
  numTokens: number;
  /** Whether a checkpoint of `step` exists (a resumed run's, or the step-0 one). */
  checkpointed: boolean;
  /** With --async: the rounds submitted ahead of the update (rollout-queue.ts); a checkpoint records them. */
  queue: RolloutQueue | null;
  /** A resumed --async run's rounds ahead, from its checkpoint, and the folder holding their adapters. */
  resumedAhead: { rounds: RoundAhead[]; adapters: string } | null;
}

/** A fresh state, or the newest checkpoint's (adapter, optimiser, RNG, data order) with the logs cut back to it. */
export function startOrResume(run: Run): RunState {
  const { config, setup } = run;
  // On resume the adapter is loaded first: loading may replace the policy's LoRA variables, and the optimiser must
  // hold the ones that will be trained.
  const checkpoint = setup.resume ? findCheckpoint(run) : null;
  if (checkpoint) {
    run.adapter.load(checkpoint.dir);
    run.engine.syncLora(checkpoint.optimizer.step);
  } else if (!setup.resume && existsSync(run.metricsPath)) {
    throw new UserError(
      `${setup.runDir} already holds a run (metrics.jsonl); use --resume to continue it or choose another --out`,
    );
  }
  const variables = run.learner.trainableVariables('lora');
  if (variables.length === 0) throw new Error('the policy has no LoRA variables to train');
  const optimizer = new AdamW(variables, {
    learningRate: config.learningRate,
    beta1: config.adamBeta1,
    beta2: config.adamBeta2,
    epsilon: config.adamEpsilon,
    weightDecay: config.weightDecay,
  });
  const state: RunState = {
    step: 0,
    nanStreak: 0,
    rng: new Rng(config.seed, 'rollouts'),
    order: new DataOrder(run.trainSet.length, config.seed),
    optimizer,
    variables,
    evals: [],
    logged: new Set(),
    checkpointed: checkpoint !== null,
    entropyControl: startEntropyControl(config),
    numTokens: 0,
    queue: null,
    resumedAhead: null,
  };
  if (checkpoint) {
    optimizer.setState(checkpoint.optimizer);
    state.rng = Rng.fromState(checkpoint.state.rng);
    state.order.restore(checkpoint.state.dataOrder);
    state.step = checkpoint.state.step;
    state.nanStreak = checkpoint.state.nanStreak;
    const control = checkpoint.state.entropyControl;
    if (control) state.entropyControl = { coef: control.coef, lastEntropy: control.lastEntropy ?? Infinity };
    const ahead = checkpoint.state.rolloutsAhead;
    if (ahead && ahead.length > 0)
      state.resumedAhead = { rounds: ahead, adapters: join(checkpoint.dir, ROLLOUT_ADAPTERS_DIR) };
  }
  if (setup.resume) {
    // Rows after the starting step are cut (they are recomputed); those of the starting step itself are kept.
    const kept = truncateLogAfterStep<{ type: string; step: number; modality?: string }>(run.metricsPath, state.step);
    truncateLogAfterStep(run.samplesPath, state.step);
    for (const row of kept) {
      if (row.step !== state.step) continue;
      if (row.type === 'baseline') state.logged.add('baseline');
      if (row.type === 'eval') state.logged.add(`eval:${row.modality}`);
    }
    // TRL's num_tokens counts on from the last training row kept.
    const lastTrain = kept.filter((row) => row.type === 'train').at(-1) as
      | { trl?: Record<string, number | null> }
      | undefined;
    state.numTokens = lastTrain?.trl?.['num_tokens'] ?? 0;
  }
  return state;
}

/**
 * The newest checkpoint, or null for a run stopped before its step-0 checkpoint was written (nothing was trained:
 * it starts from the beginning). Training rows without any checkpoint mean the checkpoints were removed: an error.
 */
function findCheckpoint(run: Run): Checkpoint | null {
  const dir = latestCheckpointDir(run.checkpointsDir);
  if (dir) return readCheckpoint(dir, run.adapter);
  const trained = truncateLogAfterStep<{ type: string; step: number }>(run.metricsPath, Infinity).some(
    (r) => r.type === 'train',
  );
  if (trained) {
    throw new UserError(
      `--resume: ${run.metricsPath} has training steps but ${run.checkpointsDir} holds no checkpoint to continue from; start the run again in a new --out`,
    );
  }
  return null;
}

/** Adapter, optimiser and trainer state of the step, written atomically. */
export function checkpoint(run: Run, state: RunState): void {
  // With --async the rounds already submitted for later steps are part of the state (their prompts and seeds were
  // drawn): recorded with the adapters that sample them, so that a resumed run submits them again as they were.
  const ahead = state.queue?.ahead(state.step) ?? [];
  const remote = run.engine.remote;
  const copyAdapters = (dir: string) => {
    for (const version of new Set(ahead.map((r) => r.version)))
      cpSync(remote!.adapterFolder(version), join(dir, ROLLOUT_ADAPTERS_DIR, `v${version}`), { recursive: true });
  };
  const dir = saveCheckpoint(
    run.checkpointsDir,
    run.adapter,
    {
      version: TRAINER_STATE_VERSION,
      step: state.step,
      rng: state.rng.state(),
      dataOrder: state.order.state(),
      nanStreak: state.nanStreak,
      ...(run.config.useAdaptiveEntropy
        ? {
            entropyControl: {
              coef: state.entropyControl.coef,
              lastEntropy: Number.isFinite(state.entropyControl.lastEntropy) ? state.entropyControl.lastEntropy : null,
            },
          }
        : {}),
      ...(state.queue ? { rolloutsAhead: ahead } : {}),
    },
    state.optimizer.getState(),
    ahead.length > 0 ? copyAdapters : undefined,
  );
  run.setup.onEvent?.({ kind: 'checkpoint', dir, step: state.step });
}
