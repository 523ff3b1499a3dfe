// The Qwen-VL language models through the shared decoder (models/hf/decoder.ts) as the loader reads them from the
// fixtures' folders (models/qwen2_5_vl/architecture.ts, models/qwen3_vl/architecture.ts): the fixtures' image
// features in place of the <|image_pad|> embeddings, their [3, L] multimodal positions, Qwen3-VL's DeepStack features
// added after the first layers, against the PyTorch logits within 1e-4 (text only, one and two images, the
// left-padded batch), and the cached greedy continuation with the decoding positions (ids exact, step logits within
// 1e-4), through generate() too (decoding at the rope deltas, the padded batch included), and as completion log-probs
// of the learner's packed rows (score.ts); the Qwen2.5-VL PEFT adapter (regex target_modules) with its references.
// Qwen2.5-VL's Hub flat config.json reads to the nested one's settings.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../models/backend.ts';
import { ArchitectureTable } from '../../models/hf/architecture.ts';
import { parseHfConfig } from '../../models/hf/config.ts';
import type { HfDecoder, KVCache } from '../../models/hf/decoder.ts';
import { generate } from '../../models/hf/generate.ts';
import { completionLogProbs } from '../../models/hf/score.ts';
import { type LoadedHfModel, readHfLanguageModel } from '../../models/hf/load-decoder.ts';
import { loadPeftAdapter, readPeftConfig, targetModulesFor } from '../../models/hf/peft.ts';
import { qwen25VlArchitecture } from '../../models/qwen2_5_vl/architecture.ts';
import { qwen3VlArchitecture } from '../../models/qwen3_vl/architecture.ts';
import { HF_FIXTURES, maxAbsDiff, readFixtureTensors } from './hf-vision-fixtures.ts';

const TOL = 1e-4;
const IMAGE_PAD = 252;
const TABLE = new ArchitectureTable([qwen25VlArchitecture, qwen3VlArchitecture]);

beforeAll(async () => {
  await initBackend('wasm', null);
});
const open: LoadedHfModel[] = [];
afterAll(() => open.forEach((m) => m.decoder.dispose()));

interface Prompt {
  input_ids: number[][];
  attention_mask?: number[][];
  position_ids: number[][] | number[][][];
  greedy?: { new_ids: number[] | number[][]; decode_position_ids: number[] | number[][] };
}

/** [3, B·T] (axis-major) from the fixture's [3, L] (one row) or [3, B, L] position ids. */
function axisMajor(positions: number[][] | number[][][]): Int32Array {
  return Int32Array.from((positions as unknown[]).flat(2) as number[]);
}

/** The embeddings of `ids` [B][T] with the image features' rows, in order, at the image tokens: [B, T, H]. */
function merged(decoder: HfDecoder, ids: number[][], features: Float32Array | null): tf.Tensor3D {
  return tf.tidy(() => {
    const emb = decoder.embed(ids); // [B, T, H]
    if (!features) return emb;
    const [B, T, H] = emb.shape;
    const rows = emb.reshape([B * T, H]).arraySync() as number[][];
    let k = 0;
    const flat = ids.flat();
    for (let n = 0; n < flat.length; n++)
      if (flat[n] === IMAGE_PAD) rows[n] = Array.from(features.subarray(H * k, H * ++k));
    expect(k * H).toBe(features.length);
    return tf.tensor3d(rows.flat(), [B, T, H]);
  });
}

/** The rows (b·T + t) of the image tokens, and the DeepStack features [M, H] the fixture added there after layer j. */
function deepstack(
  ids: number[][],
  tensors: Map<string, { data: Float32Array | Uint8Array; shape: number[] }>,
  key: string,
) {
  const features: tf.Tensor2D[] = [];
  for (let j = 0; tensors.has(`${key}.deepstack_embeds.${j}`); j++) {
    const t = tensors.get(`${key}.deepstack_embeds.${j}`)!;
    features.push(tf.tensor2d(t.data as Float32Array, [t.shape[0], t.shape[1]]));
  }
  const rows = Int32Array.from(ids.flat().flatMap((id, n) => (id === IMAGE_PAD ? [n] : [])));
  return features.length > 0 ? { rows, features } : undefined;
}

