// Queries as chat messages for chat models: the environment's reference wording (zero-shot, few-shot, cot, fen-trace,
// the perception probe), or 'compact', the built-in model's own layout written as one user message, so that a
// checkpoint behind `metrl serve` can be evaluated over HTTP on the format it was trained on. Images become PNG data
// URLs rendered at the environment's chat size (compact: the model's size, as the model sees them), or, for episodes of
// a dataset that brings its own pictures (envs/dataset-images.ts), the dataset's bytes unchanged.
import { pngDataUrl, toChatMessages, type ChatContentPart, type ChatMessage } from '../core/chat.ts';
import { encodePng } from '../core/image.ts';
import { UserError } from '../core/errors.ts';
import { createHash } from 'node:crypto';
import type { Env } from '../envs/env.ts';
import { datasetImageKey, datasetImageUrl } from '../envs/dataset-images.ts';
import type { ImageRef, PromptMessage } from '../core/episode.ts';
import type { RawImage } from '../core/image.ts';
import type { ModelInput } from '../models/types.ts';
import type { Query } from './types.ts';

export const COMPACT_STYLE = 'compact';

/** The built-in template (models/builtin/template.ts), loaded lazily so hosted runs never import tfjs. */
export interface CompactTemplate {
  trackInput(env: Env, query: Extract<Query, { kind: 'track' }>): ModelInput;
  perceptionInput(env: Env, query: Extract<Query, { kind: 'perception' }>): ModelInput;
}

function promptMessages(env: Env, query: Query): PromptMessage[] {
  if (query.kind === 'perception') {
    if (!env.perceptionProbe) throw new UserError(`${env.domain} has no perception probe`);
    return env.perceptionProbe(query.episode, query.index).messages;
  }
  return env.prompt(query.episode, { style: query.style, shots: query.shots });
}

// Where an action's image depends on its text alone (Env.actionImageFromText), one PNG serves every episode holding
// the action: PNG encoding is most of the harness's own cost per image item, and a few thousand moves cover chess.
const PNG_CACHE_LIMIT = 4096;
const pngCache = new Map<string, string>();

async function imageDataUrl(env: Env, ref: ImageRef, size: number): Promise<string> {
  // A picture the dataset brings (official MET-Bench sets) goes out as the set stores it, as the reference harness sends it.
  const own = datasetImageUrl(ref);
  if (own !== undefined) return own;
  if (datasetImageKey(ref) !== undefined)
    throw new UserError(
      `${ref.episode.id}: its pictures come from the dataset; give the same --dataset again (with --resume) so they can be read`,
    );
  const cacheable = env.actionImageFromText === true;
  const key = `${env.domain}\u0000${size}\u0000${ref.episode.actions[ref.index]?.text}`;
  const hit = cacheable ? pngCache.get(key) : undefined;
  if (hit) return hit;
  const url = pngDataUrl(await encodePng(env.renderAction(ref.episode, ref.index, size)));
  if (cacheable) {
    if (pngCache.size >= PNG_CACHE_LIMIT) pngCache.delete(pngCache.keys().next().value!);
    pngCache.set(key, url);
  }
  return url;
}

/** Render every image a prompt refers to, then build chat messages with data URLs. */
export async function referenceChat(env: Env, query: Query): Promise<ChatMessage[]> {
  const messages = promptMessages(env, query);
  const urls = new Map<string, string>();
  const key = (ref: ImageRef) => `${ref.episode.id}#${ref.index}`;
  for (const m of messages) {
    for (const p of m.parts) {
      if (p.type !== 'image' || urls.has(key(p.ref))) continue;
      urls.set(key(p.ref), await imageDataUrl(env, p.ref, env.imageSizes.chat));
    }
  }
  return toChatMessages(messages, (ref) => urls.get(key(ref))!);
}

/** PNG data URL of raw pixels, cached by a digest of the pixels (the same action renders the same bytes). */
async function rawImageDataUrl(image: RawImage): Promise<string> {
  const key = `raw\u0000${image.width}x${image.height}\u0000${createHash('sha1').update(image.data).digest('base64')}`;
  const hit = pngCache.get(key);
  if (hit) return hit;
  const url = pngDataUrl(await encodePng(image));
  if (pngCache.size >= PNG_CACHE_LIMIT) pngCache.delete(pngCache.keys().next().value!);
  pngCache.set(key, url);
  return url;
}

/** A model input (text and raw images in order) as a single user chat message. */
async function modelInputToChat(input: ModelInput): Promise<ChatMessage[]> {
  const parts: ChatContentPart[] = [];
  for (const part of input) {
    if (part.type === 'text') parts.push({ type: 'text', text: part.text });
    else parts.push({ type: 'image_url', image_url: { url: await rawImageDataUrl(part.image) } });
  }
  return [{ role: 'user', content: parts }];
}

/** Chat messages for a query, in the reference wording or the compact layout. */
export async function queryToChat(
  env: Env,
  query: Query,
  compact?: () => Promise<CompactTemplate>,
): Promise<ChatMessage[]> {
  if (query.style !== COMPACT_STYLE) return referenceChat(env, query);
  if (!compact) throw new UserError(`prompt style '${COMPACT_STYLE}' needs the built-in model's template`);
  const template = await compact();
  return modelInputToChat(
    query.kind === 'track' ? template.trackInput(env, query) : template.perceptionInput(env, query),
  );
}
