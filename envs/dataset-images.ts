// Pictures that come with a dataset rather than from a renderer: the screenshots of MET-Bench Minecraft and the action
// images of the official chess and shell sets, kept as the dataset stores them (PNG or JPEG bytes). An episode names
// its pictures in meta.images (one key per image slot: an action index for chess and shell; 0 the initial frame and
// 1-4 the candidates for Minecraft); the bytes live here, outside the episode, because episodes are JSON (episodes.jsonl)
// and a selection of 500 rows would otherwise be written out in base64. The store is filled when a dataset is read
// (envs/metbench/official.ts) and read when a prompt becomes chat messages (eval/query-to-chat.ts), which sends the
// bytes unchanged, as the reference harness does.
import type { ImageRef } from '../core/episode.ts';

export interface DatasetImage {
  bytes: Uint8Array;
  /** image/png, image/jpeg…, sniffed from the bytes. */
  mime: string;
}

const store = new Map<string, DatasetImage>();

/** The MIME type of image bytes by their signature, or null for bytes that are no image we send. */
export function imageMime(bytes: Uint8Array): string | null {
  if (bytes.length >= 8 && bytes[0] === 0x89 && bytes[1] === 0x50 && bytes[2] === 0x4e && bytes[3] === 0x47)
    return 'image/png';
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (
    bytes.length >= 12 &&
    String.fromCharCode(...bytes.subarray(0, 4)) === 'RIFF' &&
    String.fromCharCode(...bytes.subarray(8, 12)) === 'WEBP'
  )
    return 'image/webp';
  if (bytes.length >= 6 && String.fromCharCode(...bytes.subarray(0, 3)) === 'GIF') return 'image/gif';
  return null;
}

export function putDatasetImage(key: string, image: DatasetImage): void {
  store.set(key, image);
}

/** The key of the picture an image reference points at, when its episode brings its own pictures. */
export function datasetImageKey(ref: ImageRef): string | undefined {
  const keys = ref.episode.meta.images;
  return Array.isArray(keys) && typeof keys[ref.index] === 'string' ? (keys[ref.index] as string) : undefined;
}

/** The picture for an image reference, or undefined when the episode's pictures are rendered (or not loaded). */
export function datasetImage(ref: ImageRef): DatasetImage | undefined {
  const key = datasetImageKey(ref);
  return key === undefined ? undefined : store.get(key);
}

/** The picture as a data URL (what chat requests carry), or undefined as for datasetImage. */
export function datasetImageUrl(ref: ImageRef): string | undefined {
  const image = datasetImage(ref);
  return image && `data:${image.mime};base64,${Buffer.from(image.bytes).toString('base64')}`;
}
