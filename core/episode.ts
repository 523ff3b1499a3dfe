// Core contract: the Episode that flows from environment generators to prompts, models, rewards and dataset export,
// and the structured prompt it becomes. An Episode is structured data (initial state, actions with the modality each
// is shown in, target); images are rendered on demand from an action's text, so switching an episode to the transfer
// modality is just relabelling its actions. Every layer above core/ reads these types; none of them owns them.
export type { Split } from './fingerprint.ts';
import type { Split } from './fingerprint.ts';

export const DOMAINS = ['chess', 'shell', 'boxes', 'mcst', 'mate', 'rem', 'minecraft'] as const;
export type Domain = (typeof DOMAINS)[number];

export type Modality = 'text' | 'image';
export const MODALITY_SETTINGS = ['text', 'image', 'mixed'] as const;
/** How actions are shown: all text, all images, or each an image with probability `imageRatio`. */
export type ModalitySetting = (typeof MODALITY_SETTINGS)[number];

export interface Action {
  /** Canonical text form: a UCI move, "1 swap 3", an operation sentence… */
  text: string;
  /** How the action is shown to the model. */
  modality: Modality;
}

export interface Episode {
  /** Stable id: domain, split and a content fingerprint. */
  id: string;
  domain: Domain;
  split: Split;
  /** The initial state as text (a FEN, the ball's start "1"-"3", a scene description…). */
  initialState: string;
  actions: Action[];
  /** Canonical answer as a string (final FEN, "1"-"3", …). */
  target: string;
  /** Question text for environments that ask one (boxes, mcst, mate, rem); absent for chess and shell. */
  question?: string;
  /** JSON-serialisable extras (game index, ply offset, level, …). */
  meta: Record<string, unknown>;
}

/** A prompt as structured parts; images are references resolved later (to a file path or a PNG data URL). */
export interface ImageRef {
  episode: Episode;
  /** Index of the action whose image this is. */
  index: number;
}
/**
 * A text part is merged into the text part before it when converted to chat messages (core/chat.ts), as the MET-Bench
 * harness builds chess and shell prompts as one text block; `separate` keeps it a part of its own, where the harness
 * sends adjacent text parts separately (Minecraft's "Candidate next frames:" then "Choice 1:").
 */
export type PromptPart = { type: 'text'; text: string; separate?: boolean } | { type: 'image'; ref: ImageRef };
export interface PromptMessage {
  role: 'system' | 'user' | 'assistant';
  parts: PromptPart[];
}
