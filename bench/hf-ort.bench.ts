// Decoding speed of a Hugging Face language model on the two engines: tfjs (WASM, one thread) against ONNX
// Runtime (the graph of models/onnx/hf/hf-graph.ts, 1 intra-op thread, then every core), on SmolVLM-256M-Instruct's text
// model with random weights (SmolLM2-135M shape: 30 layers, hidden 576, 9 heads / 3 KV heads, vocabulary 49,280;
// bench/hf.bench.ts writes the folder), with a LoRA r16 adapter on every projection (B non-zero). One prompt of
// PROMPT tokens prefilled, its cache repeated for G rows, NEW greedy tokens each (the rollout's shape).
// Reported: CPU seconds of the process (all threads) per generated token (G·NEW tokens), and wall seconds; on a shared
// machine compare the CPU figures. METRL_BENCH_HF_ORT_DEVICE=webgpu|cuda adds ORT on that device (wall seconds per
// token: the GPU's time is not the process's CPU time).
// Then the same folder's SigLIP vision tower (SigLIP base: 12 layers, hidden 768, 1,024 patches of a 512 px image) on
// one random image: tfjs against ONNX Runtime (models/onnx/hf/siglip-graph.ts), CPU and wall seconds, and how far apart.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import type { BenchRow } from './table.ts';
import { Rng } from '../core/rng.ts';
import { initBackend } from '../models/backend.ts';
import { readHfLanguageModel } from '../models/hf/load-decoder.ts';
import { generate } from '../models/hf/generate.ts';
import { createLora } from '../models/hf/peft.ts';
import { HfOrtModel } from '../models/onnx/hf/hf-session.ts';
import { generateOrt } from '../models/onnx/hf/hf-generate.ts';
import { checkDevice, type Device } from '../models/onnx/device.ts';
import { writeSmolvlmFolder } from './hf.bench.ts';
import { Idefics3Model } from '../models/idefics3/model.ts';
import { siglipForward } from '../models/vision/siglip.ts';
import { SiglipOrtTower } from '../models/onnx/hf/siglip-session.ts';
import { HF_ARCHITECTURES } from '../models/registry.ts';

const PROMPT = Number(process.env.METRL_BENCH_HF_ORT_PROMPT ?? 64);
const G = Number(process.env.METRL_BENCH_HF_ORT_GROUP ?? 8);
const NEW = Number(process.env.METRL_BENCH_HF_ORT_NEW ?? 32);
const DEVICE = process.env.METRL_BENCH_HF_ORT_DEVICE as Device | undefined;

function timed<T>(f: () => T): { value: T; cpu: number; wall: number } {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const value = f();
  const c = process.cpuUsage(c0);
  return { value, cpu: (c.user + c.system) / 1e6, wall: (performance.now() - t0) / 1000 };
}

/** The folder's SigLIP tower on one random image: tfjs, then ORT on 1 thread and on every core. */
function visionTower(dir: string): BenchRow[] {
  const model = Idefics3Model.load(dir, HF_ARCHITECTURES);
  const { tower, towerConfig: config } = model.images;
  const S = config.imageSize;
  const pixels = tf.randomUniform([1, 3, S, S], -1, 1, 'float32', 9) as tf.Tensor4D;
  const group = `hf vision tower (SigLIP base, ${S} px)`;
  const note = (t: { cpu: number; wall: number }) =>
    `${t.cpu.toFixed(1)} CPU s, ${t.wall.toFixed(1)} s wall, load ${loadavg()[0].toFixed(1)}; one image`;
  const t = timed(() => siglipForward(tower, config, pixels));
  const rows: BenchRow[] = [{ group, name: 'tfjs (WASM, 1 thread)', value: t.cpu, unit: 'CPU s/image', note: note(t) }];
  const expected = t.value.dataSync();
  for (const threads of [1, undefined]) {
    const ort = new SiglipOrtTower(tower, config, threads ? { threads } : {});
    tf.dispose(ort.forward(pixels)); // warm-up
    const o = timed(() => ort.forward(pixels));
    const got = o.value.dataSync() as Float32Array;
    const diff = got.reduce((m, x, i) => Math.max(m, Math.abs(x - expected[i])), 0);
    rows.push({
      group,
      name: `ORT (${threads ? `${threads} thread` : 'all cores'})`,
      value: o.cpu,
      unit: 'CPU s/image',
      note: `${note(o)}; max |ORT − tfjs| ${diff.toExponential(1)}`,
    });
    tf.dispose(o.value);
    ort.dispose();
  }
  tf.dispose([pixels, t.value]);
  model.dispose();
  return rows;
}

