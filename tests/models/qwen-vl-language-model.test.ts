// The Qwen-VL pieces composed with the shared decoder block (models/hf/decoder-ops.ts decoderBlock) into the two
// fixtures' language models, here in the test only (the decoder does not yet know multimodal RoPE or DeepStack): the
// image processor's pixel values → the vision tower → image features in place of the <|image_pad|> embeddings →
// get_rope_index positions → the chunked (Qwen2.5-VL) or interleaved (Qwen3-VL) MRoPE cos / sin tables → logits,
// compared with the fixtures' PyTorch logits within 1e-4 (one and two images, text only, the left-padded batch), and
// the decoding positions through the greedy continuations' step logits. This is what pins the MRoPE tables' values.
import { beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import type { DecoderConfig } from '../../models/hf/config.ts';
import {
  type AttentionSpec,
  decoderBlock,
  decoderFinalNorm,
  decoderLogits,
  type DecoderOps,
  type WeightTensor,
} from '../../models/hf/decoder-ops.ts';
import type { DecoderLayerWeights, DecoderWeights } from '../../models/hf/decoder-weights.ts';
import { attention, buildMask } from '../../models/layers/attention.ts';
import { linear, type LinearWeights } from '../../models/layers/linear.ts';
import { activate, type MlpActivation } from '../../models/layers/mlp.ts';
import { type NormStyle, rmsNorm } from '../../models/layers/rms-norm.ts';
import { applyRope } from '../../models/layers/rope.ts';
import { mm } from '../../models/ops.ts';
import type { GridThw } from '../../models/qwen-vl/grid.ts';
import { type MropeSpec, mropeValues } from '../../models/layers/mrope.ts';
import { decodePositions, ropeIndex } from '../../models/qwen-vl/rope-index.ts';
import { parseQwen25VlSetup } from '../../models/qwen2_5_vl/config.ts';
import { qwen25VisionForward } from '../../models/qwen2_5_vl/vision-tower.ts';
import { loadQwen25VisionWeights } from '../../models/qwen2_5_vl/vision-weights.ts';
import { parseQwen3VlSetup } from '../../models/qwen3_vl/config.ts';
import { qwen3VisionForward } from '../../models/qwen3_vl/vision-tower.ts';
import { loadQwen3VisionWeights } from '../../models/qwen3_vl/vision-weights.ts';
import type { TensorLookup } from '../../models/vision/siglip.ts';
import { HF_FIXTURES, maxAbsDiff, modelWeights, readFixtureTensors, readJson } from './hf-vision-fixtures.ts';

const TOL = 1e-4;

beforeAll(async () => {
  await initBackend('wasm', null);
});

/** The shared block's tfjs executor, with this pass's multimodal RoPE tables and mask (no cache). */
class MropeOps implements DecoderOps<tf.Tensor> {
  constructor(
    private readonly table: { cos: tf.Tensor3D; sin: tf.Tensor3D },
    private readonly mask: tf.Tensor4D,
    private readonly B: number,
    private readonly T: number,
  ) {}
  linear(x: tf.Tensor, l: LinearWeights): tf.Tensor {
    return linear(x as tf.Tensor2D, l);
  }
  rmsNorm(x: tf.Tensor, weight: WeightTensor, eps: number, style: NormStyle): tf.Tensor {
    return rmsNorm(x, weight as tf.Tensor1D, eps, style);
  }
  heads(x: tf.Tensor, n: number, d: number): tf.Tensor {
    return tf.reshape(x, [x.shape[0], n, d]);
  }
  rope(x: tf.Tensor): tf.Tensor {
    return applyRope(x as tf.Tensor3D, this.table);
  }
  attention(q: tf.Tensor, k: tf.Tensor, v: tf.Tensor, s: AttentionSpec): tf.Tensor {
    const shape = {
      batch: this.B,
      queries: this.T,
      heads: s.heads,
      kvHeads: s.kvHeads,
      headDim: s.headDim,
      scale: s.scale,
      softcap: s.softcap,
    };
    return attention(q as tf.Tensor3D, k as tf.Tensor3D, v as tf.Tensor3D, this.mask, shape, null).out;
  }
  activation(x: tf.Tensor, act: MlpActivation): tf.Tensor {
    return activate(x, act);
  }
  mul(a: tf.Tensor, b: tf.Tensor): tf.Tensor {
    return tf.mul(a, b);
  }
  add(a: tf.Tensor, b: tf.Tensor): tf.Tensor {
    return tf.add(a, b);
  }
  project(x: tf.Tensor, w: WeightTensor): tf.Tensor {
    return mm(x as tf.Tensor2D, w as tf.Tensor2D);
  }
  softcap(x: tf.Tensor, cap: number): tf.Tensor {
    return tf.mul(tf.tanh(tf.div(x, cap)), cap);
  }
}

/** The fixture's text config as the shared block reads it (Qwen2-style decoder; Qwen3-VL adds q/k norms). */
function decoderConfig(text: Record<string, any>, qwen3: boolean, tied: boolean): DecoderConfig {
  const headDim = text.head_dim ?? text.hidden_size / text.num_attention_heads;
  return {
    family: 'qwen2',
    vocabSize: text.vocab_size,
    hiddenSize: text.hidden_size,
    numLayers: text.num_hidden_layers,
    numHeads: text.num_attention_heads,
    numKvHeads: text.num_key_value_heads,
    headDim,
    intermediateSize: text.intermediate_size,
    act: 'silu',
    rmsNormEps: text.rms_norm_eps,
    normStyle: 'w',
    ropeTheta: text.rope_theta,
    ropeLinearFactor: null,
    ropeLocalTheta: null,
    slidingWindow: null,
    layerTypes: Array.from({ length: text.num_hidden_layers }, () => 'full_attention' as const),
    attnScale: headDim ** -0.5,
    qkvBias: !qwen3,
    oBias: false,
    mlpBias: false,
    tieWordEmbeddings: tied,
    embedScale: null,
    qkNorm: qwen3,
    sandwichNorm: false,
    finalLogitSoftcap: null,
    attnLogitSoftcap: null,
    mrope: null,
    deepstackLayers: 0,
    bosTokenId: null,
    eosTokenIds: [],
    padTokenId: null,
    contextLength: text.max_position_embeddings,
  };
}

/** The language model's weights under `prefix` (`model.` for Qwen2.5-VL's file, `model.language_model.` for Qwen3-VL's). */
function decoderWeights(
  get: TensorLookup,
  prefix: string,
  c: DecoderConfig,
): { weights: DecoderWeights; embed: tf.Tensor2D } {
  const t = (name: string) => get(name)!;
  const vec = (name: string) => tf.variable(tf.tensor1d(t(name).data), false);
  const matT = (name: string) => {
    const { shape, data } = t(name);
    return tf.variable(tf.transpose(tf.tensor2d(data, [shape[0], shape[1]])), false);
  };
  const lin = (path: string, bias: boolean): LinearWeights => ({
    module: path,
    w: matT(`${prefix}${path}.weight`),
    ...(bias ? { bias: vec(`${prefix}${path}.bias`) } : {}),
  });
  const layers: DecoderLayerWeights[] = Array.from({ length: c.numLayers }, (_, i) => {
    const l = `layers.${i}.`;
    return {
      inputNorm: vec(`${prefix}${l}input_layernorm.weight`),
      postAttnNorm: vec(`${prefix}${l}post_attention_layernorm.weight`),
      ...(c.qkNorm
        ? { qNorm: vec(`${prefix}${l}self_attn.q_norm.weight`), kNorm: vec(`${prefix}${l}self_attn.k_norm.weight`) }
        : {}),
      q: lin(`${l}self_attn.q_proj`, c.qkvBias),
      k: lin(`${l}self_attn.k_proj`, c.qkvBias),
      v: lin(`${l}self_attn.v_proj`, c.qkvBias),
      o: lin(`${l}self_attn.o_proj`, false),
      mlp: {
        gate: lin(`${l}mlp.gate_proj`, false),
        up: lin(`${l}mlp.up_proj`, false),
        down: lin(`${l}mlp.down_proj`, false),
      },
    };
  });
  const e = t(`${prefix}embed_tokens.weight`);
  const embed = tf.tensor2d(e.data, [e.shape[0], e.shape[1]]);
  const weights: DecoderWeights = {
    embed: { table: tf.variable(embed, false), layout: 'rows' },
    layers,
    finalNorm: vec(`${prefix}norm.weight`),
    lmHead: c.tieWordEmbeddings ? tf.variable(tf.transpose(embed), false) : matT('lm_head.weight'),
  };
  return { weights, embed };
}

interface Model {
  config: DecoderConfig;
  weights: DecoderWeights;
  embed: tf.Tensor2D;
  mrope: MropeSpec;
  /** Image features and DeepStack features of a prompt's images. */
  vision: (pixels: Float32Array, grids: GridThw[]) => { features: tf.Tensor2D; deepstack: tf.Tensor2D[] };
}

/**
 * logits [B, T, V] of `ids` with the images' features in place of the image tokens (row-major over batch, position),
 * DeepStack features added at the same rows after layer j, and the 3-D positions `positions` [3, B·T].
 */
function logits(
  m: Model,
  ids: number[][],
  mask: number[][],
  positions: Int32Array,
  images: { features: tf.Tensor2D; deepstack: tf.Tensor2D[] } | null,
): Float32Array {
  return tf.tidy(() => {
    const B = ids.length;
    const T = ids[0].length;
    const flat = ids.flat();
    let x = tf.gather(m.embed, tf.tensor1d(flat, 'int32')) as tf.Tensor2D; // [B·T, H]
    const imageRows = flat.flatMap((id, i) => (id === 252 ? [i] : []));
    // A [B·T, n_image] selection: row i takes image feature k when it is the k-th image token (a product, not a scatter).
    const place = (features: tf.Tensor2D) => {
      const sel = new Float32Array(B * T * imageRows.length);
      imageRows.forEach((row, k) => (sel[row * imageRows.length + k] = 1));
      return tf.matMul(tf.tensor2d(sel, [B * T, imageRows.length]), features);
    };
    const keep = tf.tensor2d(
      flat.map((id) => (id === 252 ? 0 : 1)),
      [B * T, 1],
    );
    if (images) x = tf.add(tf.mul(x, keep), place(images.features));
    const { cos, sin } = mropeValues(positions, m.mrope);
    const d = m.config.headDim;
    const table = { cos: tf.tensor3d(cos, [B * T, 1, d]), sin: tf.tensor3d(sin, [B * T, 1, d]) };
    const ops = new MropeOps(
      table,
      buildMask({ batch: B, queries: T, past: 0, attentionMask: mask, window: null }),
      B,
      T,
    );
    for (let i = 0; i < m.config.numLayers; i++) {
      x = decoderBlock(ops, m.config, m.weights.layers[i], i, x) as tf.Tensor2D;
      const deep = images?.deepstack[i];
      if (deep) x = tf.add(x, place(deep));
    }
    return decoderLogits(
      ops,
      m.config,
      m.weights,
      decoderFinalNorm(ops, m.config, m.weights, x),
    ).dataSync() as Float32Array;
  });
}

function qwen25Model(): Model {
  const raw = readJson('qwen2_5_vl', 'config.json') as Record<string, any>;
  const setup = parseQwen25VlSetup(raw);
  const config = decoderConfig(raw.text_config, false, false);
  const get = modelWeights('qwen2_5_vl');
  const tower = loadQwen25VisionWeights(get, setup.vision);
  return {
    config,
    ...decoderWeights(get, 'model.', config),
    mrope: setup.mrope,
    vision: (pixels, grids) => ({ features: qwen25VisionForward(tower, setup.vision, pixels, grids), deepstack: [] }),
  };
}

function qwen3Model(): Model {
  const raw = readJson('qwen3_vl', 'config.json') as Record<string, any>;
  const setup = parseQwen3VlSetup(raw);
  const config = decoderConfig(raw.text_config, true, true);
  const get = modelWeights('qwen3_vl');
  const tower = loadQwen3VisionWeights(get, setup.vision);
  return {
    config,
    ...decoderWeights(get, 'model.language_model.', config),
    mrope: setup.mrope,
    vision: (pixels, grids) => qwen3VisionForward(tower, setup.vision, pixels, grids),
  };
}

const ROPE_IDS = { imageTokenId: 252, visionStartTokenId: 250, spatialMergeSize: 2 };

for (const [folder, build] of [
  ['qwen2_5_vl', qwen25Model],
  ['qwen3_vl', qwen3Model],
] as const) {
  describe(`${folder}: tower + get_rope_index + MRoPE tables through the shared decoder block`, () => {
    const ref = readJson(folder, 'reference.json') as Record<string, any>;
    const tensors = readFixtureTensors(join(HF_FIXTURES, folder, 'reference.safetensors'));
    const pixelsOf = (names: string[]) => {
      const parts = names.map((n) => tensors.get(n)!.data as Float32Array);
      const out = new Float32Array(parts.reduce((s, p) => s + p.length, 0));
      let o = 0;
      for (const p of parts) {
        out.set(p, o);
        o += p.length;
      }
      return out;
    };
    let model: Model;
    beforeAll(() => {
      model = build();
    });

    for (const name of ['one_image', 'two_images', 'text_only'] as const) {
      it(`${name}: logits within 1e-4 of the PyTorch reference`, () => {
        const r = ref[name];
        const grids = (r.image_grid_thw ?? []) as GridThw[];
        const images = r.images ? model.vision(pixelsOf(r.images), grids) : null;
        const { positions } = ropeIndex({ inputIds: r.input_ids, grids, ...ROPE_IDS });
        const mask = [r.input_ids[0].map(() => 1)];
        const out = logits(model, r.input_ids, mask, positions, images);
        expect(maxAbsDiff(out, tensors.get(`${name}.logits`)!.data)).toBeLessThan(TOL);
        if (images) {
          // The layout is pinned: the other model's MRoPE layout misses the reference by far.
          const other = model.mrope.layout === 'chunked' ? 'interleaved' : 'chunked';
          const swapped = logits(
            { ...model, mrope: { ...model.mrope, layout: other } },
            r.input_ids,
            mask,
            positions,
            images,
          );
          expect(maxAbsDiff(swapped, tensors.get(`${name}.logits`)!.data)).toBeGreaterThan(0.1);
        }
        if (images) tf.dispose([images.features, ...images.deepstack]);
      });
    }

    it('batch: the text row and the image row left-padded together, non-pad rows within 1e-4', () => {
      const r = ref.batch;
      const grids = r.image_grid_thw as GridThw[];
      const images = model.vision(pixelsOf(r.images), grids);
      const { positions } = ropeIndex({ inputIds: r.input_ids, attentionMask: r.attention_mask, grids, ...ROPE_IDS });
      const out = logits(model, r.input_ids, r.attention_mask, positions, images);
      const expected = tensors.get('batch.logits')!.data;
      const V = 256;
      const L = r.input_ids[0].length;
      let worst = 0;
      r.attention_mask.forEach((row: number[], b: number) =>
        row.forEach((m, t) => {
          if (m === 1) {
            const at = (b * L + t) * V;
            worst = Math.max(worst, maxAbsDiff(out.subarray(at, at + V), expected.subarray(at, at + V)));
          }
        }),
      );
      expect(worst).toBeLessThan(TOL);
      tf.dispose([images.features, ...images.deepstack]);
    });

    it('the decoding positions: the greedy continuation recomputed in one pass gives the step logits within 1e-4', () => {
      const r = ref.one_image;
      const grids = r.image_grid_thw as GridThw[];
      const images = model.vision(pixelsOf(r.images), grids);
      const L = r.input_ids[0].length;
      const prompt = ropeIndex({ inputIds: r.input_ids, grids, ...ROPE_IDS });
      const steps = r.greedy.new_ids.length - 1; // new_ids[t] fed at cache position L + t, t < 7
      const ids = [[...r.input_ids[0], ...r.greedy.new_ids.slice(0, steps)]];
      const positions = new Int32Array(3 * (L + steps));
      for (let a = 0; a < 3; a++) {
        positions.set(prompt.positions.subarray(a * L, (a + 1) * L), a * (L + steps));
        for (let t = 0; t < steps; t++)
          positions[a * (L + steps) + L + t] = decodePositions(prompt.ropeDeltas, L + t)[0];
      }
      const out = logits(model, ids, [ids[0].map(() => 1)], positions, images);
      const V = 256;
      const stepLogits = tensors.get('one_image.greedy.step_logits')!.data;
      expect(maxAbsDiff(out.subarray((L - 1) * V), stepLogits)).toBeLessThan(TOL);
      // The positions matter: decoding at the cache position (rope_deltas ignored) misses the reference by far.
      for (let a = 0; a < 3; a++) for (let t = 0; t < steps; t++) positions[a * (L + steps) + L + t] = L + t;
      const wrong = logits(model, ids, [ids[0].map(() => 1)], positions, images);
      expect(maxAbsDiff(wrong.subarray((L - 1) * V), stepLogits)).toBeGreaterThan(0.1);
      tf.dispose([images.features, ...images.deepstack]);
    });
  });
}
