// The contract every environment fulfils (envs/registry.ts lists them): candidate episodes for the shared generator,
// rendering, the reference prompt, scoring, and the optional trace states, baselines and breakdowns. The data it
// speaks of (Episode, PromptMessage, Score, RawImage) are core contracts.
import type { Rng } from '../core/rng.ts';
import type { Domain, Episode, Modality, PromptMessage, Split } from '../core/episode.ts';
import type { RawImage } from '../core/image.ts';
import type { Score, ScoreInput, ScoredRow } from '../core/score.ts';
import type { IntervalMethod } from '../core/summary.ts';

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
  /**
   * True when an action's image depends on its text alone (chess: the move on an empty board; shell: the two
   * highlighted labels), so one rendering serves every episode holding that action.
   */
  actionImageFromText?: boolean;
  /** The chat prompt with the reference wording. */
  prompt(episode: Episode, options: PromptOptions): PromptMessage[];
  /** Single-image perception probe for action `index`: the prompt and the expected text answer. */
  perceptionProbe?(episode: Episode, index: number): { messages: PromptMessage[]; target: string };
  /**
   * The action a probe's answer names, in the canonical form of the probe's targets (so that two ways of writing one
   * action compare equal), or null when it names none. It receives the answer already cleaned of the decoration the
   * reference parsers strip (eval/perception.ts), lowercased. Absent: the cleaned answer itself, when not empty.
   */
  readPerceptionAnswer?(cleaned: string): string | null;
  /** Score a response against the target. Pure. */
  score(input: ScoreInput): Score;
  /**
   * The state after each action, in a short text form (chess: the piece placement; shell: the ball's shell). When an
   * environment has it, the built-in model answers in the trace layout of models/builtin/template.ts, writing each
   * intermediate state before the final answer. Pure.
   */
  traceStates?(episode: Episode): string[];
  /** The initial state in the form traceStates writes states, when that differs from episode.initialState. Pure. */
  traceStart?(episode: Episode): string;
  /** How accuracy intervals are computed (core/summary.ts): 'wilson' for binary rewards, 'mean' for graded ones. */
  intervalMethod: IntervalMethod;
  /**
   * The paper's baselines, as the answer text (without "FINAL ANSWER:"): 'game-start' answers from the initial state
   * alone, 'random' draws an answer of the right form. envs/baseline.ts turns it into a response.
   */
  baselineAnswer?(episode: Episode, baseline: 'game-start' | 'random', rng: Rng): string;
  /** The 'random' baseline's reading of the perception probe for action `index`: an action of the right form. */
  randomPerceptionAnswer?(episode: Episode, index: number, rng: Rng): string;
  /** Optional environment-specific breakdowns for summaries (by level, question type, number of operations…). */
  summarize?(rows: ScoredRow[]): Record<string, unknown>;
}
