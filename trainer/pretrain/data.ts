// The supervised examples of pretraining, as a pure function of (seed, step): every batch can be rebuilt from its step
// number, so a resumed run sees exactly the batches an uninterrupted one would. Two kinds of example, both from the
// train split only, in the model's own layouts (models/builtin/template.ts):
//   perception  one image action, or 2..MAX_PERCEPTION_IMAGES labelled ones and a label → that action's text;
//   tracking    initial state + 0..maxTrackActions actions (text unless wholeImageRatio > 0) → the trace of states
//               and the final answer; or (partial, a share of them) a longer list of up to maxListedActions (config)
//               actions, text or images → 1..maxTrackActions trace lines (the first ones, or after a given prefix of
//               the trace), with no answer and no end; or (partialEndShare) its last 1..maxTrackActions lines and the
//               answer, after the rest of the trace given in the prompt.
// Whole traces of more than maxTrackActions actions are never taught, nor (with the default wholeImageRatio of 0) a
// whole trace of image actions: GRPO has to carry the trace through a 5-action episode and answer.
import type { Env } from '../../envs/env.ts';
import type { Episode } from '../../core/episode.ts';
import { drawModalities, generateEpisodes } from '../../envs/generate.ts';
import { Rng } from '../../core/rng.ts';
import type { ModelInput } from '../../models/types.ts';
import { episodeToModelInput, perceptionToModelInput, targetText } from '../../models/builtin/template.ts';
import type { PretrainConfig } from './config.ts';

type SkillKind = 'perception' | 'tracking';

export interface SupervisedExample {
  domain: string;
  kind: SkillKind;
  input: ModelInput;
  target: string;
  /** False for a partial trace: the target is the start of a longer completion, so no EOS follows it. */
  ends: boolean;
}

/** One episode drawn for (seed, label): the shared generator keeps it in the train split. */
function drawEpisode(
  env: Env,
  seed: string,
  actions: number,
  extra: Record<string, unknown>,
  split: 'train' | 'test' = 'train',
): Episode {
  return generateEpisodes(env, { n: 1, actions, split, seed, modality: 'text', extra })[0];
}

/**
 * Environment options for chess tracking windows: from the game start or from a random ply. With no actions the
 * start position is a single episode (whose fingerprint lies in one split only), so those windows are random plies.
 */
function chessExtra(rng: Rng, config: PretrainConfig, actions: number): Record<string, unknown> {
  return { offset: actions > 0 && rng.next() < config.chessStartShare ? 'start' : 'random' };
}

/** Most images in one perception example (the GRPO episodes have 5 actions; reading must find its label among them). */
export const MAX_PERCEPTION_IMAGES = 6;

/**
 * A perception example: the first 1..MAX_PERCEPTION_IMAGES actions of a (train) episode as images, one of them asked
 * for. A prefix of a longer episode rather than a short episode of its own: short shell episodes are so few that the
 * test split holds none of one action.
 */
export function perceptionExample(env: Env, seed: string, split: 'train' | 'test' = 'train'): SupervisedExample {
  const rng = new Rng(seed, 'perception');
  const extra = env.domain === 'chess' ? { offset: 'random' } : {};
  const episode = drawEpisode(env, seed, MAX_PERCEPTION_IMAGES, extra, split);
  // Half of the examples show one image (the first-stage probe, kept so that its reading skill is not lost), half 2-6.
  const shown = rng.next() < 0.5 ? 1 : 2 + rng.int(MAX_PERCEPTION_IMAGES - 1);
  const index = rng.int(shown);
  const images = Array.from({ length: shown }, (_, i) => env.renderAction(episode, i, env.imageSizes.model));
  const input = perceptionToModelInput(env.domain, images, index);
  return { domain: env.domain, kind: 'perception', input, target: episode.actions[index].text, ends: true };
}

