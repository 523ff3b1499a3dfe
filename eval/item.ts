// Evaluating one item: ask the source (with retries), score the answer, and build its result row. A tracking item
// is one request; a perception item is one request scored by exact match on the action; a cascade item (Table 3) is
// one perception request per image action, then one tracking request on the episode with those actions replaced by
// the model's own transcriptions, scored against the true final state. Fatal failures propagate to stop the run;
// any other failure becomes a row with status 'error' that `--resume` retries.
import { Rng } from '../core/rng.ts';
import type { Env } from '../envs/env.ts';
import type { Episode } from '../core/episode.ts';
import type { Score } from '../core/score.ts';
import { RequestFailure, attemptsOf, withRetries, type RetryPolicy } from './retry.ts';
import { scoredResponse } from './compact.ts';
import { canonicalAction, cleanAnswer, parseAction, scorePerception } from './perception.ts';
import type { EvalItem } from './selection.ts';
import type { ItemRow, ModelSource, Query, SourceReply, TokenUsage, Transcription } from './types.ts';

export interface ItemContext {
  env: Env;
  source: ModelSource;
  retry: RetryPolicy;
  seed: number;
  /** Aborted when the run stops (fatal error or interrupt). */
  signal: AbortSignal;
  onRetry?: (item: EvalItem, failure: RequestFailure, delayMs: number) => void;
}

export async function evaluateItem(item: EvalItem, ctx: ItemContext): Promise<ItemRow> {
  const started = performance.now();
  const rng = new Rng(ctx.seed, 'backoff', item.id);
  let attempts = 0;
  let usage: TokenUsage | null = null;
  let finishReason: string | null = null;
  const ask = async (query: Query): Promise<SourceReply> => {
    try {
      const outcome = await withRetries(
        (signal) => ctx.source.complete(query, signal),
        ctx.retry,
        rng,
        ctx.signal,
        (f, d) => ctx.onRetry?.(item, f, d),
      );
      attempts += outcome.attempts;
      usage = addUsage(usage, outcome.value.usage);
      finishReason = outcome.value.finishReason;
      return outcome.value;
    } catch (error) {
      attempts += attemptsOf(error);
      throw error;
    }
  };
  const base = baseRow(item);
  try {
    const { response, score, transcriptions } = await answer(item, ctx.env, ask);
    return {
      ...base,
      response,
      reward: score.reward,
      valid: score.valid,
      prediction: score.prediction,
      metrics: score.metrics,
      ...(score.harness ? { harness: score.harness } : {}),
      status: 'ok',
      usage,
      finish_reason: finishReason,
      error: null,
      latency_ms: Math.round(performance.now() - started),
      attempts,
      ...(transcriptions ? { transcriptions } : {}),
    };
  } catch (error) {
    if (error instanceof RequestFailure && error.kind === 'fatal') throw error;
    const message = error instanceof Error ? error.message : String(error);
    return {
      ...base,
      status: 'error',
      error: message,
      status_code: error instanceof RequestFailure ? error.status : null,
      usage,
      latency_ms: Math.round(performance.now() - started),
      attempts,
    };
  }
}

async function answer(
  item: EvalItem,
  env: Env,
  ask: (q: Query) => Promise<SourceReply>,
): Promise<{ response: string; score: Score; transcriptions?: Transcription[] }> {
  const { setting, episode } = item;
  if (setting.task === 'perception') {
    const reply = await ask({ kind: 'perception', episode, index: item.actionIndex!, style: setting.prompt });
    return {
      response: reply.text,
      score: scorePerception(env, scoredResponse(setting.prompt, reply.text), item.target),
    };
  }
  let tracked: Episode = episode;
  let transcriptions: Transcription[] | undefined;
  if (setting.cascade) {
    transcriptions = [];
    const actions = episode.actions.slice();
    for (let index = 0; index < actions.length; index++) {
      if (actions[index].modality !== 'image') continue;
      const reply = await ask({ kind: 'perception', episode, index, style: setting.prompt });
      const predicted = parseAction(env, scoredResponse(setting.prompt, reply.text));
      const target = actions[index].text;
      transcriptions.push({
        index,
        response: reply.text,
        predicted,
        target,
        correct: predicted !== null && predicted === canonicalAction(env, target),
      });
      // An unreadable transcription is passed on as the model wrote it: tracking must then cope, as in the paper.
      actions[index] = { text: predicted ?? (cleanAnswer(reply.text).slice(0, 40) || '?'), modality: 'text' };
    }
    tracked = { ...episode, actions };
  }
  const reply = await ask({ kind: 'track', episode: tracked, style: setting.prompt, shots: item.shots });
  const score = env.score({
    target: item.target,
    response: scoredResponse(setting.prompt, reply.text, env),
    initialState: episode.initialState,
    meta: episode.meta,
  });
  return { response: reply.text, score, ...(transcriptions ? { transcriptions } : {}) };
}

function baseRow(item: EvalItem): Omit<ItemRow, 'status' | 'usage' | 'error' | 'latency_ms' | 'attempts'> {
  const s = item.setting;
  return {
    id: item.id,
    setting: item.settingKey,
    episode_id: item.episode.id,
    domain: s.domain,
    modality: s.modality,
    task: s.task,
    prompt: s.prompt,
    actions: s.actions,
    image_ratio: s.imageRatio,
    ...(item.actionIndex !== undefined ? { action_index: item.actionIndex } : {}),
    initial_state: item.episode.initialState,
    ...(Object.keys(item.episode.meta).length > 0 ? { meta: item.episode.meta } : {}),
    target: item.target,
    response: null,
    reward: null,
    valid: null,
    prediction: null,
    metrics: null,
  };
}

function addUsage(total: TokenUsage | null, more: TokenUsage | null): TokenUsage | null {
  if (!more) return total;
  if (!total) return { ...more };
  return {
    prompt_tokens: total.prompt_tokens + more.prompt_tokens,
    completion_tokens: total.completion_tokens + more.completion_tokens,
    total_tokens: total.total_tokens + more.total_tokens,
  };
}
