// The paper's baselines as a model source (`--model baseline:game-start | baseline:random`). Every environment gives
// its own baseline answers (Env.baselineAnswer, Env.randomPerceptionAnswer; envs/baseline.ts); this source only asks
// the episode's environment, with a generator seeded per item, and refuses what a baseline cannot answer.
import { Rng } from '../../core/rng.ts';
import { UserError } from '../../core/errors.ts';
import { getEnv } from '../../envs/registry.ts';
import type { BaselineName } from '../../envs/baseline.ts';
import { finalAnswerResponse } from '../../rewards/final-answer.ts';
import type { ModelSource, Query, SourceReply } from '../types.ts';

export function baselineSource(name: BaselineName, seed: number): ModelSource {
  return {
    label: `baseline:${name}`,
    async complete(query: Query): Promise<SourceReply> {
      const domain = query.episode.domain;
      const rng = new Rng(seed, 'baseline', name, query.episode.id, query.kind === 'perception' ? query.index : -1);
      const env = await getEnv(domain);
      if (query.kind === 'perception') {
        if (!env.randomPerceptionAnswer) throw new UserError(`baseline:${name} is not defined for ${domain}`);
        if (name === 'game-start')
          throw new UserError(
            'baseline:game-start predicts a state; it has no answer to the perception task (use baseline:random)',
          );
        return { text: env.randomPerceptionAnswer(query.episode, query.index, rng), usage: null, finishReason: 'stop' };
      }
      if (!env.baselineAnswer) throw new UserError(`baseline:${name} is not defined for ${domain}`);
      return {
        text: finalAnswerResponse(env.baselineAnswer(query.episode, name, rng)),
        usage: null,
        finishReason: 'stop',
      };
    },
  };
}
