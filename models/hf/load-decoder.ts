// Load the language model of a Hugging Face checkpoint folder: config.json → DecoderConfig, the
// architecture's tensor layout, every decoder tensor's shape checked against the config before anything is read, then
// the tensors read one by one (upcast to float32) into tfjs variables. Linear weights are transposed to [in, out] on
// the way in (models/layers/linear.ts); a tied output head is the embedding matrix held once as [H, V].
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import type { ArchitectureTable } from './architecture.ts';
import { readHfConfig, type DecoderConfig, type HfModelConfig } from './config.ts';
import { HfDecoder } from './decoder.ts';
import type { DecoderLayerWeights, DecoderWeights } from './decoder-weights.ts';
import type { TextModelLayout } from './layout.ts';
import { CheckpointTensors } from './weights.ts';
import type { LinearWeights } from '../layers/linear.ts';

export interface LoadedHfModel {
  config: HfModelConfig;
  decoder: HfDecoder;
  /** The folder's tensors (headers only), for the parts other modules load (vision tower, connector, projector). */
  tensors: CheckpointTensors;
}

/**
 * Which of an architecture's layouts (models/hf/architecture.ts HfModelClass.layouts) a file uses: the first whose
 * embedding table it has, else the last (the oldest names, whose missing tensors the shape check then lists).
 */
function textLayout(layouts: readonly TextModelLayout[], tensors: CheckpointTensors): TextModelLayout {
  if (layouts.length === 0) throw new Error('internal: a model class without a text layout');
  return layouts.find((l) => tensors.has(`${l.weightPrefix}embed_tokens.weight`)) ?? layouts[layouts.length - 1];
}

/** Every decoder tensor's on-disk name and the shape config.json implies (torch layouts: nn.Linear is [out, in]). */
export function expectedDecoderTensors(c: DecoderConfig, layout: TextModelLayout): Map<string, number[]> {
  const H = c.hiddenSize;
  const qDim = c.numHeads * c.headDim;
  const kvDim = c.numKvHeads * c.headDim;
  const I = c.intermediateSize;
  const p = layout.weightPrefix;
  const out = new Map<string, number[]>([[`${p}embed_tokens.weight`, [c.vocabSize, H]]]);
  for (let i = 0; i < c.numLayers; i++) {
    const l = `${p}layers.${i}.`;
    out.set(`${l}input_layernorm.weight`, [H]);
    out.set(`${l}post_attention_layernorm.weight`, [H]);
    if (c.sandwichNorm) {
      out.set(`${l}pre_feedforward_layernorm.weight`, [H]);
      out.set(`${l}post_feedforward_layernorm.weight`, [H]);
    }
    out.set(`${l}self_attn.q_proj.weight`, [qDim, H]);
    out.set(`${l}self_attn.k_proj.weight`, [kvDim, H]);
    out.set(`${l}self_attn.v_proj.weight`, [kvDim, H]);
    out.set(`${l}self_attn.o_proj.weight`, [H, qDim]);
    if (c.qkvBias) {
      out.set(`${l}self_attn.q_proj.bias`, [qDim]);
      out.set(`${l}self_attn.k_proj.bias`, [kvDim]);
      out.set(`${l}self_attn.v_proj.bias`, [kvDim]);
    }
    if (c.oBias) out.set(`${l}self_attn.o_proj.bias`, [H]);
    if (c.qkNorm) {
      out.set(`${l}self_attn.q_norm.weight`, [c.headDim]);
      out.set(`${l}self_attn.k_norm.weight`, [c.headDim]);
    }
    out.set(`${l}mlp.gate_proj.weight`, [I, H]);
    out.set(`${l}mlp.up_proj.weight`, [I, H]);
    out.set(`${l}mlp.down_proj.weight`, [H, I]);
    if (c.mlpBias) {
      out.set(`${l}mlp.gate_proj.bias`, [I]);
      out.set(`${l}mlp.up_proj.bias`, [I]);
      out.set(`${l}mlp.down_proj.bias`, [H]);
    }
  }
  out.set(`${p}norm.weight`, [H]);
  if (!c.tieWordEmbeddings) out.set(layout.lmHead, [c.vocabSize, H]);
  return out;
}

/** [rows, cols] row-major → [cols, rows]. */
function transpose2d(data: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(data.length);
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    for (let c = 0; c < cols; c++) out[c * rows + r] = data[base + c];
  }
  return out;
}

