// The ONNX Runtime learner (models/onnx/builtin/builtin-learner.ts) against the tfjs one on the default chess image
// GRPO step's update phase: the shipped base (checkpoints/base) with LoRA r 16 / alpha 32 (B perturbed so the
// adapters do something), the first step's 4 prompts in the trainer's data order, 8 completions each drawn at T = 0.5
// and forced to 376 tokens (EOS never drawn, as ../shared/peers/torch-grpo-step.sh forces them), advantages of a
// reward spread, reference log-probs (β 0.04) computed once. One update = what update-policy.ts updatePolicy does with
// the default config (μ = 1): per learner chunk lossGradients with the GRPO loss (dapo … as configured), the chunk
// gradients summed, clipped and applied by AdamW. Chunks as the loop makes them (learnerBatch 8, learnerTokens 2048:
// 3 + 3 + 2 sequences per group), and for ORT also one chunk per group (learnerTokens unbounded: the prompt computed
// once per group). Medians of REPS (env METRL_BENCH_REPS, default 3; METRL_BENCH_TFJS_REPS for tfjs, default 1)
// after one warm-up, wall and CPU seconds (all threads) with the load average, and before and after them a probe of
// how fast this machine is right now: ORT's 512² matmul in GFLOP per CPU second on one thread (the figure for this
// machine when quiet is in docs/performance.md), by which other load divides every CPU-time figure here roughly alike.
//   npm run bench -- onnx-learner
import * as tf from '@tensorflow/tfjs';
import type { BenchRow } from './table.ts';
import { chessStep, forcedLength, load, median, COMPLETION_TOKENS, GROUP } from './chess-step.ts';
import { BuiltinOrtSampler } from '../models/onnx/builtin/builtin-sampler.ts';
import { BuiltinOrtLearner } from '../models/onnx/builtin/builtin-learner.ts';
import { lossGradients, type Learner } from '../models/learner.ts';
import { resolveConfig } from '../trainer/config.ts';
import { stepObjective } from '../trainer/loss/objective.ts';
import { grpoLoss, clipGradientsByGlobalNorm } from '../trainer/loss/loss.ts';
import { chunksWithin } from '../trainer/chunks.ts';
import { AdamW } from '../trainer/adamw.ts';
import { Rng } from '../core/rng.ts';
import { GraphBuilder } from '../models/onnx/graph-builder.ts';
import { OrtSession, floatTensor } from '../models/onnx/session.ts';
import type { SequenceBatchItem } from '../models/types.ts';

/** ORT's 512 × 512 fp32 matmul on one thread: GFLOP per CPU second (median of 5 runs of 20). */
function matmulProbe(): number {
  const n = 512;
  const b = new GraphBuilder('probe');
  const x = b.input('x', 'float32', [n, n]);
  b.op1(
    'MatMul',
    [
      x,
      b.floats(
        'w',
        Float32Array.from({ length: n * n }, (_, i) => ((i * 7919) % 1000) / 1000),
        [n, n],
      ),
    ],
    {},
    'y',
  );
  b.output('y', 'float32', [n, n]);
  const session = new OrtSession(b.toBytes(), { threads: 1 });
  const feeds = {
    x: floatTensor(
      Float32Array.from({ length: n * n }, (_, i) => ((i * 104729) % 1000) / 1000),
      [n, n],
    ),
  };
  const rates: number[] = [];
  for (let r = 0; r < 5; r++) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < 20; i++) session.run(feeds);
    const c = process.cpuUsage(c0);
    rates.push((20 * 2 * n ** 3) / ((c.user + c.system) / 1e6) / 1e9);
  }
  session.dispose();
  return median(rates);
}

