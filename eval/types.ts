// Types of the evaluation harness: a Setting (one cell of the paper's tables or one point of a sweep), the Query a
// model source answers (track an episode, or read one image action), what a source replies, and the Row written per
// item to `<domain>-<modality>.jsonl`. Sources never see settings or files; the runner never sees HTTP.
import type { Domain, Episode, ModalitySetting } from '../core/episode.ts';
import type { HarnessRow } from '../core/score.ts';

export const TASKS = ['track', 'perception'] as const;
/** track: predict the final state (Tables 1-3, 5; Figures 3, 4, 6). perception: one image → its action (Table 4). */
export type Task = (typeof TASKS)[number];

/** One evaluated configuration. Sweeps expand into several settings that share everything but one knob. */
export interface Setting {
  domain: Domain;
  modality: ModalitySetting;
  /** Probability that an action is an image (only used when modality is 'mixed'). */
  imageRatio: number;
  actions: number;
  /** Prompt style: an environment style (zero-shot, few-shot, cot, fen-trace) or 'compact' (the built-in layout). */
  prompt: string;
  /** Solved train-split examples shown before each question (few-shot). */
  shots: number;
  task: Task;
  /** Table 3: the model first transcribes each image action through the perception prompt, then tracks on text. */
  cascade: boolean;
}

/** What a model is asked. Sources turn it into chat messages, model tokens or a baseline answer. */
export type Query =
  | { kind: 'track'; episode: Episode; style: string; shots: Episode[] }
  | { kind: 'perception'; episode: Episode; index: number; style: string };

export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface SourceReply {
  text: string;
  usage: TokenUsage | null;
  /** Why generation stopped, as the server said ('stop', 'length' …); null when it did not say. */
  finishReason: string | null;
}

/** TOKEN_PARAMETERS: the request field that carries the token budget (reasoning models refuse max_tokens). */
export const TOKEN_PARAMETERS = ['max_completion_tokens', 'max_tokens'] as const;

export interface SamplingSettings {
  /** null: the request carries no temperature (`--temperature omit`); a checkpoint in process then decodes greedily. */
  temperature: number | null;
  maxTokens: number;
  /** Which request field carries maxTokens, for hosted models (the harness's --token-parameter; default max_completion_tokens). */
  tokenParameter?: (typeof TOKEN_PARAMETERS)[number];
  /** OpenAI's reasoning_effort, sent only when set. */
  reasoningEffort?: string | null;
}

/** A model behind one interface: a hosted chat model, a local checkpoint, a baseline. */
/** config.json's record of a model loaded in process. */
export interface LoadedModel {
  base: string;
  adapter: string | null;
  adapter_step: number | null;
  backend: string;
  /** The inference engine that generated (models/engine.ts), with ONNX Runtime's device and threads (null: every core). */
  engine: 'tfjs' | 'ort';
  ort?: { device: string; threads: number | null };
}

export interface ModelSource {
  /** Name used in tables and plots (model id, checkpoint folder, baseline name). */
  readonly label: string;
  /** What a local model loaded (base, adapter and its step, tfjs backend), recorded in config.json; absent for others. */
  readonly loaded?: LoadedModel;
  complete(query: Query, signal: AbortSignal): Promise<SourceReply>;
  close?(): Promise<void>;
}

type ItemStatus = 'ok' | 'error';

/** One cascade transcription step (Table 3). */
export interface Transcription {
  index: number;
  response: string;
  predicted: string | null;
  target: string;
  correct: boolean;
}

/** One line of `<domain>-<modality>.jsonl`. Field names follow the reference evaluator (snake_case on disk). */
export interface ItemRow {
  id: string;
  setting: string;
  episode_id: string;
  domain: Domain;
  modality: ModalitySetting;
  task: Task;
  prompt: string;
  actions: number;
  image_ratio: number;
  /** Perception items: the index of the action read. */
  action_index?: number;
  initial_state: string;
  target: string;
  response: string | null;
  reward: number | null;
  valid: boolean | null;
  prediction: string | null;
  metrics: Record<string, number | boolean | null> | null;
  /** The MET-Bench harness's own result for this answer (chess, shell, minecraft), as score_single_prediction_* returns it. */
  harness?: HarnessRow;
  status: ItemStatus;
  usage: TokenUsage | null;
  /** The last reply's finish reason ('length': cut off by the token budget, which the harness counts as truncated). */
  finish_reason?: string | null;
  error: string | null;
  /** A failed request's HTTP status, when it had one (the harness records it too). */
  status_code?: number | null;
  latency_ms: number;
  attempts: number;
  transcriptions?: Transcription[];
  /** The episode's meta, for environment breakdowns (env.summarize) and rescoring; absent when empty. */
  meta?: Record<string, unknown>;
}