describe.each([
  { folder: 'qwen2_5_vl', adapter: null, layout: 'chunked', deep: false },
  // The PEFT adapter on all seven projections of both layers, chosen by a regex target_modules; its references.
  { folder: 'qwen2_5_vl', adapter: 'qwen2_5_vl-lora', layout: 'chunked', deep: false },
  { folder: 'qwen3_vl', adapter: null, layout: 'interleaved', deep: true },
])('$folder language model through the shared decoder (adapter: $adapter)', ({ folder, adapter, layout, deep }) => {
  let m: LoadedHfModel;
  let ref: Record<string, Prompt & Record<string, unknown>>;
  let tensors: Map<string, { data: Float32Array | Uint8Array; shape: number[] }>;
  beforeAll(() => {
    m = readHfLanguageModel(join(HF_FIXTURES, folder), TABLE);
    open.push(m);
    if (adapter) expect(loadPeftAdapter(m.decoder, join(HF_FIXTURES, adapter), false).r).toBe(4);
    const refs = adapter ?? folder;
    ref = JSON.parse(readFileSync(join(HF_FIXTURES, refs, 'reference.json'), 'utf8'));
    tensors = readFixtureTensors(join(HF_FIXTURES, refs, 'reference.safetensors'));
  });

  it('reads the multimodal RoPE and the image token from config.json', () => {
    const c = m.config.text;
    expect(c.mrope?.layout).toBe(layout);
    expect(c.mrope?.section.reduce((a, b) => a + b)).toBe(c.headDim / 2);
    expect(m.config.imageTokenId).toBe(IMAGE_PAD);
    expect(c.qkNorm).toBe(folder === 'qwen3_vl');
  });

  it.each(['text_only', 'one_image', 'two_images', 'batch'])('%s: logits within 1e-4', (key) => {
    const p = ref[key];
    const features = tensors.get(`${key === 'batch' ? 'one_image' : key}.image_embeds`);
    const ids = p.input_ids;
    const V = m.config.text.vocabSize;
    const stack = deep ? deepstack(ids, tensors, key === 'batch' ? 'one_image' : key) : undefined;
    if (deep && key !== 'text_only') expect(stack?.features.length).toBe(2);
    const logits = tf.tidy(() =>
      m.decoder
        .forward({
          ids,
          attentionMask: p.attention_mask,
          inputsEmbeds: merged(m.decoder, ids, key === 'text_only' ? null : (features!.data as Float32Array)),
          mropePositions: axisMajor(p.position_ids),
          ...(stack ? { deepstack: stack } : {}),
        })
        .logits!.dataSync(),
    );
    tf.dispose(stack?.features ?? []);
    const expected = tensors.get(`${key}.logits`)!.data as Float32Array;
    // Rows of padding are zeros in the reference: compare the attended rows only.
    const mask = (p.attention_mask ?? ids.map((r) => r.map(() => 1))).flat();
    let worst = 0;
    mask.forEach((on, n) => {
      if (on)
        worst = Math.max(worst, maxAbsDiff(logits.subarray(n * V, (n + 1) * V), expected.subarray(n * V, (n + 1) * V)));
    });
    expect(worst).toBeLessThan(TOL);
  });

  it.each(['one_image', 'batch'])(
    '%s: generate() continues at the rope deltas (ids exact, step logits 1e-4)',
    (key) => {
      const p = ref[key] as unknown as Prompt & { rope_deltas: number[] };
      const ids = p.input_ids;
      const images = key === 'batch' ? 'one_image' : key;
      const stack = deep ? deepstack(ids, tensors, images) : undefined;
      const embeds = merged(m.decoder, ids, tensors.get(`${images}.image_embeds`)!.data as Float32Array);
      const g = p.greedy as unknown as { new_ids: number[] | number[][]; max_new_tokens: number };
      const out = generate(
        m.decoder,
        {
          ids,
          attentionMask: p.attention_mask,
          inputsEmbeds: embeds,
          mrope: { positions: axisMajor(p.position_ids), ropeDeltas: p.rope_deltas },
          ...(stack ? { deepstack: stack } : {}),
        },
        { maxNewTokens: g.max_new_tokens, keepLogits: true },
      );
      tf.dispose([embeds, ...(stack?.features ?? [])]);
      const wanted = (key === 'batch' ? g.new_ids : [g.new_ids]) as number[][];
      expect(out.tokens).toEqual(wanted);
      const all = Float32Array.from(out.logits!.flatMap((row) => row.flatMap((s) => Array.from(s))));
      const name = key === 'batch' ? 'batch.greedy.step_logits' : 'one_image.greedy.step_logits';
      expect(maxAbsDiff(all, tensors.get(name)!.data as Float32Array)).toBeLessThan(TOL);
    },
  );

  it("completion log-probs (the learner's packed rows): the greedy continuation's, from the step logits", () => {
    const p = ref.one_image as unknown as Prompt & { rope_deltas: number[] };
    const prompt = p.input_ids[0];
    const completion = (p.greedy!.new_ids as number[]).slice();
    const stack = deep ? deepstack([prompt], tensors, 'one_image') : undefined;
    const embeds = merged(m.decoder, [prompt], tensors.get('one_image.image_embeds')!.data as Float32Array);
    const promptEmbeds = embeds.reshape([prompt.length, m.decoder.config.hiddenSize]) as tf.Tensor2D;
    const shared = {
      prompt,
      promptEmbeds,
      promptMrope: { positions: axisMajor(p.position_ids), ropeDelta: p.rope_deltas[0] },
      ...(stack ? { promptDeepstack: stack } : {}),
    };
    // Two completions of one prompt: one packed row, each completion at its own positions after the prompt.
    const scores = completionLogProbs(m.decoder, [
      { ...shared, completion },
      { ...shared, completion: completion.slice(0, 3) },
    ]);
    const got = scores.logProbs.arraySync() as number[][];
    tf.dispose([embeds, promptEmbeds, scores.logProbs, scores.mask, ...(stack?.features ?? [])]);
    const V = m.config.text.vocabSize;
    const steps = tensors.get('one_image.greedy.step_logits')!.data as Float32Array;
    const expected = completion.map((id, t) => {
      const row = steps.subarray(t * V, (t + 1) * V);
      const max = Math.max(...row);
      const lse = max + Math.log(row.reduce((s, v) => s + Math.exp(v - max), 0));
      return row[id] - lse;
    });
    expect(maxAbsDiff(got[0], expected)).toBeLessThan(TOL);
    expect(maxAbsDiff(got[1].slice(0, 3), expected.slice(0, 3))).toBeLessThan(TOL);
  });

  it('one_image: the cached greedy continuation with the decoding positions', () => {
    const p = ref.one_image;
    const ids = p.input_ids;
    const features = tensors.get('one_image.image_embeds')!.data as Float32Array;
    const stack = deep ? deepstack(ids, tensors, 'one_image') : undefined;
    const V = m.config.text.vocabSize;
    const steps: Float32Array[] = [];
    const got: number[] = [];
    let cache: KVCache | null = null;
    const argmax = (row: Float32Array) => row.reduce((best, v, i) => (v > row[best] ? i : best), 0);
    const first = m.decoder.forward({
      ids,
      inputsEmbeds: merged(m.decoder, ids, features),
      mropePositions: axisMajor(p.position_ids),
      ...(stack ? { deepstack: stack } : {}),
      logits: 'last',
      returnCache: true,
    });
    cache = first.cache;
    steps.push(first.logits!.dataSync() as Float32Array);
    tf.dispose([first.logits!, first.hidden, ...(stack?.features ?? [])]);
    const decodePositions = p.greedy!.decode_position_ids as number[];
    for (const pos of decodePositions) {
      got.push(argmax(steps[steps.length - 1]));
      const length = cache!.length + 1;
      const out = m.decoder.forward({
        ids: [[got[got.length - 1]]],
        attentionMask: [new Int32Array(length).fill(1)],
        mropePositions: Int32Array.from([pos, pos, pos]),
        cache,
        logits: 'last',
        returnCache: true,
      });
      for (const l of cache!.layers) tf.dispose([l.k, l.v]);
      cache = out.cache;
      steps.push(out.logits!.dataSync() as Float32Array);
      tf.dispose([out.logits!, out.hidden]);
    }
    got.push(argmax(steps[steps.length - 1]));
    for (const l of cache!.layers) tf.dispose([l.k, l.v]);
    expect(got).toEqual(p.greedy!.new_ids);
    const expected = tensors.get('one_image.greedy.step_logits')!.data as Float32Array;
    expect(
      maxAbsDiff(Float32Array.from(steps.flatMap((s) => Array.from(s))), expected.subarray(0, steps.length * V)),
    ).toBeLessThan(TOL);
  });
});

