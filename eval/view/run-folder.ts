// The folders `metrl view` shows: a training run (`metrl train`: config.json, metrics.jsonl, samples.jsonl) or an
// evaluation folder (`metrl evaluate`: config.json of kind metrl-eval, episodes.jsonl, <domain>-<modality>.jsonl,
// summary.json). Recognised once at start (anything else is a user error); what a folder lacks is asked again on every
// look, since a run being written gains files and a folder may be deleted while viewed.
import { existsSync, readFileSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { UserError } from '../../core/errors.ts';
import { EPISODES_FILE } from '../selection.ts';
import { SUMMARY_FILE } from '../report.ts';

type FolderKind = 'train' | 'eval';

export interface ViewedFolder {
  /** Position on the command line: the folder's handle in every URL (no request names a path). */
  index: number;
  /** As given, for messages. */
  given: string;
  /** Its real path (symbolic links resolved): the root nothing may be read outside of. */
  root: string;
  name: string;
  kind: FolderKind;
}

export const METRICS_FILE = 'metrics.jsonl';
export const SAMPLES_FILE = 'samples.jsonl';
export const CONFIG_FILE = 'config.json';
/** `metrl evaluate`'s per-item rows. */
export const RESULTS_FILE = /^[a-z]+-(text|image|mixed)\.jsonl$/;

/** config.json as an object, or null when it is missing or not JSON. */
export function readConfig(root: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(readFileSync(join(root, CONFIG_FILE), 'utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

function kindOf(root: string): FolderKind | null {
  const config = readConfig(root);
  if (config?.kind === 'metrl-eval') return 'eval';
  if (
    existsSync(join(root, METRICS_FILE)) ||
    (config && typeof config.domain === 'string' && typeof config.config === 'object')
  )
    return 'train';
  return null;
}

/** Check a folder given on the command line: it exists, is a folder, and is a run metrl wrote. */
export function openFolder(given: string, index: number): ViewedFolder {
  if (!existsSync(given)) throw new UserError(`${given}: no such folder`);
  const root = realpathSync(given);
  if (!statSync(root).isDirectory()) throw new UserError(`${given}: not a folder (give a run folder, e.g. runs/<id>)`);
  const kind = kindOf(root);
  if (!kind)
    throw new UserError(
      `${given}: not a training run or an evaluation folder (no ${METRICS_FILE}, and no ${CONFIG_FILE} written by metrl train or metrl evaluate)`,
    );
  return { index, given, root, name: basename(root), kind };
}

/** What the folder lacks now, in plain sentences (empty when it has everything the page shows). */
export function lacks(folder: ViewedFolder): string[] {
  const { root } = folder;
  if (!existsSync(root)) return [`${folder.given} no longer exists (deleted while viewed?)`];
  const has = (f: string) => existsSync(join(root, f));
  const out: string[] = [];
  if (!has(CONFIG_FILE))
    out.push(`no ${CONFIG_FILE}: the episodes cannot be rebuilt, so prompts and images are not shown`);
  if (folder.kind === 'train') {
    if (!has(METRICS_FILE))
      out.push(`no ${METRICS_FILE} yet: no curves (the run has not finished its first evaluation)`);
    if (!has(SAMPLES_FILE))
      out.push(
        `no ${SAMPLES_FILE} yet: no sampled completions (none until the first step ends, or the run has --samples-per-step 0)`,
      );
  } else {
    if (!has(EPISODES_FILE)) out.push(`no ${EPISODES_FILE}: prompts and images are not shown`);
    if (!has(SUMMARY_FILE))
      out.push(`no ${SUMMARY_FILE}: the evaluation has not finished (or was stopped); rows written so far are shown`);
    let files: string[] = [];
    try {
      files = readdirSync(root).filter((f) => RESULTS_FILE.test(f));
    } catch {
      // unreadable: said by the rows' reader
    }
    if (files.length === 0) out.push('no per-item rows (<domain>-<modality>.jsonl) yet');
  }
  return out;
}
