// Supervised pretraining of the built-in policy: teacher-forced cross-entropy on the answer tokens of perception and
// short text-tracking examples (trainer/pretrain/data.ts), AdamW with warm-up and cosine decay, gradient clipping.
// Every `checkpointEvery` steps the weights, the optimiser state and the step are written atomically to the output
// folder, so a killed run resumes where it stopped; batches are a pure function of the step, so the resumed run sees
// the same data. At the end the base is measured on fixed test episodes and the figures go into config.json.
import * as tf from '@tensorflow/tfjs';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Env } from '../../envs/env.ts';
import { UserError } from '../../core/errors.ts';
import { appendJsonl, readJson, writeFileAtomic, writeJsonAtomic } from '../../core/files.ts';
import { z } from 'zod';
import { BuiltinPolicy } from '../../models/builtin/policy.ts';
import { defaultArchitecture, type Architecture } from '../../models/builtin/config.ts';
import { loadBaseCheckpoint, saveBaseCheckpoint } from '../../models/builtin/base-checkpoint.ts';
import { decodeSafetensors, encodeSafetensors, type NamedTensor } from '../../models/safetensors.ts';
import { AdamW } from '../adamw.ts';
import { clipGradientsByGlobalNorm } from '../loss/loss.ts';
import type { SequenceBatchItem } from '../../models/types.ts';
import type { PretrainConfig } from './config.ts';
import { pretrainBatch } from './data.ts';
import { measureBase, type BaseMeasurement } from './eval.ts';
import { truncateLogAfterStep } from '../logs/metrics.ts';

export interface PretrainSetup {
  envs: Env[];
  config: PretrainConfig;
  /** Folder of the base checkpoint being built (config.json, model.safetensors, tokenizer.json). */
  outDir: string;
  resume: boolean;
  /** Recorded in config.json: the command line that rebuilds the checkpoint, the backend. */
  provenance: Record<string, unknown>;
  onEvent?(event: PretrainEvent): void;
  /** Stop cleanly after this step (tests simulate an interruption with it). */
  stopAfterStep?: number;
}

type PretrainEvent =
  | { kind: 'start'; fromStep: number; steps: number; parameters: number }
  | { kind: 'step'; row: PretrainRow }
  | { kind: 'eval'; step: number; measurements: BaseMeasurement[] }
  | { kind: 'checkpoint'; step: number };

interface PretrainRow {
  step: number;
  loss: number;
  perceptionLoss: number | null;
  trackingLoss: number | null;
  learningRate: number;
  gradNorm: number;
  tokens: number;
  tokensPerSecond: number;
  seconds: number;
}

const STATE_DIR = '.pretrain-state';

/** Learning rate at `step` (1-based): linear warm-up, then cosine decay to 10% of the peak. */
export function learningRateAt(config: PretrainConfig, step: number): number {
  const peak = config.learningRate;
  if (step <= config.warmupSteps) return (peak * step) / Math.max(1, config.warmupSteps);
  const progress = (step - config.warmupSteps) / Math.max(1, config.steps - config.warmupSteps);
  return peak * (0.1 + 0.9 * 0.5 * (1 + Math.cos(Math.PI * Math.min(1, progress))));
}

/** Mean token cross-entropy of a batch, and the per-skill means for logging. */
function supervisedLoss(policy: BuiltinPolicy, items: SequenceBatchItem[]): { loss: tf.Scalar; perItem: tf.Tensor1D } {
  const { logProbs, mask } = policy.tokenLogProbs(items, { useLora: false });
  const tokenNll = tf.neg(tf.mul(logProbs, mask));
  const loss = tf.div(tf.sum(tokenNll), tf.maximum(tf.sum(mask), 1)) as tf.Scalar;
  const perItem = tf.div(tf.sum(tokenNll, 1), tf.maximum(tf.sum(mask, 1), 1)) as tf.Tensor1D;
  return { loss, perItem };
}