/** Build the decoder from checked tensors. */
function buildDecoder(c: DecoderConfig, layout: TextModelLayout, tensors: CheckpointTensors): HfDecoder {
  const created: tf.Variable[] = [];
  const variable = (t: tf.Tensor) => {
    const v = tf.variable(t, false);
    t.dispose(); // the variable shares the data (reference counted); drop the temporary handle
    created.push(v);
    return v;
  };
  const vector = (name: string) => variable(tf.tensor1d(tensors.read(name).data));
  /** nn.Linear [out, in] on disk → [in, out] in memory (read through one scratch buffer: the transpose copies it). */
  const scratch = { buffer: null as ArrayBuffer | null };
  const matrixT = (name: string) => {
    const { shape, data } = tensors.read(name, scratch);
    return variable(tf.tensor2d(transpose2d(data, shape[0], shape[1]), [shape[1], shape[0]]));
  };
  const p = layout.weightPrefix;
  const m = layout.modulePrefix;
  const lin = (module: string, path: string, bias: boolean): LinearWeights => ({
    module: `${m}${module}`,
    w: matrixT(`${p}${path}.weight`),
    ...(bias ? { bias: vector(`${p}${path}.bias`) } : {}),
  });
  try {
    const embedName = `${p}embed_tokens.weight`;
    const embedEntry = tensors.read(embedName, c.tieWordEmbeddings ? scratch : undefined); // tied: transposed below
    // Tied: hold the matrix once, as the output head's [H, V]; lookups gather its columns.
    const embed = c.tieWordEmbeddings
      ? {
          table: variable(
            tf.tensor2d(transpose2d(embedEntry.data, c.vocabSize, c.hiddenSize), [c.hiddenSize, c.vocabSize]),
          ),
          layout: 'columns' as const,
        }
      : { table: variable(tf.tensor2d(embedEntry.data, [c.vocabSize, c.hiddenSize])), layout: 'rows' as const };
    const layers: DecoderLayerWeights[] = [];
    for (let i = 0; i < c.numLayers; i++) {
      const l = `layers.${i}.`;
      const layer: DecoderLayerWeights = {
        inputNorm: vector(`${p}${l}input_layernorm.weight`),
        postAttnNorm: vector(`${p}${l}post_attention_layernorm.weight`),
        ...(c.sandwichNorm
          ? {
              preFfnNorm: vector(`${p}${l}pre_feedforward_layernorm.weight`),
              postFfnNorm: vector(`${p}${l}post_feedforward_layernorm.weight`),
            }
          : {}),
        ...(c.qkNorm
          ? { qNorm: vector(`${p}${l}self_attn.q_norm.weight`), kNorm: vector(`${p}${l}self_attn.k_norm.weight`) }
          : {}),
        q: lin(`${l}self_attn.q_proj`, `${l}self_attn.q_proj`, c.qkvBias),
        k: lin(`${l}self_attn.k_proj`, `${l}self_attn.k_proj`, c.qkvBias),
        v: lin(`${l}self_attn.v_proj`, `${l}self_attn.v_proj`, c.qkvBias),
        o: lin(`${l}self_attn.o_proj`, `${l}self_attn.o_proj`, c.oBias),
        mlp: {
          gate: lin(`${l}mlp.gate_proj`, `${l}mlp.gate_proj`, c.mlpBias),
          up: lin(`${l}mlp.up_proj`, `${l}mlp.up_proj`, c.mlpBias),
          down: lin(`${l}mlp.down_proj`, `${l}mlp.down_proj`, c.mlpBias),
        },
      };
      layers.push(layer);
    }
    const weights: DecoderWeights = {
      embed,
      layers,
      finalNorm: vector(`${p}norm.weight`),
      lmHead: c.tieWordEmbeddings ? embed.table : matrixT(layout.lmHead),
    };
    return new HfDecoder(c, layout, weights, tf.getBackend() === 'cpu');
  } catch (error) {
    for (const v of created) v.dispose();
    throw error;
  }
}

/**
 * Load a checkpoint folder's language model (config.json already parsed: readHfConfig) from model.safetensors or its
 * shards, under the first of `layouts` the file uses. Every shape is checked before any tensor is read; bad input is
 * a UserError naming the file and the key or tensor.
 */
export function loadHfDecoder(dir: string, config: HfModelConfig, layouts: readonly TextModelLayout[]): LoadedHfModel {
  const tensors = CheckpointTensors.open(dir);
  const layout = textLayout(layouts, tensors);
  tensors.checkShapes(expectedDecoderTensors(config.text, layout), join(dir, 'config.json'));
  return { config, decoder: buildDecoder(config.text, layout, tensors), tensors };
}

/** Read `<dir>/config.json` with the architecture table and load the language model under its class's layouts. */
export function readHfLanguageModel(dir: string, table: ArchitectureTable): LoadedHfModel {
  const config = readHfConfig(dir, table);
  return loadHfDecoder(dir, config, table.modelClass(config).layouts);
}
