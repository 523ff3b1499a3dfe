// `metrl evaluate`: one harness for a local checkpoint, a hosted chat model or a baseline, on the same episodes with
// the same scoring. Wiring only: flags are validated here and mapped onto eval/job.ts's EvaluateOptions.
import type { CommandModule } from 'yargs';
import { z } from 'zod';
import { ENV_FLAGS, envFlagOptions, envFlagShape } from '../../envs/cli-options.ts';
import type { EvaluateOptions } from '../../eval/job.ts';
import { TOKEN_PARAMETERS } from '../../eval/types.ts';
import { handler } from '../command.ts';
import { threadsFlag } from '../threads-flag.ts';
import { checkpointAndBase } from '../checkpoint-flags.ts';
import { DEFAULT_ENGINE_HELP, ENGINES } from '../../models/engine.ts';
import { DEVICES } from '../../models/onnx/device.ts';
import { datasetOnlyDomains, generatedDomains } from '../../envs/registry.ts';

const positiveInt = z.coerce.number().int().positive();

const schema = z.object({
  checkpoint: z.string().min(1).optional(),
  base: z.string().min(1).optional(),
  adapter: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  provider: z.string().min(1).optional(),
  endpoint: z.string().min(1).optional(),
  'api-key-env': z.string().min(1).optional(),
  domain: z.string().min(1),
  prompt: z.string().min(1).optional(),
  shots: z.coerce.number().int().min(1).max(50).optional(),
  modality: z.string().min(1).optional(),
  'image-ratio': z.union([z.string(), z.number()]).optional(),
  actions: z.union([z.string(), z.number()]),
  n: positiveInt.max(100_000, 'at most 100,000 items per setting').optional(),
  seed: z.coerce.number().int().min(0),
  task: z.enum(['track', 'perception']),
  cascade: z.boolean(),
  temperature: z.union([z.literal('omit').transform(() => null), z.coerce.number().min(0).max(2)], {
    error: 'must be a number from 0 to 2, or omit',
  }),
  'max-tokens': positiveInt.max(131072),
  'token-parameter': z.enum(TOKEN_PARAMETERS, { error: `expected one of ${TOKEN_PARAMETERS.join(', ')}` }),
  'reasoning-effort': z.string().min(1).optional(),
  workers: positiveInt.max(256),
  timeout: z.coerce.number().positive().max(3600),
  retries: z.coerce.number().int().min(0).max(20),
  backoff: z.coerce.number().positive().max(600),
  resume: z.boolean(),
  limit: positiveInt.optional(),
  out: z.string().min(1).optional(),
  games: z.string().min(1).optional(),
  offset: z.enum(['start', 'random']).optional(),
  ...envFlagShape,
  quiet: z.boolean(),
  tables: z.array(z.string().min(1)).min(1).optional(),
  dataset: z.string().min(1).optional(),
  'metbench-files': z.boolean(),
  engine: z.enum(ENGINES, { error: `unknown engine; expected one of ${ENGINES.join(', ')}` }).optional(),
  threads: threadsFlag(true),
  device: z.enum(DEVICES, { error: `unknown device; expected one of ${DEVICES.join(', ')}` }).optional(),
});

type EvaluateFlags = z.infer<typeof schema>;

function evaluateOptions(flags: EvaluateFlags): EvaluateOptions {
  return {
    source: {
      ...checkpointAndBase(flags),
      model: flags.model,
      provider: flags.provider,
      endpoint: flags.endpoint,
      apiKeyEnv: flags['api-key-env'],
    },
    domain: flags.domain,
    modality: flags.modality,
    imageRatio: flags['image-ratio'],
    actions: flags.actions,
    prompt: flags.prompt,
    shots: flags.shots,
    task: flags.task,
    cascade: flags.cascade,
    n: flags.n,
    seed: flags.seed,
    temperature: flags.temperature,
    maxTokens: flags['max-tokens'],
    tokenParameter: flags['token-parameter'],
    reasoningEffort: flags['reasoning-effort'] ?? null,
    workers: flags.workers,
    timeoutSeconds: flags.timeout,
    retries: flags.retries,
    backoffSeconds: flags.backoff,
    resume: flags.resume,
    limit: flags.limit,
    out: flags.out,
    games: flags.games,
    offset: flags.offset,
    envFlags: Object.fromEntries(ENV_FLAGS.map(({ flag }) => [flag, flags[flag]])),
    quiet: flags.quiet,
    tables: flags.tables,
    dataset: flags.dataset,
    metbenchFiles: flags['metbench-files'],
    engine: flags.engine,
    threads: flags.threads,
    device: flags.device,
  };
}

