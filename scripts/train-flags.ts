// `metrl train`'s flags: the run's own (domain, modality, run folder, checkpoint, dataset, ONNX
// Runtime) and the training config's, generated from TrainConfigSchema; the zod schema that validates them and the
// yargs options that --help shows.
import type { Argv } from 'yargs';
import { z } from 'zod';
import { flagOptions, flagShape, schemaFlags } from './schema-flags.ts';
import { DEVICES } from '../models/onnx/device.ts';
import { TrainConfigSchema } from '../trainer/config.ts';
import { threadsFlag } from './threads-flag.ts';
import { generatedDomains } from '../envs/registry.ts';

/** The training config's flags, generated from TrainConfigSchema's descriptions (scripts/schema-flags.ts). */
export const CONFIG_FLAGS = schemaFlags(TrainConfigSchema);

export const TrainFlagsSchema = z.object({
  domain: z.string().min(1).optional(),
  modality: z.enum(['text', 'image']).optional(),
  out: z.string().min(1).optional(),
  checkpoint: z.string().min(1).optional(),
  config: z.string().min(1).optional(),
  resume: z.boolean(),
  backend: z.string().min(1).optional(),
  games: z.string().min(1).optional(),
  dataset: z.string().min(1).optional(),
  offset: z.enum(['start', 'random']).optional(),
  'chess-answer': z.enum(['reference', 'lenient']).optional(),
  quiet: z.boolean(),
  threads: threadsFlag(false),
  device: z.enum(DEVICES, { error: `unknown device; expected one of ${DEVICES.join(', ')}` }).optional(),
  ...flagShape(CONFIG_FLAGS),
});
export type TrainFlags = z.infer<typeof TrainFlagsSchema> & Record<string, unknown>;

const configFlagOptions = flagOptions(CONFIG_FLAGS, 'Training config (also settable in --config FILE):');

/** The flags as --help lists them, with the training config's under a heading of their own. */
export function trainFlagOptions(y: Argv) {
  return y
    .option('domain', {
      type: 'string',
      describe: `${generatedDomains().join(' | ')} (with --dataset: the folder's or MET-Bench set's, or the one that scores chat rows)`,
    })
    .option('modality', {
      type: 'string',
      describe:
        'text | image: the modality trained on (the other is evaluated as transfer; with --dataset: what its rows show)',
    })
    .option('out', { type: 'string', describe: 'run folder (default runs/<domain>-<modality>-<timestamp>)' })
    .option('checkpoint', {
      type: 'string',
      describe:
        "checkpoint to train: a base folder (the built-in model or a Hugging Face save_pretrained folder) that gets fresh LoRA adapters, or an adapter folder (PEFT, or a run's checkpoints/step-N) trained on from its weights (default checkpoints/base)",
    })
    .option('config', { type: 'string', describe: 'JSON file of training config fields (flags override it)' })
    .option('resume', {
      type: 'boolean',
      default: false,
      describe: 'continue the run in --out from its latest checkpoint',
    })
    .option('backend', {
      type: 'string',
      describe: 'tfjs backend: node-gpu | node | wasm | cpu (default: the fastest that loads)',
    })
    .option('games', { type: 'string', describe: 'chess: PGN or UCI games file (default: the built-in generator)' })
    .option('offset', { type: 'string', describe: 'chess: start | random ply offset into each game' })
    .option('chess-answer', {
      type: 'string',
      describe:
        "chess: reference (default: the MET-Bench harness's parsing) | lenient (a placement or short FEN and a bare FEN earn credit too; recorded in config.json)",
    })
    .option('dataset', {
      type: 'string',
      describe:
        'train on rows you bring instead of generated episodes: a folder `metrl generate` wrote (metadata.jsonl + images), a JSONL of chat rows {messages, target, split?}, or a MET-Bench set with a train split (parquet shards or hf://owner/name@revision)',
    })
    .option('quiet', { type: 'boolean', default: false, describe: 'no progress output' })
    .option('threads', {
      type: 'number',
      describe:
        'cores ONNX Runtime uses, with --engine ort: N one-thread sessions for the built-in model on the CPU, else N intra-op threads (default: every core)',
    })
    .option('device', {
      type: 'string',
      describe: `ONNX Runtime execution provider, with --engine ort: ${DEVICES.join(' | ')} (default cpu)`,
    })
    .options(configFlagOptions);
}
