// Equivalence of metrl and the PyTorch image-step peer (vlm_grpo_step.py --check CHECK_DIR) on the same Idefics3
// checkpoint, the same prompt ids and pixel values (CKPT/vlm-prompt.json, CKPT/pixel_values.f32):
//   features  the vision tower + pixel shuffle + connector on the image ([64, 576] at SmolVLM-256M's shape): metrl's
//             tfjs tower (HfPolicy's image encoder) and its ONNX Runtime tower (installed by HfOrtSampler), each against
//             torch's features.f32;
//   logits    the prompt (image rows merged) + 24 fixed tokens, LoRA off, every position: metrl's tfjs decoder
//             (HfDecoder.forward on HfPolicy.prefillInputs' merged embeddings) and its ORT graph (HfOrtModel.run on the
//             embeddings merged from the ORT tower's features), each against torch's logits.f32;
//   LoRA      torch's adapter (PEFT layout, B non-zero, on the language model's 7 projections) loaded by
//             HfPolicy.loadAdapter; the loss Σ log p of 3 completions of 8 tokens packed on the image prompt and its
//             gradients with respect to every LoRA A and B: tfjs autodiff through policy.tokenLogProbs (the training
//             path) and the ONNX Runtime learner (HfOrtLearner via summedLossGradients), against torch's
//             grads.safetensors.
// Tolerance (../shared/fixtures/hf/README.md, "Tolerance to expect"): atol 1e-4 (+ rtol 1e-4) on logits and image
// features; `ok` in the output applies |d| <= 1e-4 + 1e-4 |torch| elementwise to features, logits and the LoRA
// log-probs, requires the argmax of every logit row to match, and the gradients' largest difference to be within 1e-4
// of their largest magnitude (relative).
// Run from the metrl checkout: node_modules/.bin/tsx bench/peers/vlm-check.mts CKPT CHECK_DIR
// Prints one JSON line; exits 1 when a comparison is outside the tolerance.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { imp, tf } from './checkout.mts';
const { initBackend } = await imp('models/backend.ts');
const { loadBaseModel } = await imp('models/registry.ts');
const { HfOrtSampler } = await imp('models/onnx/hf/hf-sampler.ts');
const { HfOrtLearner } = await imp('models/onnx/hf/hf-learner.ts');
const { summedLossGradients } = await imp('models/learner.ts');

const [ckpt, dir] = process.argv.slice(2);
const backend = await initBackend(process.env.METRL_BACKEND ?? 'wasm', null);
if (tf.getBackend() !== backend.tfBackend) throw new Error('two tfjs instances');

const f32 = (path: string) => {
  const b = readFileSync(path);
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
};
/** Largest |a - b|, largest |b|, and whether |a - b| <= atol + rtol |b| everywhere. */
function compare(a: ArrayLike<number>, b: ArrayLike<number>, atol = 1e-4, rtol = 1e-4) {
  if (a.length !== b.length) throw new Error(`lengths ${a.length} vs ${b.length}`);
  let maxAbs = 0;
  let maxRef = 0;
  let within = true;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    maxAbs = Math.max(maxAbs, d);
    maxRef = Math.max(maxRef, Math.abs(b[i]));
    if (!(d <= atol + rtol * Math.abs(b[i]))) within = false;
  }
  return { maxAbs, maxRef, relative: maxAbs / maxRef, within };
}

const spec = JSON.parse(readFileSync(join(ckpt, 'vlm-prompt.json'), 'utf8')) as {
  tokens: number[];
  imageShape: number[];
};
const pixels = f32(join(ckpt, 'pixel_values.f32'));
const check = JSON.parse(readFileSync(join(dir, 'check.json'), 'utf8')) as {
  sequence: number[];
  featuresShape: number[];
  comps: number[][];
  loss: number;
  logp: number[][];
};
const seq = check.sequence;
const T = seq.length;
const torchLogits = f32(join(dir, 'logits.f32'));
const torchFeatures = f32(join(dir, 'features.f32'));

