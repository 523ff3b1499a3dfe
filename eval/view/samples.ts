// The sampled completions of a folder as the page lists them: a training run's samples.jsonl (grouped by step) or an
// evaluation folder's <domain>-<modality>.jsonl rows (grouped by setting), each with its episode's prompt, reward,
// validity and parsed answer, and for chess the predicted board beside the target. Filtered by group, modality and
// reward, newest step first, a page at a time: the files are indexed (jsonl-index.ts: each row's group, modality,
// reward and validity, and where its line is), and only a page's own lines are read whole.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { Episode } from '../../core/episode.ts';
import type { Env } from '../../envs/env.ts';
import { responseForScoring } from '../../models/builtin/template.ts';
import { episodeSource, promptParts, trainLayout, type Layout, type PromptPart } from './episodes.ts';
import { boardDiff, type BoardDiff } from './board-diff.ts';
import { readConfig, RESULTS_FILE, SAMPLES_FILE, type ViewedFolder } from './run-folder.ts';
import { indexJsonl, readIndexed, type IndexedRow, type KeyOf } from './jsonl-index.ts';

export const REWARD_FILTERS = ['all', 'exact', 'partial', 'zero', 'invalid'] as const;
export type RewardFilter = (typeof REWARD_FILTERS)[number];

export interface SampleQuery {
  /** A step ("3") or a setting key; '' for all. */
  group: string;
  modality: string;
  reward: RewardFilter;
  offset: number;
  limit: number;
}

interface SampleView {
  /** "step 3" or the setting key. */
  group: string;
  modality: string;
  episodeId: string;
  /** Handle of the episode for image requests; absent when the episode is not known. */
  episodeKey?: string;
  prompt: PromptPart[] | null;
  /** How the prompt was laid out, hence the size its images are rendered at. */
  layout: Layout;
  target: string;
  completion: string | null;
  reward: number | null;
  valid: boolean | null;
  prediction: string | null;
  advantage?: number;
  error?: string | null;
  board?: BoardDiff;
}

export interface SamplesPage {
  /** What the groups are: 'step' (training runs) or 'setting' (evaluation folders). */
  groupKind: 'step' | 'setting';
  groups: string[];
  modalities: string[];
  /** Rows matching the filters (before paging). */
  total: number;
  rows: SampleView[];
  problems: string[];
}

/** A row before its episode is looked up: what every folder kind has in common. */
interface RawSample {
  group: string;
  modality: string;
  domain: string;
  episodeId: string;
  episodeKey: string;
  layout: Layout;
  style: string;
  /** Perception rows: the one action read. */
  action?: number;
  target: string;
  completion: string | null;
  reward: number | null;
  valid: boolean | null;
  prediction?: string | null;
  advantage?: number;
  error?: string | null;
}

const sampleRow = z.object({
  step: z.number(),
  episode: z.string(),
  target: z.string(),
  completion: z.string(),
  reward: z.number(),
  valid: z.boolean(),
  advantage: z.number().optional(),
});

const resultRow = z
  .object({
    id: z.string(),
    setting: z.string(),
    episode_id: z.string(),
    domain: z.string(),
    modality: z.string(),
    task: z.string(),
    prompt: z.string().optional(),
    target: z.string(),
    response: z.string().nullable(),
    reward: z.number().nullable(),
    valid: z.boolean().nullable(),
    prediction: z.string().nullable().optional(),
    error: z.string().nullable().optional(),
  })
  .loose();

/** What a row is filtered and counted by, without its texts. */
export interface SampleKey {
  group: string;
  modality: string;
  reward: number | null;
  valid: boolean | null;
}

/** A keyed row and where its line is. */
interface Located extends SampleKey {
  path: string;
  row: IndexedRow<unknown>;
}