/** The episode with each action shown as an image with probability `imageRatio` (one draw per action). */
function withRandomModalities(episode: Episode, imageRatio: number, rng: Rng): Episode {
  const modalities = drawModalities(rng, episode.actions.length, 'mixed', imageRatio);
  return { ...episode, actions: episode.actions.map((a, i) => ({ ...a, modality: modalities[i] })) };
}

/** A tracking example with `actions` text actions (whole), or a partial trace of a longer episode. */
export function trackingExample(
  env: Env,
  seed: string,
  actions: number,
  config: PretrainConfig,
  split: 'train' | 'test' = 'train',
): SupervisedExample {
  const rng = new Rng(seed, 'tracking-offset');
  const partial = config.maxTrackActions > 0 && rng.next() < config.partialTraceShare;
  const listed = partial
    ? config.maxTrackActions + 1 + rng.int(config.maxListedActions - config.maxTrackActions)
    : actions;
  const extra = env.domain === 'chess' ? chessExtra(rng, config, listed) : {};
  const drawn = drawEpisode(env, seed, listed, extra, split);
  if (!partial) {
    // Whole traces are text-only unless wholeImageRatio says otherwise (drawn only then, so that the default leaves
    // the examples of the shipped stages unchanged).
    const whole = config.wholeImageRatio > 0 ? withRandomModalities(drawn, config.wholeImageRatio, rng) : drawn;
    return {
      domain: env.domain,
      kind: 'tracking',
      input: episodeToModelInput(env, whole),
      target: targetText(env, whole),
      ends: true,
    };
  }
  // A partial trace: each listed action is an image with probability partialImageRatio (drawn after the number of
  // taught lines, so that with a ratio of 0 the examples are those of text-only partial traces).
  const taught = 1 + rng.int(config.maxTrackActions);
  const episode = withRandomModalities(drawn, config.partialImageRatio, rng);
  // The taught lines start at the trace's first line, or (partialStart 'any') after a given prefix of 0..T-1 lines,
  // which is then part of the prompt: the model learns to carry on a trace from any point.
  const target = targetText(env, episode);
  const lines = target
    .split('\n')
    .slice(0, -1)
    .map((line) => `${line}\n`);
  const input = episodeToModelInput(env, episode);
  // A share of them (partialEndShare, drawn only when positive so that a share of 0 leaves the examples of the shipped
  // stages unchanged) end the trace instead: all but the last `taught` lines are given, and the model writes those
  // lines and the answer. The model still tracks only 1..maxTrackActions actions itself, from a state the trace gives;
  // what it learns is to stop after the last listed action, however long the list.
  if (config.partialEndShare > 0 && rng.next() < config.partialEndShare) {
    const given = lines.slice(0, lines.length - taught).join('');
    input.push({ type: 'text', text: given });
    return { domain: env.domain, kind: 'tracking', input, target: target.slice(given.length), ends: true };
  }
  const start = config.partialStart === 'any' ? rng.int(lines.length) : 0;
  if (start > 0) input.push({ type: 'text', text: lines.slice(0, start).join('') });
  return {
    domain: env.domain,
    kind: 'tracking',
    input,
    target: lines.slice(start, start + taught).join(''),
    ends: false,
  };
}

/**
 * The batch of step `step`. A batch holds one (domain, skill) pair only: prompts are padded to the longest in the
 * batch, and a 30-token shell example padded to a 150-token chess one would waste most of the step. The pair is drawn
 * with probability domain weight × skill share.
 */
export function pretrainBatch(envs: Env[], config: PretrainConfig, step: number): SupervisedExample[] {
  const rng = new Rng(config.seed, 'pretrain-batch', step);
  const env = envs[rng.weighted(envs.map((e) => config.domainWeights[e.domain as 'chess' | 'shell'] ?? 1))];
  const perception = rng.next() < config.perceptionShare;
  return Array.from({ length: config.batchSize }, (_, i) => {
    const seed = `${config.seed}:${step}:${i}`;
    return perception
      ? perceptionExample(env, seed)
      : trackingExample(env, seed, rng.int(config.maxTrackActions + 1), config);
  });
}
