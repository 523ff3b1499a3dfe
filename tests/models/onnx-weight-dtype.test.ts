// 16-bit weights in the ONNX Runtime graphs (models/onnx/weight-dtype.ts): on a GPU a bfloat16 / float16 checkpoint's
// projections stay 16-bit and are Cast to float32 where a product reads them. The GPU is not here, so the same graphs
// run on ORT's CPU provider with the stored type forced: on the bfloat16 fixture (whose float32 values are exactly its
// bfloat16 ones) the sampler's logits and the learner's loss and LoRA gradients equal the float32 graphs' to the bit;
// float16 on the float32 fixture stays within float16's rounding, and on the bfloat16 fixture (WebGPU's form of it)
// within float16's subnormal rounding. The conversions are checked on known bit patterns. Last, the graphs ORT runs
// after its optimizations hold those weights 16-bit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { initBackend } from '../../models/backend.ts';
import { HfPolicy } from '../../models/hf/policy.ts';
import { halfToFloat } from '../../models/safetensors.ts';
import { HfOrtModel } from '../../models/onnx/hf/hf-session.ts';
import { HfOrtLearner } from '../../models/onnx/hf/hf-learner.ts';
import { deviceWeightDtype } from '../../models/onnx/weight-dtype.ts';
import { floatToBfloat16, floatToHalf } from '../../models/onnx/weight-encoding.ts';
import { weightFileOf, WEIGHT_FILE } from '../../models/onnx/weight-file.ts';
import { Rng } from '../../core/rng.ts';
import type { SequenceBatchItem } from '../../models/types.ts';
import { HF_FIXTURES, hfCheckpointCopy, removeHfCopies } from '../helpers/hf-checkpoint-copy.ts';
import { readSafetensorsHeader } from '../../models/hf/weights.ts';
import { initializerBytes, placementsOf } from '../../models/onnx/session-placement.ts';
import { loadHfPolicy } from '../../models/registry.ts';

beforeAll(async () => {
  await initBackend('wasm', null);
});
afterAll(() => removeHfCopies());

describe('16-bit conversions', () => {
  it("rounds to the nearest float16 and bfloat16, ties to even, with float16's range", () => {
    expect([1, -2, 65504, 65520, 2 ** -24, 2 ** -26, 1 / 3, 0.1].map(floatToHalf)).toEqual([
      0x3c00, 0xc000, 0x7bff, 0x7c00, 0x0001, 0x0000, 0x3555, 0x2e66,
    ]);
    expect(floatToHalf(1 + 2 ** -11)).toBe(0x3c00); // a tie rounds to the even mantissa
    expect(floatToHalf(1 + 3 * 2 ** -11)).toBe(0x3c02);
    expect(Number.isNaN(halfToFloat(floatToHalf(NaN)))).toBe(true);
    expect([1, -2, 1 / 3, 3e38].map(floatToBfloat16)).toEqual([0x3f80, 0xc000, 0x3eab, 0x7f62]);
    const rng = new Rng(1, 'halves');
    for (let i = 0; i < 2000; i++) {
      const x = (rng.next() - 0.5) * 2 ** Math.floor(rng.next() * 20 - 10);
      // Within half a unit in the last place (float16 keeps 11 significant bits).
      expect(Math.abs(halfToFloat(floatToHalf(x)) - x)).toBeLessThanOrEqual(Math.abs(x) * 2 ** -11 + 2 ** -25);
    }
  });

  it('keeps a 16-bit checkpoint 16-bit on a GPU only', () => {
    expect(deviceWeightDtype('bfloat16', 'cpu')).toBe('float32');
    expect(deviceWeightDtype('bfloat16', undefined)).toBe('float32');
    expect(deviceWeightDtype('bfloat16', 'cuda')).toBe('bfloat16');
    expect(deviceWeightDtype('float16', 'webgpu')).toBe('float16');
    // WebGPU has no bfloat16 Cast: a bfloat16 checkpoint is stored as float16 there (exact in float16's normal range).
    expect(deviceWeightDtype('bfloat16', 'webgpu')).toBe('float16');
    expect(deviceWeightDtype('float32', 'cuda')).toBe('float32');
    expect(deviceWeightDtype(null, 'cuda')).toBe('float32');
  });
});

