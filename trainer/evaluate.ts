// The periodic evaluation of a training run: greedy completions on the fixed test split, scored by the environment,
// summarised as accuracy (mean reward, the paper's measure) with its 95% interval, done once for the trained
// modality and once for the transfer modality (the same episodes with every action shown the other way).
import type { Env, Episode, Modality } from '../envs/types.ts';
import type { EncodedPrompt, Policy } from '../models/types.ts';
import { Rng } from '../core/rng.ts';
import { accuracyInterval } from './interval.ts';

export interface PreparedEpisode {
  episode: Episode;
  prompt: EncodedPrompt;
}

export interface SplitEvaluation {
  modality: Modality;
  n: number;
  accuracy: number;
  low: number | null;
  high: number | null;
  exactRate: number;
  validRate: number;
  seconds: number;
  /** Generated tokens, for throughput. */
  tokens: number;
}

/** Greedy-decode every prepared episode and score it. */
export function evaluateSplit(policy: Policy, env: Env, items: PreparedEpisode[], modality: Modality, maxNewTokens: number): SplitEvaluation {
  const start = performance.now();
  const rng = new Rng(0, 'greedy'); // unused by greedy decoding, but the contract asks for one
  const rewards: number[] = [];
  const clusters: string[] = [];
  let exact = 0;
  let valid = 0;
  let tokens = 0;
  for (const { episode, prompt } of items) {
    const [completion] = policy.sampleGroup(prompt, 1, { temperature: 0, topP: 1, maxNewTokens }, rng);
    const score = env.score({ target: episode.target, response: completion.text, initialState: episode.initialState, meta: episode.meta });
    rewards.push(score.reward);
    clusters.push(episode.id);
    if (score.reward === 1) exact++;
    if (score.valid) valid++;
    tokens += completion.tokens.length;
  }
  const n = rewards.length;
  const accuracy = n > 0 ? rewards.reduce((s, r) => s + r, 0) / n : 0;
  const interval = accuracyInterval(env.intervalMethod, rewards, clusters);
  return {
    modality,
    n,
    accuracy,
    low: interval?.low ?? null,
    high: interval?.high ?? null,
    exactRate: n > 0 ? exact / n : 0,
    validRate: n > 0 ? valid / n : 0,
    seconds: (performance.now() - start) / 1000,
    tokens,
  };
}
