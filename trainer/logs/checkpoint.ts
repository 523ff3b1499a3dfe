// A training run's checkpoints: everything a run needs to continue exactly where it stopped, written
// atomically. (A model's own base checkpoint is models/builtin/base-checkpoint.ts.)
//   checkpoints/step-N/   adapter (PEFT layout: adapter_config.json + adapter_model.safetensors),
//                         optimizer.safetensors (AdamW moments, in adapter-variable order; step in the metadata),
//                         trainer_state.json (step, RNG state, data order, NaN streak; with --async the rounds
//                         submitted ahead), rollout-adapters/v<N>/ (with --async: the adapters sampling those rounds)
//   checkpoints/latest    the name of the newest complete checkpoint ("step-N")
// A checkpoint is built in a temporary folder and renamed into place, then `latest` is rewritten atomically, so a
// kill at any moment leaves the previous checkpoint usable.
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { UserError, describeZodError, systemErrorAsUserError } from '../../core/errors.ts';
import { ensureDir, removeQuietly, writeFileAtomic } from '../../core/files.ts';
import { decodeSafetensors, encodeSafetensors, type NamedTensor } from '../../models/safetensors.ts';
import type { Learner, LoraSettings } from '../../models/learner.ts';
import type { AdamWState } from '../adamw.ts';
import { DataOrderStateSchema } from '../data-order.ts';
import { readJson } from '../../core/files.ts';

export const TRAINER_STATE_VERSION = 1;

const TrainerStateSchema = z
  .object({
    version: z.literal(TRAINER_STATE_VERSION),
    /** Optimiser steps completed. */
    step: z.number().int().min(0),
    /** State of the rollout sampling RNG (sfc32 words). */
    rng: z.tuple([z.number(), z.number(), z.number(), z.number()]),
    dataOrder: DataOrderStateSchema,
    /** Consecutive steps with a non-finite loss just before this checkpoint. */
    nanStreak: z.number().int().min(0),
    /** The adaptive entropy controller (entropy-control.ts), only with useAdaptiveEntropy; lastEntropy null = +∞. */
    entropyControl: z.object({ coef: z.number(), lastEntropy: z.number().nullable() }).strict().optional(),
    /**
     * With --async: the rounds submitted to the rollout servers for later steps (trainer/grpo/rollout-queue.ts), which
     * a resumed run submits again as they were; their adapters are in rollout-adapters/v<version>/ beside this file.
     */
    rolloutsAhead: z
      .array(
        z
          .object({
            step: z.number().int().positive(),
            prompts: z.array(z.number().int().min(0)),
            seeds: z.array(z.number().int()),
            version: z.number().int().min(0),
          })
          .strict(),
      )
      .optional(),
  })
  .strict();
export type TrainerState = z.infer<typeof TrainerStateSchema>;

/** How a policy's adapter is written and read inside checkpoints (PEFT layout, through the Learner). */
export interface AdapterStore {
  /** Files `save` writes, all of which must exist for a checkpoint to be complete. */
  readonly files: readonly string[];
  save(dir: string): void;
  /** Load into the policy; throws UserError when the adapter does not fit the model. */
  load(dir: string): void;
}

/**
 * The learner's adapters as a run stores them: saved naming the base they were trained on, and loaded only when their
 * rank and alpha are the run's (another run's adapter would silently change the training).
 */
export function learnerAdapterStore(learner: Learner, baseModel: string, lora: LoraSettings): AdapterStore {
  return {
    files: learner.adapterFiles,
    save: (dir) => learner.saveAdapter(dir, { baseModel }),
    load: (dir) => {
      const loaded = learner.loadAdapter(dir);
      if (loaded.r !== lora.r || loaded.alpha !== lora.alpha) {
        throw new UserError(
          `${dir}: adapter has r=${loaded.r}, alpha=${loaded.alpha} but the run's config says r=${lora.r}, alpha=${lora.alpha}`,
        );
      }
    },
  };
}

export interface Checkpoint {
  dir: string;
  state: TrainerState;
  optimizer: AdamWState;
}

