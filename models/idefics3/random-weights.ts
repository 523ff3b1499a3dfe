// Random weights for a whole Idefics3ForConditionalGeneration (SmolVLM) checkpoint, under transformers' tensor names
// and layouts: the Llama language model (models/hf/write-checkpoint.ts's
// randomDecoderTensors with models/idefics3/language-model.ts's names), the SigLIP vision tower
// (`model.vision_model.*`, the names models/vision/siglip.ts reads) and the connector's projection. For benchmarks and
// checks of a real model's shape without its weights: write them with writeHfCheckpoint.
import type { Rng } from '../../core/rng.ts';
import type { HfModelConfig } from '../hf/config.ts';
import { patchesPerSide } from '../vision/vision-config.ts';
import type { Idefics3VisionSetup } from './vision-config.ts';
import { randomDecoderTensors, type HostTensor } from '../hf/write-checkpoint.ts';
import { SIGLIP_PREFIX } from '../vision/siglip.ts';
import { IDEFICS3_CONNECTOR_WEIGHT } from './connector.ts';
import { IDEFICS3_TEXT_LAYOUT } from './language-model.ts';

/** normal(0, std) values (Box-Muller, two per pair of uniforms), as transformers initialises matrices. */
function normal(n: number, std: number, rng: Rng): Float32Array {
  const data = new Float32Array(n);
  for (let i = 0; i < n; i += 2) {
    const r = Math.sqrt(-2 * Math.log(1 - rng.next())) * std;
    const a = 2 * Math.PI * rng.next();
    data[i] = r * Math.cos(a);
    if (i + 1 < n) data[i + 1] = r * Math.sin(a);
  }
  return data;
}

/** The vision tower's and connector's tensor names and on-disk shapes (nn.Linear [out, in], Conv2d [D, C, P, P]). */
function expectedIdefics3VisionTensors(setup: Idefics3VisionSetup, textHidden: number): Map<string, number[]> {
  const v = setup.vision;
  const D = v.hiddenSize;
  const p = SIGLIP_PREFIX.idefics3;
  const out = new Map<string, number[]>();
  out.set(`${p}embeddings.patch_embedding.weight`, [D, v.numChannels, v.patchSize, v.patchSize]);
  out.set(`${p}embeddings.patch_embedding.bias`, [D]);
  out.set(`${p}embeddings.position_embedding.weight`, [patchesPerSide(v) ** 2, D]);
  const linear = (name: string, inDim: number, outDim: number) => {
    out.set(`${name}.weight`, [outDim, inDim]);
    out.set(`${name}.bias`, [outDim]);
  };
  const norm = (name: string) => {
    out.set(`${name}.weight`, [D]);
    out.set(`${name}.bias`, [D]);
  };
  for (let i = 0; i < v.numHiddenLayers; i++) {
    const l = `${p}encoder.layers.${i}.`;
    norm(`${l}layer_norm1`);
    for (const proj of ['q_proj', 'k_proj', 'v_proj', 'out_proj']) linear(`${l}self_attn.${proj}`, D, D);
    norm(`${l}layer_norm2`);
    linear(`${l}mlp.fc1`, D, v.intermediateSize);
    linear(`${l}mlp.fc2`, v.intermediateSize, D);
  }
  norm(`${p}post_layernorm`);
  out.set(IDEFICS3_CONNECTOR_WEIGHT, [textHidden, D * setup.scaleFactor ** 2]);
  return out;
}

/**
 * Every tensor of the checkpoint: matrices, embeddings and the patch kernel normal(0, initializerRange), biases 0,
 * LayerNorm / RMSNorm weights 1.
 */
export function randomIdefics3Tensors(
  config: HfModelConfig,
  setup: Idefics3VisionSetup,
  rng: Rng,
  initializerRange = 0.02,
): Map<string, HostTensor> {
  const out = randomDecoderTensors(config.text, IDEFICS3_TEXT_LAYOUT, rng, initializerRange);
  for (const [name, shape] of expectedIdefics3VisionTensors(setup, config.text.hiddenSize)) {
    const n = shape.reduce((a, b) => a * b, 1);
    let data: Float32Array;
    if (name.endsWith('.bias')) data = new Float32Array(n);
    else if (shape.length === 1)
      data = new Float32Array(n).fill(1); // LayerNorm weights
    else data = normal(n, initializerRange, rng);
    out.set(name, { shape, data });
  }
  return out;
}
