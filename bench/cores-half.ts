// One half of the two-process ceiling of `npm run bench -- cores` (bench/cores.bench.ts starts two of these): a
// separate process that does half of a step's ONNX Runtime work (2 of the 4 prompts, so 16 of the 32 rows and 2 of
// the 4 learner groups) on one one-thread session, one phase whenever the bench says so over the IPC channel, and
// answers with its wall seconds. Two such processes share nothing but the machine, so their slower one is as fast as
// any split of the step over two cores can be here: what the machine, not metrl, allows.
//   node bin/run-ts.js bench/cores-half.ts DOMAIN HALF     (HALF 0 or 1; stdio must include 'ipc')
import { initBackend } from '../models/backend.ts';
import { BuiltinOrtLearner } from '../models/onnx/builtin/builtin-learner.ts';
import { BuiltinOrtSampler } from '../models/onnx/builtin/builtin-sampler.ts';
import { coresWorkload, type CoresDomain, type CoresPhase } from './cores-workload.ts';

const [domain, half] = [process.argv[2] as CoresDomain, Number(process.argv[3])];
if (!process.send || (half !== 0 && half !== 1)) {
  console.error('usage: started by bench/cores.bench.ts with an IPC channel: cores-half.ts DOMAIN 0|1');
  process.exit(2);
}
await initBackend('wasm', null);
const work = await coresWorkload(domain, [2 * half, 2 * half + 2]);
const sampler = new BuiltinOrtSampler(work.policy, { threads: 1 });
const learner = new BuiltinOrtLearner(work.policy, { threads: 1 });
process.on('message', (m: { phase: CoresPhase; rep: number } | { exit: true }) => {
  if ('exit' in m) {
    sampler.dispose();
    learner.dispose();
    process.disconnect?.();
    return;
  }
  const t0 = performance.now();
  work.phase(m.phase, m.rep, sampler, learner);
  process.send!({ wall: (performance.now() - t0) / 1000 });
});
process.send({ ready: true });
