// Rewards users bring (here rather than in rewards/, which holds pure functions: loading a module is I/O). `--reward SPEC` names one reward; several are
// summed with TRL's reward_weights (default 1 each) into the reward GRPO optimises, and each is logged under its own
// name (rewards/<name>/mean, /std). A SPEC is
//   domain                the environment's score (Score.reward): today's reward;
//   format                1 when the completion has a valid final answer (Score.valid), else 0;
//   path/to/mod.ts[:fn]   a TypeScript or JavaScript module (tsx is the loader) exporting
//                         `(completion: string, episode: Episode) => number | Promise<number>`: the export `fn`, else
//                         the default export, else the module's only exported function. Named after `fn`, or the file.
// A module that is missing, does not load or exports no such function is a UserError at load time; a reward that throws
// or returns anything but a finite number, or does not answer within its time limit (--reward-timeout), is a UserError
// naming the reward and the episode, raised before the step's update so nothing already trained is lost. Modules load
// through tsx's scoped loader (tsImport), so a .ts file works wherever it lives, under the CLI and under vitest alike.
import { existsSync } from 'node:fs';
import { basename, extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { tsImport } from 'tsx/esm/api';
import { UserError } from '../../core/errors.ts';
import type { Episode } from '../../core/episode.ts';
import type { Score } from '../../core/score.ts';

/** What a user's module exports. `completion` is the text the domain reward reads; `episode` the prompt's episode. */
type UserRewardFunction = (completion: string, episode: Episode) => number | Promise<number>;

/** One completion to reward: its text, its episode, and the domain's score of it (which the built-in rewards read). */
export interface RewardInput {
  completion: string;
  episode: Episode;
  score: Score;
}

export interface RewardFunction {
  /** The name it is logged under: rewards/<name>/mean. */
  name: string;
  /** Where it came from, for error messages: 'domain', or 'path/mod.ts:fn'. */
  source: string;
  compute(input: RewardInput): number | Promise<number>;
  /** Milliseconds one call may take (modules only; the built-ins answer at once). */
  timeoutMs?: number;
}

/** The default bound of one reward-module call, in seconds (TrainConfig.rewardTimeout). */
const DEFAULT_REWARD_TIMEOUT_S = 60;

const BUILTIN_REWARDS: Record<string, Omit<RewardFunction, 'source'>> = {
  domain: { name: 'domain', compute: ({ score }) => score.reward },
  format: { name: 'format', compute: ({ score }) => (score.valid ? 1 : 0) },
};

const MODULE_SPEC = /^(.+\.(?:[cm]?[jt]s|tsx|jsx))(?::([A-Za-z_$][\w$]*))?$/;

/** A SPEC split into a built-in name, or a module path and optional export. UserError for anything else. */
export function parseRewardSpec(spec: string): { builtin: string } | { path: string; exportName: string | null } {
  if (Object.hasOwn(BUILTIN_REWARDS, spec)) return { builtin: spec };
  const match = MODULE_SPEC.exec(spec);
  if (!match) {
    throw new UserError(
      `--reward ${spec}: neither a built-in reward (${Object.keys(BUILTIN_REWARDS).join(', ')}) nor a module path ending in .ts or .js (with an optional :export)`,
    );
  }
  return { path: match[1], exportName: match[2] ?? null };
}

/** Load one SPEC; module paths are resolved against `cwd`; a module's calls are bounded by `timeoutSeconds`. */
export async function loadRewardFunction(
  spec: string,
  cwd = process.cwd(),
  timeoutSeconds = DEFAULT_REWARD_TIMEOUT_S,
): Promise<RewardFunction> {
  const parsed = parseRewardSpec(spec);
  if ('builtin' in parsed) return { ...BUILTIN_REWARDS[parsed.builtin], source: parsed.builtin };
  const file = resolve(cwd, parsed.path);
  if (!existsSync(file)) throw new UserError(`--reward ${spec}: no such file ${file}`);
  let mod: Record<string, unknown>;
  try {
    // A plain ES module (.mjs) loads natively, without tsx: the bundled CLI of bench/device-bundle.sh has no loader.
    const url = pathToFileURL(file).href;
    mod = exportsOf(
      (await (file.endsWith('.mjs') ? import(url) : tsImport(url, import.meta.url))) as Record<string, unknown>,
    );
  } catch (error) {
    throw new UserError(`--reward ${spec}: the module failed to load: ${firstLine(error)}`);
  }
  const functions = Object.keys(mod).filter((k) => typeof mod[k] === 'function');
  let exportName = parsed.exportName;
  if (exportName === null) {
    if (typeof mod.default === 'function') exportName = 'default';
    else if (functions.length === 1) exportName = functions[0];
    else {
      const found =
        functions.length === 0
          ? 'it exports no function'
          : `it exports several (${functions.join(', ')}): pick one with ${parsed.path}:NAME`;
      throw new UserError(`--reward ${spec}: needs a default export (completion, episode) => number; ${found}`);
    }
  }
  const fn = mod[exportName];
  if (typeof fn !== 'function') {
    throw new UserError(
      `--reward ${spec}: exports no function named ${exportName} (functions: ${functions.join(', ') || 'none'})`,
    );
  }
  const name = exportName === 'default' ? basename(parsed.path, extname(parsed.path)) : exportName;
  const user = fn as UserRewardFunction;
  return {
    name,
    source: spec,
    compute: ({ completion, episode }) => user(completion, episode),
    timeoutMs: timeoutSeconds * 1000,
  };
}

/** Load every SPEC, in order; two rewards with the same name would share a log key, so that is a UserError. */
export async function loadRewardFunctions(
  specs: readonly string[],
  cwd = process.cwd(),
  timeoutSeconds = DEFAULT_REWARD_TIMEOUT_S,
): Promise<RewardFunction[]> {
  if (specs.length === 0) throw new UserError('--reward: at least one reward is needed (for instance: domain)');
  const out: RewardFunction[] = [];
  for (const spec of specs) {
    const reward = await loadRewardFunction(spec, cwd, timeoutSeconds);
    const clash = out.find((r) => r.name === reward.name);
    if (clash)
      throw new UserError(
        `--reward ${spec}: its name ${reward.name} is already taken by --reward ${clash.source}; export the function under another name`,
      );
    out.push(reward);
  }
  return out;
}

export interface ComputedRewards {
  /** Σ_k w_k · r_k for each input (TRL's sum_then_normalize): what the advantages are computed from. */
  total: number[];
  /** Each reward's own values, unweighted, by name (for rewards/<name>/mean and /std). */
  byName: Record<string, number[]>;
}

/**
 * Every reward on every input, and their weighted sum. `weights` default to 1 each (TRL's reward_weights). Calls of
 * one reward run concurrently (a module may call a service); the first failure in input order is reported.
 */
export async function computeRewards(
  rewards: readonly RewardFunction[],
  inputs: readonly RewardInput[],
  weights?: readonly number[],
): Promise<ComputedRewards> {
  if (weights && weights.length !== rewards.length) {
    throw new UserError(
      `--reward-weights: ${weights.length} weights for ${rewards.length} rewards (${rewards.map((r) => r.name).join(', ')})`,
    );
  }
  const total = new Array<number>(inputs.length).fill(0);
  const byName: Record<string, number[]> = {};
  for (const [k, reward] of rewards.entries()) {
    const settled = await Promise.allSettled(inputs.map((input) => bounded(reward, input)));
    const values = settled.map((result, i) => {
      const id = inputs[i].episode.id;
      if (result.status === 'rejected' && result.reason === TIMED_OUT) {
        throw new UserError(
          `--reward ${reward.source}: no answer within ${reward.timeoutMs! / 1000} s on episode ${id} (--reward-timeout)`,
        );
      }
      if (result.status === 'rejected')
        throw new UserError(`--reward ${reward.source}: threw on episode ${id}: ${firstLine(result.reason)}`);
      const value = result.value;
      if (typeof value !== 'number' || !Number.isFinite(value)) {
        throw new UserError(
          `--reward ${reward.source}: returned ${describe(value)} on episode ${id}; a reward must be a finite number`,
        );
      }
      return value;
    });
    byName[reward.name] = values;
    const w = weights?.[k] ?? 1;
    values.forEach((v, i) => (total[i] += w * v));
  }
  return { total, byName };
}

const TIMED_OUT = Symbol('timed out');

/**
 * One call of a reward, raced against its time limit. The timer is what keeps the process alive while a module's
 * promise is pending: without it a promise that never settles empties the event loop and Node exits with status 13.
 */
async function bounded(reward: RewardFunction, input: RewardInput): Promise<number> {
  if (reward.timeoutMs === undefined) return reward.compute(input);
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(TIMED_OUT), reward.timeoutMs)));
  try {
    return await Promise.race([Promise.resolve().then(() => reward.compute(input)), limit]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A module's exports as its author wrote them. tsx compiles a .ts file that lies outside any "type": "module" package
 * (a user's file in their home folder) as CommonJS, and Node then hands the whole exports object over as `default`:
 * its functions are unwrapped here, so `export default` and `export function` mean the same wherever the file lives.
 */
function exportsOf(mod: Record<string, unknown>): Record<string, unknown> {
  const inner = mod.default;
  if (inner === null || typeof inner !== 'object' || Array.isArray(inner)) return mod;
  const { default: _wrapped, ...named } = mod;
  return { ...named, ...(inner as Record<string, unknown>) };
}

function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0];
}

function describe(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (value === undefined) return 'undefined';
  const json = JSON.stringify(value);
  return json === undefined ? typeof value : json.length > 60 ? `${json.slice(0, 57)}...` : json;
}