function meanOf(values: number[]): number | null {
  return values.length === 0 ? null : values.reduce((s, v) => s + v, 0) / values.length;
}

function saveOptimizerState(dir: string, optimizer: AdamW, step: number): void {
  const state = optimizer.getState();
  const tensors = new Map<string, NamedTensor>();
  state.m.forEach((m, i) => tensors.set(`m.${i}`, { shape: [m.length], data: m }));
  state.v.forEach((v, i) => tensors.set(`v.${i}`, { shape: [v.length], data: v }));
  writeFileAtomic(join(dir, 'optimizer.safetensors'), encodeSafetensors(tensors));
  writeJsonAtomic(join(dir, 'state.json'), { step, optimizerStep: state.step, variables: state.m.length });
}

/** What state.json beside a pretraining checkpoint records. */
const PretrainStateSchema = z.object({
  step: z.number().int().min(0),
  optimizerStep: z.number().int().min(0),
  variables: z.number().int().min(0),
});

function loadOptimizerState(dir: string, optimizer: AdamW): number {
  const statePath = join(dir, 'state.json');
  if (!existsSync(statePath)) throw new UserError(`--resume: ${dir} holds no pretraining state (state.json)`);
  const state = readJson(statePath, PretrainStateSchema, { prefix: '--resume: ' });
  const file = decodeSafetensors(readFileSync(join(dir, 'optimizer.safetensors')), join(dir, 'optimizer.safetensors'));
  const take = (key: string) => {
    const t = file.tensors.get(key);
    if (!t) throw new UserError(`${dir}/optimizer.safetensors lacks ${key}`);
    return t.data;
  };
  optimizer.setState({
    step: state.optimizerStep,
    m: Array.from({ length: state.variables }, (_, i) => take(`m.${i}`)),
    v: Array.from({ length: state.variables }, (_, i) => take(`v.${i}`)),
  });
  return state.step;
}

/**
 * The architecture a pretraining run builds: the config's, on grid positions unless it names a scheme (the trace
 * layout needs them, models/builtin/positions.ts; the architecture's own default stays 'sequence' so that checkpoints written
 * before the field existed load as they were trained).
 */
function pretrainArchitecture(config: PretrainConfig): Partial<Architecture> {
  return { positions: 'grid', ...(config.architecture as Partial<Architecture>) };
}

/**
 * The base a second stage starts from: the `init` checkpoint, which must have the configured architecture. Only the
 * position scheme may differ (it is not a weight): the stage then trains the init's weights on the configured scheme.
 */
function loadInitialWeights(config: PretrainConfig): BuiltinPolicy {
  const loaded = loadBaseCheckpoint(config.init!);
  const wanted = defaultArchitecture(pretrainArchitecture(config));
  const differs = Object.entries(wanted).filter(
    ([key, value]) =>
      key !== 'positions' &&
      JSON.stringify(value) !== JSON.stringify((loaded.arch as unknown as Record<string, unknown>)[key]),
  );
  if (differs.length > 0) {
    loaded.dispose();
    throw new UserError(
      `pretrain config: init ${config.init} has another architecture (${differs.map(([k]) => k).join(', ')} differ from the configured one)`,
    );
  }
  if (loaded.arch.positions === wanted.positions) return loaded;
  return new BuiltinPolicy({ ...loaded.arch, positions: wanted.positions }, loaded.tokenizer, loaded.weights);
}

