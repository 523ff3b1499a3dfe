// The `metrl view` job: check the folders, start the server on 127.0.0.1, print the page's address once it listens,
// and stop cleanly on SIGINT or SIGTERM. scripts/commands/view.ts maps its flags onto this.
import { UserError } from '../../core/errors.ts';
import { openFolder } from './run-folder.ts';
import { startViewServer } from './server.ts';

export interface ViewOptions {
  folders: string[];
  /** 0 picks a free port. */
  port: number;
}

export async function view(options: ViewOptions): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const folders = options.folders.map((given, index) => openFolder(given, index));
  const roots = new Set<string>();
  for (const f of folders) {
    if (roots.has(f.root)) throw new UserError(`${f.given}: given twice`);
    roots.add(f.root);
  }
  const running = await startViewServer(folders, { port: options.port, log });
  log(
    `metrl view: ${folders.map((f) => `${f.name} (${f.kind === 'train' ? 'training run' : 'evaluation'})`).join(', ')}; Ctrl-C stops it`,
  );
  process.stdout.write(`${running.url}\n`);
  await new Promise<void>((done) => {
    const stop = () => running.close().then(done, done);
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}