export async function run(): Promise<BenchRow[]> {
  const reps = Number(process.env.METRL_BENCH_REPS ?? 3);
  const tfjsReps = Number(process.env.METRL_BENCH_TFJS_REPS ?? 1);
  const step = await chessStep();
  if (step === null)
    return [{ group: 'onnx learner', name: 'skipped', value: 0, unit: '', note: 'no checkpoints/base' }];
  const { policy, prompts } = step;
  const config = resolveConfig({}, { maxCompletionTokens: COMPLETION_TOKENS });

  // The step's data: forced-length completions, advantages, reference log-probs per chunk (constants of the step).
  const sampler = new BuiltinOrtSampler(policy, { threads: 2 });
  const forced = forcedLength(sampler, step);
  const groups = forced.sampleGroups(
    prompts,
    GROUP,
    { temperature: config.temperature, topP: 1, maxNewTokens: COMPLETION_TOKENS },
    new Rng(0, 'bench'),
  );
  const seqs: SequenceBatchItem[] = groups.flatMap((g, u) =>
    g.map((c) => ({ prompt: prompts[u], completion: c.tokens })),
  );
  const advantages = Float32Array.from(seqs, (_, i) => ((i * 7) % 5) / 2 - 1);
  const objective = stepObjective(
    config,
    seqs.map(() => ({ tokens: COMPLETION_TOKENS, finished: false })),
    COMPLETION_TOKENS,
  );
  const chunking = (maxTokens: number) =>
    chunksWithin(
      seqs.map((seq, i) => ({ seq, i })),
      ({ seq }) => seq.prompt.tokens.length + seq.completion.length,
      config.learnerBatch,
      maxTokens,
    ).map((chunk) => {
      const items = chunk.map((c) => c.seq);
      return {
        items,
        indices: chunk.map((c) => c.i),
        adv: Float32Array.from(chunk, (c) => advantages[c.i]),
        ref: tf.keep(sampler.tokenLogProbs(items, { useLora: false, temperature: config.temperature }).logProbs),
      };
    });
  const loopChunks = chunking(config.learnerTokens);
  const groupChunks = chunking(Number.MAX_SAFE_INTEGER);
  sampler.dispose();

  const variables = policy.trainableVariables('lora');
  const optimizer = new AdamW(variables, {
    learningRate: 1e-6,
    beta1: 0.9,
    beta2: 0.999,
    epsilon: 1e-8,
    weightDecay: 0,
  });
  /** One update (updatePolicy's work at μ = 1); returns the loss. */
  const update = (learner: Learner, chunks: typeof loopChunks): number => {
    let summed: tf.NamedTensorMap | null = null;
    let loss = 0;
    for (const chunk of chunks) {
      const { value, grads } = lossGradients(
        learner,
        chunk.items,
        { useLora: true, withEntropy: true, temperature: config.temperature },
        (lp) => {
          const old = tf.tensor(lp.logProbs.dataSync(), lp.logProbs.shape) as tf.Tensor2D;
          return grpoLoss(
            {
              logProbs: lp.logProbs,
              oldLogProbs: old,
              refLogProbs: chunk.ref,
              mask: lp.mask,
              advantages: tf.tensor1d(chunk.adv),
              entropies: lp.entropy,
              ...objective.rows(chunk.indices),
            },
            objective.options,
          ).loss;
        },
        variables,
      );
      loss += value.dataSync()[0];
      value.dispose();
      if (summed === null) summed = grads;
      else {
        for (const name of Object.keys(grads)) {
          const next = tf.add(summed[name], grads[name]);
          tf.dispose([summed[name], grads[name]]);
          summed[name] = next;
        }
      }
    }
    const clipped = clipGradientsByGlobalNorm(summed!, config.maxGradNorm);
    optimizer.apply(clipped.grads);
    tf.dispose([...Object.values(clipped.grads), ...Object.values(summed!)]);
    return loss;
  };

  const cases: Array<{
    name: string;
    make: () => Learner;
    chunks: typeof loopChunks;
    reps: number;
    dispose?: (l: Learner) => void;
  }> = [
    { name: `tfjs ${step.backendName}, loop chunks`, make: () => policy, chunks: loopChunks, reps: tfjsReps },
    ...[1, 2].flatMap((threads) => [
      {
        name: `ORT ${threads} thread${threads > 1 ? 's' : ''}, loop chunks`,
        make: () => new BuiltinOrtLearner(policy, { threads }),
        chunks: loopChunks,
        reps,
        dispose: (l: Learner) => l.dispose(),
      },
      {
        name: `ORT ${threads} thread${threads > 1 ? 's' : ''}, a chunk per group`,
        make: () => new BuiltinOrtLearner(policy, { threads }),
        chunks: groupChunks,
        reps,
        dispose: (l: Learner) => l.dispose(),
      },
    ]),
  ];
  const only = process.env.METRL_BENCH_ONLY;
  const rows: BenchRow[] = [];
  const group = 'onnx chess update';
  const probe = (when: string) => {
    const rate = matmulProbe();
    rows.push({
      group,
      name: `probe ${when}: ORT 512² matmul, 1 thread`,
      value: rate,
      unit: 'GFLOP/CPU s',
      note: `141 quiet; load ${load()}`,
    });
    process.stderr.write(`bench onnx-learner: probe ${when}: ${rate.toFixed(0)} GFLOP per CPU s (load ${load()})\n`);
  };
  probe('before');
  for (const c of cases) {
    if (only && !c.name.includes(only)) continue;
    const learner = c.make();
    const wall: number[] = [];
    const cpu: number[] = [];
    for (let r = 0; r <= c.reps; r++) {
      const t = performance.now();
      const cpu0 = process.cpuUsage();
      update(learner, c.chunks);
      const used = process.cpuUsage(cpu0);
      if (r === 0) continue; // warm-up (session build, first-run allocations)
      wall.push((performance.now() - t) / 1000);
      cpu.push((used.user + used.system) / 1e6);
    }
    c.dispose?.(learner);
    const note = `median of ${c.reps}; load ${load()}`;
    rows.push(
      { group, name: `${c.name}: update`, value: median(wall), unit: 's', note },
      { group, name: `${c.name}: update CPU time`, value: median(cpu), unit: 's', note: 'all threads' },
    );
    process.stderr.write(
      `bench onnx-learner: ${c.name}: update ${wall.map((s) => s.toFixed(2)).join(' ')} s, CPU ${cpu.map((s) => s.toFixed(2)).join(' ')} s (load ${load()})\n`,
    );
  }
  probe('after');
  for (const chunk of [...loopChunks, ...groupChunks]) chunk.ref.dispose();
  optimizer.dispose();
  policy.dispose();
  return rows;
}
