// Dataset export: episodes of one environment written as DIR/metadata.jsonl + DIR/images/*.png, a layout that Python's
// `datasets` loads (imagefolder with `file_names` list columns, or the json builder for text-only sets) and that any
// OpenAI-style chat client can replay (each row's `messages` reference the images by path relative to DIR).
// The directory appears complete or not at all: everything is written into a temporary sibling and renamed at the end.
// Few-shot examples come from the TRAIN split (never the test split), drawn deterministically from the seed.
import { existsSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { UserError, systemErrorAsUserError } from '../core/errors.ts';
import { isEmptyDir, makeDirs, removeQuietly } from '../core/files.ts';
import { encodePng } from '../core/image.ts';
import { toChatMessages, type ChatContentPart, type ChatMessage } from '../core/chat.ts';
import { generateEpisodes, type GenerateOptions } from './generate.ts';
import type { Env } from './env.ts';
import type { Episode, ImageRef } from '../core/episode.ts';

export interface DatasetOptions extends GenerateOptions {
  /** Prompt style used to build `messages` (one of env.promptStyles). */
  prompt: string;
  /** Solved train-split examples before each question when prompt is few-shot. */
  shots: number;
  /** Image width in pixels. */
  imageSize: number;
  out: string;
  /** Replace a non-empty output directory. */
  force: boolean;
  /** Called after each episode is written. */
  onProgress?: (done: number, total: number) => void;
}

/** A chat message whose content is always a list of parts, so every row has the same shape (Arrow needs that). */
interface DatasetMessage {
  role: ChatMessage['role'];
  content: ChatContentPart[];
}

/** One line of metadata.jsonl. */
interface DatasetRow {
  id: string;
  domain: string;
  split: string;
  initial_state: string;
  /** Text form of every action (UCI moves, "x swap y", …), whatever modality it is shown in. */
  actions: string[];
  modalities: string[];
  /** Per action: the image path relative to the dataset directory, or null for a text action. */
  images: (string | null)[];
  /** The non-null entries of `images`, in order: `datasets` imagefolder loads this column as a list of images. */
  action_images_file_names: string[];
  target: string;
  question?: string;
  prompt: string;
  messages: DatasetMessage[];
  meta: Record<string, unknown>;
}

export interface DatasetResult {
  dir: string;
  rows: number;
  images: number;
}

export const METADATA_FILE = 'metadata.jsonl';
const IMAGES_DIR = 'images';
/** The settings that produced the dataset, so it can be regenerated (imagefolder ignores this file). */
const GENERATION_FILE = 'generation.json';

/** Path (relative to the dataset directory) of an action image. */
function imagePath(episode: Episode, index: number): string {
  return `${IMAGES_DIR}/${episode.id}-${String(index).padStart(3, '0')}.png`;
}

/**
 * The few-shot examples: `shots` solved episodes from the TRAIN split with the same number of actions and modality
 * setting, drawn from their own seed stream so that they do not depend on the episodes being generated.
 */
function fewShotExamples(
  env: Env,
  options: Pick<GenerateOptions, 'seed' | 'actions' | 'modality' | 'imageRatio' | 'extra'>,
  shots: number,
): Episode[] {
  if (shots <= 0) return [];
  const episodes = generateEpisodes(env, { ...options, seed: `${options.seed}/few-shot`, n: shots, split: 'train' });
  // Ids must not collide with the dataset's own train episodes.
  return episodes.map((e, i) => ({ ...e, id: `${env.domain}-shot-${String(i).padStart(2, '0')}-${e.id.slice(-8)}` }));
}

/** Refuse an output path we would clobber; called before any work so that a bad --out fails fast. */
export function checkOutputDir(out: string, force: boolean): void {
  if (!existsSync(out)) return;
  if (!statSync(out).isDirectory()) throw new UserError(`--out ${out} exists and is not a directory`);
  if (!force && !isEmptyDir(out))
    throw new UserError(`--out ${out} exists and is not empty (use --force to replace it)`);
}

export function validatePromptStyle(env: Env, style: string): void {
  if (!env.promptStyles.includes(style)) {
    throw new UserError(
      `--prompt ${style} is not available for ${env.domain} (choose from ${env.promptStyles.join(', ')})`,
    );
  }
}

/**
 * PNG bytes by content: identical pictures (every shell swap, common chess moves) are encoded once. Pictures are looked
 * up by their action text and size, and reused only if the raw pixels are byte-for-byte the same (a memcmp, much
 * cheaper than hashing), so an environment whose picture depends on more than the action text stays correct.
 */
class PngCache {
  private readonly entries = new Map<string, { pixels: Uint8Array; png: Promise<Buffer> }>();
  private bytes = 0;
  /** Raw pixels kept for comparison are bounded (at 512 px each picture holds 768 KiB). */
  constructor(private readonly maxBytes = 128 << 20) {}
  encode(env: Env, episode: Episode, index: number, size: number): Promise<Buffer> {
    const image = env.renderAction(episode, index, size);
    const key = `${size}\u0000${episode.actions[index].text}`;
    const hit = this.entries.get(key);
    if (hit && Buffer.compare(hit.pixels, image.data) === 0) return hit.png;
    const png = encodePng(image);
    if (this.bytes + image.data.byteLength > this.maxBytes) {
      this.entries.clear();
      this.bytes = 0;
    }
    this.entries.set(key, { pixels: image.data, png });
    this.bytes += image.data.byteLength;
    return png;
  }
}

function datasetMessages(env: Env, episode: Episode, style: string, shots: Episode[]): DatasetMessage[] {
  const url = (ref: ImageRef) => imagePath(ref.episode, ref.index);
  return toChatMessages(env.prompt(episode, { style, shots }), url).map((m) => ({
    role: m.role,
    content: typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content,
  }));
}

function toRow(env: Env, episode: Episode, style: string, shots: Episode[]): DatasetRow {
  const images = episode.actions.map((a, i) => (a.modality === 'image' ? imagePath(episode, i) : null));
  return {
    id: episode.id,
    domain: episode.domain,
    split: episode.split,
    initial_state: episode.initialState,
    actions: episode.actions.map((a) => a.text),
    modalities: episode.actions.map((a) => a.modality),
    images,
    action_images_file_names: images.filter((p): p is string => p !== null),
    target: episode.target,
    ...(episode.question !== undefined ? { question: episode.question } : {}),
    prompt: style,
    messages: datasetMessages(env, episode, style, shots),
    meta: episode.meta,
  };
}

function generationRecord(env: Env, options: DatasetOptions, shots: Episode[]): Record<string, unknown> {
  return {
    domain: env.domain,
    split: options.split,
    n: options.n,
    actions: options.actions,
    seed: options.seed,
    modality: options.modality,
    ...(options.modality === 'mixed' ? { imageRatio: options.imageRatio ?? 0.5 } : {}),
    prompt: options.prompt,
    ...(options.prompt === 'few-shot' ? { shots: shots.map((s) => s.id) } : {}),
    imageSize: options.imageSize,
    extra: options.extra ?? {},
  };
}

/** Generate the episodes and write the dataset. Bad input fails before anything is written. */
export async function writeDataset(env: Env, options: DatasetOptions): Promise<DatasetResult> {
  const out = resolve(options.out);
  checkOutputDir(out, options.force);
  validatePromptStyle(env, options.prompt);
  const episodes = generateEpisodes(env, { ...options, distinct: true });
  const shots = options.prompt === 'few-shot' ? fewShotExamples(env, options, options.shots) : [];

  const tmp = join(dirname(out), `.${basename(out)}.tmp-${process.pid}`);
  // The first missing ancestor of the output, removed again if the run fails, so a failure leaves no trace at all.
  const createdParent = firstMissingAncestor(dirname(out));
  try {
    rmSync(tmp, { recursive: true, force: true });
    makeDirs(join(tmp, IMAGES_DIR));
    const pngs = new PngCache();
    let imageCount = 0;
    // An episode's images are encoded concurrently (sharp works on libuv's thread pool, so both cores are used).
    // Every started write is settled before an error propagates, so none outlives the clean-up below.
    const writeImages = async (episode: Episode) => {
      const jobs: Promise<void>[] = [];
      let renderError: unknown = null;
      try {
        for (let i = 0; i < episode.actions.length; i++) {
          if (episode.actions[i].modality !== 'image') continue;
          const path = join(tmp, imagePath(episode, i));
          jobs.push(pngs.encode(env, episode, i, options.imageSize).then((png) => writeFileSync(path, png)));
          imageCount++;
        }
      } catch (error) {
        renderError = error;
      }
      const settled = await Promise.allSettled(jobs);
      if (renderError !== null) throw renderError;
      const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
    };
    for (const shot of shots) await writeImages(shot);
    const lines: string[] = [];
    for (let k = 0; k < episodes.length; k++) {
      await writeImages(episodes[k]);
      lines.push(JSON.stringify(toRow(env, episodes[k], options.prompt, shots)));
      options.onProgress?.(k + 1, episodes.length);
    }
    writeFileSync(join(tmp, METADATA_FILE), lines.join('\n') + '\n');
    writeFileSync(join(tmp, GENERATION_FILE), JSON.stringify(generationRecord(env, options, shots), null, 2) + '\n');
    replaceDir(tmp, out);
    return { dir: out, rows: episodes.length, images: imageCount };
  } catch (error) {
    removeQuietly(createdParent ?? tmp);
    // A folder that cannot be written (read-only, a parent that is a file, a full disk) is named as the user gave it.
    throw systemErrorAsUserError(error, out, 'cannot write the dataset');
  }
}

function firstMissingAncestor(dir: string): string | null {
  let missing: string | null = null;
  for (let d = dir; !existsSync(d); d = dirname(d)) missing = d;
  return missing;
}

/** Move the finished temporary directory into place; an old directory (--force) is moved aside first, then removed. */
function replaceDir(tmp: string, out: string): void {
  if (existsSync(out)) {
    const old = `${tmp}.old`;
    renameSync(out, old);
    renameSync(tmp, out);
    rmSync(old, { recursive: true, force: true });
  } else {
    makeDirs(dirname(out));
    renameSync(tmp, out);
  }
}
