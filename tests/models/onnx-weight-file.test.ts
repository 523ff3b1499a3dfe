// The decoder's shared weight file (models/onnx/weight-file.ts): the sampler's decoder graph and the learner's training
// graph of one decoder write each weight once and both sessions map it, with the outputs of graphs that hold their own
// weights (the sampler's logits; the learner's loss and gradients are checked against tfjs in onnx-hf-learner.test.ts,
// over this same file); a folder left by a killed process is removed by the next one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initBackend } from '../../models/backend.ts';
import { HfOrtModel } from '../../models/onnx/hf/hf-session.ts';
import { HfOrtLearner } from '../../models/onnx/hf/hf-learner.ts';
import { SharedWeightFile, weightFileOf, WEIGHT_FILE } from '../../models/onnx/weight-file.ts';
import { Rng } from '../../core/rng.ts';
import { hfCheckpointCopy, removeHfCopies } from '../helpers/hf-checkpoint-copy.ts';
import { loadHfPolicy } from '../../models/registry.ts';

beforeAll(async () => {
  await initBackend('wasm', null);
});
afterAll(() => removeHfCopies());

/** The mappings of `file` in this process (ORT maps each external tensor on its own). */
const mappings = (file: string) =>
  readFileSync('/proc/self/maps', 'utf8')
    .split('\n')
    .filter((l) => l.endsWith(file)).length;

describe('shared weight file', () => {
  it("holds each weight of the sampler's and the learner's graphs once, and the sampler computes what a graph with its own weights does", async () => {
    const policy = await loadHfPolicy(hfCheckpointCopy('llama'));
    policy.attachLora({ r: 4, alpha: 8 }, new Rng(3, 'lora'));
    const { decoder } = policy;
    const shared = new HfOrtModel(decoder, { threads: 1 });
    const file = weightFileOf(decoder, 'llama decoder');
    const path = join(file.dir, WEIGHT_FILE);
    const linears = [...decoder.linears().values()];
    for (const l of linears) expect(file.has(`${l.module}.weight`)).toBe(true);
    expect(file.has('lm_head')).toBe(true);
    const afterSampler = statSync(path).size;
    const pageRound = (n: number) => Math.ceil(n / 4096) * 4096;
    const expected = [...linears.map((l) => l.w.size * 4), decoder.weights.lmHead.size * 4].reduce(
      (s, n) => s + pageRound(n),
      0,
    );
    // The last weight is not padded to a page.
    expect(afterSampler).toBeGreaterThan(expected - 4096);
    expect(afterSampler).toBeLessThanOrEqual(expected);
    const learner = new HfOrtLearner(policy, { threads: 1 });
    const prompt = { tokens: Int32Array.from([1, 5, 9, 12, 3]), images: [] } as never;
    learner.lossGradientsSum(
      [
        {
          batch: [{ prompt, completion: [4, 7, 2] }],
          options: { useLora: true },
          loss: (lp) => lp.logProbs.sum() as never,
        },
      ],
      linears.flatMap((l) => [l.lora!.a, l.lora!.b]),
    );
    // The learner's graph found every weight in the file: nothing was added.
    expect(statSync(path).size).toBe(afterSampler);
    if (existsSync('/proc/self/maps')) expect(mappings(path)).toBeGreaterThan(linears.length);
    // Logits equal a sampler whose graph holds its own weights inline.
    const own = new HfOrtModel(decoder, { threads: 1, maxInlineBytes: Infinity });
    const req = {
      embeds: decoder.embed([[1, 5, 9, 12, 3]]).dataSync() as Float32Array,
      rows: 1,
      seq: 5,
      attentionMask: [[1, 1, 1, 1, 1]],
      cache: null,
      useLora: true,
    };
    expect(Array.from(shared.run(req).logits)).toEqual(Array.from(own.run(req).logits));
    shared.dispose();
    own.dispose();
  });

  it('removes the folder of a process that no longer runs, and keeps its own until it ends', () => {
    // A pid above Linux's pid_max default (4,194,304) runs nowhere.
    const abandoned = join(tmpdir(), 'metrl-weights-4999999-test');
    mkdirSync(abandoned, { recursive: true });
    const file = new SharedWeightFile('test');
    expect(existsSync(abandoned)).toBe(false);
    expect(existsSync(file.dir)).toBe(true);
    file.place('w', new Uint8Array(10).fill(3));
    expect(() => file.place('w', new Uint8Array(11))).toThrow(/shared weight w is 10 bytes, now 11/);
    const row = new Uint8Array(4);
    file.read('w', 2, row);
    expect(Array.from(row)).toEqual([3, 3, 3, 3]);
    file.dispose();
    expect(existsSync(file.dir)).toBe(false);
  });
});
