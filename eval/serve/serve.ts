// The `metrl serve` job: load the policy, start the HTTP server, print its URL once it is listening, and shut down
// cleanly on SIGINT or SIGTERM (stop accepting, let in-flight requests finish, free the model).
import { basename, resolve } from 'node:path';
import type { ServeFlags } from '../../scripts/commands/serve.ts';
import { UserError } from '../../core/errors.ts';
import { loadPolicy } from '../../models/load.ts';
import { builtinEngine } from './builtin-engine.ts';
import { startServer } from './server.ts';

export async function serve(flags: ServeFlags): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const loaded = await loadPolicy(flags.checkpoint, { ...(flags.base ? { base: flags.base } : {}), ...(flags.backend ? { backend: flags.backend } : {}), log });
  const modelId = flags['model-id'] ?? basename(resolve(flags.checkpoint));
  const engine = builtinEngine(loaded.policy, modelId, flags.seed);
  const running = await startServer(engine, { host: flags.host, port: flags.port, log }).catch((error: NodeJS.ErrnoException) => {
    loaded.policy.dispose();
    if (error.code === 'EADDRINUSE') throw new UserError(`--port ${flags.port}: already in use on ${flags.host} (pick another, or 0 for any free port)`);
    if (error.code === 'EACCES') throw new UserError(`--port ${flags.port}: not allowed to bind it on ${flags.host}`);
    if (error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND') throw new UserError(`--host ${flags.host}: not an address of this machine`);
    throw error;
  });
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
