// `metrl serve --checkpoint DIR`: the built-in policy behind an OpenAI-compatible HTTP endpoint (chat completions and
// the model list), bound to 127.0.0.1 unless told otherwise. Wiring only: eval/serve/ holds the server and engine.
import type { CommandModule } from 'yargs';
import { z } from 'zod';
import type { ServeOptions } from '../../eval/serve/serve.ts';
import { handler } from '../command.ts';
import { threadsFlag } from '../threads-flag.ts';
import { checkpointAndBase } from '../checkpoint-flags.ts';
import { DEFAULT_ENGINE_HELP, ENGINES } from '../../models/engine.ts';
import { DEVICES } from '../../models/onnx/device.ts';
import { LOGPROBS_MODES } from '../../eval/serve/token-engine.ts';
import { DEFAULT_MAX_REQUEST_TOKENS } from '../../eval/serve/server.ts';

const schema = z.object({
  checkpoint: z.string().min(1),
  base: z.string().min(1).optional(),
  adapter: z.string().min(1).optional(),
  host: z.string().min(1),
  port: z.coerce.number().int().min(0).max(65535),
  'model-id': z.string().min(1).optional(),
  seed: z.coerce.number().int().min(0),
  backend: z.string().optional(),
  engine: z.enum(ENGINES, { error: `unknown engine; expected one of ${ENGINES.join(', ')}` }).optional(),
  threads: threadsFlag(true),
  device: z.enum(DEVICES, { error: `unknown device; expected one of ${DEVICES.join(', ')}` }).optional(),
  'enable-lora': z.boolean(),
  'logprobs-mode': z.enum(LOGPROBS_MODES, {
    error: `unknown logprobs mode; expected one of ${LOGPROBS_MODES.join(', ')}`,
  }),
  'max-request-tokens': z.coerce.number().int().positive().max(10_000_000),
});

type ServeFlags = z.infer<typeof schema>;

function serveOptions(flags: ServeFlags): ServeOptions {
  const { checkpoint, base } = checkpointAndBase(flags);
  return {
    checkpoint: checkpoint!,
    base,
    host: flags.host,
    port: flags.port,
    modelId: flags['model-id'],
    seed: flags.seed,
    backend: flags.backend,
    engine: flags.engine,
    threads: flags.threads,
    device: flags.device,
    enableLora: flags['enable-lora'],
    logprobsMode: flags['logprobs-mode'],
    maxRequestTokens: flags['max-request-tokens'],
  };
}

/**
 * What the built-in model can read, for the help: it answers its own compact layout (not English questions) and reads
 * only its own 64-px renderings of actions; anything else gets gibberish, so other image sizes are refused (400).
 */
const BUILTIN_READS = [
  'The built-in model answers its own compact layout, not plain-English chat: send what `metrl evaluate --prompt compact` sends,',
  'e.g. {"messages":[{"role":"user","content":"shell\\n1\\nA: 1 swap 2\\nB: 2 swap 3\\ntrace\\nstart -> 1\\n"}]}',
  "(domain, initial state, one labelled line per action, then the trace cue). Image actions must be metrl's own 64×64",
  'renderings (metrl generate --image-size 64); images of any other size get a 400, since resized pictures are misread.',
].join(' ');

const command: CommandModule = {
  command: 'serve',
  describe:
    'Serve a checkpoint (the built-in policy or a Hugging Face model) as an OpenAI-compatible /v1/chat/completions endpoint',
  builder: (y) =>
    y
      .option('checkpoint', {
        type: 'string',
        demandOption: true,
        describe: 'base checkpoint (built-in or Hugging Face folder), LoRA adapter or training-run folder',
      })
      .option('base', {
        type: 'string',
        describe: 'base checkpoint under an adapter (default: the one it names, else the shipped base)',
      })
      .option('adapter', {
        type: 'string',
        describe: 'LoRA adapter (PEFT folder, run folder or run/checkpoints/step-N) on the --checkpoint base',
      })
      .option('host', {
        type: 'string',
        default: '127.0.0.1',
        describe: 'address to bind (0.0.0.0 exposes it to the network)',
      })
      .option('port', { type: 'number', default: 8000, describe: 'port (0 picks a free one)' })
      .option('model-id', {
        type: 'string',
        describe: 'model name reported by /v1/models (default: the checkpoint folder name)',
      })
      .option('seed', { type: 'number', default: 0, describe: 'seed of the sampler for requests that do not give one' })
      .option('backend', {
        type: 'string',
        describe: 'tfjs backend: node-gpu | node | wasm | cpu (default: the fastest that loads)',
      })
      .option('engine', {
        type: 'string',
        describe: `inference engine: ${ENGINES.join(' | ')} (ort: ONNX Runtime; ${DEFAULT_ENGINE_HELP})`,
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
      .option('enable-lora', {
        type: 'boolean',
        default: false,
        describe:
          "vLLM's --enable-lora: POST /v1/load_lora_adapter {lora_name, lora_path, load_inplace} and /v1/unload_lora_adapter load PEFT adapters at run time (a rollout server for metrl train --rollout-server)",
      })
      .option('logprobs-mode', {
        type: 'string',
        default: 'raw_logprobs',
        describe:
          "vLLM's --logprobs-mode for /v1/completions: raw_logprobs (temperature 1) | processed_logprobs (at the request's temperature, what the trainer's importance-sampling correction compares with)",
      })
      .option('max-request-tokens', {
        type: 'number',
        default: DEFAULT_MAX_REQUEST_TOKENS,
        describe:
          'tokens one request may ask for, n × max_tokens (a request past it gets a 400): one request cannot hold the server for minutes',
      })
      .example(
        '$0 serve --checkpoint checkpoints/base --port 8001 --enable-lora --logprobs-mode processed_logprobs',
        'a rollout server: then metrl train --rollout-server http://127.0.0.1:8001',
      )
      .example(
        '$0 serve --checkpoint runs/train-shell-text',
        'then: metrl evaluate --model train-shell-text --endpoint http://127.0.0.1:8000/v1 --prompt compact',
      )
      .epilog(BUILTIN_READS),
  handler: handler(schema, async (flags) => (await import('../../eval/serve/serve.ts')).serve(serveOptions(flags))),
};

export default command;
