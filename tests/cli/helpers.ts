// Run the real `metrl` binary (node bin/metrl.js) as a user would, capturing exit status, stdout and stderr.
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const PROJECT = resolve(import.meta.dirname, '..', '..');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function metrl(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<CliResult> {
  return new Promise((done) => {
    const env = options.env ? { ...process.env, ...options.env } : process.env;
    execFile(process.execPath, [join(PROJECT, 'bin', 'metrl.js'), ...args], { cwd: options.cwd ?? PROJECT, maxBuffer: 64 << 20, env }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      done({ code, stdout, stderr });
    });
  });
}

export function scratchDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `metrl-${prefix}-`));
}

/** A user error: status 2 and exactly one line on stderr, in the CLI's format. */
export function expectUserError(result: CliResult, pattern: RegExp): void {
  const lines = result.stderr.split('\n').filter((l) => l !== '');
  if (result.code !== 2 || lines.length !== 1 || !lines[0].startsWith('metrl: error: ') || !pattern.test(lines[0])) {
    throw new Error(`expected exit 2 and one error line matching ${pattern}, got ${result.code}: ${JSON.stringify(result.stderr)}`);
  }
}
