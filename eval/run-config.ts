// config.json of an evaluation run: which model (never its key: only the name of the variable holding it), which
// settings, episodes count and seed, the request settings; plus runtime knobs (workers, retries, timeout, backoff,
// limit). Resuming refuses any change but `limit`, as the MET-Bench harness refuses a changed configuration; `limit`
// only says how far this invocation goes (`--limit K` now, `--resume` later completes the run).
import { z } from 'zod';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { UserError } from '../core/errors.ts';
import { readJson, writeJsonAtomic } from '../core/files.ts';
import type { LoadedModel, Setting } from './types.ts';

export type ModelDescription =
  | { kind: 'hosted'; id: string; provider?: string; endpoint?: string; api_key_env?: string }
  | { kind: 'checkpoint'; path: string; base?: string }
  | { kind: 'baseline'; name: string };

export interface RunConfig {
  kind: 'metrl-eval';
  created: string;
  label: string;
  model: ModelDescription;
  settings: Setting[];
  n: number;
  seed: number;
  /** As sent: temperature null means omitted; the token budget goes in `token_parameter`. */
  sampling: {
    temperature: number | null;
    max_tokens: number;
    token_parameter?: string;
    reasoning_effort?: string | null;
  };
  /** Environment options by domain (e.g. chess games file). */
  extra: Record<string, Record<string, unknown>>;
  runtime: { workers: number; limit: number | null; retries: number; timeout_s: number; backoff_s?: number };
  /** For a local checkpoint: the base, adapter (with its step) and tfjs backend actually loaded (not checked on resume). */
  loaded?: LoadedModel;
}

const CONFIG_FILE = 'config.json';

/** The fields a resume must match exactly: everything but the runtime's limit. */
const IDENTITY: (keyof RunConfig)[] = ['model', 'settings', 'n', 'seed', 'sampling', 'extra', 'runtime'];

export function writeRunConfig(dir: string, config: RunConfig): void {
  writeJsonAtomic(join(dir, CONFIG_FILE), config);
}

const storedSchema = z.object({ kind: z.literal('metrl-eval'), created: z.string() }).passthrough();

export function readRunConfig(dir: string): RunConfig {
  const path = join(dir, CONFIG_FILE);
  if (!existsSync(path))
    throw new UserError(`${path}: missing; --resume needs the folder of an earlier evaluation run`);
  return readJson(path, storedSchema, { invalid: 'not an evaluation run config' }) as unknown as RunConfig;
}

/** Throw a UserError naming the first identity field that differs between the stored run and the new command. */
export function checkResumable(stored: RunConfig, wanted: RunConfig): void {
  for (const key of IDENTITY) {
    const a = JSON.stringify(key === 'runtime' ? withoutLimit(stored.runtime) : stored[key]);
    const b = JSON.stringify(key === 'runtime' ? withoutLimit(wanted.runtime) : wanted[key]);
    if (a !== b) {
      throw new UserError(
        `--resume: '${key}' differs from the stored run (${truncate(a)} vs ${truncate(b)}); use the same options or a new --out`,
      );
    }
  }
}

/** The runtime knobs that must match on resume: all but `limit`. */
function withoutLimit(runtime: RunConfig['runtime'] | undefined): Omit<RunConfig['runtime'], 'limit'> | undefined {
  if (!runtime) return undefined;
  const { limit: _limit, ...rest } = runtime;
  return rest;
}

function truncate(text: string | undefined, max = 120): string {
  const t = text ?? 'undefined';
  return t.length > max ? `${t.slice(0, max)}…` : t;
}
