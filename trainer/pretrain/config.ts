// Configuration of supervised pretraining (`metrl pretrain`), which builds the shipped base checkpoint. The base
// learns two skills that are not the RL target itself, as the paper's base VLMs had them before GRPO: reading an
// image action into its text form (the perception probe) and tracking short sequences (at most maxTrackActions actions
// written by the model, from the initial state or from a state a given trace reaches), for chess and the shell game.
// GRPO then has to carry traces through longer, image-action episodes.

import { z } from 'zod';
import { parseOrFail } from '../../core/errors.ts';
import { ArchitectureSchema } from '../../models/builtin/config.ts';
import { readJson } from '../../core/files.ts';

const positiveInt = z.number().int().positive();

/** Longest action list a partial-trace example may have (maxListedActions is at most this). */
export const MAX_LISTED_ACTIONS = 8;

export const PretrainConfigSchema = z
  .object({
    /** Domains whose skills the base learns. */
    domains: z
      .array(z.enum(['chess', 'shell']))
      .min(1)
      .default(['chess', 'shell']),
    /** Optimiser updates. */
    steps: positiveInt.default(3000),
    /** Sequences per update. */
    batchSize: positiveInt.default(16),
    /** Peak learning rate (AdamW), reached after `warmupSteps` and decayed by a cosine to 10% of it. */
    learningRate: z.number().positive().max(1).default(1e-3),
    warmupSteps: z.number().int().min(0).default(100),
    weightDecay: z.number().min(0).max(1).default(0.01),
    /** Global gradient-norm clip. */
    maxGradNorm: z.number().positive().default(1),
    /** Relative share of the batches spent on each domain (chess is the harder one). */
    domainWeights: z
      .object({ chess: z.number().min(0).default(0.7), shell: z.number().min(0).default(0.3) })
      .strict()
      .default({ chess: 0.7, shell: 0.3 }),
    /** Share of the batches that are perception (one image → its text action); the rest is text tracking. */
    perceptionShare: z.number().min(0).max(1).default(0.4),
    /** Longest text sequence the base tracks (the RL episodes have 5 actions). */
    maxTrackActions: z.number().int().min(0).max(4).default(2),
    /**
     * Share of the tracking examples that are partial traces: a longer episode (up to maxListedActions, text or images) of which only the
     * first 1..maxTrackActions trace lines are taught, without the answer (but see partialStart and partialEndShare).
     * They show action lists of any length while every taught update stays a short one.
     */
    partialTraceShare: z.number().min(0).max(1).default(0.5),
    /**
     * Longest action list of a partial trace (more than maxTrackActions). 8 in the shipped stages; below the RL
     * episodes' 5 actions, pretraining never shows a list as long as the GRPO target.
     */
    maxListedActions: z.number().int().min(1).max(MAX_LISTED_ACTIONS).default(MAX_LISTED_ACTIONS),
    /**
     * Where a partial trace's taught lines start: 'first' (the trace's first line) or 'any' (after a prefix of 0..T-1
     * trace lines given in the prompt).
     */
    partialStart: z.enum(['first', 'any']).default('any'),
    /**
     * Each action of a whole trace (0..maxTrackActions actions) is an image with this probability. 0 (the shipped
     * base): whole traces are text-only, so answering after an image action is left to GRPO.
     */
    wholeImageRatio: z.number().min(0).max(1).default(0),
    /**
     * Share of the partial traces that end the trace: all but its last 1..maxTrackActions lines are given in the
     * prompt, and those lines and the answer are taught. 0 in the first stages.
     */
    partialEndShare: z.number().min(0).max(1).default(0),
    /** Each action of a partial trace's list is shown as an image with this probability (reading inside a trace). */
    partialImageRatio: z.number().min(0).max(1).default(0.5),
    /** Chess tracking starts from the game start with this probability, else from a random ply of the game. */
    chessStartShare: z.number().min(0).max(1).default(0.5),
    /** Evaluate every this many steps (and at the end) on fixed test episodes. */
    evalEvery: positiveInt.default(500),
    /** Test episodes per evaluated skill. */
    evalSize: positiveInt.default(64),
    /** Write a resumable checkpoint every this many steps. */
    checkpointEvery: positiveInt.default(250),
    seed: z.number().int().min(0).default(0),
    /**
     * Start from the weights of this base checkpoint instead of a random initialisation (a second pretraining stage).
     * Its architecture must be the configured one. A path relative to the working directory.
     */
    init: z.string().min(1).optional(),
    /** Architecture overrides (see models/builtin/config.ts, checked against its schema); unset fields take models/'s defaults, except positions: grid. */
    architecture: z.record(z.string(), z.unknown()).default({}),
  })
  .strict()
  .refine((config) => config.partialTraceShare === 0 || config.maxListedActions > config.maxTrackActions, {
    message: 'must be more than maxTrackActions (a partial trace lists more actions than it teaches)',
    path: ['maxListedActions'],
  });

export type PretrainConfig = z.infer<typeof PretrainConfigSchema>;

/** Read a config file (JSON) and apply flag overrides on top; both are validated by the schema. */
export function loadPretrainConfig(file: string | undefined, overrides: Partial<PretrainConfig>): PretrainConfig {
  let fromFile: unknown = {};
  if (file) {
    fromFile = readJson(file, z.record(z.string(), z.unknown()), {
      prefix: '--config: ',
      invalid: 'expected a JSON object',
    });
  }
  const defined = Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined));
  const config = parseOrFail(PretrainConfigSchema, { ...(fromFile as object), ...defined }, 'pretrain config: ');
  parseOrFail(ArchitectureSchema, config.architecture, 'pretrain config: architecture.');
  return config;
}
