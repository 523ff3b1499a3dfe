// The policy a run trains: a base checkpoint of any architecture with fresh LoRA adapters, or an
// adapter folder trained on from its weights: the `policy` and `baseModel` of a TrainingSetup.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Policy } from '../../models/policy.ts';
import { loadBaseModel } from '../../models/registry.ts';
import { resolveCheckpoint } from '../../models/load.ts';
import { Rng } from '../../core/rng.ts';
import { UserError } from '../../core/errors.ts';
import type { TrainConfig } from '../config.ts';

/**
 * The base checkpoint in `baseModel` (any architecture in models/registry.ts) with the fresh LoRA adapters a run
 * trains, seeded from the run's seed: the `policy` and `baseModel` of a TrainingSetup.
 */
export async function loadTrainingPolicy(
  checkpoint: string,
  config: TrainConfig,
): Promise<{ policy: Policy; baseModel: string }> {
  // A base folder gets fresh adapters; an adapter folder (PEFT, or a run's checkpoint) is trained on from its weights,
  // on the base it names, which stays the reference policy.
  const where = existsSync(join(checkpoint, 'adapter_config.json'))
    ? resolveCheckpoint(checkpoint)
    : { base: checkpoint, adapter: null };
  // ONNX Runtime reads a Hugging Face checkpoint's weights from host arrays (models/policy.ts LoadOptions).
  const policy = await loadBaseModel(where.base, { hostWeights: config.engine === 'ort' });
  if (where.adapter) {
    const loaded = policy.loadAdapter(where.adapter);
    if (loaded.r !== config.loraRank || loaded.alpha !== config.loraAlpha) {
      policy.dispose();
      throw new UserError(
        `${where.adapter}: adapter has r=${loaded.r}, alpha=${loaded.alpha}; train it with --lora-rank ${loaded.r} --lora-alpha ${loaded.alpha}`,
      );
    }
    return { policy, baseModel: where.base };
  }
  // --lora-targets q,k,v and --lora-targets q k v both work: each value may hold a comma list.
  const targets = config.loraTargets
    ?.flatMap((t) => t.split(','))
    .map((t) => t.trim())
    .filter((t) => t !== '');
  policy.attachLora(
    { r: config.loraRank, alpha: config.loraAlpha, ...(targets ? { targets } : {}) },
    new Rng(config.seed, 'lora-init'),
  );
  return { policy, baseModel: where.base };
}
