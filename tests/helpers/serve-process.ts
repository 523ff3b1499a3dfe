// `metrl serve` started as a user starts it, for the tests that talk to it over HTTP (tests/cli/serve, engine and
// hf-checkpoint): the real binary, resolved once it prints the URL it listens on (with --port 0 the OS picks a free
// port, so the URL is the only way to learn it). A server still running when the test (or, started in beforeAll, the
// file) ends is killed then (tests/helpers/tracked-children.ts).
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { expect } from 'vitest';
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
  const child = spawnTracked(process.execPath, [join(PROJECT, 'bin', 'metrl.js'), 'serve', ...args], {
    cwd: PROJECT,
  }) as ChildProcessWithoutNullStreams;
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

/** POST a chat completion request to a server from startServe; returns each choice's text (status 200 asserted). */
async function chatAnswers(url: string, body: object): Promise<string[]> {
  const response = await fetch(`${url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.status !== 200)
    throw new Error(`POST ${url}/chat/completions: status ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { choices: { message: { content: string } }[] }).choices.map(
    (c) => c.message.content,
  );
}

/**
 * The check both engine tests make: on the same chat messages, server `ort` gives server `tfjs`'s greedy answer and,
 * for a seed, its sampled ones.
 */
export async function expectSameAnswers(urls: Record<string, string>, messages: object[]): Promise<string[]> {
  const greedy = { messages, temperature: 0, max_tokens: 8 };
  const sampled = { messages, temperature: 1, max_tokens: 8, n: 3, seed: 5 };
  const ort = await chatAnswers(urls.ort, greedy);
  expect(ort).toEqual(await chatAnswers(urls.tfjs, greedy));
  expect(await chatAnswers(urls.ort, sampled)).toEqual(await chatAnswers(urls.tfjs, sampled));
  return ort;
}