describe('16-bit weights in the graphs', () => {
  const prompt = { tokens: [1, 5, 9, 12, 3, 7], images: [] } as never;
  const items: SequenceBatchItem[] = [
    { prompt, completion: [4, 7, 2, 9] },
    { prompt, completion: [8, 1] },
  ];
  const options = { useLora: true, temperature: 0.9 };

  async function adapted(name: string): Promise<HfPolicy> {
    const policy = await loadHfPolicy(hfCheckpointCopy(name));
    policy.attachLora({ r: 4, alpha: 8 }, new Rng(7, 'lora'));
    // B non-zero, so that the adapters take part in the logits and gradients.
    for (const l of policy.decoder.linears().values())
      l.lora!.b.assign(tf.randomNormal(l.lora!.b.shape, 0, 0.05, 'float32', 3));
    return policy;
  }

  function logits(policy: HfPolicy, stored: 'float32' | 'bfloat16' | 'float16'): Float32Array {
    const model = new HfOrtModel(policy.decoder, { threads: 1, stored });
    const ids = [[1, 5, 9, 12, 3, 7]];
    const out = model.run({
      embeds: policy.decoder.embed(ids).dataSync() as Float32Array,
      rows: 1,
      seq: 6,
      attentionMask: [[1, 1, 1, 1, 1, 1]],
      cache: null,
      useLora: true,
    }).logits;
    model.dispose();
    return out;
  }

  function gradients(
    policy: HfPolicy,
    stored: 'float32' | 'bfloat16' | 'float16',
  ): { loss: number; grads: Float32Array[] } {
    const learner = new HfOrtLearner(policy, { threads: 1, stored });
    const vars = policy.decoder.loraVariables();
    const { values, grads } = learner.lossGradientsSum(
      [{ batch: items, options, loss: (lp) => tf.sum(tf.mul(lp.mask, tf.exp(lp.logProbs))) as tf.Scalar }],
      vars,
    );
    const out = {
      loss: (values[0] as unknown as tf.Tensor).dataSync()[0],
      grads: vars.map((v) => grads[v.name].dataSync() as Float32Array),
    };
    learner.dispose();
    return out;
  }

  it("bfloat16 weights of a bfloat16 checkpoint give the float32 graphs' logits, loss and gradients exactly, in 2 bytes a parameter", async () => {
    const policy = await adapted('llama-bf16');
    expect(Array.from(logits(policy, 'bfloat16'))).toEqual(Array.from(logits(policy, 'float32')));
    const half = gradients(policy, 'bfloat16');
    const full = gradients(policy, 'float32');
    expect(half.loss).toBe(full.loss);
    half.grads.forEach((g, i) => expect(Array.from(g)).toEqual(Array.from(full.grads[i])));
    // The shared file holds both types of each projection: its 16-bit copies take half the bytes of its float32 ones.
    const file = weightFileOf(policy.decoder, 'llama decoder');
    const linear = [...policy.decoder.linears().values()][0];
    expect(file.has(`${linear.module}.weight.bfloat16`) && file.has(`${linear.module}.weight`)).toBe(true);
    expect(statSync(join(file.dir, WEIGHT_FILE)).size).toBeGreaterThan(0);
  });

  it("a bfloat16 checkpoint stored as float16 (WebGPU's form) gives the float32 logits within float16's subnormal rounding", async () => {
    // float16 holds every bfloat16 value of magnitude 2^-14 … 65504 exactly; smaller weights move by at most 2^-25.
    const policy = await adapted('llama-bf16');
    const half = logits(policy, 'float16');
    const full = logits(policy, 'float32');
    const worst = Math.max(...full.map((x, i) => Math.abs(x - half[i])));
    expect(worst).toBeLessThan(1e-5);
    const gradHalf = gradients(policy, 'float16');
    const gradFull = gradients(policy, 'float32');
    expect(Math.abs(gradHalf.loss - gradFull.loss)).toBeLessThan(1e-5 * Math.abs(gradFull.loss));
    gradHalf.grads.forEach((g, i) => {
      const scale = Math.max(...gradFull.grads[i].map(Math.abs));
      expect(Math.max(...g.map((x, j) => Math.abs(x - gradFull.grads[i][j]))) / scale).toBeLessThan(1e-4);
    });
  });

  it("float16 weights stay within float16's rounding of the float32 logits", async () => {
    const policy = await adapted('llama');
    const half = logits(policy, 'float16');
    const full = logits(policy, 'float32');
    const scale = Math.max(...full.map(Math.abs));
    const worst = Math.max(...full.map((x, i) => Math.abs(x - half[i])));
    expect(worst).toBeGreaterThan(0); // the weights were rounded
    expect(worst / scale).toBeLessThan(5e-3);
  });
});

// What ORT runs, not what metrl wrote: the graph after ORT's optimizations (session-placement.ts reads the graph each
// session writes under METRL_ORT_PLACEMENT, in a child process running bench/every-graph.ts). Left to its default
// optimizations ORT folds every Cast of a 16-bit initializer into a float32 initializer, on every provider; the
// sessions of 16-bit graphs switch those two folds off (session.ts sixteenBit), and this holds them to it. The GPU
// providers are not here: their graphs (bfloat16 as on CUDA, float16 as on WebGPU) are opened on ORT's CPU provider,
// whose optimizer passes are the ones that folded them (tests/models/webgpu-placement.test.ts checks WebGPU's own).
describe('16-bit weights in the sessions ORT runs', () => {
  /** Parameters of the llama-bf16 fixture's projections and head: the weights the graphs store 16-bit. */
  const projectionParameters = () => {
    let n = 0;
    for (const [name, entry] of readSafetensorsHeader(join(HF_FIXTURES, 'llama-bf16', 'model.safetensors')))
      if (/_proj\.weight$|^lm_head\.weight$/.test(name)) n += entry.shape.reduce((a, b) => a * b, 1);
    return n;
  };

  it.each([
    ['bfloat16', 'BFLOAT16'],
    ['float16', 'FLOAT16'],
  ])(
    '%s: the decoder and training sessions hold 2 bytes a parameter',
    (stored, onnxType) => {
      const sessions = placementsOf(
        [process.execPath, 'bin/run-ts.js', 'bench/every-graph.ts', 'cpu', 'llama-bf16', '--stored', stored],
        { timeoutMs: 240_000 },
      );
      const graphs = sessions.filter((s) => /decoder|training/.test(s.label));
      expect(graphs.map((s) => s.label)).toEqual(['llama decoder', 'llama training']);
      for (const s of graphs) {
        const bytes = initializerBytes(s.model);
        expect(bytes[onnxType]).toBe(2 * projectionParameters());
        // What else is float32: the norms' gains and the graphs' scalars (under 1% here), no projection.
        expect(bytes.FLOAT).toBeLessThan(0.01 * bytes[onnxType]);
      }
    },
    300_000,
  );
});