describe("Qwen2.5-VL's Hub flat config.json", () => {
  it('reads to the same decoder settings as the nested one transformers 4.57 writes', () => {
    const read = (file: string) =>
      parseHfConfig(JSON.parse(readFileSync(join(HF_FIXTURES, 'qwen2_5_vl', file), 'utf8')), TABLE, file);
    const nested = read('config.json');
    const flat = read('config.hub-flat.json');
    expect(flat.architecture).toBe('Qwen2_5_VLForConditionalGeneration');
    expect({ ...flat.text, contextLength: 0 }).toEqual({ ...nested.text, contextLength: 0 });
    expect(flat.imageTokenId).toBe(nested.imageTokenId);
  });
});

describe('Qwen2.5-VL PEFT adapter: regex target_modules', () => {
  it('attaches all seven projections of both layers, and writes a regex that picks them and not the vision tower', () => {
    const m = readHfLanguageModel(join(HF_FIXTURES, 'qwen2_5_vl'), TABLE);
    open.push(m);
    loadPeftAdapter(m.decoder, join(HF_FIXTURES, 'qwen2_5_vl-lora'), false);
    const adapted = [...m.decoder.linears()].filter(([, l]) => l.lora).map(([name]) => name);
    expect(adapted).toHaveLength(14);
    const projections = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];
    const ours = targetModulesFor(m.decoder, projections);
    const theirs = readPeftConfig(join(HF_FIXTURES, 'qwen2_5_vl-lora')).targetModules;
    expect(typeof ours).toBe('string');
    expect(typeof theirs).toBe('string');
    // PEFT full-matches a string target_modules against every module path of the model.
    const tower = ['visual.blocks.0.mlp.gate_proj', 'visual.blocks.0.attn.qkv', 'visual.merger.mlp.0'];
    for (const pattern of [ours as string, theirs as string]) {
      const full = new RegExp(`^(?:${pattern})$`);
      expect(adapted.every((name) => full.test(name))).toBe(true);
      expect(tower.some((name) => full.test(name))).toBe(false);
    }
  });
});
