// The ONNX Runtime engine on one core and on two (README "Threads and devices"): one GRPO step's three ORT phases of
// the default configuration from the shipped base (4 prompts × 8 completions forced to 376 tokens for chess image and
// 101 for shell text, EOS never drawn; reference log-probs and the learner over the loop's chunks: 3 + 3 + 2 sequences
// per chess group, one chunk per shell group), on one session (--threads 1) and on two one-thread sessions
// (--threads 2: the main thread and a worker), interleaved, METRL_BENCH_REPS times (default 2) after a warm-up.
// Per phase: wall seconds, process CPU seconds, and the CPU seconds of the busiest thread (read from
// /proc/self/task/*/stat). Why the last: on a machine shared with other jobs Linux's autogroup scheduler gives this
// process one share of the cores however many threads it runs, so two threads show their speed-up in wall time only on
// a quiet machine; the busiest thread's CPU time is what the phase's wall time is bounded by when the cores are free.
//   npm run bench -- cores
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import type { BenchRow } from './table.ts';
import { initBackend } from '../models/backend.ts';
import { loadBaseCheckpoint } from '../models/builtin/base-checkpoint.ts';
import { loraAdapters } from '../models/builtin/lora.ts';
import { OrtLearner } from '../models/onnx/ort-learner.ts';
import { OrtSampler } from '../models/onnx/ort-sampler.ts';
import { CHECKPOINTS_DIR } from '../core/paths.ts';
import { getEnv } from '../envs/registry.ts';
import { generateEpisodes } from '../envs/generate.ts';
import { Rng } from '../core/rng.ts';
import type { TokenLogProbs } from '../models/types.ts';

/** CPU seconds of each thread of this process. */
function threadCpu(): Map<string, number> {
  return new Map(readdirSync('/proc/self/task').map((t) => {
    try {
      const f = readFileSync(`/proc/self/task/${t}/stat`, 'utf8').split(') ')[1].split(' ');
      return [t, (Number(f[11]) + Number(f[12])) / 100] as [string, number];
    } catch {
      return [t, 0] as [string, number];
    }
  }));
}
const processCpu = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1e6;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function run(): Promise<BenchRow[]> {
  await initBackend('wasm', null);
  const reps = Number(process.env.METRL_BENCH_REPS ?? 2);
  const rows: BenchRow[] = [];
  for (const [domain, modality, tokens] of [['shell', 'text', 101], ['chess', 'image', 376]] as const) {
    const policy = loadBaseCheckpoint(join(CHECKPOINTS_DIR, 'base'));
    policy.attachLora({ r: 16, alpha: 32 }, new Rng(7, 'lora'));
    // Adapters that do something (fresh ones have B = 0), the same in every run.
    for (const [i, a] of loraAdapters(policy.lora!).entries()) a.b.assign(tf.randomUniform(a.b.shape, -0.05, 0.05, 'float32', 11 + i));
    const env = await getEnv(domain);
    const prompts = generateEpisodes(env, { n: 4, actions: 5, split: 'train', seed: 0, modality }).map((e) => policy.prompt(env, e));
    Object.defineProperty(policy, 'tokenizer', { value: Object.create(policy.tokenizer, { eos: { value: -1 } }), configurable: true, writable: true });
    const variables = policy.trainableVariables('lora');
    const loss = (lp: TokenLogProbs) => tf.sum(tf.mul(lp.mask, tf.add(tf.mul(lp.logProbs, 0.3), tf.exp(lp.logProbs)))) as tf.Scalar;
    const setups = [1, 2].map((threads) => ({ threads, sampler: new OrtSampler(policy, { threads }), learner: new OrtLearner(policy, { threads }), m: {} as Record<string, { wall: number[]; cpu: number[]; busiest: number[] }> }));
    for (let rep = 0; rep <= reps; rep++) {
      for (const s of setups) {
        const time = <T>(phase: string, f: () => T): T => {
          const [th0, c0, t0] = [threadCpu(), processCpu(), performance.now()];
          const r = f();
          const [wall, cpu, th1] = [(performance.now() - t0) / 1000, processCpu() - c0, threadCpu()];
          const busiest = Math.max(...[...th1].map(([t, v]) => v - (th0.get(t) ?? 0)));
          if (rep > 0) {
            const m = (s.m[phase] ??= { wall: [], cpu: [], busiest: [] });
            m.wall.push(wall);
            m.cpu.push(cpu);
            m.busiest.push(busiest);
          }
          return r;
        };
        const groups = time('rollout', () => s.sampler.sampleGroups(prompts, 8, { temperature: 0.5, topP: 1, maxNewTokens: tokens }, new Rng(rep)));
        const seqs = prompts.flatMap((p, k) => groups[k].map((c) => ({ prompt: p, completion: c.tokens })));
        const cuts = domain === 'chess' ? [[0, 3], [3, 6], [6, 8]] : [[0, 8]];
        const chunks = prompts.flatMap((_, k) => cuts.map(([a, b]) => seqs.slice(k * 8 + a, k * 8 + b)));
        time('reference', () => s.sampler.tokenLogProbsMany(chunks, { useLora: false, temperature: 0.5 }).forEach((lp) => tf.dispose([lp.logProbs, lp.mask])));
        time('update (no AdamW)', () => {
          const r = s.learner.lossGradientsSum(chunks.map((batch) => ({ batch, options: { useLora: true, withEntropy: true, temperature: 0.5 }, loss })), variables);
          tf.dispose([...r.values, ...Object.values(r.grads)]);
        });
      }
    }
    const load = loadavg()[0].toFixed(1);
    for (const s of setups) {
      for (const [phase, m] of Object.entries(s.m)) {
        const note = `${s.threads === 1 ? 'one session' : `${s.sampler.executors} one-thread sessions`}; medians of ${reps}; load ${load}`;
        rows.push({ group: `cores ${domain}`, name: `${phase}, --threads ${s.threads}: wall`, value: median(m.wall), unit: 's', note });
        rows.push({ group: `cores ${domain}`, name: `${phase}, --threads ${s.threads}: CPU, all threads`, value: median(m.cpu), unit: 's', note });
        rows.push({ group: `cores ${domain}`, name: `${phase}, --threads ${s.threads}: CPU, busiest thread`, value: median(m.busiest), unit: 's', note });
      }
      s.sampler.dispose();
      s.learner.dispose();
    }
    policy.dispose();
  }
  return rows;
}
