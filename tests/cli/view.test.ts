// `metrl view`'s bad input through the real binary: each is one `metrl: error: …` line and exit status 2 (a folder
// that is not a run, a missing folder, a file, the same folder twice, a port in use), and a good start prints the
// page's address on 127.0.0.1.
import { describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { expectUserError, metrl, scratchDir } from './helpers.ts';
import { fakeRun } from './fake-run.ts';
import { startMetrl } from '../helpers/metrl-process.ts';

describe('metrl view: bad input', () => {
  const root = scratchDir('view-cli');
  const run = join(root, 'run');
  fakeRun(run, 'shell', 'text', 0.02);

  it('refuses a folder that is not a run, a missing folder, a file and a folder given twice', async () => {
    mkdirSync(join(root, 'empty'));
    writeFileSync(join(root, 'notes.txt'), 'x');
    expectUserError(await metrl(['view', join(root, 'empty')]), /empty: not a training run or an evaluation folder/);
    expectUserError(await metrl(['view', join(root, 'missing')]), /missing: no such folder/);
    expectUserError(await metrl(['view', join(root, 'notes.txt')]), /notes\.txt: not a folder/);
    expectUserError(await metrl(['view', run, join(root, 'run', '..', 'run')]), /given twice/);
  });

  it('says a port in use in one line', async () => {
    const blocker = createServer();
    await new Promise<void>((done) => blocker.listen(0, '127.0.0.1', done));
    const port = (blocker.address() as { port: number }).port;
    try {
      expectUserError(
        await metrl(['view', run, '--port', String(port)]),
        new RegExp(`--port ${port}: already in use on 127\\.0\\.0\\.1`),
      );
      expectUserError(await metrl(['view', run, '--port', 'eighty']), /--port: expected a number/);
    } finally {
      blocker.close();
    }
  });

  it('prints its address on 127.0.0.1', async () => {
    const view = await startMetrl(['view', run, '--port', '0']);
    expect(view.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect((await fetch(`${view.url}api/folders`)).status).toBe(200);
  });
});
