// The `metrl serve` job: load the policy, start the HTTP server, print its URL once it is listening, and shut down
// cleanly on SIGINT or SIGTERM (stop accepting, let in-flight requests finish, free the model). Layer: eval/;
// scripts/commands/serve.ts maps its flags onto ServeOptions.
import { basename, resolve } from 'node:path';
import { UserError } from '../../core/errors.ts';
import { loadPolicy } from '../../models/load.ts';
import { policyEngine } from './policy-engine.ts';
import { startServer } from './server.ts';

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
}

export async function serve(options: ServeOptions): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  // The backend line waits until the server listens: a bad --host or --port is then the only line on stderr.
  let backendLine = '';
  const loaded = await loadPolicy(options.checkpoint, { ...(options.base ? { base: options.base } : {}), ...(options.backend ? { backend: options.backend } : {}), log: (line) => (backendLine = line) });
  const modelId = options.modelId ?? basename(resolve(options.checkpoint));
  const engine = policyEngine(loaded.policy, modelId, options.seed);
  const running = await startServer(engine, { host: options.host, port: options.port, log }).catch((error: NodeJS.ErrnoException) => {
    loaded.policy.dispose();
    if (error.code === 'EADDRINUSE') throw new UserError(`--port ${options.port}: already in use on ${options.host} (pick another, or 0 for any free port)`);
    if (error.code === 'EACCES') throw new UserError(`--port ${options.port}: not allowed to bind it on ${options.host}`);
    if (error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND') throw new UserError(`--host ${options.host}: not an address of this machine`);
    throw error;
  });
  if (backendLine !== '') log(backendLine);
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
  const { batches, prompts } = engine.generator.stats;
  log(`metrl serve: answered ${prompts} prompts in ${batches} decoding batches`);
  loaded.policy.dispose();
}
