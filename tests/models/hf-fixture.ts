// Shared helpers of the Hugging Face model tests: the fixtures' references read in place from ../shared/fixtures/hf.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { SHARED_DIR } from '../../core/paths.ts';
import { decodeSafetensors, type NamedTensor } from '../../models/safetensors.ts';
import { generate } from '../../models/hf/generate.ts';
import type { HfDecoder } from '../../models/hf/decoder.ts';

export const FIXTURES = join(SHARED_DIR, 'fixtures', 'hf');
export const TOL = 1e-4;

export interface Reference {
  json: Record<string, any>;
  tensors: Map<string, NamedTensor>;
  get(name: string): NamedTensor;
}

export function readReference(folder: string): Reference {
  const dir = join(FIXTURES, folder);
  const json = JSON.parse(readFileSync(join(dir, 'reference.json'), 'utf8'));
  const { tensors } = decodeSafetensors(readFileSync(join(dir, 'reference.safetensors')), 'reference.safetensors');
  return {
    json,
    tensors,
    get(name) {
      const t = tensors.get(name);
      if (!t) throw new Error(`reference.safetensors of ${folder} lacks ${name}`);
      return t;
    },
  };
}

/** max |a - b| over the rows of a [B, T, V] tensor whose mask is 1 (mask undefined: all rows). */
export function maxDiff(actual: Float32Array, expected: Float32Array, rowSize: number, rowMask?: number[]): number {
  if (actual.length !== expected.length) throw new Error(`size ${actual.length} vs ${expected.length}`);
  let worst = 0;
  const rows = actual.length / rowSize;
  for (let r = 0; r < rows; r++) {
    if (rowMask && rowMask[r] !== 1) continue;
    for (let i = r * rowSize; i < (r + 1) * rowSize; i++) worst = Math.max(worst, Math.abs(actual[i] - expected[i]));
  }
  return worst;
}

/** Logits [B, T, V] of a forward pass as a flat array. */
export function logitsOf(model: HfDecoder, input: Parameters<HfDecoder['forward']>[0]): Float32Array {
  return tf.tidy(() => model.forward(input).logits!.dataSync() as Float32Array).slice();
}

/** The standard text reference set (batch, singles, hidden states, greedy, greedy_batch) checked against a model. */
export function textReferenceChecks(model: HfDecoder, ref: Reference, prefix = ''): Record<string, number | boolean> {
  const j = prefix ? ref.json[prefix.replace(/\.$/, '')] : ref.json;
  const V = model.config.vocabSize;
  const out: Record<string, number | boolean> = {};
  const batch = j.batch;
  const logits = logitsOf(model, {
    ids: batch.input_ids,
    attentionMask: batch.attention_mask,
    positionIds: batch.position_ids,
  });
  out.batch = maxDiff(logits, ref.get(`${prefix}batch.logits`).data, V, batch.attention_mask.flat());
  // Positions derived from the mask (the default) must give the same rows.
  const derived = logitsOf(model, { ids: batch.input_ids, attentionMask: batch.attention_mask });
  out.batchDerivedPositions = maxDiff(derived, ref.get(`${prefix}batch.logits`).data, V, batch.attention_mask.flat());
  for (const s of ['single0', 'single1']) {
    if (!j[s]) continue;
    out[s] = maxDiff(logitsOf(model, { ids: j[s].input_ids }), ref.get(`${prefix}${s}.logits`).data, V);
  }
  if (ref.tensors.has(`${prefix}single0.hidden.embeddings`)) {
    const hs = tf.tidy(() =>
      model
        .forward({ ids: j.single0.input_ids, collectHidden: true, logits: 'none' })
        .hiddenStates!.map((h) => h.dataSync().slice() as Float32Array),
    );
    const names = [
      'embeddings',
      ...Array.from({ length: model.config.numLayers }, (_, i) => `layer${i}`),
      'final_norm',
    ];
    out.hidden = Math.max(
      ...names.map((n, i) => maxDiff(hs[i], ref.get(`${prefix}single0.hidden.${n}`).data, model.config.hiddenSize)),
    );
  }
  const g = j.greedy;
  const single = generate(model, { ids: [g.prompt_ids] }, { maxNewTokens: g.max_new_tokens, keepLogits: true });
  out.greedyIdsEqual = JSON.stringify(single.tokens[0]) === JSON.stringify(g.new_ids);
  out.greedyLogits = maxDiff(concat(single.logits![0]), ref.get(`${prefix}greedy.step_logits`).data, V);
  if (j.greedy_batch) {
    const gb = j.greedy_batch;
    const res = generate(
      model,
      { ids: gb.input_ids, attentionMask: gb.attention_mask },
      { maxNewTokens: gb.max_new_tokens, keepLogits: true },
    );
    out.greedyBatchIdsEqual = JSON.stringify(res.tokens) === JSON.stringify(gb.new_ids);
    out.greedyBatchLogits = maxDiff(concat(res.logits!.flat()), ref.get(`${prefix}greedy_batch.step_logits`).data, V);
  }
  return out;
}

export function concat(rows: Float32Array[]): Float32Array {
  const out = new Float32Array(rows.reduce((n, r) => n + r.length, 0));
  let o = 0;
  for (const r of rows) {
    out.set(r, o);
    o += r.length;
  }
  return out;
}
