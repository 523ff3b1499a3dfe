import { beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../../models/backend.ts';
import { BuiltinPolicy } from '../../../models/builtin/policy.ts';
import { loraAdapters } from '../../../models/builtin/lora.ts';
import { sampleToken } from '../../../models/token-sampling.ts';
import type { EncodedPrompt, ModelInput } from '../../../models/types.ts';
import type { RawImage } from '../../../core/image.ts';
import { Rng } from '../../../core/rng.ts';
import { UserError } from '../../../core/errors.ts';

const TINY = { dModel: 32, nLayers: 2, nHeads: 2, dMlp: 64, imageSize: 16, patchSize: 8 };

function randomImage(seed: number): RawImage {
  const rng = new Rng(seed, 'image');
  return { width: 16, height: 16, channels: 3, data: Uint8Array.from({ length: 16 * 16 * 3 }, () => rng.int(256)) };
}

/** Make the adapters do something: B = 0 would make every LoRA test pass trivially. */
function perturbLora(policy: BuiltinPolicy, seed: number): void {
  for (const [i, a] of loraAdapters(policy.lora!).entries())
    a.b.assign(tf.randomNormal(a.b.shape, 0, 0.3, 'float32', seed + i));
}

const maxAbsDiff = (a: tf.Tensor, b: tf.Tensor): number => tf.tidy(() => tf.max(tf.abs(tf.sub(a, b))).dataSync()[0]);

let policy: BuiltinPolicy;
let prompt: EncodedPrompt;
let shortPrompt: EncodedPrompt;

beforeAll(async () => {
  await initBackend('wasm', null);
  policy = BuiltinPolicy.create({ architecture: TINY, seed: 7, lora: { r: 4, alpha: 8 } });
  perturbLora(policy, 1);
  const input: ModelInput = [
    { type: 'text', text: 'chess\n8/8/8/8/8/8/8/8 w - - 0 1\n' },
    { type: 'image', image: randomImage(1) },
    { type: 'text', text: '\ne2e4\n' },
    { type: 'image', image: randomImage(2) },
    { type: 'text', text: '\nFINAL ANSWER: ' },
  ];
  prompt = policy.encode(input);
  shortPrompt = policy.encode([
    { type: 'text', text: 'shell\n2\n' },
    { type: 'image', image: randomImage(3) },
    { type: 'text', text: '\nFINAL ANSWER: ' },
  ]);
});

describe('sampling one token', () => {
  const row = Float32Array.from([2, 1, 0, 3, -1]);
  const logZ = Math.log(row.reduce((s, x) => s + Math.exp(x), 0));

  it('greedy takes the argmax outside the banned tokens; log-probs are over the whole vocabulary at temperature 1', () => {
    expect(sampleToken(row, { temperature: 0, topP: 1, maxNewTokens: 1 }, new Rng(1))).toEqual({
      token: 3,
      logProb: 3 - logZ,
      samplingLogProb: 3 - logZ,
    });
    const r = sampleToken(row, { temperature: 0, topP: 1, maxNewTokens: 1 }, new Rng(1), new Set([3]));
    expect(r.token).toBe(0);
    expect(r.logProb).toBeCloseTo(2 - logZ, 6);
  });

  it('top-p keeps the smallest nucleus, temperature sharpens, banned tokens are never drawn', () => {
    const rng = new Rng(5);
    const draws = (opts: { temperature: number; topP: number }, banned = new Set<number>()) =>
      Array.from({ length: 400 }, () => sampleToken(row, { ...opts, maxNewTokens: 1 }, rng, banned).token);
    expect(new Set(draws({ temperature: 1, topP: 0.5 }))).toEqual(new Set([3]));
    const nucleus = new Set(draws({ temperature: 1, topP: 0.8 }));
    expect(nucleus).toEqual(new Set([3, 0]));
    const all = draws({ temperature: 1, topP: 1 }, new Set([3]));
    expect(all).not.toContain(3);
    expect(new Set(all).size).toBeGreaterThanOrEqual(3);
    const cold = draws({ temperature: 0.2, topP: 1 });
    expect(cold.filter((t) => t === 3).length).toBeGreaterThan(380);
  });

  it('records each draw at log softmax(row / T) over the whole vocabulary, whatever the nucleus or the banned tokens', () => {
    // Hand-computed: row / 0.5 = [4, 2, 0, 6, -2], log Σ exp = 6.145368; at T = 1, log Σ exp(row) = 3.451914.
    const nucleus = sampleToken(row, { temperature: 0.5, topP: 0.5, maxNewTokens: 1 }, new Rng(2));
    expect(nucleus.token).toBe(3);
    expect(nucleus.samplingLogProb).toBeCloseTo(-0.145368, 5);
    expect(nucleus.logProb).toBeCloseTo(-0.451914, 5);
    // Token 3 banned: whatever is drawn from the rest keeps its probability over the whole vocabulary.
    const wanted = [-2.145368, -4.145368, -6.145368, Number.NaN, -8.145368];
    for (let seed = 0; seed < 20; seed++) {
      const d = sampleToken(row, { temperature: 0.5, topP: 1, maxNewTokens: 1 }, new Rng(seed), new Set([3]));
      expect(d.samplingLogProb).toBeCloseTo(wanted[d.token], 5);
    }
  });

  it('at temperature 1 both recorded log-probs are log softmax(row), read from the one pass that draws', () => {
    // log Σ exp([2, 1, 0, 3, -1]) = 3.451914: token t is recorded at row[t] - 3.451914 under both names.
    for (let seed = 0; seed < 20; seed++) {
      const d = sampleToken(row, { temperature: 1, topP: 1, maxNewTokens: 1 }, new Rng(seed));
      expect(d.logProb).toBeCloseTo(row[d.token] - 3.451914, 5);
      expect(d.samplingLogProb).toBeCloseTo(d.logProb, 12);
    }
  });

  it('top-k keeps the k most probable tokens, min-p those at least min-p × the top probability, before the nucleus', () => {
    // row = [2, 1, 0, 3, -1] at T = 1: the top two are tokens 3 and 0; min-p 0.3 keeps x ≥ 3 + ln 0.3 = 1.80 (tokens
    // 3 and 0), min-p 0.1 keeps x ≥ 0.70 (tokens 3, 0 and 1).
    const rng = new Rng(9);
    const draws = (opts: { topK?: number; minP?: number; topP?: number }) =>
      new Set(
        Array.from(
          { length: 400 },
          () => sampleToken(row, { temperature: 1, topP: 1, maxNewTokens: 1, ...opts }, rng).token,
        ),
      );
    expect(draws({ topK: 2 })).toEqual(new Set([3, 0]));
    expect(draws({ topK: 1 })).toEqual(new Set([3]));
    expect(draws({ minP: 0.3 })).toEqual(new Set([3, 0]));
    expect(draws({ minP: 0.1 })).toEqual(new Set([3, 0, 1]));
    // The nucleus of what top-k kept: p(3) = e³ / (e³ + e²) = 0.73 < 0.8, so top-p 0.8 keeps both.
    expect(draws({ topK: 2, topP: 0.8 })).toEqual(new Set([3, 0]));
    // Of the top three, p(3) = e³ / (e³ + e² + e) = 0.665 ≥ 0.6: the nucleus is token 3 alone.
    expect(draws({ topK: 3, topP: 0.6 })).toEqual(new Set([3]));
    // Each draw is recorded over the whole vocabulary: token 0 keeps log softmax(row)[0] = −1.451914.
    for (let seed = 0; seed < 30; seed++) {
      const d = sampleToken(row, { temperature: 1, topP: 1, topK: 2, maxNewTokens: 1 }, new Rng(seed));
      expect(d.samplingLogProb).toBeCloseTo(d.token === 3 ? -0.451914 : -1.451914, 5);
    }
  });

  it("at top-p 1 draws the inverse CDF of softmax(row / T) over the allowed tokens for the Rng's uniform", () => {
    const g = new Rng(11);
    for (let t = 0; t < 300; t++) {
      const logits = Float32Array.from({ length: 37 }, () => (g.next() - 0.5) * 12);
      const banned = new Set([0, 5, 9]);
      const T = [0.5, 1, 1.7][t % 3];
      // Reference: unnormalised weights in vocabulary order, u · total walked down (the same arithmetic, written out).
      const max = Math.max(...logits);
      const w = Array.from(logits, (x, i) => (banned.has(i) ? 0 : Math.exp((x - max) / T)));
      let x = new Rng(t).next() * w.reduce((s, v) => s + v, 0);
      let want = logits.length - 1;
      for (let i = 0; i < w.length; i++)
        if ((x -= w[i]) < 0) {
          want = i;
          break;
        }
      expect(sampleToken(logits, { temperature: T, topP: 1, maxNewTokens: 1 }, new Rng(t), banned).token).toBe(want);
    }
  });
});

describe('built-in policy', () => {
  it('encodes text character by character and each image as its patch tokens', () => {
    const t = policy.tokenizer;
    expect(prompt.tokens[0]).toBe(t.bos);
    expect(prompt.tokens.filter((x) => x === t.img)).toHaveLength(2 * 4);
    expect(prompt.images).toHaveLength(2);
    expect(prompt.images[0]).toHaveLength(4 * 8 * 8 * 3);
    expect(Math.max(...prompt.images[0])).toBeLessThanOrEqual(1);
    expect(policy.decode(prompt.tokens)).toBe('chess\n8/8/8/8/8/8/8/8 w - - 0 1\n\ne2e4\n\nFINAL ANSWER: ');
  });

  it('cached incremental decoding gives the logits of a full forward pass', () => {
    const [c] = policy.sampleGroup(prompt, 1, { temperature: 1, topP: 1, maxNewTokens: 12 }, new Rng(3));
    const full = policy.sequenceLogits({ tokens: [...prompt.tokens, ...c.tokens], images: prompt.images });
    const logp = tf.tidy(() => tf.logSoftmax(full).arraySync() as number[][]);
    // The sampler's log-prob of each generated token comes from the cached pass; compare with the full pass.
    c.tokens.forEach((token, j) => {
      expect(c.logProbs[j]).toBeCloseTo(logp[prompt.tokens.length - 1 + j][token], 4);
    });
    full.dispose();
  });

  it('samples reproducibly from a seed, and differently from another seed', () => {
    const opts = { temperature: 1, topP: 0.95, maxNewTokens: 10 };
    const a = policy.sampleGroup(prompt, 4, opts, new Rng(11)).map((c) => c.tokens.join(','));
    const b = policy.sampleGroup(prompt, 4, opts, new Rng(11)).map((c) => c.tokens.join(','));
    const c = policy.sampleGroup(prompt, 4, opts, new Rng(12)).map((x) => x.tokens.join(','));
    expect(a).toEqual(b);
    expect(c).not.toEqual(a);
  });

  it('greedy decoding (temperature 0) takes the argmax and is the same for every member of the group', () => {
    const group = policy.sampleGroup(prompt, 3, { temperature: 0, topP: 1, maxNewTokens: 8 }, new Rng(1));
    expect(new Set(group.map((c) => c.tokens.join(','))).size).toBe(1);
    const full = policy.sequenceLogits({ tokens: prompt.tokens, images: prompt.images });
    const last = tf.tidy(() => tf.argMax(full.slice([prompt.tokens.length - 1, 0], [1, -1]), 1).dataSync()[0]);
    expect(group[0].tokens[0]).toBe(last);
    full.dispose();
  });

  it('batched sampling of several prompts matches sampling each prompt alone (greedy)', () => {
    const opts = { temperature: 0, topP: 1, maxNewTokens: 6 };
    const together = policy.sampleGroups([prompt, shortPrompt], 2, opts, new Rng(1));
    const alone = [
      policy.sampleGroup(prompt, 2, opts, new Rng(1)),
      policy.sampleGroup(shortPrompt, 2, opts, new Rng(1)),
    ];
    expect(together.map((g) => g.map((c) => c.tokens))).toEqual(alone.map((g) => g.map((c) => c.tokens)));
    together[1][0].logProbs.forEach((lp, j) => expect(lp).toBeCloseTo(alone[1][0].logProbs[j], 4));
    // One completion per prompt (evaluation) takes another code path in decoding.
    const single = policy.sampleGroups([shortPrompt, prompt], 1, opts, new Rng(1));
    expect(single.map((g) => g[0].tokens)).toEqual([alone[1][0].tokens, alone[0][0].tokens]);
    single[1][0].logProbs.forEach((lp, j) => expect(lp).toBeCloseTo(alone[0][0].logProbs[j], 4));
    // More prompts than one prefill pass takes (8), of different lengths.
    const many = Array.from({ length: 10 }, (_, i) =>
      policy.encode([
        { type: 'text', text: `shell\n${'123'.repeat(i + 1)}\n` },
        { type: 'image', image: randomImage(20 + i) },
        { type: 'text', text: 'FINAL ANSWER: ' },
      ]),
    );
    const batched = policy.sampleGroups(many, 1, opts, new Rng(1)).map((g) => g[0]);
    const each = many.map((m) => policy.sampleGroup(m, 1, opts, new Rng(1))[0]);
    expect(batched.map((c) => c.tokens)).toEqual(each.map((c) => c.tokens));
    for (const i of [0, 9]) batched[i].logProbs.forEach((lp, j) => expect(lp).toBeCloseTo(each[i].logProbs[j], 4));
  });

  it('tokenLogProbs of a padded batch equals each item scored alone, with a mask over padding', () => {
    // Interleaved prompts: the policy groups items by prompt internally and must return rows in the caller's order.
    const items = [
      { prompt, completion: policy.encodeTarget('8/8/8/8/8/8/8/8') },
      { prompt: shortPrompt, completion: policy.encodeTarget('3') },
      { prompt, completion: policy.encodeTarget('8/8') },
    ];
    const batch = policy.tokenLogProbs(items, { useLora: true, withEntropy: true });
    expect(batch.logProbs.shape).toEqual([3, 16]);
    const mask = batch.mask.arraySync();
    expect(mask[1].slice(0, 3)).toEqual([1, 1, 0]);
    const rows = batch.logProbs.arraySync();
    items.forEach((item, b) => {
      const alone = policy.tokenLogProbs([item], { useLora: true });
      const values = alone.logProbs.arraySync()[0];
      values.forEach((v, j) => expect(rows[b][j]).toBeCloseTo(v, 4));
      expect(rows[b].slice(values.length).every((v) => v === 0)).toBe(true);
      // Against the full forward pass as well.
      const full = policy.sequenceLogits({
        tokens: [...item.prompt.tokens, ...item.completion],
        images: item.prompt.images,
      });
      const logp = tf.tidy(() => tf.logSoftmax(full).arraySync() as number[][]);
      item.completion.forEach((t, j) => expect(values[j]).toBeCloseTo(logp[item.prompt.tokens.length - 1 + j][t], 4));
      tf.dispose([alone.logProbs, alone.mask, full]);
    });
    const entropy = batch.entropy!.arraySync();
    expect(entropy[0][0]).toBeGreaterThan(0);
    expect(entropy[0][0]).toBeLessThanOrEqual(Math.log(policy.arch.vocabSize) + 1e-4);
    tf.dispose([batch.logProbs, batch.mask, batch.entropy!]);
  });

  it('tokenLogProbs at a temperature are the log-probabilities of softmax(logits / T)', () => {
    const item = { prompt, completion: policy.encodeTarget('8/8/8') };
    const full = policy.sequenceLogits({
      tokens: [...item.prompt.tokens, ...item.completion],
      images: item.prompt.images,
    });
    for (const temperature of [0.5, 2]) {
      const r = policy.tokenLogProbs([item], { useLora: true, temperature });
      const values = r.logProbs.arraySync()[0];
      const logp = tf.tidy(() => tf.logSoftmax(tf.div(full, temperature)).arraySync() as number[][]);
      const untempered = tf.tidy(() => tf.logSoftmax(full).arraySync() as number[][]);
      item.completion.forEach((t, j) => expect(values[j]).toBeCloseTo(logp[item.prompt.tokens.length - 1 + j][t], 4));
      // ... and not the untempered ones (this model's logits are not flat enough for them to agree).
      expect(
        item.completion.some((t, j) => Math.abs(values[j] - untempered[item.prompt.tokens.length - 1 + j][t]) > 1e-3),
      ).toBe(true);
      tf.dispose([r.logProbs, r.mask]);
    }
    full.dispose();
  });

  it('useLora: false is the base model, and merging LoRA into the base reproduces the adapted logits', () => {
    const base = BuiltinPolicy.create({ architecture: TINY, seed: 21 });
    const reference = base.sequenceLogits(prompt, false);
    base.attachLora({ r: 4, alpha: 16 }, new Rng(5));
    perturbLora(base, 100);
    const adapted = base.sequenceLogits(prompt, true);
    const off = base.sequenceLogits(prompt, false);
    expect(maxAbsDiff(off, reference)).toBe(0);
    expect(maxAbsDiff(adapted, reference)).toBeGreaterThan(1e-3);
    base.mergeLora();
    const merged = base.sequenceLogits(prompt, false);
    expect(maxAbsDiff(merged, adapted)).toBeLessThan(1e-4);
    tf.dispose([reference, adapted, off, merged]);
    base.dispose();
  });

  it('gradients of the completion log-likelihood match finite differences (LoRA and base, through the image path)', () => {
    const items = [
      { prompt, completion: policy.encodeTarget('e4') },
      { prompt, completion: policy.encodeTarget('d5x') },
      { prompt: shortPrompt, completion: policy.encodeTarget('1') },
    ];
    const objective = (useLora: boolean) => () => {
      const r = policy.tokenLogProbs(items, { useLora });
      return tf.sum(tf.mul(r.logProbs, r.mask)) as tf.Scalar;
    };
    const check = (variable: tf.Variable, useLora: boolean, grad: tf.Tensor) => {
      const g = grad.dataSync();
      const values = variable.dataSync().slice();
      // The three largest-gradient entries: finite differences in float32 are meaningful there.
      const order = Array.from(g.keys())
        .sort((a, b) => Math.abs(g[b]) - Math.abs(g[a]))
        .slice(0, 3);
      const eps = 1e-2;
      for (const i of order) {
        const at = (delta: number) => {
          const v = values.slice();
          v[i] += delta;
          variable.assign(tf.tensor(v, variable.shape));
          return tf.tidy(() => objective(useLora)().dataSync()[0]);
        };
        const numeric = (at(eps) - at(-eps)) / (2 * eps);
        variable.assign(tf.tensor(values, variable.shape));
        expect(Math.abs(numeric - g[i])).toBeLessThan(0.03 * Math.abs(g[i]) + 2e-3);
      }
    };
    const loraVars = policy.trainableVariables('lora');
    const { grads: loraGrads } = tf.variableGrads(objective(true), loraVars);
    const first = loraAdapters(policy.lora!)[0];
    check(first.a, true, loraGrads[first.a.name]);
    check(first.b, true, loraGrads[first.b.name]);
    tf.dispose(loraGrads);

    const base = BuiltinPolicy.create({ architecture: TINY, seed: 9 });
    const baseObjective = () => {
      const r = base.tokenLogProbs(items, { useLora: false });
      return tf.sum(tf.mul(r.logProbs, r.mask)) as tf.Scalar;
    };
    const { grads } = tf.variableGrads(baseObjective, base.trainableVariables('base'));
    for (const v of [base.weights.patchProj, base.weights.embed, base.weights.layers[0].proj.q_proj]) {
      const g = grads[v.name].dataSync();
      const values = v.dataSync().slice();
      const order = Array.from(g.keys())
        .sort((a, b) => Math.abs(g[b]) - Math.abs(g[a]))
        .slice(0, 2);
      for (const i of order) {
        const at = (delta: number) => {
          const x = values.slice();
          x[i] += delta;
          v.assign(tf.tensor(x, v.shape));
          return tf.tidy(() => baseObjective().dataSync()[0]);
        };
        const numeric = (at(1e-2) - at(-1e-2)) / 2e-2;
        v.assign(tf.tensor(values, v.shape));
        expect(Math.abs(numeric - g[i])).toBeLessThan(0.03 * Math.abs(g[i]) + 2e-3);
      }
    }
    tf.dispose(grads);
    base.dispose();
  });

  it('a large batch differentiated chunk by chunk gives the same gradient as its parts differentiated alone', () => {
    // 3 prompt groups of 4 completions = 12 sequences: more than one chunk, so the checkpointed path runs.
    const third = policy.encode([
      { type: 'text', text: 'chess\nfoo\n' },
      { type: 'image', image: randomImage(9) },
      { type: 'text', text: '\nFINAL ANSWER: ' },
    ]);
    const items = [prompt, shortPrompt, third].flatMap((p, g) =>
      Array.from({ length: 4 }, (_, j) => ({
        prompt: p,
        completion: policy.encodeTarget(['e2e4', '3', 'a1', 'xyz'][(g + j) % 4]),
      })),
    );
    const weights = items.map((_, i) => (i % 3) - 1); // a per-sequence upstream gradient, as advantages give
    const objective = (subset: number[]) => () => {
      const r = policy.tokenLogProbs(
        subset.map((i) => items[i]),
        { useLora: true, withEntropy: true },
      );
      expect(r.entropy!.shape).toEqual(r.logProbs.shape);
      return tf.sum(
        tf.mul(tf.sum(tf.mul(r.logProbs, r.mask), 1), tf.tensor1d(subset.map((i) => weights[i]))),
      ) as tf.Scalar;
    };
    const vars = policy.trainableVariables('lora');
    const whole = tf.variableGrads(objective(items.map((_, i) => i)), vars);
    const parts = [0, 1, 2].map((g) => tf.variableGrads(objective([0, 1, 2, 3].map((j) => g * 4 + j)), vars));
    const values = tf.tidy(() => [whole.value.dataSync()[0], parts.reduce((s, p) => s + p.value.dataSync()[0], 0)]);
    expect(values[0]).toBeCloseTo(values[1], 3);
    expect(tf.tidy(() => tf.max(tf.abs(whole.grads[vars[0].name])).dataSync()[0])).toBeGreaterThan(1e-3);
    for (const v of vars) {
      const sum = tf.tidy(() => tf.addN(parts.map((p) => p.grads[v.name])));
      expect(maxAbsDiff(whole.grads[v.name], sum)).toBeLessThan(1e-4);
      sum.dispose();
    }
    tf.dispose([
      whole.value,
      ...Object.values(whole.grads),
      ...parts.flatMap((p) => [p.value, ...Object.values(p.grads)]),
    ]);
  });

  it('a large group (prompt scores head by head) matches full passes and finite differences', () => {
    // 8 completions of 12 tokens: 8 × 11 = 88 query rows, above the per-head threshold of 64.
    const texts = [
      '8/8/8/8 w - -',
      'e2e4 e7e5 g1',
      '1 swap 2 now',
      'abcdefghijkl',
      'FINAL ANSWER',
      'rnbqkbnr/ppp',
      'x swap y zzz',
      '3 2 1 go go!',
    ];
    const items = texts.map((t) => ({ prompt, completion: policy.tokenizer.encodeText(t).slice(0, 12) }));
    const batch = policy.tokenLogProbs(items, { useLora: true });
    const rows = batch.logProbs.arraySync();
    items.forEach((item, b) => {
      const full = policy.sequenceLogits({
        tokens: [...item.prompt.tokens, ...item.completion],
        images: item.prompt.images,
      });
      const logp = tf.tidy(() => tf.logSoftmax(full).arraySync() as number[][]);
      item.completion.forEach((t, j) => expect(rows[b][j]).toBeCloseTo(logp[item.prompt.tokens.length - 1 + j][t], 4));
      full.dispose();
    });
    tf.dispose([batch.logProbs, batch.mask]);
    const objective = () => {
      const r = policy.tokenLogProbs(items, { useLora: true });
      return tf.sum(tf.mul(r.logProbs, r.mask)) as tf.Scalar;
    };
    const adapter = loraAdapters(policy.lora!)[1]; // k_proj of layer 0: its gradient flows only through attention
    const { grads } = tf.variableGrads(objective, [adapter.a]);
    const g = grads[adapter.a.name].dataSync();
    const values = adapter.a.dataSync().slice();
    const top = Array.from(g.keys())
      .sort((x, y) => Math.abs(g[y]) - Math.abs(g[x]))
      .slice(0, 2);
    expect(Math.abs(g[top[0]])).toBeGreaterThan(1e-3);
    for (const i of top) {
      const at = (delta: number) => {
        const v = values.slice();
        v[i] += delta;
        adapter.a.assign(tf.tensor(v, adapter.a.shape));
        return tf.tidy(() => objective().dataSync()[0]);
      };
      const numeric = (at(1e-2) - at(-1e-2)) / 2e-2;
      adapter.a.assign(tf.tensor(values, adapter.a.shape));
      expect(Math.abs(numeric - g[i])).toBeLessThan(0.03 * Math.abs(g[i]) + 2e-3);
    }
    tf.dispose(Object.values(grads));
  });

  it('refuses sequences longer than the architecture context with one line', () => {
    const small = BuiltinPolicy.create({ architecture: { ...TINY, maxContext: 32 }, seed: 1 });
    const long = small.encode([{ type: 'text', text: 'x'.repeat(30) }]);
    expect(() => small.sampleGroup(long, 2, { temperature: 1, topP: 1, maxNewTokens: 5 }, new Rng(1))).toThrow(
      /31 tokens plus 5 new tokens exceeds the model's context of 32/,
    );
    expect(() => small.tokenLogProbs([{ prompt: long, completion: [5, 6] }], { useLora: false })).toThrow(UserError);
    small.dispose();
  });

  it('freezes the base while adapters are attached and does not leak tensors', () => {
    expect(() => policy.trainableVariables('base')).toThrow(/frozen/);
    const before = tf.memory().numTensors;
    policy.sampleGroup(prompt, 2, { temperature: 1, topP: 1, maxNewTokens: 5 }, new Rng(1));
    const r = policy.tokenLogProbs([{ prompt, completion: [5, 6, 7] }], { useLora: true, withEntropy: true });
    tf.dispose([r.logProbs, r.mask, r.entropy!]);
    expect(tf.memory().numTensors).toBe(before);
  });
});
