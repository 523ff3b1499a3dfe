// The Hugging Face paths on a GPU checked against the CPU (the `device` tool's machine; bench/device-run.sh webgpu and
// cuda): for each fixture of ../shared/fixtures/hf (Llama, its bfloat16 copy: bfloat16 on CUDA, float16 on WebGPU,
// Qwen2, Gemma 3's language model), with non-zero LoRA adapters, ORT's sampler log-probs, a seeded rollout (tokens
// and their log-probs) and the ORT learner's loss and LoRA gradients on the devices named against ORT's CPU provider.
// Prints one JSON line per fixture and device: the largest log-prob difference and the largest gradient difference
// relative to each variable's largest gradient (the CPU tests hold these within 1e-4); a device that cannot start is
// named, not fatal. With both, CUDA is checked first: its ORT build becomes the process's ONNX Runtime, which runs
// WebGPU and the CPU too.
//   node .dev/hf-device-check.mjs [cuda,webgpu]
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../models/backend.ts';
import { HfPolicy } from '../models/hf/policy.ts';
import { checkDevice, type Device } from '../models/onnx/device.ts';
import { HfOrtLearner } from '../models/onnx/hf/hf-learner.ts';
import { HfOrtSampler } from '../models/onnx/hf/hf-sampler.ts';
import { Rng } from '../core/rng.ts';
import type { SequenceBatchItem } from '../models/types.ts';
import { fixtureCopy } from './hf-fixtures.ts';
import { loadHfPolicy } from '../models/registry.ts';

const devices = (process.argv[2] ?? 'cuda,webgpu').split(',') as Device[];
await initBackend('wasm', null);

const usable = devices.filter((d) => {
  try {
    checkDevice(d);
    return true;
  } catch (error) {
    console.log(JSON.stringify({ device: d, skipped: (error as Error).message }));
    return false;
  }
});

for (const name of ['llama', 'llama-bf16', 'qwen2', 'gemma3']) {
  let policy: HfPolicy;
  try {
    policy = await loadHfPolicy(fixtureCopy(name), { hostWeights: true });
  } catch (error) {
    console.log(JSON.stringify({ fixture: name, skipped: (error as Error).message }));
    continue;
  }
  policy.attachLora({ r: 4, alpha: 8 }, new Rng(5, 'lora'));
  for (const l of policy.decoder.linears().values())
    l.lora!.b.assign(tf.randomNormal(l.lora!.b.shape, 0, 0.05, 'float32', 11));
  const rng = new Rng(9, 'ids');
  const prompt = { tokens: Array.from({ length: 12 }, () => 3 + Math.floor(rng.next() * 200)), images: [] } as never;
  const batch: SequenceBatchItem[] = [0, 1, 2].map((g) => ({
    prompt,
    completion: Array.from({ length: 6 + g }, () => 3 + Math.floor(rng.next() * 200)),
  }));
  const options = { useLora: true, temperature: 0.9 };
  const vars = policy.decoder.loraVariables();
  const run = (device: Device) => {
    const t0 = performance.now();
    const sampler = new HfOrtSampler(policy, { device });
    const logp = sampler.tokenLogProbs(batch, options);
    const lp = (logp.logProbs.mul(logp.mask).dataSync() as Float32Array).slice();
    // A seeded rollout (on webgpu its KV caches and adapters stay on the GPU between steps: device-tensors.ts).
    const drawn = sampler
      .sampleGroups([prompt, prompt], 3, { maxNewTokens: 8, temperature: 1, topP: 1 }, new Rng(3, 'draw'))
      .flat();
    sampler.dispose();
    const learner = new HfOrtLearner(policy, { device });
    const { grads } = learner.lossGradientsSum(
      [{ batch, options, loss: (l) => tf.sum(tf.mul(l.mask, tf.exp(l.logProbs))) as tf.Scalar }],
      vars,
    );
    const g = vars.map((v) => (grads[v.name].dataSync() as Float32Array).slice());
    learner.dispose();
    return { lp, g, drawn, seconds: (performance.now() - t0) / 1000 };
  };
  const cpu = run('cpu');
  for (const device of usable) {
    try {
      const d = run(device);
      const logpDiff = d.lp.reduce((m, x, i) => Math.max(m, Math.abs(x - cpu.lp[i])), 0);
      const gradRel = d.g.reduce((m, g, k) => {
        const scale = Math.max(1e-30, ...cpu.g[k].map(Math.abs));
        return Math.max(
          m,
          g.reduce((mm, x, i) => Math.max(mm, Math.abs(x - cpu.g[k][i]) / scale), 0),
        );
      }, 0);
      const sameTokens = d.drawn.filter((c, i) => c.tokens.join() === cpu.drawn[i].tokens.join()).length;
      const drawLogpDiff = d.drawn.reduce(
        (m, c, i) =>
          c.tokens.join() === cpu.drawn[i].tokens.join()
            ? Math.max(m, ...c.logProbs.map((x, j) => Math.abs(x - cpu.drawn[i].logProbs[j])))
            : m,
        0,
      );
      console.log(
        JSON.stringify({
          fixture: name,
          device,
          dtype: policy.config.dtype,
          logpMaxDiff: logpDiff,
          gradMaxRelDiff: gradRel,
          drawsIdentical: `${sameTokens}/${d.drawn.length}`,
          drawLogpMaxDiff: drawLogpDiff,
          seconds: d.seconds,
          cpuSeconds: cpu.seconds,
        }),
      );
    } catch (error) {
      console.log(JSON.stringify({ fixture: name, device, failed: (error as Error).message.split('\n')[0] }));
    }
  }
}
