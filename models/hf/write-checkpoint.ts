// Write a Hugging Face checkpoint folder: config.json and model.safetensors with transformers' tensor
// names and layouts (nn.Linear [out, in]; a tied output head not stored), float32, `__metadata__ {"format": "pt"}`.
// Used to save a decoder trained in full (supervised warm start) and to make random-weight models of a real shape
// (tests, benchmarks). The safetensors file is streamed tensor by tensor into a temporary file renamed into place.
import { closeSync, openSync, renameSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import type { Rng } from '../../core/rng.ts';
import { makeDirs, writeJsonAtomic } from '../../core/files.ts';
import type { DecoderConfig } from './config.ts';
import type { HfDecoder } from './decoder.ts';
import type { TextModelLayout } from './layout.ts';
import { expectedDecoderTensors } from './load-decoder.ts';
import { SINGLE_FILE } from './weights.ts';

export interface HostTensor {
  shape: number[];
  data: Float32Array;
}

/** Stream float32 tensors into a safetensors file (names sorted, header padded to 8 bytes), atomically. */
export function writeSafetensorsFile(
  path: string,
  tensors: Map<string, HostTensor>,
  metadata: Record<string, string> = { format: 'pt' },
): void {
  const names = [...tensors.keys()].sort();
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  for (const name of names) {
    const t = tensors.get(name)!;
    if (t.shape.reduce((a, b) => a * b, 1) !== t.data.length)
      throw new Error(`writeSafetensorsFile: ${name} has ${t.data.length} values for shape [${t.shape}]`);
    header[name] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + t.data.byteLength] };
    offset += t.data.byteLength;
  }
  let json = JSON.stringify(header);
  while ((8 + Buffer.byteLength(json)) % 8 !== 0) json += ' ';
  makeDirs(dirname(path));
  const tmp = `${path}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w');
  try {
    const head = Buffer.alloc(8);
    head.writeBigUInt64LE(BigInt(Buffer.byteLength(json)), 0);
    writeSync(fd, head);
    writeSync(fd, Buffer.from(json, 'utf8'));
    for (const name of names) {
      const d = tensors.get(name)!.data; // little-endian hosts: the bytes as they are
      writeSync(fd, new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
    }
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

function transpose(data: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(data.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c];
  return out;
}

/** The decoder's weights under their on-disk names and layouts (LoRA adapters are not included: see peft.ts). */
export function decoderTensors(decoder: HfDecoder): Map<string, HostTensor> {
  const c = decoder.config;
  const p = decoder.layout.weightPrefix;
  const m = decoder.layout.modulePrefix;
  const out = new Map<string, HostTensor>();
  const vec = (name: string, v: tf.Tensor) =>
    out.set(name, { shape: [...v.shape], data: (v.dataSync() as Float32Array).slice() });
  const linear = (l: { module: string; w: tf.Variable; bias?: tf.Variable }) => {
    const [inDim, outDim] = l.w.shape as [number, number];
    const path = p + l.module.slice(m.length);
    out.set(`${path}.weight`, {
      shape: [outDim, inDim],
      data: transpose(l.w.dataSync() as Float32Array, inDim, outDim),
    });
    if (l.bias) vec(`${path}.bias`, l.bias);
  };
  const e = decoder.weights.embed;
  const table = e.table.dataSync() as Float32Array;
  out.set(`${p}embed_tokens.weight`, {
    shape: [c.vocabSize, c.hiddenSize],
    data: e.layout === 'rows' ? table.slice() : transpose(table, c.hiddenSize, c.vocabSize),
  });
  decoder.weights.layers.forEach((w, i) => {
    const l = `${p}layers.${i}.`;
    vec(`${l}input_layernorm.weight`, w.inputNorm);
    vec(`${l}post_attention_layernorm.weight`, w.postAttnNorm);
    if (w.preFfnNorm) vec(`${l}pre_feedforward_layernorm.weight`, w.preFfnNorm);
    if (w.postFfnNorm) vec(`${l}post_feedforward_layernorm.weight`, w.postFfnNorm);
    if (w.qNorm) vec(`${l}self_attn.q_norm.weight`, w.qNorm);
    if (w.kNorm) vec(`${l}self_attn.k_norm.weight`, w.kNorm);
    for (const lin of [w.q, w.k, w.v, w.o, w.mlp.gate, w.mlp.up, w.mlp.down]) linear(lin);
  });
  vec(`${p}norm.weight`, decoder.weights.finalNorm);
  if (!c.tieWordEmbeddings) {
    out.set(decoder.layout.lmHead, {
      shape: [c.vocabSize, c.hiddenSize],
      data: transpose(decoder.weights.lmHead.dataSync() as Float32Array, c.hiddenSize, c.vocabSize),
    });
  }
  return out;
}

/**
 * Random weights for a decoder, as transformers initialises them: normal(0, initializerRange) for matrices and
 * embeddings, zero biases, norms 1 (Llama/Qwen2 style, x̂ · w) or 0 (Gemma, x̂ · (1 + w)).
 */
export function randomDecoderTensors(
  c: DecoderConfig,
  layout: TextModelLayout,
  rng: Rng,
  initializerRange = 0.02,
): Map<string, HostTensor> {
  const out = new Map<string, HostTensor>();
  for (const [name, shape] of expectedDecoderTensors(c, layout)) {
    const n = shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    if (shape.length === 2) {
      for (let i = 0; i < n; i += 2) {
        // Box-Muller: two normals per pair of uniforms.
        const u = 1 - rng.next();
        const v = rng.next();
        const r = Math.sqrt(-2 * Math.log(u)) * initializerRange;
        data[i] = r * Math.cos(2 * Math.PI * v);
        if (i + 1 < n) data[i + 1] = r * Math.sin(2 * Math.PI * v);
      }
    } else if (!name.endsWith('.bias') && c.normStyle === 'w') {
      data.fill(1);
    }
    out.set(name, { shape, data });
  }
  return out;
}

/** Write config.json (the given object, e.g. the loaded raw config or a fresh one) and model.safetensors into `dir`. */
export function writeHfCheckpoint(
  dir: string,
  configJson: Record<string, unknown>,
  tensors: Map<string, HostTensor>,
): void {
  writeSafetensorsFile(join(dir, SINGLE_FILE), tensors);
  writeJsonAtomic(join(dir, 'config.json'), configJson);
}
