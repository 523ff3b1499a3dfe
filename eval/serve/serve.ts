// The `metrl serve` job: load the policy, start the HTTP server (chat completions; vLLM's token-id completions and,
// with --enable-lora, its runtime LoRA routes: token-engine.ts), print its URL once it is listening, and shut down
// cleanly on SIGINT or SIGTERM (stop accepting, let in-flight requests finish, free the model).
// scripts/commands/serve.ts maps its flags onto ServeOptions.
import { basename, resolve } from 'node:path';
import { UserError } from '../../core/errors.ts';
import { checkpointModelType, loadPolicy } from '../../models/load.ts';
import { chooseEngine, openEngine, type Engine } from '../../models/engine.ts';
import type { Device } from '../../models/onnx/device.ts';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Sampler } from '../../models/sampler.ts';
import type { LoraSettings } from '../../models/learner.ts';
import { policyEngine } from './policy-engine.ts';
import { DecodeScheduler } from './decode-scheduler.ts';
import { startServer } from './server.ts';
import { tokenEngine, type LogprobsMode } from './token-engine.ts';

export interface ServeOptions {
  /** Base checkpoint, LoRA adapter or training-run folder. */
  checkpoint: string;
  /** Base checkpoint under an adapter (default: the one it names, else the shipped base). */
  base?: string;
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** Name reported by /v1/models (default: the checkpoint folder's name). */
  modelId?: string;
  /** Seed of the sampler for requests that do not give one. */
  seed: number;
  /** tfjs backend (default: the fastest that loads). */
  backend?: string;
  /** Inference engine (default: the model's, models/engine.ts); ONNX Runtime's threads and device. */
  engine?: Engine;
  threads?: number;
  device?: Device;
  /** vLLM's --enable-lora: POST /v1/load_lora_adapter and /v1/unload_lora_adapter load adapters at run time. */
  enableLora?: boolean;
  /** vLLM's --logprobs-mode for /v1/completions (default raw_logprobs, as vLLM). */
  logprobsMode?: LogprobsMode;
  /** n × max_tokens one request may ask for (server.ts DEFAULT_MAX_REQUEST_TOKENS). */
  maxRequestTokens?: number;
}

/** r, alpha and targets of a PEFT adapter folder (what decides an ONNX Runtime graph's LoRA inputs). */
function adapterSettings(dir: string): LoraSettings {
  const c = JSON.parse(readFileSync(join(dir, 'adapter_config.json'), 'utf8')) as {
    r: number;
    lora_alpha: number;
    target_modules: string[];
  };
  return { r: c.r, alpha: c.lora_alpha, targets: c.target_modules };
}

export async function serve(options: ServeOptions): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  // The backend line waits until the server listens: a bad --host or --port is then the only line on stderr.
  let backendLine = '';
  const ort = { threads: options.threads, device: options.device };
  const engineName = chooseEngine(options.engine, checkpointModelType(options.checkpoint, options.base), ort);
  const loaded = await loadPolicy(options.checkpoint, {
    ...(options.base ? { base: options.base } : {}),
    ...(options.backend ? { backend: options.backend } : {}),
    log: (line) => (backendLine = line),
    hostWeights: engineName === 'ort',
  });
  // The adapter is loaded: an ORT session built now reads its weights.
  let inference = await openEngine(loaded.policy, engineName, ort).catch((error: unknown) => {
    loaded.policy.dispose();
    throw error;
  });
  const modelId = options.modelId ?? basename(resolve(options.checkpoint));
  // The generator samples through whatever engine is current: a loaded adapter of another shape opens a new one.
  const current = (): Sampler => inference.sampler;
  const sampler = new Proxy({} as Sampler, {
    get: (_, key) => {
      const value = (current() as unknown as Record<PropertyKey, unknown>)[key];
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(current()) : value;
    },
  });
  const follow = async (changedShape: boolean) => {
    if (!changedShape) return inference.syncLora();
    const next = await openEngine(loaded.policy, engineName, ort);
    const previous = inference;
    inference = next;
    previous.dispose();
  };
  const scheduler = new DecodeScheduler(() => sampler, options.seed);
  const chat = policyEngine(loaded.policy, modelId, scheduler);
  const tokens = tokenEngine({
    policy: loaded.policy,
    modelId,
    scheduler,
    sampler: current,
    logprobsMode: options.logprobsMode ?? 'raw_logprobs',
    ...(options.enableLora
      ? {
          lora: {
            startup: loaded.adapter,
            startupSettings: loaded.adapter ? adapterSettings(loaded.adapter) : null,
            follow,
          },
        }
      : {}),
  });
  const engine = { ...chat, tokens };
  const running = await startServer(engine, {
    host: options.host,
    port: options.port,
    log,
    ...(options.maxRequestTokens !== undefined ? { maxRequestTokens: options.maxRequestTokens } : {}),
  }).catch((error: NodeJS.ErrnoException) => {
    inference.dispose();
    loaded.policy.dispose();
    if (error.code === 'EADDRINUSE')
      throw new UserError(
        `--port ${options.port}: already in use on ${options.host} (pick another, or 0 for any free port)`,
      );
    if (error.code === 'EACCES')
      throw new UserError(`--port ${options.port}: not allowed to bind it on ${options.host}`);
    if (error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND')
      throw new UserError(`--host ${options.host}: not an address of this machine`);
    throw error;
  });
  if (backendLine !== '') log(backendLine);
  if (inference.engine === 'ort') log(`inference engine: ${inference.describe}`);
  if (options.enableLora)
    log('metrl serve: runtime LoRA loading on (POST /v1/load_lora_adapter, /v1/unload_lora_adapter)');
  log(`metrl serve: model ${modelId} (base ${loaded.base}${loaded.adapter ? `, adapter ${loaded.adapter}` : ''})`);
  process.stdout.write(`${running.url}\n`);
  await new Promise<void>((done) => {
    const stop = (signal: string) => {
      log(`metrl serve: ${signal}, shutting down`);
      running.close().then(done, done);
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
  const { batches, requests } = scheduler.stats;
  log(`metrl serve: answered ${requests} prompts in ${batches} decoding batches`);
  inference.dispose();
  loaded.policy.dispose();
}
