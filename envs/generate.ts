// The shared episode generator: draws candidates from an environment, keeps those whose fingerprint belongs to the
// requested split (so train and test are disjoint by construction), assigns each action its modality, and gives every
// episode a stable id. Deterministic from the seed.
import { fingerprint, splitOf, type Split } from '../core/fingerprint.ts';
import { Rng } from '../core/rng.ts';
import { UserError } from '../core/errors.ts';
import type { Action, Episode, Modality, ModalitySetting } from '../core/episode.ts';
import type { Env } from './env.ts';

export interface GenerateOptions {
  n: number;
  actions: number;
  split: Split;
  seed: number | string;
  modality: ModalitySetting;
  /** Probability that an action is an image when modality is 'mixed'. */
  imageRatio?: number;
  extra?: Record<string, unknown>;
  /** Return the episodes made when the source runs out before n (at least one), instead of failing. */
  allowFewer?: boolean;
  /**
   * Skip episodes already drawn while the source has distinct ones left (`metrl generate`'s datasets). Off by default:
   * training and test splits keep the draws every existing run and seed was made with (evaluation picks its distinct
   * items itself, eval/selection.ts).
   */
  distinct?: boolean;
}

/** Draw the modality of each of `count` actions. */
export function drawModalities(rng: Rng, count: number, setting: ModalitySetting, imageRatio = 0.5): Modality[] {
  if (setting === 'text' || setting === 'image') return Array.from({ length: count }, () => setting);
  return Array.from({ length: count }, () => (rng.next() < imageRatio ? 'image' : 'text'));
}

/** The same episode with every action shown in one modality (used for the transfer modality). */
export function withModality(episode: Episode, modality: Modality): Episode {
  return { ...episode, actions: episode.actions.map((a) => ({ ...a, modality })) };
}

/** A text-only environment cannot show image actions: say so before generating anything. */
function assertModalitySupported(env: Env, setting: ModalitySetting): void {
  if (!env.modalities || setting === 'text') return;
  if (!env.modalities.includes('image')) {
    throw new UserError(`--modality ${setting}: the ${env.domain} domain has text actions only (use --modality text)`);
  }
}

/** How many candidates we may reject per episode asked for before concluding the source cannot supply the split. */
const MAX_REJECTIONS_PER_EPISODE = 200;

/**
 * Draws (outside the split, or of an episode already in it) since the last new distinct episode, as a share of the
 * rejection budget, after which the source is taken to have no further distinct episodes (shell with 0 actions has
 * three in all): from then on a split may repeat one. Half the budget is left for the repeats.
 */
const EXHAUSTED_SHARE = 0.5;

export function generateEpisodes(env: Env, options: GenerateOptions): Episode[] {
  const { n, split } = options;
  assertModalitySupported(env, options.modality);
  const sampleRng = new Rng(options.seed, env.domain, 'candidates', options.actions);
  const modalityRng = new Rng(options.seed, env.domain, 'modalities', split);
  const episodes: Episode[] = [];
  let rejected = 0;
  const seen = new Set<string>();
  let drawsSinceNew = 0;
  let exhausted = false;
  for (const candidate of env.candidates(sampleRng, { actions: options.actions, extra: options.extra ?? {}, split })) {
    const fp = fingerprint(
      env.domain,
      candidate.initialState,
      candidate.actionTexts.join(' '),
      candidate.fingerprintExtra ?? '',
    );
    const splitFp = candidate.splitKey !== undefined ? fingerprint(env.domain, 'split-key', candidate.splitKey) : fp;
    drawsSinceNew++;
    if (!exhausted && drawsSinceNew > EXHAUSTED_SHARE * MAX_REJECTIONS_PER_EPISODE * n) exhausted = true;
    if (splitOf(splitFp) !== split) {
      if (++rejected > MAX_REJECTIONS_PER_EPISODE * n) break;
      continue;
    }
    // A split holds distinct episodes while the source has them; it repeats one only once the source seems exhausted.
    if (options.distinct && seen.has(fp) && !exhausted) continue;
    if (!seen.has(fp)) drawsSinceNew = 0;
    seen.add(fp);
    const fixed = env.modalities?.length === 1 ? env.modalities[0] : null;
    const modalities = fixed
      ? candidate.actionTexts.map((): Modality => fixed)
      : drawModalities(modalityRng, candidate.actionTexts.length, options.modality, options.imageRatio);
    const actions: Action[] = candidate.actionTexts.map((text, i) => ({ text, modality: modalities[i] }));
    episodes.push({
      id: `${env.domain}-${split}-${String(episodes.length).padStart(5, '0')}-${fp.slice(0, 8)}`,
      domain: env.domain,
      split,
      initialState: candidate.initialState,
      actions,
      target: candidate.target,
      ...(candidate.question !== undefined ? { question: candidate.question } : {}),
      meta: candidate.meta ?? {},
    });
    if (episodes.length >= n) return episodes;
  }
  if (options.allowFewer && episodes.length > 0) return episodes;
  throw new UserError(
    `${env.domain}: could only make ${episodes.length} of ${n} ${split} episodes with ${options.actions} actions from this source`,
  );
}
