// The contract every environment (chess, shell, and later boxes, mcst, mate, rem) fulfils, and the Episode that flows
// from generators to prompts, the built-in model, rewards and dataset export. An Episode is structured data (initial
// state, actions with the modality each is shown in, target); images are rendered on demand from an action's text,
// so switching an episode to the transfer modality is just relabelling its actions.
import type { Split } from '../core/fingerprint.ts';
import type { Rng } from '../core/rng.ts';

export type { Split } from '../core/fingerprint.ts';

export const DOMAINS = ['chess', 'shell', 'boxes', 'mcst', 'mate', 'rem'] as const;
export type Domain = (typeof DOMAINS)[number];

export type Modality = 'text' | 'image';
export const MODALITY_SETTINGS = ['text', 'image', 'mixed'] as const;
/** How actions are shown: all text, all images, or each an image with probability `imageRatio`. */
export type ModalitySetting = (typeof MODALITY_SETTINGS)[number];

/** An RGB image, row-major, 3 bytes per pixel. */
export interface RawImage {
  width: number;
  height: number;
  channels: 3;
  data: Uint8Array;
}

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

/** What an environment's sampler proposes; the shared generator adds id, split and modalities. */
export interface Candidate {
  initialState: string;
  actionTexts: string[];
  target: string;
  question?: string;
  meta?: Record<string, unknown>;
  /** Extra content that defines the episode beyond state and actions (e.g. the question); part of the fingerprint. */
  fingerprintExtra?: string;
  /**
   * When set, the split is decided by this key instead of the content fingerprint, so that everything sharing the key
   * lands in the same split (boxes: the initial-state signature; mcst: the scenario, so matched pairs stay together).
   */
  splitKey?: string;
}

export interface SampleOptions {
  /** Number of actions T. */
  actions: number;
  /** Environment-specific options (e.g. chess: games, offset), already validated by the command. */
  extra: Record<string, unknown>;
  /** The split being generated, for environments whose content depends on it (boxes: NumOps, Vocab, AltForms). */
  split?: Split;
}

/** A prompt as structured parts; images are references resolved later (to a file path or a PNG data URL). */
export interface ImageRef {
  episode: Episode;
  /** Index of the action whose image this is. */
  index: number;
}
export type PromptPart = { type: 'text'; text: string } | { type: 'image'; ref: ImageRef };
export interface PromptMessage {
  role: 'system' | 'user' | 'assistant';
  parts: PromptPart[];
}

/** Scoring result of one response. `reward` in [0, 1] is what GRPO optimises; `metrics` feed the summaries. */
export interface Score {
  reward: number;
  /** False when the answer could not be parsed (reward 0). */
  valid: boolean;
  /** The parsed prediction in canonical form, or null when invalid. */
  prediction: string | null;
  metrics: Record<string, number | boolean | null>;
}

/** A row to score: what `metrl score` reads and evaluation writes. */
export interface ScoreInput {
  target: string;
  response: string;
  initialState?: string;
  meta?: Record<string, unknown>;
}

export interface PromptOptions {
  style: string;
  /** Solved examples shown before the question (few-shot). */
  shots: Episode[];
}

export interface Env {
  domain: Domain;
  /** Prompt styles this environment understands (e.g. zero-shot, few-shot, cot, fen-trace). */
  promptStyles: readonly string[];
  /** Modalities actions can be shown in; absent means both. Text-only domains (boxes, mcst) list only 'text'. */
  modalities?: readonly Modality[];
  // A single entry fixes the modality: image-only domains (mate: the scene, rem: the frames) show every action as an
  // image whatever --modality says, and the generator labels them so (envs/generate.ts).
  /** Rendered image width in pixels: for chat VLMs, and for the built-in model. */
  imageSizes: { chat: number; model: number };
  /**
   * Endless stream of candidate episodes, deterministic given the rng; may end when a finite source (a games file)
   * runs out. Must throw UserError for bad extra options.
   */
  candidates(rng: Rng, options: SampleOptions): Iterable<Candidate>;
  /** Render action `index` of the episode as an image of the given width. */
  renderAction(episode: Episode, index: number, size: number): RawImage;
  /** The chat prompt with the reference wording. */
  prompt(episode: Episode, options: PromptOptions): PromptMessage[];
  /** Single-image perception probe for action `index`: the prompt and the expected text answer. */
  perceptionProbe?(episode: Episode, index: number): { messages: PromptMessage[]; target: string };
  /** Score a response against the target. Pure. */
  score(input: ScoreInput): Score;
  /**
   * The state after each action, in a short text form (chess: the piece placement; shell: the ball's shell). When an
   * environment has it, the built-in model answers in the trace layout of models/template.ts, writing each
   * intermediate state before the final answer. Pure.
   */
  traceStates?(episode: Episode): string[];
  /** The initial state in the form traceStates writes states, when that differs from episode.initialState. Pure. */
  traceStart?(episode: Episode): string;
  /**
   * How accuracy intervals are computed: 'wilson' for binary rewards (shell, boxes…), 'mean' for a normal interval of
   * the mean item reward, i.e. clustered by board for chess's per-square reward.
   */
  intervalMethod: 'wilson' | 'mean';
  /**
   * The paper's baselines for a question-answering domain, as the answer text (without "FINAL ANSWER:"):
   * 'game-start' answers from the initial state alone, 'random' draws an answer of the right form. Optional; the
   * evaluator's own baselines cover chess and the shell game.
   */
  baselineAnswer?(episode: Episode, baseline: 'game-start' | 'random', rng: Rng): string;
  /** Optional environment-specific breakdowns for summaries (by level, question type, number of operations…). */
  summarize?(rows: ScoredRow[]): Record<string, unknown>;
}

/** A scored item, as summaries see it. */
export interface ScoredRow {
  input: ScoreInput;
  score: Score;
}
