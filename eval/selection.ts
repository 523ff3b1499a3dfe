// The exact episodes a run evaluates, and the items made from them. Test episodes are drawn once per (domain,
// actions, modality, image ratio) from the test split with the run's seed; settings that differ only in the prompt
// share them, and an image-ratio sweep keeps the same games (the generator draws actions independently of
// modalities), and never the same problem twice. Few-shot examples come from the train split, a seeded choice per
// item. The selection is written to episodes.jsonl so that `--resume` evaluates exactly the same items even if
// generators or games files change.
import { z } from 'zod';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Rng } from '../core/rng.ts';
import { UserError } from '../core/errors.ts';
import { readJsonl, writeFileAtomic } from '../core/files.ts';
import { generateEpisodes, withModality, type GenerateOptions } from '../envs/generate.ts';
import { DOMAINS, type Domain, type Episode } from '../core/episode.ts';
import type { Env } from '../envs/env.ts';
import { settingKey } from './settings.ts';
import type { Setting } from './types.ts';

export interface EvalItem {
  /** Unique within a run: "<setting key>|<episode id>[#<action index>]". */
  id: string;
  setting: Setting;
  settingKey: string;
  episode: Episode;
  /** Perception items: which action's image is read. */
  actionIndex?: number;
  target: string;
  /** Few-shot examples shown before this item's question. */
  shots: Episode[];
}

export interface Selection {
  /** Episodes per episode-group key. */
  test: Map<string, Episode[]>;
  /** Few-shot pools per episode-group key. */
  train: Map<string, Episode[]>;
}

export const EPISODES_FILE = 'episodes.jsonl';

/** Settings that share this key evaluate the same episodes. */
function episodeGroup(s: Setting): string {
  const modality = s.task === 'perception' ? 'image' : s.modality;
  return [s.domain, modality, modality === 'mixed' ? `p${s.imageRatio}` : '', `T${s.actions}`]
    .filter(Boolean)
    .join('/');
}

/** Few-shot pool size: enough that items see different example sets, bounded so generation stays cheap. */
function poolSize(shots: number, n: number): number {
  return Math.max(shots, Math.min(n * shots, 100));
}

/** How many episodes a setting needs: n items, each an episode (track) or one action of an episode (perception). */
function episodesNeeded(s: Setting, n: number): number {
  return s.task === 'perception' ? Math.ceil(n / s.actions) : n;
}

/**
 * `dataset`: the episodes of a dataset folder (--dataset), evaluated instead of generated test episodes: the first n,
 * each shown in the setting's modality (as they are for 'mixed').
 */
export function drawSelection(
  settings: Setting[],
  envs: Map<Domain, Env>,
  n: number,
  seed: number,
  extra: Record<Domain, Record<string, unknown>>,
  dataset?: Episode[],
): Selection {
  const test = new Map<string, Episode[]>();
  const train = new Map<string, Episode[]>();
  for (const s of settings) {
    const group = episodeGroup(s);
    if (dataset) {
      const modality = s.task === 'perception' ? 'image' : s.modality;
      test.set(
        group,
        dataset.slice(0, episodesNeeded(s, n)).map((e) => (modality === 'mixed' ? e : withModality(e, modality))),
      );
    }
    const env = envs.get(s.domain)!;
    const common = {
      actions: s.actions,
      seed,
      modality: s.task === 'perception' ? ('image' as const) : s.modality,
      imageRatio: s.imageRatio,
      extra: extra[s.domain] ?? {},
    };
    const needed = episodesNeeded(s, n);
    if (!dataset && (test.get(group)?.length ?? 0) < needed)
      test.set(group, distinctEpisodes(env, { ...common, n: needed, split: 'test' }, group));
    if (s.shots > 0) {
      const size = poolSize(s.shots, n);
      if ((train.get(group)?.length ?? 0) < size)
        train.set(group, generateEpisodes(env, { ...common, n: size, split: 'train' }));
    }
  }
  return { test, train };
}

/** What makes two episodes the same problem: initial state, action texts and question (not how actions are shown). */
function contentKey(e: Episode): string {
  return JSON.stringify([e.initialState, e.actions.map((a) => a.text), e.question ?? null]);
}

/** Most draws we make, as a multiple of the episodes asked for, looking for distinct ones. */
const MAX_DRAW_FACTOR = 64;

/**
 * n test episodes that are all different problems. Generators may repeat an episode when few exist (the shell game
 * with 2 swaps has 27, a fifth of them in the test split); evaluating repeats would shrink the intervals without adding
 * evidence, so we draw more and keep the first n distinct, in draw order (the same games for every image ratio), or
 * say how many exist.
 */
