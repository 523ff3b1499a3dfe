// The episodes behind a folder's rows, for `metrl view`, and the prompt each became. samples.jsonl names its episode
// only by id: a training run's train split is rebuilt from its config.json (environments are deterministic from seed,
// size and actions; a --dataset run reads its local dataset again), an evaluation folder's episodes are read from its
// episodes.jsonl. The prompt is laid out as the model saw it: the built-in model's compact layout
// (models/builtin/template.ts), or the environment's reference prompt for chat models, with image actions as
// references that the server renders at the size the model read.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { Episode } from '../../core/episode.ts';
import { encodePng, blankImage } from '../../core/image.ts';
import type { Env } from '../../envs/env.ts';
import { getEnv } from '../../envs/registry.ts';
import { generateEpisodes } from '../../envs/generate.ts';
import { readDataset } from '../../envs/dataset-reader.ts';
import { episodeToModelInput } from '../../models/builtin/template.ts';
import { MODEL_KIND } from '../../models/builtin/config.ts';
import { modelTypeOf } from '../../models/registry.ts';
import { EPISODES_FILE } from '../selection.ts';
import { CONFIG_FILE, readConfig, type ViewedFolder } from './run-folder.ts';
import { fileStamp, readRows, schemaRows } from './jsonl-rows.ts';

export type Layout = 'compact' | 'reference';

/** A prompt for the page: text, and image actions by index (the page asks the server for their pixels). */
export type PromptPart = { type: 'text'; text: string } | { type: 'image'; action: number };

export interface EpisodeSource {
  /** Episode by key: a training run's episode id; "<group>|<episode id>" in an evaluation folder. */
  find(key: string): Episode | undefined;
  /** Why episodes are not available, when they are not. */
  problem?: string;
  /** The environment of a domain (loaded on first use). */
  env(domain: string): Promise<Env>;
}

const envs = new Map<string, Promise<Env>>();
function loadEnv(domain: string): Promise<Env> {
  if (!envs.has(domain)) envs.set(domain, getEnv(domain));
  return envs.get(domain)!;
}

const trainConfigSchema = z.object({
  domain: z.string(),
  modality: z.enum(['text', 'image']),
  checkpoint: z.string().optional(),
  envExtra: z.record(z.string(), z.unknown()).default({}),
  dataset: z.string().optional(),
  config: z.object({ trainSize: z.number().int(), actions: z.number().int(), seed: z.number() }).loose(),
});

/** The prompt layout a training run's policy used: compact for the built-in model, the reference prompt otherwise. */
export function trainLayout(folder: ViewedFolder): Layout {
  const checkpoint = readConfig(folder.root)?.checkpoint;
  if (typeof checkpoint !== 'string') return 'compact';
  try {
    return modelTypeOf(checkpoint) === MODEL_KIND ? 'compact' : 'reference';
  } catch {
    return 'compact'; // the base checkpoint is not on this machine: the built-in model is the usual one
  }
}

async function trainEpisodes(folder: ViewedFolder): Promise<Map<string, Episode>> {
  const parsed = trainConfigSchema.safeParse(readConfig(folder.root));
  if (!parsed.success)
    throw new Error(
      `config.json does not say how the episodes were made (${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message})`,
    );
  const info = parsed.data;
  const env = await loadEnv(info.domain);
  let episodes: Episode[];
  if (info.dataset !== undefined) {
    if (!existsSync(info.dataset))
      throw new Error(`the run's dataset ${info.dataset} is not on this machine (or is a hub address)`);
    episodes = readDataset(info.dataset, info.domain).train.map((i) => i.episode);
  } else {
    episodes = generateEpisodes(env, {
      n: info.config.trainSize,
      actions: info.config.actions,
      split: 'train',
      seed: info.config.seed,
      modality: info.modality,
      extra: info.envExtra,
    });
  }
  return new Map(episodes.map((e) => [e.id, e]));
}

const selectionRow = z.object({
  group: z.string(),
  role: z.string(),
  episode: z
    .object({
      id: z.string(),
      domain: z.string(),
      initialState: z.string(),
      actions: z.array(z.object({ text: z.string(), modality: z.enum(['text', 'image']) })),
      target: z.string(),
    })
    .loose(),
});

function evalEpisodes(folder: ViewedFolder): Map<string, Episode> {
  const path = join(folder.root, EPISODES_FILE);
  const read = readRows(path, schemaRows(selectionRow, 'an episode row'));
  if (read.missing) throw new Error(`no ${EPISODES_FILE}`);
  const out = new Map<string, Episode>();
  for (const row of read.rows)
    if (row.role === 'test') out.set(`${row.group}|${row.episode.id}`, row.episode as unknown as Episode);
  return out;
}

const sources = new Map<string, { stamp: string; source: Promise<EpisodeSource> }>();

/** The folder's episodes, built once per folder, and again when the file they come from changes. */
export function episodeSource(folder: ViewedFolder): Promise<EpisodeSource> {
  const stamp = fileStamp(join(folder.root, folder.kind === 'eval' ? EPISODES_FILE : CONFIG_FILE));
  const cached = sources.get(folder.root);
  if (cached?.stamp !== stamp) {
    const build = async (): Promise<EpisodeSource> => {
      try {
        const map = folder.kind === 'train' ? await trainEpisodes(folder) : evalEpisodes(folder);
        return { find: (k) => map.get(k), env: loadEnv };
      } catch (error) {
        return {
          find: () => undefined,
          env: loadEnv,
          problem: `prompts and images not shown: ${error instanceof Error ? error.message : String(error)}`,
        };
      }
    };
    sources.set(folder.root, { stamp, source: build() });
  }
  return sources.get(folder.root)!.source;
}

/** The prompt the model saw, as parts; images by action index. */
export function promptParts(env: Env, episode: Episode, layout: Layout, style = 'zero-shot'): PromptPart[] {
  if (layout === 'compact') {
    // The layout is the template's; the recorder notes which action each image part shows, in order.
    const shown: number[] = [];
    const input = episodeToModelInput(env, episode, (_e, index) => (shown.push(index), blankImage(1, 1)));
    let next = 0;
    return input.map((p) =>
      p.type === 'text' ? { type: 'text', text: p.text } : { type: 'image', action: shown[next++] },
    );
  }
  const style_ = env.promptStyles.includes(style) ? style : 'zero-shot';
  return env
    .prompt(episode, { style: style_, shots: [] })
    .flatMap((m) =>
      m.parts.map(
        (p): PromptPart =>
          p.type === 'text'
            ? { type: 'text', text: p.text + (p.separate ? '\n' : '') }
            : { type: 'image', action: p.ref.index },
      ),
    );
}

/** Width of the images the model read: its own size for the built-in model, the chat size for chat models. */
export function imageSize(env: Env, layout: Layout): number {
  return layout === 'compact' ? env.imageSizes.model : env.imageSizes.chat;
}

const pngs = new Map<string, Buffer>();

/** Action `index` of the episode as a PNG at `size` pixels (a few hundred kept). */
export async function actionPng(env: Env, episode: Episode, index: number, size: number): Promise<Buffer> {
  const key = `${episode.id}|${index}|${size}`;
  const hit = pngs.get(key);
  if (hit) return hit;
  const png = await encodePng(env.renderAction(episode, index, size));
  pngs.set(key, png);
  if (pngs.size > 500) pngs.delete(pngs.keys().next().value!);
  return png;
}
