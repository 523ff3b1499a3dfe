// How many threads an OrtSession (models/onnx/session.ts) starts: left unset, its intra-op pool spans every core this
// process may use (os.availableParallelism), as --threads' help says. Counted from the process's threads in /proc:
// a pool of N threads is the calling thread and N - 1 it starts (the process's first session starts one more, so it is
// opened first). ORT's own default counted one core of this project's two-core machines, which made every run without
// --threads a one-thread run.
import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { GraphBuilder } from '../../models/onnx/graph-builder.ts';
import { OrtSession, type SessionOptions } from '../../models/onnx/session.ts';

const threadCount = () => readdirSync('/proc/self/task').length;

/** The threads opening one session adds (the session is kept alive until counted). */
function threadsStarted(options: SessionOptions): number {
  const b = new GraphBuilder('relu');
  b.op1('Relu', [b.input('x', 'float32', [2])], {}, 'y');
  b.output('y', 'float32', [2]);
  const before = threadCount();
  const session = new OrtSession(b.toBytes(), options);
  const added = threadCount() - before;
  expect(session.outputNames).toEqual(['y']);
  return added;
}

describe.skipIf(!existsSync('/proc/self/task'))('OrtSession threads', () => {
  it('starts a pool over every core when threads is left unset, and none for one thread', () => {
    threadsStarted({ threads: 1 }); // the process's first session also starts one thread of ORT's environment
    expect(threadsStarted({ threads: 1 })).toBe(0);
    expect(threadsStarted({})).toBe(availableParallelism() - 1);
    if (availableParallelism() >= 2) expect(threadsStarted({ threads: 2 })).toBe(1);
  });
});
