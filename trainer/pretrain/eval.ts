// Measures a base checkpoint on fixed test episodes (test split, fixed seed, greedy decoding): the two pretrained
// skills (perception: exact match of the read action; tracking of maxTrackActions text actions: mean reward) and the
// GRPO targets it was not trained on (5 actions from the game start, text and image), which are the "base" numbers
// GRPO runs are compared against. On the targets, the trace lines are also counted (trainer/pretrain/trace-lines.ts): the share
// of the lines written, of the actions copied from the list and of the states on track.
import type { Env } from '../../envs/env.ts';
import type { Episode, Modality } from '../../core/episode.ts';
import { generateEpisodes, withModality } from '../../envs/generate.ts';
import { Rng } from '../../core/rng.ts';
import { wilsonInterval } from '../../core/stats.ts';
import type { BuiltinPolicy } from '../../models/builtin/policy.ts';
import { episodeToModelInput, responseForScoring, targetText } from '../../models/builtin/template.ts';
import { completionBudget, evaluateSplit } from '../periodic-eval.ts';
import { chunks } from '../chunks.ts';
import type { PretrainConfig } from './config.ts';
import { perceptionExample } from './data.ts';
import { addTraceLineCounts, traceLineCounts, type TraceLineCounts } from './trace-lines.ts';

export interface BaseMeasurement {
  domain: string;
  /**
   * 'perception', 'tracking-<k>-text', 'target-<T>-<modality>', and on the targets' traces 'lines-written-',
   * 'lines-action-' and 'lines-state-<T>-<modality>' (shares of the T·n expected lines; lines of one trace are not
   * independent, so their interval is narrower than it should be).
   */
  skill: string;
  n: number;
  accuracy: number;
  low: number | null;
  high: number | null;
}

/** Fixed seed of the measurement episodes, apart from the training seed. */
const MEASURE_SEED = 'base-measurement';
/** Actions in the GRPO target episodes (the trainer's default). */
const TARGET_ACTIONS = 5;

/** A share (count of n) with its Wilson interval. */
function share(domain: string, skill: string, count: number, n: number): BaseMeasurement {
  const ci = wilsonInterval(count, n);
  return { domain, skill, n, accuracy: n > 0 ? count / n : 0, low: ci?.low ?? null, high: ci?.high ?? null };
}

function perceptionAccuracy(policy: BuiltinPolicy, env: Env, n: number): BaseMeasurement {
  const examples = Array.from({ length: n }, (_, i) => perceptionExample(env, `${MEASURE_SEED}:${i}`, 'test'));
  let correct = 0;
  for (const chunk of chunks(examples, 16)) {
    const groups = policy.sampleGroups(
      chunk.map((ex) => policy.encode(ex.input)),
      1,
      { temperature: 0, topP: 1, maxNewTokens: 12 },
      new Rng(0),
    );
    chunk.forEach((ex, i) => {
      if (groups[i][0].text.trim() === ex.target) correct++;
    });
  }
  return share(env.domain, 'perception', correct, n);
}

/** Accuracy on the episodes (`target-<T>-<modality>`); with countLines, also the trace-line shares `lines-*-<T>-<modality>`. */
function episodeAccuracy(
  policy: BuiltinPolicy,
  env: Env,
  episodes: Episode[],
  modality: Modality,
  skill: string,
  countLines = false,
): BaseMeasurement[] {
  const items = episodes
    .map((e) => withModality(e, modality))
    .map((episode) => ({
      episode,
      prompt: policy.encode(episodeToModelInput(env, episode)),
    }));
  const result = evaluateSplit(
    policy,
    env,
    items,
    modality,
    completionBudget(episodes.map((e) => policy.encodeTarget(targetText(env, e)).length)),
    (text) => responseForScoring(env, text),
  );
  const out: BaseMeasurement[] = [
    { domain: env.domain, skill, n: result.n, accuracy: result.accuracy, low: result.low, high: result.high },
  ];
  if (countLines && env.traceStates) {
    const lines = skill.replace(/^target-/, '');
    const zero: TraceLineCounts = { expected: 0, written: 0, actionCopied: 0, stateCorrect: 0 };
    const total = items.reduce(
      (sum, item, i) => addTraceLineCounts(sum, traceLineCounts(env, item.episode, result.completions[i])),
      zero,
    );
    out.push(share(env.domain, `lines-written-${lines}`, total.written, total.expected));
    out.push(share(env.domain, `lines-action-${lines}`, total.actionCopied, total.expected));
    out.push(share(env.domain, `lines-state-${lines}`, total.stateCorrect, total.expected));
  }
  return out;
}

export function measureBase(policy: BuiltinPolicy, envs: Env[], config: PretrainConfig): BaseMeasurement[] {
  const out: BaseMeasurement[] = [];
  for (const env of envs) {
    out.push(perceptionAccuracy(policy, env, config.evalSize));
    const k = config.maxTrackActions;
    const tracking = generateEpisodes(env, {
      n: config.evalSize,
      actions: k,
      split: 'test',
      seed: MEASURE_SEED,
      modality: 'text',
      extra: env.domain === 'chess' ? { offset: 'random' } : {},
    });
    out.push(...episodeAccuracy(policy, env, tracking, 'text', `tracking-${k}-text`));
    const targets = generateEpisodes(env, {
      n: config.evalSize,
      actions: TARGET_ACTIONS,
      split: 'test',
      seed: MEASURE_SEED,
      modality: 'text',
    });
    for (const modality of ['text', 'image'] as const) {
      out.push(...episodeAccuracy(policy, env, targets, modality, `target-${TARGET_ACTIONS}-${modality}`, true));
    }
  }
  return out;
}