function distinctEpisodes(env: Env, options: GenerateOptions, group: string): Episode[] {
  let distinct: Episode[] = [];
  for (let factor = 1; factor <= MAX_DRAW_FACTOR; factor *= 4) {
    // A finite source (a games file, chess from the start with no moves) may end early: what it gave is all there is.
    const drawn = generateEpisodes(env, { ...options, n: options.n * factor, allowFewer: true });
    const seen = new Set<string>();
    distinct = drawn.filter((e) => {
      const key = contentKey(e);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    if (distinct.length >= options.n) return distinct.slice(0, options.n);
    if (drawn.length < options.n * factor) break;
  }
  // A sweep point with few distinct problems (chess from the start with 0 moves has one) is still a point of the
  // curve: evaluate every distinct episode there is and say so, rather than refuse the whole sweep.
  if (distinct.length > 0) {
    process.stderr.write(
      `metrl: warning: ${group}: only ${distinct.length} distinct test episodes exist (asked for ${options.n}); evaluating those\n`,
    );
    return distinct;
  }
  throw new UserError(
    `${group}: only ${distinct.length} distinct test episodes exist (asked for ${options.n}); lower --n or use more --actions`,
  );
}

/** The items of one setting, in a fixed order. */
export function itemsOf(s: Setting, selection: Selection, n: number, seed: number): EvalItem[] {
  const group = episodeGroup(s);
  const episodes = selection.test.get(group);
  if (!episodes)
    throw new UserError(
      `${EPISODES_FILE} holds no episodes for ${group}: the run's settings changed (start a new --out)`,
    );
  const key = settingKey(s);
  const items: EvalItem[] = [];
  if (s.task === 'perception') {
    for (const episode of episodes) {
      for (let index = 0; index < episode.actions.length && items.length < n; index++) {
        items.push({
          id: `${key}|${episode.id}#${index}`,
          setting: s,
          settingKey: key,
          episode,
          actionIndex: index,
          target: episode.actions[index].text,
          shots: [],
        });
      }
    }
  } else {
    const pool = selection.train.get(group) ?? [];
    for (const episode of episodes.slice(0, n)) {
      const shots = s.shots > 0 ? new Rng(seed, 'shots', key, episode.id).sample(pool, s.shots) : [];
      items.push({ id: `${key}|${episode.id}`, setting: s, settingKey: key, episode, target: episode.target, shots });
    }
  }
  // Fewer items than asked happens when the source holds fewer distinct problems (see distinctEpisodes, which warned).
  if (items.length === 0) throw new UserError(`${key}: no items available in ${EPISODES_FILE}`);
  return items;
}

// ---- episodes.jsonl ----

const episodeSchema = z.object({
  id: z.string(),
  domain: z.enum(DOMAINS),
  split: z.enum(['train', 'test']),
  initialState: z.string(),
  actions: z.array(z.object({ text: z.string(), modality: z.enum(['text', 'image']) })),
  target: z.string(),
  question: z.string().optional(),
  meta: z.record(z.string(), z.unknown()),
});

const selectionRowSchema = z.object({ group: z.string(), role: z.enum(['test', 'shot']), episode: episodeSchema });

export function writeSelection(dir: string, selection: Selection): void {
  const lines: string[] = [];
  for (const [group, episodes] of selection.test)
    for (const episode of episodes) lines.push(JSON.stringify({ group, role: 'test', episode }));
  for (const [group, episodes] of selection.train)
    for (const episode of episodes) lines.push(JSON.stringify({ group, role: 'shot', episode }));
  writeFileAtomic(join(dir, EPISODES_FILE), lines.join('\n') + '\n');
}

export function readSelection(dir: string): Selection {
  const path = join(dir, EPISODES_FILE);
  if (!existsSync(path)) throw new UserError(`${path}: missing, cannot resume this run`);
  const test = new Map<string, Episode[]>();
  const train = new Map<string, Episode[]>();
  for (const { line, value } of readJsonl(path).rows) {
    const row = selectionRowSchema.safeParse(value);
    if (!row.success) throw new UserError(`${path}:${line}: not an episode row (${row.error.issues[0]?.message})`);
    const target = row.data.role === 'test' ? test : train;
    const list = target.get(row.data.group) ?? [];
    list.push(row.data.episode as Episode);
    target.set(row.data.group, list);
  }
  return { test, train };
}
