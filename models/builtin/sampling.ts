// Generation for the built-in model: prompts are run once (prefill) and their keys/values are shared, not copied, by
// the G completions of their group; all completions of all prompts then decode together, one batched step per token,
// each also attending to its own cached keys.
// Sampling itself (temperature, top-p: models/token-sampling.ts; the stop at EOS here) happens in JS on one
// [rows, vocab] logits read per step, with the caller's seeded Rng, so the same seed gives the same completions.
import * as tf from '@tensorflow/tfjs';
import { UserError } from '../../core/errors.ts';
import type { Rng } from '../../core/rng.ts';
import type { Completion, EncodedPrompt, SamplingOptions } from '../types.ts';
import type { CharTokenizer } from './tokenizer.ts';
import { forward, logits, type Group, type PackedBatch, type TransformerModel } from './transformer.ts';
import { decodeState, decodeStep, disposeDecodeState, stackPrompts, type DecodeState } from './decode.ts';
import { mergedProjections, type LoraSet } from './lora.ts';
import type { ModelWeights, Projection } from './weights.ts';
import { patchesPerImage } from './config.ts';
import { PositionCursor } from './positions.ts';
import { RowDraws } from './row-draws.ts';

/** Prompts per prefill pass. */
const PREFILL_PROMPTS = 8;

/**
 * Pack prompts one after another, each its own group (for prefill). Returns the packed batch, each prompt's first row
 * and the position cursor after each prompt (what its completions' positions continue from).
 */
export function packPrompts(
  model: TransformerModel,
  tokenizer: CharTokenizer,
  prompts: EncodedPrompt[],
): { batch: PackedBatch; starts: number[]; ends: PositionCursor[] } {
  const total = prompts.reduce((s, p) => s + p.tokens.length, 0);
  const tokens = new Int32Array(total);
  const positions = new Int32Array(total);
  const images: Float32Array[] = [];
  const imageIndex = new Map<Float32Array, number>();
  const slots: PackedBatch['slots'] = [];
  const groups: Group[] = [];
  const starts: number[] = [];
  const ends: PositionCursor[] = [];
  let offset = 0;
  for (const prompt of prompts) {
    if (prompt.tokens.length === 0) throw new UserError('the prompt is empty (no tokens to generate after)');
    starts.push(offset);
    const cursor = new PositionCursor(model.arch.positions, tokenizer);
    prompt.tokens.forEach((t, i) => {
      tokens[offset + i] = t;
      positions[offset + i] = cursor.push(t);
    });
    ends.push(cursor);
    addImageSlots(model, tokenizer, prompt, offset, images, imageIndex, slots);
    groups.push({ start: offset, count: 1, length: prompt.tokens.length, shared: null, past: null });
    offset += prompt.tokens.length;
  }
  return { batch: { tokens, positions, images, slots, groups }, starts, ends };
}

/** Record where a prompt's images sit: each run of IMG tokens (patchesPerImage long) takes the next image. */
function addImageSlots(
  model: TransformerModel,
  tokenizer: CharTokenizer,
  prompt: EncodedPrompt,
  offset: number,
  images: Float32Array[],
  imageIndex: Map<Float32Array, number>,
  slots: PackedBatch['slots'],
): void {
  const p = patchesPerImage(model.arch);
  let next = 0;
  for (let i = 0; i < prompt.tokens.length; i++) {
    if (prompt.tokens[i] !== tokenizer.img) continue;
    const image = prompt.images[next++];
    // A prompt from outside (token ids sent to `metrl serve`) can hold image tokens without images: its sender's error.
    if (!image) throw new UserError(`the prompt has more image tokens than images (${prompt.images.length})`);
    let index = imageIndex.get(image);
    if (index === undefined) {
      index = images.length;
      images.push(image);
      imageIndex.set(image, index);
    }
    slots.push({ image: index, start: offset + i });
    i += p - 1;
  }
  if (next !== prompt.images.length)
    throw new UserError(`the prompt has ${prompt.images.length} images but ${next} image token runs`);
}

/**
 * Sample `group` completions for each prompt. Rows are ordered prompt by prompt; completions of one prompt share its
 * prefill. Stops when every row produced EOS or after maxNewTokens.
 */
