import { beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import { UserError } from '../../core/errors.ts';
import { imageBlocks, imageTokenTypeIds, mergeImageFeatures } from '../../models/hf/image-merge.ts';
import { readJson } from './hf-vision-fixtures.ts';

beforeAll(async () => {
  await initBackend('wasm', null);
});

describe('image-token merge (models/hf/image-merge.ts)', () => {
  it('fills image-token rows in row-major (batch, position) order, image 0 first, and leaves the others', () => {
    const IMG = 9;
    const ids = [
      [1, IMG, IMG, 2],
      [IMG, 3, 4, IMG],
    ];
    const emb = tf.tensor3d(
      Float32Array.from({ length: 8 * 2 }, (_, i) => i),
      [2, 4, 2],
    ); // row r = [2r, 2r+1]
    const feats = tf.tensor3d([100, 101, 102, 103, 104, 105, 106, 107], [2, 2, 2]); // image 0 rows 100.., image 1 rows 104..
    const out = mergeImageFeatures(emb, ids, IMG, feats);
    expect(Array.from(out.dataSync())).toEqual([0, 1, 100, 101, 102, 103, 6, 7, 104, 105, 10, 11, 12, 13, 106, 107]);
    expect(() =>
      mergeImageFeatures(
        emb,
        [
          [1, IMG, 2, 2],
          [3, 3, 3, 3],
        ],
        IMG,
        feats,
      ),
    ).toThrow(UserError);
    tf.dispose([emb, feats, out]);
  });

  it('is differentiable in the embeddings and the features (gradient 1 where each row was used)', () => {
    const ids = [[5, 7, 5]];
    const emb = tf.ones([1, 3, 2]) as tf.Tensor3D;
    const feats = tf.ones([1, 2]);
    const [gEmb, gFeat] = tf.grads((e: tf.Tensor, f: tf.Tensor) =>
      tf.sum(mergeImageFeatures(e as tf.Tensor3D, ids, 7, f)),
    )([emb, feats]);
    expect(Array.from(gEmb.dataSync())).toEqual([1, 1, 0, 0, 1, 1]);
    expect(Array.from(gFeat.dataSync())).toEqual([1, 1]);
    tf.dispose([emb, feats, gEmb, gFeat]);
  });

  it('Gemma 3 token_type_ids and image blocks match the fixture prompt', () => {
    const ref = readJson('gemma3', 'reference.json') as {
      image: { input_ids: number[][]; token_type_ids: number[][] };
      image_token_index: number;
    };
    const types = imageTokenTypeIds(ref.image.input_ids, ref.image_token_index);
    expect(types.map((r) => Array.from(r))).toEqual(ref.image.token_type_ids);
    expect(Array.from(imageBlocks([[0, 1, 1, 0, 1, 1, 0]])[0])).toEqual([-1, 0, 0, -1, 1, 1, -1]);
  });
});
