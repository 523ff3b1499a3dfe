// Queries as chat messages for chat models: the environment's reference wording (zero-shot, few-shot, cot, fen-trace,
// the perception probe), or 'compact', the built-in model's own layout written as one user message, so that a
// checkpoint behind `metrl serve` can be evaluated over HTTP on the format it was trained on. Images become PNG data
// URLs rendered at the environment's chat size (compact: the model's size, as the model sees them).
import { pngDataUrl, toChatMessages, type ChatContentPart, type ChatMessage } from '../core/chat.ts';
import { encodePng } from '../core/image.ts';
import { UserError } from '../core/errors.ts';
import type { Env, ImageRef, PromptMessage } from '../envs/types.ts';
import type { ModelInput } from '../models/types.ts';
import type { Query } from './types.ts';

export const COMPACT_STYLE = 'compact';

/** The built-in template (models/template.ts), loaded lazily so hosted runs never import tfjs. */
export interface CompactTemplate {
  trackInput(env: Env, query: Extract<Query, { kind: 'track' }>): ModelInput;
  perceptionInput(env: Env, query: Extract<Query, { kind: 'perception' }>): ModelInput;
}

export function promptMessages(env: Env, query: Query): PromptMessage[] {
  if (query.kind === 'perception') {
    if (!env.perceptionProbe) throw new UserError(`${env.domain} has no perception probe`);
    return env.perceptionProbe(query.episode, query.index).messages;
  }
  return env.prompt(query.episode, { style: query.style, shots: query.shots });
}

/** Render every image a prompt refers to, then build chat messages with data URLs. */
export async function referenceChat(env: Env, query: Query): Promise<ChatMessage[]> {
  const messages = promptMessages(env, query);
  const urls = new Map<string, string>();
  const key = (ref: ImageRef) => `${ref.episode.id}#${ref.index}`;
  for (const m of messages) {
    for (const p of m.parts) {
      if (p.type !== 'image' || urls.has(key(p.ref))) continue;
      const png = await encodePng(env.renderAction(p.ref.episode, p.ref.index, env.imageSizes.chat));
      urls.set(key(p.ref), pngDataUrl(png));
    }
  }
  return toChatMessages(messages, (ref) => urls.get(key(ref))!);
}

/** A model input (text and raw images in order) as a single user chat message. */
export async function modelInputToChat(input: ModelInput): Promise<ChatMessage[]> {
  const parts: ChatContentPart[] = [];
  for (const part of input) {
    if (part.type === 'text') parts.push({ type: 'text', text: part.text });
    else parts.push({ type: 'image_url', image_url: { url: pngDataUrl(await encodePng(part.image)) } });
  }
  return [{ role: 'user', content: parts }];
}

/** Chat messages for a query, in the reference wording or the compact layout. */
export async function queryToChat(env: Env, query: Query, compact?: () => Promise<CompactTemplate>): Promise<ChatMessage[]> {
  if (query.style !== COMPACT_STYLE) return referenceChat(env, query);
  if (!compact) throw new UserError(`prompt style '${COMPACT_STYLE}' needs the built-in model's template`);
  const template = await compact();
  return modelInputToChat(query.kind === 'track' ? template.trackInput(env, query) : template.perceptionInput(env, query));
}
