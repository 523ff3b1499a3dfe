// Run the real `metrl` binary (node bin/metrl.js) as a user would, capturing exit status, stdout and stderr; the child
// does not outlive the test that started it.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { spawnTracked } from '../helpers/tracked-children.ts';

export const PROJECT = resolve(import.meta.dirname, '..', '..');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Run `metrl ARGS…` to the end. The child is killed (tests/helpers/tracked-children.ts) if the test ends first, e.g.
 * by its timeout. A child ended by a signal reads as status 1.
 */
export function metrl(
  args: string[],
  options: { cwd?: string; env?: Record<string, string> } = {},
): Promise<CliResult> {
  return new Promise((done, fail) => {
    const env = options.env ? { ...process.env, ...options.env } : process.env;
    const child = spawnTracked(process.execPath, [join(PROJECT, 'bin', 'metrl.js'), ...args], {
      cwd: options.cwd ?? PROJECT,
      env,
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout!.on('data', (d: Buffer) => stdout.push(d));
    child.stderr!.on('data', (d: Buffer) => stderr.push(d));
    child.on('error', fail);
    child.on('close', (code) =>
      done({
        code: code ?? 1,
        stdout: Buffer.concat(stdout).toString('utf8'),
        stderr: Buffer.concat(stderr).toString('utf8'),
      }),
    );
  });
}

export function scratchDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `metrl-${prefix}-`));
}

/** A user error: status 2 and exactly one line on stderr, in the CLI's format. */
export function expectUserError(result: CliResult, pattern: RegExp): void {
  const lines = result.stderr.split('\n').filter((l) => l !== '');
  if (result.code !== 2 || lines.length !== 1 || !lines[0].startsWith('metrl: error: ') || !pattern.test(lines[0])) {
    throw new Error(
      `expected exit 2 and one error line matching ${pattern}, got ${result.code}: ${JSON.stringify(result.stderr)}`,
    );
  }
}
