// The rows a training run writes to metrics.jsonl (one JSON object per line, each with `step` and `type`) and to
// samples.jsonl, their zod schemas (plot and resume read them back), and the resume rule: rows after the checkpoint
// step are dropped, and a torn last line left by a kill is repaired.
import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { readJsonl, writeFileAtomic } from '../../core/files.ts';
import { UserError, describeZodError } from '../../core/errors.ts';

/** One optimiser step. Times are seconds spent in each phase of the step. */
const TrainRowSchema = z.object({
  type: z.literal('train'),
  step: z.number().int(),
  /** Mean and std of the rollout rewards (all completions of the step). */
  rewardMean: z.number(),
  rewardStd: z.number(),
  /** Accuracy of the rollouts: mean reward (the paper's accuracy), exact answers (reward 1), parseable answers. */
  accuracy: z.number(),
  exactRate: z.number(),
  validRate: z.number(),
  invalidFraction: z.number(),
  /** Mean per-token k3 KL to the reference, share of tokens whose ratio was clipped, mean ratio. */
  kl: z.number().nullable(),
  clipFraction: z.number().nullable(),
  ratioMean: z.number().nullable(),
  /** Mean per-token entropy of the policy on its completions (nats). */
  entropy: z.number().nullable(),
  /** Mean completion length in tokens. */
  completionLength: z.number(),
  loss: z.number().nullable(),
  gradNorm: z.number().nullable(),
  /** Groups whose completions all got the same reward (no signal) out of all groups. */
  zeroSpreadGroups: z.number().int(),
  groups: z.number().int(),
  /** False when the loss was not finite and the update was skipped. */
  updated: z.boolean(),
  rolloutTokensPerSecond: z.number(),
  learnerTokensPerSecond: z.number(),
  time: z.object({
    rollout: z.number(),
    reward: z.number(),
    logprobs: z.number(),
    update: z.number(),
    total: z.number(),
    /**
     * Seconds this process spent opening the learner's sessions before its first step's clock started (that step's
     * row only; absent where the learner opens nothing, as on tfjs).
     */
    open: z.number().optional(),
  }),
  /**
   * The step under TRL's GRPOTrainer keys (trainer/logs/trl-metrics.ts): reward, reward_std, frac_reward_zero_std,
   * rewards/<name>/mean|std, completions/*, kl, entropy, clip_ratio/*, and dynamic_sampling/* when it is on. Absent
   * in runs written before it.
   */
  trl: z.record(z.string(), z.number().nullable()).optional(),
  /**
   * With rollout servers (--rollout-server): for each group drawn, in order, the server that sampled it and the
   * adapter version (optimiser updates) it held; groups retried on another server over the run so far.
   */
  rollout: z
    .object({ servers: z.array(z.string()), adapterVersions: z.array(z.number().int()), retries: z.number().int() })
    .optional(),
});
export type TrainRow = z.infer<typeof TrainRowSchema>;

/** Accuracy on the fixed test split, for one modality; `role` says whether it is the trained or the transfer one. */
const EvalRowSchema = z.object({
  type: z.literal('eval'),
  step: z.number().int(),
  modality: z.enum(['text', 'image']),
  role: z.enum(['train', 'transfer']),
  n: z.number().int(),
  accuracy: z.number(),
  /** 95% interval of the accuracy (Wilson or clustered normal, per the environment); null when n < 2. */
  low: z.number().nullable(),
  high: z.number().nullable(),
  exactRate: z.number(),
  validRate: z.number(),
  seconds: z.number(),
});
export type EvalRow = z.infer<typeof EvalRowSchema>;

/**
 * The paper's Game Start baseline on the same test split (answer = the initial state; question-answering domains use
 * their own game-start answer), written once with the step-0 evaluation: the line a trained policy has to clear.
 */
const BaselineRowSchema = z.object({
  type: z.literal('baseline'),
  step: z.number().int(),
  name: z.literal('game-start'),
  n: z.number().int(),
  accuracy: z.number(),
  low: z.number().nullable(),
  high: z.number().nullable(),
});
export type BaselineRow = z.infer<typeof BaselineRowSchema>;

export const MetricsRowSchema = z.discriminatedUnion('type', [TrainRowSchema, EvalRowSchema, BaselineRowSchema]);
export type MetricsRow = z.infer<typeof MetricsRowSchema>;

export interface SampleRow {
  step: number;
  episode: string;
  target: string;
  completion: string;
  reward: number;
  valid: boolean;
  advantage: number;
}

/**
 * Prepare a JSONL log for resuming at `step`: repair a torn last line, then keep only rows with `step` ≤ the
 * checkpoint's step (rows after it will be written again, identically). Returns the kept rows.
 */
export function truncateLogAfterStep<T extends { step: number }>(path: string, step: number): T[] {
  if (!existsSync(path)) return [];
  const { rows } = readJsonl<T>(path, { repairTornTail: true });
  const kept = rows.map((r) => r.value).filter((r) => r.step <= step);
  if (kept.length !== rows.length) writeFileAtomic(path, kept.map((r) => JSON.stringify(r) + '\n').join(''));
  return kept;
}

/**
 * Read a run's metrics (for plots): every row validated; a torn last line (a run killed or still writing) is left out,
 * the file untouched, and `onTornTail` told its line number so the reader can say so.
 */
export function readMetrics(path: string, onTornTail?: (line: number) => void): MetricsRow[] {
  if (!existsSync(path)) throw new UserError(`${path}: no such file`);
  const text = readFileSync(path, 'utf8');
  const lines = text.split('\n');
  const rows: MetricsRow[] = [];
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      if (i === lines.length - 1) return onTornTail?.(i + 1); // torn tail: the writer was killed or is mid-line
      throw new UserError(`${path}:${i + 1}: not valid JSON`);
    }
    const parsed = MetricsRowSchema.safeParse(value);
    if (!parsed.success) throw new UserError(`${path}:${i + 1}: not a metrics row (${describeZodError(parsed.error)})`);
    rows.push(parsed.data);
  });
  return rows;
}
