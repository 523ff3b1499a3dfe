// Where ONNX Runtime's WebGPU provider runs metrl's graphs: every graph metrl builds (bench/every-graph.ts opens them
// through the classes a run uses: each Hugging Face fixture's decoder, device-copy graphs, SigLIP tower and training
// graph, and the built-in model's general, decode, scoring and training graphs) is opened on WebGPU with ORT's verbose
// session log, and no compute node may sit on the CPU provider beyond the allow-list of session-placement.ts (shape and
// index arithmetic, the output head's Loop). The copy nodes ORT inserts between host and device are bounded too: the
// learner's graphs had 60 (Llama) and 86 (Gemma 3) when FusedMatMul, OneHot and ConstantOfShape ran on the CPU; what
// remains is the Loop's scan outputs and the index uploads (docs/engines.md, "Where the nodes run"). A bfloat16
// checkpoint's projections are float16 on WebGPU, 2 bytes a parameter in the graph ORT runs. Needs WebGPU
// (tests/helpers/webgpu.ts: a GPU, or the lavapipe driver of .ci/lavapipe.sh).
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { readSafetensorsHeader } from '../../models/hf/weights.ts';
import {
  allowedOnCpu,
  CPU_PROVIDER,
  initializerBytes,
  placementsOf,
  type SessionPlacement,
} from '../../models/onnx/session-placement.ts';
import { HF_FIXTURES } from '../helpers/hf-checkpoint-copy.ts';
import { WEBGPU_MISSING } from '../helpers/webgpu.ts';

/** Copy nodes a session may have: the most measured on lavapipe is 7 (the Llama training graph). */
const MAX_COPIES = 8;

/** The sessions each model opens, in order (the device copies: the adapters' upload and the cache rows' gather). */
const EXPECTED: Record<string, string[]> = {
  llama: ['llama decoder', 'device copy', 'device copy', 'llama training'],
  'llama-bf16': ['llama decoder', 'device copy', 'device copy', 'llama training'],
  qwen2: ['qwen2 decoder', 'device copy', 'device copy', 'qwen2 training'],
  qwen3: ['qwen3 decoder', 'device copy', 'device copy', 'qwen3 training'],
  gemma3: ['gemma3 decoder', 'device copy', 'device copy', 'SigLIP vision tower', 'gemma3 training'],
  idefics3: ['llama decoder', 'device copy', 'device copy', 'SigLIP vision tower', 'llama training'],
  qwen2_5_vl: ['qwen2_5_vl decoder', 'device copy', 'device copy', 'Qwen2.5-VL vision tower', 'qwen2_5_vl training'],
  qwen3_vl: ['qwen3_vl decoder', 'device copy', 'device copy', 'Qwen3-VL vision tower', 'qwen3_vl training'],
  'gemma3-softcap': ['gemma3 decoder', 'device copy', 'device copy', 'gemma3 training'],
  builtin: [
    'built-in model (general)',
    'built-in model (general)',
    'built-in model (decode)',
    'built-in model training',
    'built-in model training',
  ],
};

const open = (model: string): SessionPlacement[] =>
  placementsOf([process.execPath, 'bin/run-ts.js', 'bench/every-graph.ts', 'webgpu', model], {
    timeoutMs: 300_000,
  });

describe.skipIf(WEBGPU_MISSING !== null)('graphs on the WebGPU provider', () => {
  it('allows only what it says on the CPU', () => {
    expect(allowedOnCpu()).toEqual([
      'shape and index arithmetic: every output int64, int32 or bool',
      'Loop (control flow; its body runs on the device)',
    ]);
  });

  it.each(Object.keys(EXPECTED))(
    '%s: no compute node on the CPU provider',
    (model) => {
      const sessions = open(model);
      expect(sessions.map((s) => s.label)).toEqual(EXPECTED[model]);
      for (const s of sessions) {
        expect(s.nodes.some((n) => n.provider === 'WebGpuExecutionProvider')).toBe(true);
        expect(
          s.cpuCompute.map((n) => `${s.label}: ${n.op} (${n.name}) on ${CPU_PROVIDER}`),
          `${s.label}: compute nodes left on the CPU`,
        ).toEqual([]);
        expect(s.copies, `${s.label}: copy nodes`).toBeLessThanOrEqual(MAX_COPIES);
      }
      // The decoders, towers and device copies run whole on the device; only the training graphs have allowed CPU nodes.
      for (const s of sessions.filter((s) => !/training/.test(s.label))) expect(s.cpuAllowed, s.label).toEqual([]);
      if (model === 'llama-bf16') {
        let parameters = 0;
        for (const [name, entry] of readSafetensorsHeader(join(HF_FIXTURES, model, 'model.safetensors')))
          if (/_proj\.weight$|^lm_head\.weight$/.test(name)) parameters += entry.shape.reduce((a, b) => a * b, 1);
        for (const s of sessions.filter((s) => /decoder|training/.test(s.label))) {
          const bytes = initializerBytes(s.model);
          expect(bytes.FLOAT16, s.label).toBe(2 * parameters);
          expect(bytes.BFLOAT16, s.label).toBeUndefined();
        }
      }
    },
    320_000,
  );
});