const policy = await loadBaseModel(ckpt);
const V = policy.decoder.config.vocabSize;
if (torchLogits.length !== T * V) throw new Error(`logits.f32 holds ${torchLogits.length}, expected ${T * V}`);
const encoder = (policy.imageEncoder ?? policy.image?.images) as {
  encode(p: { data: Float32Array; shape: number[] }): { dataSync(): Float32Array; dispose(): void };
};
const features = (data: Float32Array) => {
  const t = encoder.encode({ data, shape: spec.imageShape });
  const out = t.dataSync().slice();
  t.dispose();
  return out;
};
// A prompt of the whole sequence: prefillInputs merges the image features into the rows of the image tokens (the 24
// extra tokens are ordinary ids). Each engine gets its own pixel copy, so HfPolicy's feature cache does not share them.
const promptOf = () => ({ tokens: seq, images: [pixels.slice()] });

// tfjs: tower and decoder
const tfjsFeatures = features(pixels.slice());
const embTfjs = policy.prefillInputs([promptOf()], [seq]).embeds as Float32Array;
const out = policy.decoder.forward({
  ids: [seq],
  inputsEmbeds: tf.tensor3d(embTfjs, [1, T, embTfjs.length / T]),
  useLora: false,
  logits: 'all',
});
const tfjsLogits = (out.logits.dataSync() as Float32Array).slice();
tf.dispose([out.logits, out.hidden]);

// ONNX Runtime: the sampler installs its tower in the policy's image encoder; its decoder graph on the merged embeddings
const sampler = new HfOrtSampler(policy, { threads: 1 });
const ortFeatures = features(pixels.slice());
const embOrt = policy.prefillInputs([promptOf()], [seq]).embeds as Float32Array;
const ortLogits = sampler.model.run({
  embeds: embOrt,
  rows: 1,
  seq: T,
  attentionMask: [new Array<number>(T).fill(1)],
  cache: null,
  useLora: false,
}).logits as Float32Array;
sampler.dispose();

