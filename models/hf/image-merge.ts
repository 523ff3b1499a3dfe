// How image features enter a Hugging Face vision-language model's token sequence: the embedding rows at image-token
// positions are replaced by the image features, in row-major order over (batch, position), image 0's tokens first
// (transformers' masked_scatter). Also the Gemma 3 token_type_ids (1 on image tokens) and the image blocks they
// define, which the decoder's bidirectional-image-attention option takes.
import * as tf from '@tensorflow/tfjs';
import { UserError } from '../../core/errors.ts';

/** Token ids of a batch, one array per sequence (all the same length). */
export type TokenIds = readonly ArrayLike<number>[];

/** Positions (flat index b·T + t) of the image tokens, row-major. */
function imageTokenPositions(ids: TokenIds, imageTokenId: number): number[] {
  const T = ids[0]?.length ?? 0;
  const out: number[] = [];
  ids.forEach((row, b) => {
    if (row.length !== T)
      throw new Error(`imageTokenPositions: sequence ${b} has ${row.length} ids, sequence 0 has ${T}`);
    for (let t = 0; t < T; t++) if (row[t] === imageTokenId) out.push(b * T + t);
  });
  return out;
}

/**
 * Token embeddings [B, T, D] with the image-token rows replaced by `features` ([M, D] or [images, tokens, D], image 0
 * first). M must equal the number of image tokens. Differentiable in both inputs.
 */
export function mergeImageFeatures(
  embeddings: tf.Tensor3D,
  ids: TokenIds,
  imageTokenId: number,
  features: tf.Tensor,
): tf.Tensor3D {
  const [B, T, D] = embeddings.shape;
  if (ids.length !== B || (ids[0]?.length ?? 0) !== T)
    throw new Error(`mergeImageFeatures: ids are ${ids.length}x${ids[0]?.length}, embeddings [${embeddings.shape}]`);
  const positions = imageTokenPositions(ids, imageTokenId);
  const rows = features.size / D;
  if (features.shape[features.rank - 1] !== D)
    throw new Error(`mergeImageFeatures: features [${features.shape}] are not ${D} wide`);
  if (positions.length !== rows) {
    throw new UserError(
      `the prompt has ${positions.length} image tokens (id ${imageTokenId}) but its images give ${rows} feature rows`,
    );
  }
  if (rows === 0) return embeddings.clone();
  // Cut the flat [B·T, D] rows into runs of text rows (sliced from the embeddings) and runs of image rows (sliced from
  // the features, in order) and concatenate them back: slice and concat have gradients on every backend (gather's
  // needs UnsortedSegmentSum, which the WASM backend lacks).
  return tf.tidy(() => {
    const flat = tf.reshape(embeddings, [B * T, D]) as tf.Tensor2D; // [B·T, D]
    const feats = tf.reshape(features, [rows, D]) as tf.Tensor2D; // [M, D]
    const pieces: tf.Tensor2D[] = [];
    let r = 0;
    let k = 0;
    while (r < B * T) {
      if (k < positions.length && positions[k] === r) {
        const first = k;
        while (k + 1 < positions.length && positions[k + 1] === positions[k] + 1) k++;
        k++;
        pieces.push(tf.slice(feats, [first, 0], [k - first, D]));
        r += k - first;
      } else {
        const end = k < positions.length ? positions[k] : B * T;
        pieces.push(tf.slice(flat, [r, 0], [end - r, D]));
        r = end;
      }
    }
    return tf.reshape(pieces.length === 1 ? pieces[0] : tf.concat(pieces, 0), [B, T, D]);
  });
}

/** Gemma 3's token_type_ids: 1 on image tokens, 0 elsewhere (what Gemma3Processor returns). */
export function imageTokenTypeIds(ids: TokenIds, imageTokenId: number): Int32Array[] {
  return ids.map((row) => Int32Array.from(row, (id) => (id === imageTokenId ? 1 : 0)));
}

/**
 * The image block of every position: each maximal run of token_type_id 1 is one block (numbered from 0 per sequence),
 * -1 for text. With token_type_ids given, Gemma 3's prefill lets two positions of the same block attend to each other
 * in both directions, in every layer and past the sliding window (transformers' token_type_ids_mask_function).
 */
export function imageBlocks(tokenTypeIds: readonly ArrayLike<number>[]): Int32Array[] {
  return tokenTypeIds.map((row) => {
    const out = new Int32Array(row.length).fill(-1);
    let block = -1;
    for (let t = 0; t < row.length; t++) {
      if (row[t] === 1) {
        if (t === 0 || row[t - 1] !== 1) block++;
        out[t] = block;
      }
    }
    return out;
  });
}
