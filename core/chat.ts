// OpenAI chat format. Prompts are built as structured parts (core/episode.ts); this turns them into the messages any
// chat VLM takes: text parts and image_url parts whose URL is a PNG data URL (for requests) or a relative path (for
// datasets written to disk).
import type { ImageRef, PromptMessage } from './episode.ts';

export type ChatContentPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string | ChatContentPart[];
}

/**
 * Convert structured prompt messages, resolving each image reference to a URL; adjacent text parts are merged unless
 * the later one is marked `separate`.
 */
export function toChatMessages(messages: PromptMessage[], imageUrl: (ref: ImageRef) => string): ChatMessage[] {
  return messages.map((m) => {
    const parts: ChatContentPart[] = [];
    for (const p of m.parts) {
      if (p.type === 'text') {
        const last = parts[parts.length - 1];
        if (last && last.type === 'text' && !p.separate) last.text += p.text;
        else parts.push({ type: 'text', text: p.text });
      } else {
        parts.push({ type: 'image_url', image_url: { url: imageUrl(p.ref) } });
      }
    }
    const onlyText = parts.every((p) => p.type === 'text');
    return { role: m.role, content: onlyText ? parts.map((p) => (p as { text: string }).text).join('') : parts };
  });
}

export function pngDataUrl(png: Uint8Array): string {
  return `data:image/png;base64,${Buffer.from(png).toString('base64')}`;
}