/** Run (or resume) pretraining; returns the final measurements of the base. */
export async function pretrain(setup: PretrainSetup): Promise<BaseMeasurement[]> {
  const { config, outDir, envs } = setup;
  const stateDir = join(outDir, STATE_DIR);
  const metricsPath = join(outDir, 'pretrain-metrics.jsonl');
  let policy: BuiltinPolicy;
  let fromStep = 0;
  if (setup.resume) {
    if (!existsSync(join(stateDir, 'state.json')))
      throw new UserError(`--resume: no pretraining checkpoint in ${outDir}`);
    policy = loadBaseCheckpoint(outDir);
  } else if (config.init) {
    policy = loadInitialWeights(config);
  } else {
    policy = BuiltinPolicy.create({ architecture: pretrainArchitecture(config), seed: config.seed });
  }
  const variables = policy.trainableVariables('base');
  const optimizer = new AdamW(variables, {
    learningRate: config.learningRate,
    beta1: 0.9,
    beta2: 0.98,
    epsilon: 1e-8,
    weightDecay: config.weightDecay,
  });
  if (setup.resume) {
    fromStep = loadOptimizerState(stateDir, optimizer);
    // Rows the killed run wrote after its last checkpoint are written again by the resumed run: drop them.
    truncateLogAfterStep(metricsPath, fromStep);
  } else if (existsSync(metricsPath)) rmSync(metricsPath);
  const meta = { ...setup.provenance, pretraining: config };
  setup.onEvent?.({ kind: 'start', fromStep, steps: config.steps, parameters: policy.parameterCount });

  const checkpoint = (step: number, extra: Record<string, unknown> = {}) => {
    saveBaseCheckpoint(policy, outDir, { ...meta, step, ...extra });
    saveOptimizerState(stateDir, optimizer, step);
    setup.onEvent?.({ kind: 'checkpoint', step });
  };

  let measurements: BaseMeasurement[] = [];
  for (let step = fromStep + 1; step <= config.steps; step++) {
    const started = performance.now();
    const batch = pretrainBatch(envs, config, step);
    const items = batch.map((ex) => ({
      prompt: policy.encode(ex.input),
      completion: policy.encodeTarget(ex.target, { eos: ex.ends }),
    }));
    optimizer.options.learningRate = learningRateAt(config, step);
    let perItemValues: Float32Array = new Float32Array();
    const { value, grads } = tf.variableGrads(() => {
      const { loss, perItem } = supervisedLoss(policy, items);
      perItemValues = perItem.dataSync() as Float32Array;
      return loss;
    }, variables);
    const loss = value.dataSync()[0];
    value.dispose();
    if (!Number.isFinite(loss)) {
      tf.dispose(grads);
      throw new UserError(
        `pretraining diverged at step ${step} (loss ${loss}); lower --lr and resume from the last checkpoint`,
      );
    }
    const clipped = clipGradientsByGlobalNorm(grads, config.maxGradNorm);
    optimizer.apply(clipped.grads);
    tf.dispose(clipped.grads);
    const seconds = (performance.now() - started) / 1000;
    const tokens = items.reduce((s, it) => s + it.prompt.tokens.length + it.completion.length, 0);
    const byKind = (kind: string) => meanOf(batch.flatMap((ex, i) => (ex.kind === kind ? [perItemValues[i]] : [])));
    const row: PretrainRow = {
      step,
      loss,
      perceptionLoss: byKind('perception'),
      trackingLoss: byKind('tracking'),
      learningRate: optimizer.options.learningRate,
      gradNorm: clipped.norm,
      tokens,
      tokensPerSecond: tokens / seconds,
      seconds,
    };
    appendJsonl(metricsPath, [{ type: 'train', ...row }]);
    setup.onEvent?.({ kind: 'step', row });

    const last = step === config.steps;
    if (step % config.evalEvery === 0 || last) {
      measurements = measureBase(policy, envs, config);
      appendJsonl(
        metricsPath,
        measurements.map((m) => ({ type: 'eval', step, ...m })),
      );
      setup.onEvent?.({ kind: 'eval', step, measurements });
    }
    if (step % config.checkpointEvery === 0 || last) checkpoint(step, last ? { measurements } : {});
    if (setup.stopAfterStep !== undefined && step >= setup.stopAfterStep) break;
  }
  policy.dispose();
  optimizer.dispose();
  return measurements;
}
