// `metrl train` with engine 'ort' (the built-in model's LoRA gradients by ONNX Runtime, models/onnx/builtin/builtin-learner.ts)
// against the same run on the tfjs learner: a tiny base, μ = 2 (old-policy log-probs and a second pass), two local
// batches per step; the rollouts are the tfjs policy's in both runs, so the runs draw the same completions, and the
// loss, gradient norm, entropy and the trained adapters agree to float rounding.
// β = 0 here: with β > 0 and the adapters still exactly zero (the first step), the reference log-probs must be the
// learner's own (the ort-engine branch's referenceIsPolicy in trainer/grpo/reference-logprobs.ts does this): a reference pass on
// another engine differs from the ORT learner's by rounding (~1e-6), and on a step without a reward spread that
// rounding is the whole gradient, which Adam scales up to a real step.
import { beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initBackend } from '../../../models/backend.ts';
import { loadTrainingPolicy, train } from '../../../trainer/grpo/loop.ts';
import { resolveConfig } from '../../../trainer/config.ts';
import { boxesEnv } from '../../../envs/boxes/index.ts';
import { BuiltinPolicy } from '../../../models/builtin/policy.ts';
import { TINY_ARCHITECTURE, tinyBaseCheckpoint } from '../tiny-base.ts';

// Room for a boxes prompt (about 310 tokens with two actions).
const base = tinyBaseCheckpoint(
  BuiltinPolicy.create({ architecture: { ...TINY_ARCHITECTURE, maxContext: 512 }, seed: 1 }),
);

async function run(engine: 'tfjs' | 'ort') {
  const config = resolveConfig(
    {},
    {
      trainSize: 8,
      actions: 2,
      testSize: 2,
      steps: 3,
      promptsPerStep: 2,
      groupSize: 4,
      gradientAccumulation: 2,
      numIterations: 2,
      evalEvery: 3,
      checkpointEvery: 3,
      maxCompletionTokens: 6,
      learningRate: 0.02,
      beta: 0,
      temperature: 1,
      engine,
    },
  );
  const setup = await loadTrainingPolicy(base, config);
  const dir = mkdtempSync(join(tmpdir(), `metrl-ort-learner-${engine}-`));
  // A reward with a spread in most groups (the tiny model's answers are all wrong together): a sum over the answer's
  // characters (boxes asks for the answer alone, so the reward sees the whole completion).
  const rewards = [
    {
      name: 'length',
      source: 'test',
      compute: ({ completion }: { completion: string }) =>
        [...completion].reduce((s, c) => s + (c.charCodeAt(0) % 3), 0),
    },
  ];
  let learner = '';
  const events: string[] = [];
  await train({
    env: boxesEnv,
    ...setup,
    config,
    modality: 'text',
    runDir: dir,
    resume: false,
    rewards,
    onEvent: (e) => {
      events.push(e.kind);
      if (e.kind === 'start') learner = e.learner;
    },
  });
  const rows = readFileSync(join(dir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .filter((r) => r.type === 'train');
  const adapter = readFileSync(join(dir, 'checkpoints', 'step-3', 'adapter_model.safetensors'));
  return { rows, adapter, learner, events };
}

/** The float32 values of a safetensors file (all tensors, in file order). */
function floats(file: Buffer): Float32Array {
  const headerLength = Number(file.readBigUInt64LE(0));
  const data = file.subarray(8 + headerLength);
  return new Float32Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength));
}

beforeAll(async () => {
  await initBackend('wasm', null);
});

describe('train with engine ort', () => {
  it('trains as the tfjs learner does (same rollouts, loss, gradient norm, entropy and adapters to rounding; β = 0)', async () => {
    const tfjs = await run('tfjs');
    const ort = await run('ort');
    expect(ort.rows.map((r) => r.step)).toEqual([1, 2, 3]);
    // What `train` prints as "(the learner: …)".
    expect([tfjs.learner, ort.learner]).toEqual(['tfjs', 'ONNX Runtime']);
    // The ORT learner's sessions open once, before step 1's clock, and step 1's row says what that took; the tfjs
    // learner opens nothing.
    expect(ort.events.filter((k) => k === 'learner-open')).toHaveLength(1);
    expect(ort.events.indexOf('learner-open')).toBeLessThan(ort.events.indexOf('step'));
    expect(ort.rows[0].time.open).toBeGreaterThan(0);
    expect(ort.rows.slice(1).map((r) => r.time.open)).toEqual([undefined, undefined]);
    expect(tfjs.events).not.toContain('learner-open');
    expect(tfjs.rows.map((r) => r.time.open)).toEqual([undefined, undefined, undefined]);
    ort.rows.forEach((row, i) => {
      const want = tfjs.rows[i];
      expect(row.rewardMean).toBe(want.rewardMean);
      expect(row.completionLength).toBe(want.completionLength);
      for (const key of ['loss', 'gradNorm', 'entropy'])
        expect(Math.abs(row[key] - want[key])).toBeLessThan(1e-4 * Math.max(1, Math.abs(want[key])));
    });
    // Something was learnt (else equal adapters would say nothing), and the same thing.
    expect(tfjs.rows.some((r) => r.gradNorm > 1e-3)).toBe(true);
    const a = floats(ort.adapter);
    const b = floats(tfjs.adapter);
    expect(a.length).toBe(b.length);
    let diff = 0;
    let scale = 0;
    for (let i = 0; i < b.length; i++) {
      diff = Math.max(diff, Math.abs(a[i] - b[i]));
      scale = Math.max(scale, Math.abs(b[i]));
    }
    expect(diff).toBeLessThan(1e-3 * scale);
  }, 120_000);
});
