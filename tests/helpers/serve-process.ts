// `metrl serve` started as a user starts it, for the tests that talk to it over HTTP (tests/cli/serve, engine and
// hf-checkpoint): the real binary, resolved once it prints the URL it listens on (with --port 0 the OS picks a free
// port, so the URL is the only way to learn it). A server still running when the test (or, started in beforeAll, the
// file) ends is killed then (tests/helpers/tracked-children.ts).
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { PROJECT } from '../cli/helpers.ts';
import { spawnTracked } from './tracked-children.ts';

export interface Served {
  /** The base URL the server printed, e.g. http://127.0.0.1:41234/v1. */
  url: string;
  /** Everything the server has written to stderr so far (it keeps growing after start-up). */
  stderr: () => string;
  child: ChildProcessWithoutNullStreams;
}

/** Start `metrl serve ARGS…`; resolves once it prints its URL, rejects (with its stderr) if it exits before that. */
export function startServe(args: string[]): Promise<Served> {
  // Default stdio: all three are pipes.
  const child = spawnTracked(process.execPath, [join(PROJECT, 'bin', 'metrl.js'), 'serve', ...args], { cwd: PROJECT }) as ChildProcessWithoutNullStreams;
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  return new Promise((done, fail) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('http://'));
      if (line) done({ url: line.trim(), stderr: () => err, child });
    });
    child.on('exit', (code) => fail(new Error(`serve exited ${code}: ${err}`)));
  });
}