export function sampleGroups(
  model: TransformerModel,
  tokenizer: CharTokenizer,
  lora: LoraSet | null,
  prompts: EncodedPrompt[],
  group: number,
  options: SamplingOptions,
  rng: Rng,
): Completion[][] {
  const rows = prompts.length * group;
  const V = model.arch.vocabSize;
  // Decode with the adapters folded into the weights (same function, a third of the products per step).
  const merged = lora ? mergedProjections(model.weights, lora) : null;
  const original = model;
  model = merged
    ? {
        arch: model.arch,
        weights: {
          ...model.weights,
          layers: model.weights.layers.map((l, i) => ({ ...l, proj: merged[i] })),
        } as unknown as ModelWeights,
      }
    : model;
  lora = null;
  // Prefill: every prompt once, a few prompts per pass (small tensors keep WASM's slicing cheap); stack their
  // keys/values for decoding (shared by each prompt's group) and keep each prompt's last logits.
  const lengths = prompts.map((p) => p.tokens.length);
  const P = Math.max(...lengths);
  const pieces: { k: tf.Tensor3D[]; v: tf.Tensor3D[]; last: tf.Tensor2D }[] = [];
  const promptEnds: PositionCursor[] = [];
  for (let c = 0; c < prompts.length; c += PREFILL_PROMPTS) {
    const chunk = prompts.slice(c, c + PREFILL_PROMPTS);
    pieces.push(
      tf.tidy(() => {
        const { batch, starts, ends } = packPrompts(model, tokenizer, chunk);
        promptEnds.push(...ends);
        const out = forward(model, batch, lora);
        const stacked = stackPrompts(
          out,
          starts,
          chunk.map((p) => p.tokens.length),
          P,
        );
        const last = tf.concat(
          chunk.map((p, u) => tf.slice(out.hidden, [starts[u] + p.tokens.length - 1, 0], [1, -1])),
          0,
        ) as tf.Tensor2D;
        return { ...stacked, last: logits(model, last) } as unknown as tf.TensorContainer;
      }) as unknown as { k: tf.Tensor3D[]; v: tf.Tensor3D[]; last: tf.Tensor2D },
    );
  }
  const join = <T extends tf.Tensor>(list: T[]): T => (list.length === 1 ? list[0] : (tf.concat(list, 0) as T));
  const decoding = tf.tidy(() => {
    const layers = pieces[0].k.length;
    const keys = Array.from({ length: layers }, (_, i) => join(pieces.map((p) => p.k[i])));
    const values = Array.from({ length: layers }, (_, i) => join(pieces.map((p) => p.v[i])));
    return decodeState(model, keys, values, lengths, group) as unknown as tf.TensorContainer;
  }) as unknown as DecodeState;
  const first = join(pieces.map((p) => p.last));
  let values = first.dataSync() as Float32Array;
  tf.dispose([first, ...pieces.flatMap((p) => [...p.k, ...p.v, p.last])]);
  let rowLogits = (r: number) => values.subarray(Math.floor(r / group) * V, (Math.floor(r / group) + 1) * V);

  const draws = new RowDraws(rows, tokenizer);
  // Each completion continues its prompt's positions (on the grid they depend on the text written so far).
  const cursors = Array.from({ length: rows }, (_, r) => promptEnds[Math.floor(r / group)].clone());
  for (let step = 0; step < options.maxNewTokens; step++) {
    const fed = draws.step(rowLogits, options, rng);
    if (draws.allFinished() || step === options.maxNewTokens - 1) break;
    const positions = Int32Array.from({ length: rows }, (_, r) => cursors[r].push(fed[r]));
    const next = decodeStep(model, decoding, fed, positions);
    values = next.dataSync() as Float32Array;
    next.dispose();
    rowLogits = (r: number) => values.subarray(r * V, (r + 1) * V);
  }
  disposeDecodeState(decoding);
  if (merged)
    merged.forEach((proj, i) =>
      Object.entries(proj).forEach(([p, t]) => t !== original.weights.layers[i].proj[p as Projection] && t.dispose()),
    );
  return draws.completions(prompts.length, group, tokenizer);
}
