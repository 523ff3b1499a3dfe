// The built-in policy as the training loop needs it: the base checkpoint loaded with fresh LoRA adapters, episodes
// through the model's compact template with image actions rendered at the environment's model size, the answer cue
// put back in front of completions for scoring, and adapters saved and loaded in PEFT layout inside checkpoints.
import type { Env } from '../envs/env.ts';
import type { Episode } from '../core/episode.ts';
import type { EncodedPrompt } from '../models/types.ts';
import { Rng } from '../core/rng.ts';
import { UserError } from '../core/errors.ts';
import type { BuiltinPolicy } from '../models/policy.ts';
import { ADAPTER_FILES, loadAdapter, loadBaseCheckpoint, saveAdapter } from '../models/checkpoint.ts';
import { episodeToModelInput, responseForScoring, targetText } from '../models/template.ts';
import type { AdapterStore } from './checkpoint.ts';
import type { TrainConfig } from './config.ts';

export interface BuiltinTraining {
  policy: BuiltinPolicy;
  adapter: AdapterStore;
  encodeEpisode(episode: Episode): EncodedPrompt;
  responseOf(completionText: string): string;
  referenceTokens(episode: Episode): number;
}

/** Load the base from `checkpointDir` (UserError when missing, incomplete or of another architecture). */
export function builtinTraining(env: Env, checkpointDir: string, config: TrainConfig): BuiltinTraining {
  const policy = loadBaseCheckpoint(checkpointDir);
  policy.attachLora({ r: config.loraRank, alpha: config.loraAlpha }, new Rng(config.seed, 'lora-init'));
  const adapter: AdapterStore = {
    files: ADAPTER_FILES,
    save: (dir) => saveAdapter(policy, dir, { baseModel: checkpointDir }),
    load: (dir) => {
      const loaded = loadAdapter(policy, dir);
      if (loaded.r !== config.loraRank || loaded.alpha !== config.loraAlpha) {
        throw new UserError(`${dir}: adapter has r=${loaded.r}, alpha=${loaded.alpha} but the run's config says r=${config.loraRank}, alpha=${config.loraAlpha}`);
      }
    },
  };
  return {
    policy,
    adapter,
    encodeEpisode: (episode) => policy.encode(episodeToModelInput(env, episode)),
    responseOf: (completionText) => responseForScoring(env, completionText),
    referenceTokens: (episode) => policy.encodeTarget(targetText(env, episode)).length,
  };
}