const command: CommandModule = {
  command: 'evaluate',
  describe:
    'Evaluate a checkpoint, a hosted chat model or a baseline on MET-Bench settings (tables, sweeps, perception, cascade)',
  builder: (y) =>
    y
      .option('checkpoint', {
        type: 'string',
        describe:
          'a model run in process: a base checkpoint (built-in or Hugging Face folder), LoRA adapter or training-run folder (greedy by default)',
      })
      .option('base', {
        type: 'string',
        describe: 'base checkpoint under a --checkpoint adapter (default: the one it names, else the shipped base)',
      })
      .option('adapter', {
        type: 'string',
        describe: 'LoRA adapter (PEFT folder, run folder or run/checkpoints/step-N) on the --checkpoint base',
      })
      .option('model', {
        type: 'string',
        describe: 'hosted model id (with --provider or --endpoint), or baseline:game-start | baseline:random',
      })
      .option('provider', {
        type: 'string',
        describe: 'Hugging Face Inference Provider (e.g. together, nebius, auto); key from HF_TOKEN',
      })
      .option('endpoint', {
        type: 'string',
        describe: 'OpenAI-compatible endpoint URL (vLLM, TGI, llama.cpp, metrl serve), e.g. http://127.0.0.1:8000/v1',
      })
      .option('api-key-env', {
        type: 'string',
        describe: 'name of the environment variable holding the API key (provider default: HF_TOKEN)',
      })
      .option('domain', {
        type: 'string',
        default: 'chess',
        describe: `${generatedDomains().join(' | ')} (a comma list evaluates several); ${datasetOnlyDomains().join(', ')} from --dataset`,
      })
      .option('prompt', {
        type: 'string',
        describe:
          "zero-shot | few-shot | cot | fen-trace (chess) | direct | state-tracking | stp (mcst) | compact (the built-in model's layout); a comma list; default zero-shot (cot for minecraft), compact for a built-in --checkpoint",
      })
      .option('shots', { type: 'number', describe: 'few-shot examples from the train split (default 5)' })
      .option('modality', {
        type: 'string',
        describe:
          'text | image | mixed (a comma list); default text (image for --task perception, mixed with --image-ratio)',
      })
      .option('image-ratio', {
        type: 'string',
        describe: 'share of image actions with --modality mixed; a comma list is the Figure 6 sweep',
      })
      .option('actions', {
        type: 'string',
        default: '10',
        describe: 'actions per episode; a comma list is a length sweep (Figures 3-4), e.g. 0,5,10,20,50,100',
      })
      .option('n', {
        type: 'number',
        describe:
          'items per setting (episodes; image actions for --task perception); default 100, 500 for an official MET-Bench --dataset',
      })
      .option('seed', { type: 'number', default: 0, describe: 'episode selection seed' })
      .option('task', {
        type: 'string',
        default: 'track',
        describe: 'track (final state) | perception (one image → its action, Table 4)',
      })
      .option('cascade', {
        type: 'boolean',
        default: false,
        describe: 'transcribe each image action first, then track on text (Table 3)',
      })
      .option('temperature', {
        type: 'string',
        default: '0',
        describe: 'sampling temperature 0-2 (the paper uses 0), or omit: send none (reasoning models refuse one)',
      })
      .option('max-tokens', {
        type: 'number',
        default: 4096,
        describe: "maximum tokens per answer (the harness's 4096)",
      })
      .option('token-parameter', {
        type: 'string',
        default: 'max_completion_tokens',
        describe: 'request field for --max-tokens: max_completion_tokens (as the harness) | max_tokens (older servers)',
      })
      .option('reasoning-effort', {
        type: 'string',
        describe: 'sent as reasoning_effort (e.g. low, medium, high) to reasoning models; default: not sent',
      })
      .option('workers', { type: 'number', default: 4, describe: 'requests in flight' })
      .option('timeout', { type: 'number', default: 120, describe: 'seconds per request before it is retried' })
      .option('retries', {
        type: 'number',
        default: 6,
        describe: 'retries per request on 429, 5xx, timeouts and dropped connections',
      })
      .option('backoff', {
        type: 'number',
        default: 1,
        describe: 'first retry delay in seconds (doubles each time; Retry-After wins)',
      })
      .option('resume', {
        type: 'boolean',
        default: false,
        describe: 'continue the run in --out: reuse finished items, retry failed ones',
      })
      .option('limit', {
        type: 'number',
        describe: 'evaluate only the first N items of each setting (a quick check; --resume completes later)',
      })
      .option('out', { type: 'string', describe: 'output folder (default runs/eval-<model>-<time>)' })
      .option('games', { type: 'string', describe: 'chess: PGN or UCI games file (default: the built-in generator)' })
      .option('offset', {
        type: 'string',
        describe:
          'chess: episodes start at the game start (default, as the paper) or at a random ply (needed for many short episodes)',
      })
      .option('dataset', {
        type: 'string',
        describe:
          'evaluate the rows of a folder `metrl generate` wrote (its domain and action count; --n caps the rows), or an official MET-Bench set: a local copy of its parquet shards or hf://vanyacohen/MET-Bench-Chess[@revision] (-Shell, -Minecraft)',
      })
      .option('metbench-files', {
        type: 'boolean',
        default: false,
        describe:
          'also write OUT/metbench/: the run as a MET-Bench harness run folder (its <domain>-<modality>.jsonl rows and summary.json); one setting per domain and modality',
      })
      .option('engine', {
        type: 'string',
        describe: `inference engine for --checkpoint: ${ENGINES.join(' | ')} (ort: ONNX Runtime; ${DEFAULT_ENGINE_HELP})`,
      })
      .option('threads', {
        type: 'number',
        describe:
          'cores ONNX Runtime uses, with --engine ort: N one-thread sessions for the built-in model on the CPU, else N intra-op threads (default: every core)',
      })
      .option('device', {
        type: 'string',
        describe: `ONNX Runtime execution provider, with --engine ort: ${DEVICES.join(' | ')} (default cpu)`,
      })
      .options(envFlagOptions())
      .option('quiet', { type: 'boolean', default: false, describe: 'no progress on stderr' })
      .option('tables', {
        type: 'string',
        array: true,
        describe:
          'evaluate nothing: print one table from these run folders (models side by side, e.g. Table 5); --out FILE writes it',
      })
      .example('$0 evaluate --model baseline:game-start --domain chess --modality text,image', 'Table 1 baseline row')
      .example(
        '$0 evaluate --model google/gemma-3-27b-it --provider nebius --domain shell --modality text,image --prompt zero-shot,few-shot,cot',
        'Table 2 for one model',
      )
      .example(
        '$0 evaluate --model m --endpoint http://127.0.0.1:8000/v1 --domain shell --prompt cot --actions 0,5,10,20',
        'length sweep',
      )
      .example(
        '$0 evaluate --checkpoint runs/train-shell --domain shell --modality text,image',
        'a trained checkpoint, both modalities',
      )
      .example('$0 evaluate --tables runs/eval-base runs/eval-grpo --out table5.md', 'several runs in one table'),
  // The job is imported on use: listing commands must not load the HTTP client, sharp or tfjs.
  handler: handler(schema, async (flags) => (await import('../../eval/job.ts')).evaluate(evaluateOptions(flags))),
};

export default command;