// LoRA: torch's adapter, loss Σ log p of the packed group on the image prompt, gradients (tfjs autodiff, ORT learner)
function readF32Safetensors(path: string): Map<string, { shape: number[]; data: Float32Array }> {
  const buf = readFileSync(path);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  const out = new Map<string, { shape: number[]; data: Float32Array }>();
  for (const [name, e] of Object.entries(header) as [
    string,
    { dtype: string; shape: number[]; data_offsets: [number, number] },
  ][]) {
    if (name === '__metadata__') continue;
    if (e.dtype !== 'F32') throw new Error(`${name}: ${e.dtype}`);
    const bytes = buf.subarray(8 + n + e.data_offsets[0], 8 + n + e.data_offsets[1]);
    out.set(name, {
      shape: e.shape,
      data: new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)),
    });
  }
  return out;
}
const transpose = (d: Float32Array, rows: number, cols: number) => {
  const o = new Float32Array(d.length);
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) o[j * rows + i] = d[i * cols + j];
  return o;
};
policy.loadAdapter(join(dir, 'adapter'));
const vars = policy.trainableVariables('lora');
const torchGrads = readF32Safetensors(join(dir, 'grads.safetensors'));
const torchLogp = check.logp.flat();
type Grads = Record<string, { dataSync(): Float32Array }>;
function compareGrads(grads: Grads) {
  let maxAbs = 0;
  let maxRef = 0;
  let compared = 0;
  for (const [module, l] of policy.decoder.linears() as Map<
    string,
    { lora?: { a: { name: string }; b: { name: string } } }
  >) {
    if (!l.lora) continue;
    for (const [part, v] of [
      ['lora_A', l.lora.a],
      ['lora_B', l.lora.b],
    ] as const) {
      const t = torchGrads.get(`${module}.${part}.weight`);
      if (!t) throw new Error(`torch has no gradient for ${module}.${part}`);
      const mine = transpose(grads[v.name].dataSync(), t.shape[1], t.shape[0]); // metrl [in, r] / [r, out] → PEFT [r, in] / [out, r]
      for (let i = 0; i < mine.length; i++) {
        maxAbs = Math.max(maxAbs, Math.abs(mine[i] - t.data[i]));
        maxRef = Math.max(maxRef, Math.abs(t.data[i]));
      }
      compared++;
    }
  }
  if (compared !== torchGrads.size) throw new Error(`compared ${compared} of torch's ${torchGrads.size} gradients`);
  return { maxAbs, maxRef, relative: maxAbs / maxRef, within: maxAbs <= 1e-4 * maxRef, tensors: compared };
}
const loraPrompt = { tokens: spec.tokens, images: [pixels.slice()] };
const items = check.comps.map((c) => ({ prompt: loraPrompt, completion: c }));
// The image encoded before the gradient passes, as a step's rollout encodes it before the update: encoded inside
// tf.variableGrads the frozen tower's activations would all sit on the tape (at 12 layers × 1024 patches the WASM heap
// ran out here).
policy.prefillInputs([loraPrompt], [spec.tokens]);
let tfjsLogp: Float32Array | null = null;
const tfjsGrad = tf.variableGrads(() => {
  const r = policy.tokenLogProbs(items, { useLora: true });
  tfjsLogp = (r.logProbs.dataSync() as Float32Array).slice();
  return tf.sum(tf.mul(r.logProbs, r.mask));
}, vars);
const tfjsLoss = tfjsGrad.value.dataSync()[0];
const tfjsGrads = compareGrads(tfjsGrad.grads);
tf.dispose([tfjsGrad.value, ...Object.values(tfjsGrad.grads)]);
const learner = new HfOrtLearner(policy, { threads: 1 });
let ortLogp: Float32Array | null = null;
const ortGrad = summedLossGradients(
  learner,
  [
    {
      batch: items, // the same prompt object: its image features (tfjs tower, compared above) come from the policy's cache
      options: { useLora: true },
      loss: (s: { logProbs: { dataSync(): Float32Array }; mask: unknown }) => {
        ortLogp = s.logProbs.dataSync().slice();
        return tf.sum(tf.mul(s.logProbs, s.mask));
      },
    },
  ],
  vars,
);
const ortLoss = ortGrad.values.reduce((a: number, v: { dataSync(): Float32Array }) => a + v.dataSync()[0], 0);
const ortGrads = compareGrads(ortGrad.grads);
learner.dispose();

const argmaxRows = (x: Float32Array) =>
  Array.from({ length: T }, (_, t) => {
    let best = 0;
    for (let v = 1; v < V; v++) if (x[t * V + v] > x[t * V + best]) best = v;
    return best;
  });
const torchArg = argmaxRows(torchLogits);
const result = {
  tokens: T,
  imageTokens: spec.tokens.filter((t) => t === (policy.config.raw as { image_token_id: number }).image_token_id).length,
  features: {
    shape: check.featuresShape,
    tfjs: compare(tfjsFeatures, torchFeatures),
    ort: compare(ortFeatures, torchFeatures),
  },
  logits: {
    tfjs: compare(tfjsLogits, torchLogits),
    ort: compare(ortLogits, torchLogits),
    argmaxSameTfjs: argmaxRows(tfjsLogits).every((x, i) => x === torchArg[i]),
    argmaxSameOrt: argmaxRows(ortLogits).every((x, i) => x === torchArg[i]),
  },
  lora: {
    torchLoss: check.loss,
    tfjsLoss,
    ortLoss,
    logp: { tfjs: compare(tfjsLogp!, torchLogp), ort: compare(ortLogp!, torchLogp) },
    grads: { tfjs: tfjsGrads, ort: ortGrads },
  },
  backend: backend.name,
};
const ok =
  result.features.tfjs.within &&
  result.features.ort.within &&
  result.logits.tfjs.within &&
  result.logits.ort.within &&
  result.logits.argmaxSameTfjs &&
  result.logits.argmaxSameOrt &&
  result.lora.logp.tfjs.within &&
  result.lora.logp.ort.within &&
  tfjsGrads.within &&
  ortGrads.within;
console.log(JSON.stringify({ ok, ...result }));
policy.dispose();
process.exitCode = ok ? 0 : 1;
