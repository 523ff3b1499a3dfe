// The ORT learner alone on the text peer's checkpoint (../shared/peers/hf/, written by hf-run.sh): how long its
// session takes to open, how long its two passes take (the forward, and the gradient pass that recomputes one layer at
// a time), and the process's resident memory around them. One prompt group of G = 8 completions of N random tokens,
// LoRA r 16, one thread, a loss linear in the log-probs. The session is opened first and timed alone; the update then
// runs twice and the second one's passes are reported; the peak covers both.
//   node_modules/.bin/tsx bench/peers/hf-learner-probe.mts /tmp/hfpeer/smollm2-135m [--tokens 64]
// Prints one JSON line.
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';

import { imp, tf } from './checkout.mts';
const { initBackend } = await imp('models/backend.ts');
const { loadBaseModel } = await imp('models/registry.ts');
const { HfOrtSampler } = await imp('models/onnx/hf/hf-sampler.ts');
const { HfOrtLearner } = await imp('models/onnx/hf/hf-learner.ts');
const { Rng } = await imp('core/rng.ts');

const argv = process.argv.slice(2);
const ckpt = argv[0];
const at = argv.indexOf('--tokens');
const N = at >= 0 ? Number(argv[at + 1]) : 64;
const G = 8;
const GiB = 2 ** 30;
/** Resident memory now (smaps_rollup: Rss) and the process's peak so far (VmHWM), in GiB. */
const memory = () => {
  const rss = Number(/^Rss:\s+(\d+)/m.exec(readFileSync('/proc/self/smaps_rollup', 'utf8'))![1]) * 1024;
  return { rss: rss / GiB, peak: (process.resourceUsage().maxRSS * 1024) / GiB };
};

await initBackend('wasm', null);
const policy = await loadBaseModel(ckpt, { hostWeights: true });
policy.attachLora({ r: 16, alpha: 32 }, new Rng(0, 'probe-lora'));
// As metrl train does: the sampler's session exists (it maps the weights) and the host's projections are released.
const sampler = new HfOrtSampler(policy, { threads: 1 });
sampler.releaseHostWeights();
const beforeLearner = memory();
const learner = new HfOrtLearner(policy, { threads: 1 });
let t = performance.now();
const session = (
  learner as unknown as { session(): { run: (...args: unknown[]) => Record<string, unknown> } }
).session();
const sessionSeconds = (performance.now() - t) / 1000;
const passes: number[] = [];
const run = session.run.bind(session);
session.run = (...args: unknown[]) => {
  const start = performance.now();
  const out = run(...args);
  passes.push((performance.now() - start) / 1000);
  return out;
};
const prompt = { tokens: JSON.parse(readFileSync(join(ckpt, 'prompt.json'), 'utf8')).tokens as number[], images: [] };
const rng = new Rng(3, 'probe-completions');
const batch = Array.from({ length: G }, () => ({
  prompt,
  completion: Array.from({ length: N }, () => 5 + Math.floor(rng.next() * 40000)),
}));
const vars = policy.trainableVariables('lora');
const update = () => {
  const { values, grads } = learner.lossGradientsSum(
    [
      {
        batch,
        options: { useLora: true, withEntropy: true },
        loss: (l: { mask: unknown; logProbs: unknown }) => tf.sum(tf.mul(l.mask, l.logProbs)),
      },
    ],
    vars,
  );
  tf.dispose([...values, ...Object.values(grads)]);
};
update();
passes.length = 0;
t = performance.now();
update();
const updateSeconds = (performance.now() - t) / 1000;
const after = memory();
console.log(
  JSON.stringify({
    checkpoint: ckpt,
    rows: prompt.tokens.length + G * (N - 1),
    threads: 1,
    sessionSeconds,
    forwardSeconds: passes[0],
    gradientSeconds: passes[1],
    updateSeconds,
    rssGiBBeforeLearner: beforeLearner.rss,
    rssGiBAfter: after.rss,
    peakGiB: after.peak,
    loadavg: loadavg().map((x) => x.toFixed(2)),
  }),
);
learner.dispose();
sampler.dispose();