/** The index keys of each kind of row (one function each: the index cache is per key function). */
const keySample: KeyOf<SampleKey> = (value) => {
  const parsed = sampleRow.safeParse(value);
  if (!parsed.success) return { error: 'not a sample row' };
  const r = parsed.data;
  return { key: { group: String(r.step), modality: '', reward: r.reward, valid: r.valid } };
};
const keyResult: KeyOf<SampleKey> = (value) => {
  const parsed = resultRow.safeParse(value);
  if (!parsed.success) return { error: 'not a result row' };
  const r = parsed.data;
  return { key: { group: r.setting, modality: r.modality, reward: r.reward, valid: r.valid } };
};

async function trainRows(folder: ViewedFolder, problems: string[]): Promise<Located[]> {
  const path = join(folder.root, SAMPLES_FILE);
  const index = await indexJsonl(path, keySample);
  problems.push(...index.problems);
  const config = readConfig(folder.root);
  const modality = typeof config?.modality === 'string' ? config.modality : '';
  // Newest step first; within a step, the order written.
  return index.rows
    .map((row, i) => ({ ...row.key, modality, path, row, i }))
    .sort((a, b) => Number(b.group) - Number(a.group) || a.i - b.i);
}

/** A samples.jsonl row as the page shows it. */
function trainSample(folder: ViewedFolder, r: z.infer<typeof sampleRow>): RawSample {
  const config = readConfig(folder.root);
  return {
    group: String(r.step),
    modality: typeof config?.modality === 'string' ? config.modality : '',
    domain: typeof config?.domain === 'string' ? config.domain : '',
    episodeId: r.episode,
    episodeKey: r.episode,
    layout: trainLayout(folder),
    style: 'zero-shot',
    target: r.target,
    completion: r.completion,
    reward: r.reward,
    valid: r.valid,
    advantage: r.advantage,
  };
}

/** "shell/image/T10/compact" → its episode group "shell/image/T10" (eval/selection.ts's episodeGroup: perception reads images). */
function episodeGroupOf(setting: string, task: string): string {
  const parts = setting.split('/');
  const group = parts.slice(0, parts.findIndex((p) => /^T\d+$/.test(p)) + 1);
  return (task === 'perception' ? [group[0], 'image', group[group.length - 1]] : group).join('/');
}

async function evalRows(folder: ViewedFolder, problems: string[]): Promise<Located[]> {
  let files: string[] = [];
  try {
    files = readdirSync(folder.root)
      .filter((f) => RESULTS_FILE.test(f))
      .sort();
  } catch {
    return [];
  }
  const out: Located[] = [];
  for (const file of files) {
    const path = join(folder.root, file);
    const index = await indexJsonl(path, keyResult);
    problems.push(...index.problems);
    for (const row of index.rows) out.push({ ...row.key, path, row });
  }
  return out;
}

/** An evaluation's per-item row as the page shows it. */
function evalSample(r: z.infer<typeof resultRow>): RawSample {
  const action = r.task === 'perception' ? Number(r.id.split('#')[1]) : undefined;
  return {
    group: r.setting,
    modality: r.modality,
    domain: r.domain,
    episodeId: r.episode_id,
    episodeKey: `${episodeGroupOf(r.setting, r.task)}|${r.episode_id}`,
    layout: r.prompt === 'compact' ? 'compact' : 'reference',
    style: r.prompt ?? 'zero-shot',
    ...(action !== undefined && Number.isInteger(action) ? { action } : {}),
    target: r.target,
    completion: r.response,
    reward: r.reward,
    valid: r.valid,
    prediction: r.prediction ?? null,
    error: r.error ?? null,
  };
}

function rewardMatches(filter: RewardFilter, s: SampleKey): boolean {
  switch (filter) {
    case 'all':
      return true;
    case 'exact':
      return s.reward !== null && s.reward >= 1;
    case 'partial':
      return s.reward !== null && s.reward > 0 && s.reward < 1;
    case 'zero':
      return s.valid === true && s.reward === 0;
    case 'invalid':
      return s.valid !== true;
  }
}

