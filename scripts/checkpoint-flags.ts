// `--checkpoint BASE --adapter ADAPTER` and `--checkpoint ADAPTER [--base BASE]` name the same thing: a base model
// with a LoRA adapter on it (a PEFT folder, a run's checkpoints/step-N or a run folder). The library (models/load.ts)
// takes the second form; this maps the first onto it.
import { UserError } from '../core/errors.ts';

export interface CheckpointFlags {
  checkpoint?: string;
  base?: string;
  adapter?: string;
}

/** The checkpoint and base folders models/load.ts resolves, from either spelling of the flags. */
export function checkpointAndBase(flags: CheckpointFlags): { checkpoint?: string; base?: string } {
  if (flags.adapter === undefined) return { checkpoint: flags.checkpoint, base: flags.base };
  if (flags.base !== undefined)
    throw new UserError(
      '--adapter puts an adapter on --checkpoint; --base is the other spelling of the same, give one of them',
    );
  if (flags.checkpoint === undefined)
    throw new UserError('--adapter needs --checkpoint: the base model folder the adapter was trained on');
  return { checkpoint: flags.adapter, base: flags.checkpoint };
}