export async function run(): Promise<BenchRow[]> {
  await initBackend('wasm', null);
  const scratch = mkdtempSync(join(tmpdir(), 'bench-hf-ort-'));
  try {
    writeSmolvlmFolder(scratch);
    const { decoder } = readHfLanguageModel(scratch, HF_ARCHITECTURES);
    createLora(decoder, { r: 16, alpha: 32 }, new Rng(1, 'bench-lora'));
    let seed = 3;
    for (const l of decoder.linears().values())
      l.lora!.b.assign(tf.randomNormal(l.lora!.b.shape, 0, 0.01, 'float32', seed++));
    const rng = new Rng(2, 'bench-prompt');
    const ids = [Array.from({ length: PROMPT }, () => 3 + Math.floor(rng.next() * 40000))];
    const options = { maxNewTokens: NEW, group: G };
    const tokens = G * NEW;
    const rows: BenchRow[] = [];
    const note = (t: { cpu: number; wall: number }) =>
      `${t.cpu.toFixed(1)} CPU s, ${t.wall.toFixed(1)} s wall, load ${loadavg()[0].toFixed(1)}; prompt ${PROMPT}, G ${G}, ${NEW} new`;
    generate(decoder, { ids }, { ...options, maxNewTokens: 2 }); // warm-up
    const t = timed(() => generate(decoder, { ids }, options));
    rows.push({
      group: 'hf decode (SmolLM2-135M shape)',
      name: 'tfjs (WASM, 1 thread)',
      value: t.cpu / tokens,
      unit: 'CPU s/token',
      note: note(t),
    });
    for (const threads of [1, undefined]) {
      const ort = new HfOrtModel(decoder, threads ? { threads } : {});
      generateOrt(ort, { ids }, { ...options, maxNewTokens: 2 }); // warm-up
      const o = timed(() => generateOrt(ort, { ids }, options));
      const same = JSON.stringify(o.value.tokens) === JSON.stringify(t.value.tokens);
      rows.push({
        group: 'hf decode (SmolLM2-135M shape)',
        name: `ORT (${threads ? `${threads} thread` : 'all cores'})`,
        value: o.cpu / tokens,
        unit: 'CPU s/token',
        note: `${note(o)}; ids ${same ? 'identical to tfjs' : 'DIFFER from tfjs'}`,
      });
      ort.dispose();
    }
    if (DEVICE) {
      checkDevice(DEVICE);
      const ort = new HfOrtModel(decoder, { device: DEVICE });
      generateOrt(ort, { ids }, { ...options, maxNewTokens: 2 }); // warm-up (kernel compilation)
      const o = timed(() => generateOrt(ort, { ids }, options));
      const same = JSON.stringify(o.value.tokens) === JSON.stringify(t.value.tokens);
      rows.push({
        group: 'hf decode (SmolLM2-135M shape)',
        name: `ORT (${DEVICE})`,
        value: o.wall / tokens,
        unit: 's/token (wall)',
        note: `${note(o)}; ids ${same ? 'identical to tfjs' : 'DIFFER from tfjs'}`,
      });
      ort.dispose();
    }
    decoder.dispose();
    rows.push(...visionTower(scratch));
    return rows;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