/** Every row's key (samples.jsonl, or the evaluation's per-item rows), with the bad lines left out named. */
export async function folderSamples(folder: ViewedFolder): Promise<{ samples: SampleKey[]; problems: string[] }> {
  const problems: string[] = [];
  const samples = folder.kind === 'train' ? await trainRows(folder, problems) : await evalRows(folder, problems);
  return { samples, problems };
}

export async function samplesPage(folder: ViewedFolder, query: SampleQuery): Promise<SamplesPage> {
  const problems: string[] = [];
  const all = folder.kind === 'train' ? await trainRows(folder, problems) : await evalRows(folder, problems);
  const groups = [...new Set(all.map((s) => s.group))];
  const modalities = [...new Set(all.map((s) => s.modality))];
  const matching = all.filter(
    (s) =>
      (query.group === '' || s.group === query.group) &&
      (query.modality === '' || s.modality === query.modality) &&
      rewardMatches(query.reward, s),
  );
  const source = await episodeSource(folder);
  if (source.problem && all.length > 0) problems.push(source.problem);
  const page = matching.slice(query.offset, query.offset + query.limit);
  const rows: SampleView[] = [];
  for (const s of await pageSamples(folder, page)) rows.push(await view(s, source.find(s.episodeKey), source.env));
  return {
    groupKind: folder.kind === 'train' ? 'step' : 'setting',
    groups,
    modalities,
    total: matching.length,
    rows,
    problems,
  };
}

/** The page's rows read whole, in the page's order (a line that changed since it was indexed is left out). */
async function pageSamples(folder: ViewedFolder, page: Located[]): Promise<RawSample[]> {
  const byPath = new Map<string, Located[]>();
  for (const s of page) byPath.set(s.path, [...(byPath.get(s.path) ?? []), s]);
  const read = new Map<Located, unknown>();
  for (const [path, located] of byPath) {
    const values = await readIndexed(
      path,
      located.map((l) => l.row),
    ).catch(() => [] as unknown[]);
    located.forEach((l, i) => read.set(l, values[i]));
  }
  const out: RawSample[] = [];
  for (const s of page) {
    if (folder.kind === 'train') {
      const parsed = sampleRow.safeParse(read.get(s));
      if (parsed.success) out.push(trainSample(folder, parsed.data));
    } else {
      const parsed = resultRow.safeParse(read.get(s));
      if (parsed.success) out.push(evalSample(parsed.data));
    }
  }
  return out;
}

async function view(
  s: RawSample,
  episode: Episode | undefined,
  envOf: (domain: string) => Promise<Env>,
): Promise<SampleView> {
  const out: SampleView = {
    group: s.group,
    modality: s.modality,
    episodeId: s.episodeId,
    prompt: null,
    layout: s.layout,
    target: s.target,
    completion: s.completion,
    reward: s.reward,
    valid: s.valid,
    prediction: s.prediction ?? null,
    ...(s.advantage !== undefined ? { advantage: s.advantage } : {}),
    ...(s.error ? { error: s.error } : {}),
  };
  let env: Env;
  try {
    env = await envOf(s.domain);
  } catch {
    return out;
  }
  if (episode) {
    out.episodeKey = s.episodeKey;
    out.prompt =
      s.action !== undefined
        ? [
            { type: 'text', text: `${s.domain}: read action ${s.action + 1}\n` },
            { type: 'image', action: s.action },
          ]
        : promptParts(env, episode, s.layout, s.style);
  }
  // Training samples carry no parsed answer: score the completion as the trainer did.
  if (s.prediction === undefined && s.completion !== null) {
    const response = s.layout === 'compact' ? responseForScoring(env, s.completion) : s.completion;
    try {
      out.prediction = env.score({
        target: s.target,
        response,
        initialState: episode?.initialState,
        meta: episode?.meta,
      }).prediction;
    } catch {
      out.prediction = null;
    }
  }
  if (s.domain === 'chess' && s.action === undefined) {
    const board = boardDiff(out.prediction, s.target);
    if (board) out.board = board;
  }
  return out;
}
