// The Qwen-VL language models on ONNX Runtime (models/onnx/hf/hf-graph.ts, hf-session.ts HfOrtModel): the decoder graph
// fed the multimodal RoPE table of the fixtures' [3, L] positions and, for Qwen3-VL, its DeepStack inputs, against the
// PyTorch logits within 1e-4 (text only, one and two images, the left-padded batch) and the cached greedy
// continuation with the decoding positions.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../models/backend.ts';
import { ArchitectureTable } from '../../models/hf/architecture.ts';
import { type LoadedHfModel, readHfLanguageModel } from '../../models/hf/load-decoder.ts';
import { HfOrtModel, type HfOrtCache } from '../../models/onnx/hf/hf-session.ts';
import { qwen25VlArchitecture } from '../../models/qwen2_5_vl/architecture.ts';
import { qwen3VlArchitecture } from '../../models/qwen3_vl/architecture.ts';
import { HF_FIXTURES, maxAbsDiff, readFixtureTensors } from './hf-vision-fixtures.ts';

const TOL = 1e-4;
const IMAGE_PAD = 252;
const TABLE = new ArchitectureTable([qwen25VlArchitecture, qwen3VlArchitecture]);

beforeAll(async () => {
  await initBackend('wasm', null);
});
const open: { m: LoadedHfModel; ort: HfOrtModel }[] = [];
afterAll(() =>
  open.forEach(({ m, ort }) => {
    ort.dispose();
    m.decoder.dispose();
  }),
);

interface Prompt {
  input_ids: number[][];
  attention_mask?: number[][];
  position_ids: number[][] | number[][][];
  greedy?: { new_ids: number[]; decode_position_ids: number[] };
}
type Tensors = Map<string, { data: Float32Array | Uint8Array; shape: number[] }>;

describe.each([
  { folder: 'qwen2_5_vl', deep: false },
  { folder: 'qwen3_vl', deep: true },
])('$folder decoder on ONNX Runtime', ({ folder, deep }) => {
  let m: LoadedHfModel;
  let ort: HfOrtModel;
  let ref: Record<string, Prompt>;
  let tensors: Tensors;
  beforeAll(() => {
    m = readHfLanguageModel(join(HF_FIXTURES, folder), TABLE);
    ort = new HfOrtModel(m.decoder, { threads: 1 });
    open.push({ m, ort });
    ref = JSON.parse(readFileSync(join(HF_FIXTURES, folder, 'reference.json'), 'utf8'));
    tensors = readFixtureTensors(join(HF_FIXTURES, folder, 'reference.safetensors'));
  });

  /** The prompt's embeddings [B·T·H] with the image features at the image tokens, and its DeepStack rows. */
  function inputs(key: string, ids: number[][]) {
    const H = m.decoder.config.hiddenSize;
    const embeds = m.decoder.embed(ids);
    const data = embeds.dataSync().slice() as Float32Array;
    embeds.dispose();
    const images = key === 'batch' ? 'one_image' : key;
    const rows = Int32Array.from(ids.flat().flatMap((id, n) => (id === IMAGE_PAD ? [n] : [])));
    const features = tensors.get(`${images}.image_embeds`)?.data as Float32Array | undefined;
    rows.forEach((row, k) => data.set(features!.subarray(k * H, (k + 1) * H), row * H));
    const stack: Float32Array[] = [];
    for (let j = 0; tensors.has(`${images}.deepstack_embeds.${j}`); j++)
      stack.push(tensors.get(`${images}.deepstack_embeds.${j}`)!.data as Float32Array);
    if (deep && rows.length > 0) expect(stack).toHaveLength(2);
    return { embeds: data, ...(stack.length > 0 ? { deepstack: { rows, features: stack } } : {}) };
  }

  it.each(['text_only', 'one_image', 'two_images', 'batch'])('%s: logits within 1e-4', (key) => {
    const p = ref[key];
    const ids = p.input_ids;
    const [B, T] = [ids.length, ids[0].length];
    const mask = p.attention_mask ?? ids.map((r) => r.map(() => 1));
    const out = ort.run({
      ...inputs(key, ids),
      rows: B,
      seq: T,
      attentionMask: mask,
      mropePositions: Int32Array.from((p.position_ids as unknown[]).flat(2) as number[]),
      cache: null,
      useLora: false,
    });
    ort.releaseCache(out.cache);
    const V = m.decoder.config.vocabSize;
    const expected = tensors.get(`${key}.logits`)!.data as Float32Array;
    let worst = 0;
    mask.flat().forEach((on, n) => {
      if (on)
        worst = Math.max(
          worst,
          maxAbsDiff(out.logits.subarray(n * V, (n + 1) * V), expected.subarray(n * V, (n + 1) * V)),
        );
    });
    expect(worst).toBeLessThan(TOL);
  });

  it('one_image: the cached greedy continuation with the decoding positions', () => {
    const p = ref.one_image;
    const ids = p.input_ids;
    const T = ids[0].length;
    const V = m.decoder.config.vocabSize;
    const argmax = (row: Float32Array) => row.reduce((best, v, i) => (v > row[best] ? i : best), 0);
    let out = ort.run({
      ...inputs('one_image', ids),
      rows: 1,
      seq: T,
      attentionMask: [new Array(T).fill(1)],
      mropePositions: Int32Array.from((p.position_ids as number[][]).flat()),
      cache: null,
      logitRows: [T - 1],
      useLora: false,
    });
    const steps = [out.logits];
    const got = [argmax(out.logits)];
    let cache: HfOrtCache = out.cache;
    for (const pos of p.greedy!.decode_position_ids) {
      const embeds = m.decoder.embed([[got[got.length - 1]]]);
      out = ort.run({
        embeds: embeds.dataSync() as Float32Array,
        rows: 1,
        seq: 1,
        attentionMask: [new Array(cache.length + 1).fill(1)],
        mropePositions: [pos, pos, pos],
        cache,
        useLora: false,
      });
      embeds.dispose();
      cache = out.cache;
      steps.push(out.logits);
      got.push(argmax(out.logits));
    }
    expect(got).toEqual(p.greedy!.new_ids);
    const expected = tensors.get('one_image.greedy.step_logits')!.data as Float32Array;
    const all = Float32Array.from(steps.flatMap((s) => Array.from(s)));
    expect(maxAbsDiff(all, expected.subarray(0, steps.length * V))).toBeLessThan(TOL);
  });
});