const STATE_FILE = 'trainer_state.json';
/** Inside a checkpoint: the adapters of its rounds ahead (rolloutsAhead), one folder per version. */
export const ROLLOUT_ADAPTERS_DIR = 'rollout-adapters';
const OPTIMIZER_FILE = 'optimizer.safetensors';
const LATEST_FILE = 'latest';

function checkpointName(step: number): string {
  return `step-${step}`;
}

/** Write checkpoint `state.step` under `root` (the run's checkpoints/ folder) and point `latest` at it. */
export function saveCheckpoint(
  root: string,
  adapter: AdapterStore,
  state: TrainerState,
  optimizer: AdamWState,
  /** Writes anything else the checkpoint holds into its (temporary) folder. */
  extra?: (dir: string) => void,
): string {
  ensureDir(root);
  const name = checkpointName(state.step);
  const final = join(root, name);
  const tmp = join(root, `.${name}.${process.pid}.tmp`);
  try {
    rmSync(tmp, { recursive: true, force: true });
    ensureDir(tmp);
    adapter.save(tmp);
    writeFileSync(join(tmp, OPTIMIZER_FILE), encodeOptimizerState(optimizer));
    writeFileSync(join(tmp, STATE_FILE), JSON.stringify(state, null, 2) + '\n');
    extra?.(tmp);
    // A checkpoint of this step may exist from before an interruption: the new one replaces it.
    rmSync(final, { recursive: true, force: true });
    renameSync(tmp, final);
  } catch (error) {
    removeQuietly(tmp);
    throw systemErrorAsUserError(error, final, 'cannot write the checkpoint');
  }
  writeFileAtomic(join(root, LATEST_FILE), name + '\n');
  return final;
}

/** The newest complete checkpoint under `root`, or null when there is none. */
export function latestCheckpointDir(root: string): string | null {
  const pointer = join(root, LATEST_FILE);
  if (!existsSync(pointer)) return null;
  const name = readFileSync(pointer, 'utf8').trim();
  if (!/^step-\d+$/.test(name)) throw new UserError(`${pointer}: does not name a checkpoint (got '${name}')`);
  const dir = join(root, name);
  if (!existsSync(dir)) throw new UserError(`${pointer}: points at ${name}, which does not exist`);
  return dir;
}

/** Read a checkpoint's trainer and optimiser state, checking it is complete. The adapter is loaded by the caller. */
export function readCheckpoint(dir: string, adapter: AdapterStore): Checkpoint {
  for (const file of [...adapter.files, OPTIMIZER_FILE, STATE_FILE]) {
    if (!existsSync(join(dir, file))) throw new UserError(`checkpoint ${dir} is incomplete: ${file} is missing`);
  }
  const state = readJson(join(dir, STATE_FILE), TrainerStateSchema, { invalid: (error) => describeZodError(error) });
  return {
    dir,
    state,
    optimizer: decodeOptimizerState(readFileSync(join(dir, OPTIMIZER_FILE)), join(dir, OPTIMIZER_FILE)),
  };
}

function encodeOptimizerState(state: AdamWState): Uint8Array {
  const tensors = new Map<string, NamedTensor>();
  const pad = (i: number) => String(i).padStart(4, '0');
  state.m.forEach((m, i) => tensors.set(`m.${pad(i)}`, { shape: [m.length], data: m }));
  state.v.forEach((v, i) => tensors.set(`v.${pad(i)}`, { shape: [v.length], data: v }));
  return encodeSafetensors(tensors, { step: String(state.step), variables: String(state.m.length) });
}

function decodeOptimizerState(bytes: Uint8Array, source: string): AdamWState {
  const { tensors, metadata } = decodeSafetensors(bytes, source);
  const count = Number(metadata.variables);
  const step = Number(metadata.step);
  if (!Number.isInteger(count) || !Number.isInteger(step))
    throw new UserError(`${source}: metadata lacks step or variables`);
  const m: Float32Array[] = [];
  const v: Float32Array[] = [];
  for (let i = 0; i < count; i++) {
    const key = String(i).padStart(4, '0');
    const mi = tensors.get(`m.${key}`);
    const vi = tensors.get(`v.${key}`);
    if (!mi || !vi) throw new UserError(`${source}: moments of variable ${i} are missing`);
    m.push(mi.data);
    v.push(vi.data);
  }
  return { step, m, v };
}
