// The ONNX Runtime engine against the tfjs one on the default chess image GRPO step's rollout: the shipped
// base (checkpoints/base) with fresh LoRA adapters (r 16, alpha 32, B perturbed so they do something), the first
// step's 4 prompts in the trainer's data order, 8 completions each at T = 0.5, forced to 376 tokens (EOS never drawn,
// as the PyTorch peer ../shared/peers/torch-grpo-step.sh forces them, so every engine does equal work), and the
// no-grad reference log-probs of those 32 completions. tfjs on its backend (WASM here, one core), ORT at 1 and 2
// intra-op threads (idle threads sleeping, and spinning as ORT does by default). Medians of REPS (env
// METRL_BENCH_REPS, default 3) after one warm-up; the load average is printed with each figure, as other work on the
// machine moves them, and the rollout's CPU time beside its wall time (on a shared machine it says more about the
// engine).
//   npm run bench -- onnx
import * as tf from '@tensorflow/tfjs';
import type { BenchRow } from './table.ts';
import { chessStep, forcedLength, load, median, COMPLETION_TOKENS, GROUP } from './chess-step.ts';
import { sampleGroups } from '../models/builtin/sampling.ts';
import { BuiltinOrtSampler } from '../models/onnx/builtin/builtin-sampler.ts';
import { Rng } from '../core/rng.ts';
import type {
  Completion,
  EncodedPrompt,
  SamplingOptions,
  SequenceBatchItem,
  TokenLogProbs,
  TokenLogProbsOptions,
} from '../models/types.ts';

interface Engine {
  name: string;
  sample(prompts: EncodedPrompt[], options: SamplingOptions, rng: Rng): Completion[][];
  score(items: SequenceBatchItem[], options: TokenLogProbsOptions): TokenLogProbs;
  dispose(): void;
}

export async function run(): Promise<BenchRow[]> {
  const reps = Number(process.env.METRL_BENCH_REPS ?? 3);
  const step = await chessStep();
  if (step === null) return [{ group: 'onnx', name: 'skipped', value: 0, unit: '', note: 'no checkpoints/base' }];
  const { policy, prompts, neverEos } = step;
  const engines: Array<() => Engine> = [
    () => ({
      name: `tfjs ${step.backendName}`,
      sample: (p, o, rng) => sampleGroups(policy, neverEos, policy.lora, p, GROUP, o, rng),
      score: (items, o) => policy.tokenLogProbs(items, o),
      dispose: () => {},
    }),
    ...(
      [
        [1, false],
        [2, false],
        [2, true],
      ] as const
    ).map(([threads, spin]) => () => {
      const ort = new BuiltinOrtSampler(policy, { threads, spin });
      // The same never-EOS view of the tokenizer forces the length.
      const forced = forcedLength(ort, step);
      return {
        name: `ORT ${threads} thread${threads > 1 ? 's' : ''}${spin ? ', spinning' : ''}`,
        sample: (p: EncodedPrompt[], o: SamplingOptions, rng: Rng) => forced.sampleGroups(p, GROUP, o, rng),
        score: (items: SequenceBatchItem[], o: TokenLogProbsOptions) => ort.tokenLogProbs(items, o),
        dispose: () => ort.dispose(),
      };
    }),
  ];
  const rows: BenchRow[] = [];
  const group = 'onnx chess rollout';
  const options = { temperature: 0.5, topP: 1, maxNewTokens: COMPLETION_TOKENS };
  for (const make of engines) {
    const engine = make();
    const rollout: number[] = [];
    const rolloutCpu: number[] = [];
    const reference: number[] = [];
    const referenceCpu: number[] = [];
    for (let r = 0; r <= reps; r++) {
      let t = performance.now();
      const cpu0 = process.cpuUsage();
      const groups = engine.sample(prompts, options, new Rng(r, 'bench'));
      const seconds = (performance.now() - t) / 1000;
      const cpu = process.cpuUsage(cpu0);
      const items = groups.flatMap((g, u) => g.map((c) => ({ prompt: prompts[u], completion: c.tokens })));
      t = performance.now();
      const scoreCpu0 = process.cpuUsage();
      const scored = engine.score(items, { useLora: false, temperature: 0.5 });
      const scoreSeconds = (performance.now() - t) / 1000;
      const scoreCpu = process.cpuUsage(scoreCpu0);
      tf.dispose([scored.logProbs, scored.mask]);
      if (r === 0) continue; // warm-up
      rollout.push(seconds);
      rolloutCpu.push((cpu.user + cpu.system) / 1e6);
      reference.push(scoreSeconds);
      referenceCpu.push((scoreCpu.user + scoreCpu.system) / 1e6);
    }
    engine.dispose();
    const tokens = prompts.length * GROUP * COMPLETION_TOKENS;
    const note = `median of ${reps}; load ${load()}`;
    rows.push(
      { group, name: `${engine.name}: rollout`, value: median(rollout), unit: 's', note },
      {
        group,
        name: `${engine.name}: rollout tokens/s`,
        value: tokens / median(rollout),
        unit: 'tok/s',
        note: `${prompts.length}×${GROUP}×${COMPLETION_TOKENS} tokens, T 0.5`,
      },
      {
        group,
        name: `${engine.name}: rollout CPU time`,
        value: median(rolloutCpu),
        unit: 's',
        note: 'all threads; less moved by other load than wall time',
      },
      {
        group,
        name: `${engine.name}: reference log-probs`,
        value: median(reference),
        unit: 's',
        note: '32 completions, no grad',
      },
      {
        group,
        name: `${engine.name}: reference log-probs CPU time`,
        value: median(referenceCpu),
        unit: 's',
        note: 'all threads',
      },
    );
    process.stderr.write(
      `bench onnx: ${engine.name} rollout ${rollout.map((s) => s.toFixed(2)).join(' ')} s (CPU ${rolloutCpu.map((s) => s.toFixed(2)).join(' ')} s), reference ${reference.map((s) => s.toFixed(2)).join(' ')} s (CPU ${referenceCpu.map((s) => s.toFixed(2)).join(' ')} s) (load ${load()})\n`,
    );
  }
  policy.dispose();
  return rows;
}
