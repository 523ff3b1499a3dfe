// Children started through the test helpers do not outlive their test (tests/helpers/tracked-children.ts): a long
// child, and the grandchild it starts, are gone after a test that ends normally, after one that times out (sequential
// and concurrent), and a `metrl` started through tests/cli/helpers.ts is tracked the same way. Each case starts the
// processes in one test and checks them in the next, once the first has ended.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { spawnTracked, trackedPids } from './tracked-children.ts';
import { metrl, scratchDir } from '../cli/helpers.ts';

/** A node process that starts a grandchild, prints its pid, and then both sleep for ten minutes. */
const SLEEPER = `
  const g = require('node:child_process').spawn(process.execPath, ['-e', 'setTimeout(() => {}, 600000)'], { stdio: 'ignore' });
  console.log(g.pid);
  setTimeout(() => {}, 600000);
`;

/** Start the sleeper; resolves with its pid and its grandchild's once the grandchild runs. */
function startSleeper(): Promise<{ child: ChildProcess; pids: number[] }> {
  const child = spawnTracked(process.execPath, ['-e', SLEEPER]);
  return new Promise((done) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      if (out.includes('\n')) done({ child, pids: [child.pid!, Number(out.trim())] });
    });
  });
}

/** Whether a process runs (a zombie, dead but not yet reaped by its parent, counts as gone). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Wait (up to 10 s) until none of the pids runs; returns those still running. */
async function gone(pids: number[]): Promise<number[]> {
  for (let i = 0; i < 200 && pids.some(running); i++) await new Promise((r) => setTimeout(r, 50));
  return pids.filter(running);
}

describe('a test that ends', () => {
  let pids: number[] = [];
  it('starts a long child that starts a grandchild, and ends without waiting for them', async () => {
    ({ pids } = await startSleeper());
    expect(pids.every(running)).toBe(true);
    expect(trackedPids()).toContain(pids[0]);
  });
  it('leaves neither of them running', async () => {
    expect(await gone(pids)).toEqual([]);
    expect(trackedPids()).not.toContain(pids[0]);
  });
});

describe('a test that times out', () => {
  let pids: number[] = [];
  it.fails('starts the child and never ends (timeout 2 s: this test fails, as expected)', async () => {
    ({ pids } = await startSleeper());
    await new Promise(() => {});
  }, 2_000);
  it('leaves neither of them running', async () => {
    expect(pids).toHaveLength(2);
    expect(await gone(pids)).toEqual([]);
  });
});

describe('a concurrent test that times out', () => {
  const pids: number[] = [];
  describe.concurrent('concurrently', () => {
    it.fails('starts the child and never ends (timeout 2 s)', async () => {
      pids.push(...(await startSleeper()).pids);
      await new Promise(() => {});
    }, 2_000);
    // Its timeout as short: a child of a concurrent test is killed after the longest timeout of the file's concurrent
    // tests (vitest cannot say which of them started it).
    it('runs beside it and ends normally', async () => {
      await new Promise((r) => setTimeout(r, 100));
    }, 2_000);
  });
  it('leaves neither of them running', async () => {
    expect(pids).toHaveLength(2);
    expect(await gone(pids)).toEqual([]);
  });
});

describe('metrl through tests/cli/helpers.ts', () => {
  let pids: number[] = [];
  it('starts a long `metrl pretrain` and ends without waiting for it', () => {
    const before = trackedPids();
    void metrl(['pretrain', '--steps', '100000', '--quiet', '--out', scratchDir('tracked') + '/run']);
    pids = trackedPids().filter((p) => !before.includes(p));
    expect(pids).toHaveLength(1);
    expect(running(pids[0])).toBe(true);
  });
  it('leaves it not running', async () => {
    expect(await gone(pids)).toEqual([]);
  });
});
