// Measures a base checkpoint on fixed test episodes (test split, fixed seed, greedy decoding): the two pretrained
// skills (perception: exact match of the read action; tracking of maxTrackActions text actions: mean reward) and the
// GRPO targets it was not trained on (5 actions from the game start, text and image), which are the "base" numbers
// GRPO runs are compared against.
import type { Env, Episode, Modality } from '../envs/types.ts';
import { generateEpisodes, withModality } from '../envs/generate.ts';
import { Rng } from '../core/rng.ts';
import { wilsonInterval } from '../core/stats.ts';
import type { BuiltinPolicy } from '../models/policy.ts';
import { episodeToModelInput, responseForScoring, targetText } from '../models/template.ts';
import { completionBudget, evaluateSplit } from './evaluate.ts';
import { chunks, sampleMany } from './rollout.ts';
import type { PretrainConfig } from './pretrain-config.ts';
import { perceptionExample } from './pretrain-data.ts';

export interface BaseMeasurement {
  domain: string;
  /** 'perception', 'tracking-<k>-text', 'target-<T>-<modality>'. */
  skill: string;
  n: number;
  accuracy: number;
  low: number | null;
  high: number | null;
}

/** Fixed seed of the measurement episodes, apart from the training seed. */
const MEASURE_SEED = 'base-measurement';
/** Actions in the GRPO target episodes (the trainer's default). */
export const TARGET_ACTIONS = 5;


function perceptionAccuracy(policy: BuiltinPolicy, env: Env, n: number): BaseMeasurement {
  const examples = Array.from({ length: n }, (_, i) => perceptionExample(env, `${MEASURE_SEED}:${i}`, 'test'));
  let correct = 0;
  for (const chunk of chunks(examples, 16)) {
    const groups = sampleMany(policy, chunk.map((ex) => policy.encode(ex.input)), 1, { temperature: 0, topP: 1, maxNewTokens: 12 }, new Rng(0));
    chunk.forEach((ex, i) => {
      if (groups[i][0].text.trim() === ex.target) correct++;
    });
  }
  const ci = wilsonInterval(correct, n);
  return { domain: env.domain, skill: 'perception', n, accuracy: correct / n, low: ci?.low ?? null, high: ci?.high ?? null };
}

function episodeAccuracy(policy: BuiltinPolicy, env: Env, episodes: Episode[], modality: Modality, skill: string): BaseMeasurement {
  const items = episodes.map((e) => withModality(e, modality)).map((episode) => ({
    episode,
    prompt: policy.encode(episodeToModelInput(env, episode)),
  }));
  const result = evaluateSplit(policy, env, items, modality, completionBudget(episodes.map((e) => policy.encodeTarget(targetText(env, e)).length)), (text) => responseForScoring(env, text));
  return { domain: env.domain, skill, n: result.n, accuracy: result.accuracy, low: result.low, high: result.high };
}

export function measureBase(policy: BuiltinPolicy, envs: Env[], config: PretrainConfig): BaseMeasurement[] {
  const out: BaseMeasurement[] = [];
  for (const env of envs) {
    out.push(perceptionAccuracy(policy, env, config.evalSize));
    const k = config.maxTrackActions;
    const tracking = generateEpisodes(env, { n: config.evalSize, actions: k, split: 'test', seed: MEASURE_SEED, modality: 'text', extra: env.domain === 'chess' ? { offset: 'random' } : {} });
    out.push(episodeAccuracy(policy, env, tracking, 'text', `tracking-${k}-text`));
    const targets = generateEpisodes(env, { n: config.evalSize, actions: TARGET_ACTIONS, split: 'test', seed: MEASURE_SEED, modality: 'text' });
    for (const modality of ['text', 'image'] as const) out.push(episodeAccuracy(policy, env, targets, modality, `target-${TARGET_ACTIONS}-${modality}`));
  }
  return out;
}
