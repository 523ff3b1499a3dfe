// Child processes that tests start (the real `metrl` binary) and that must not outlive the test. A test that times out
// leaves its awaited child running: under load, `metrl pretrain` children of a timed-out test ran on long after it.
// Every child started here gets a process group of its own (so that whatever it starts goes with it) and a registry
// entry, and is SIGKILLed, group and all:
//   - when the test that started it ends, passed, failed or timed out (its onTestFinished hook);
//   - a child started in a concurrent test (describe.concurrent: vitest's current test is then not reliably the one
//     that spawned it) once the longest timeout of the file's concurrent tests has passed since it started, and at
//     the end of the file at the latest;
//   - a child started outside a test (beforeAll, module level) at the end of the file;
//   - any child still running when the test worker exits or is interrupted (exit, SIGINT, SIGTERM, SIGHUP: being in a
//     group of its own, a child no longer receives the terminal's Ctrl-C, so the worker passes it on), or loses its
//     vitest (the IPC channel of the forked worker closes).
// Children that end on their own are dropped from the registry; a child the test killed itself is left alone.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { afterAll, onTestFinished, TestRunner, type RunnerTestSuite as Suite } from 'vitest';

// One registry and one set of process listeners per worker process, however many test files import this module.
const KEY = Symbol.for('metrl.tests.tracked-children');
const shared = globalThis as { [KEY]?: Set<ChildProcess> };
const firstInProcess = shared[KEY] === undefined;
const live = (shared[KEY] ??= new Set<ChildProcess>());

/** SIGKILL the child's process group if the child has not ended (its pid could be reused once it has been reaped). */
export function killGroup(child: ChildProcess): void {
  live.delete(child);
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // ESRCH: the group ended between the check and the kill.
  }
}

function killAll(): void {
  for (const child of [...live]) killGroup(child);
}

// On the importing file's own suite: this module is evaluated afresh for each test file (vitest isolates them).
afterAll(killAll);
if (firstInProcess) {
  process.on('exit', killAll);
  // A forked worker whose vitest went away (killed with SIGTERM, say) can hang on in an unfinished test: its IPC
  // channel closing is the last news it gets.
  process.on('disconnect', killAll);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      killAll();
      // This listener is gone now (once): re-raising the signal ends the worker as it would have ended without it.
      process.kill(process.pid, signal);
    });
  }
}

/** spawn() in a process group of its own, killed (the whole group) when the test that started it ends. */
export function spawnTracked(command: string, args: string[], options: SpawnOptions = {}): ChildProcess {
  const child = spawn(command, args, { ...options, detached: true });
  live.add(child);
  child.on('exit', () => live.delete(child));
  const test = TestRunner.getCurrentTest();
  if (test && !test.concurrent) onTestFinished(() => killGroup(child));
  else if (test) setTimeout(() => killGroup(child), longestConcurrentTimeout(test.file)).unref();
  return child;
}

/**
 * The longest timeout of the file's concurrent tests. Whichever of them started the child, it has ended (passed,
 * failed or timed out) by then, counted from the spawn: the child is never killed under a test still running.
 */
function longestConcurrentTimeout(suite: Suite): number {
  let longest = 0;
  for (const task of suite.tasks) {
    if (task.type === 'suite') longest = Math.max(longest, longestConcurrentTimeout(task));
    else if (task.type === 'test' && task.concurrent) longest = Math.max(longest, task.timeout);
  }
  return longest;
}

/** The pids of the children started here that are still running (for the test of this module). */
export function trackedPids(): number[] {
  return [...live].map((c) => c.pid!);
}
