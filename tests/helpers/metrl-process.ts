// A long-running `metrl` command started as a user starts it (`metrl view`, a `metrl train` to watch): the real
// binary, resolved once it prints its http:// address (or at once, for a command that prints none). It is killed when
// the test ends (tests/helpers/tracked-children.ts).
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { PROJECT } from '../cli/helpers.ts';
import { spawnTracked } from './tracked-children.ts';

export interface Started {
  /** The address it printed ('' with waitForUrl: false). */
  url: string;
  stderr: () => string;
  child: ChildProcessWithoutNullStreams;
}

export function startMetrl(args: string[], options: { waitForUrl?: boolean } = {}): Promise<Started> {
  const child = spawnTracked(process.execPath, [join(PROJECT, 'bin', 'metrl.js'), ...args], {
    cwd: PROJECT,
  }) as ChildProcessWithoutNullStreams;
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  if (options.waitForUrl === false) {
    child.stdout.resume();
    return Promise.resolve({ url: '', stderr: () => err, child });
  }
  return new Promise((done, fail) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('http://'));
      if (line) done({ url: line.trim(), stderr: () => err, child });
    });
    child.on('exit', (code) => fail(new Error(`metrl ${args[0]} exited ${code}: ${err}`)));
  });
}
