// The Hugging Face learner on ONNX Runtime (models/onnx/hf/hf-learner.ts, its graph hf-train-graph.ts and the
// autodiff under it) against tfjs autodiff through HfPolicy.tokenLogProbs (tf.variableGrads), the reference, on every
// architecture of ../shared/fixtures/hf: Llama, Qwen2 (q/k/v biases, tied head), and the language models of Idefics3
// and Gemma 3 under image prompts (Gemma's sliding windows of 3, bidirectional image blocks, q/k norms, sandwich
// norms, GELU-tanh), Qwen3, and Qwen2.5-VL and Qwen3-VL under image prompts (multimodal RoPE, DeepStack). A non-zero adapter on every projection, completions of unequal lengths (one of a single token,
// one empty), a temperature and a loss nonlinear in the log-probs: the loss and every LoRA A and B gradient within
// 1e-4 relative to the variable's largest gradient (the built-in learner's bound). Also: a group cut into parts by a
// small logit budget, and a group spread over two requests, give the same sums; the output head computed in chunks of 3
// rows and all at once agree; central finite differences on a few coordinates (llama, qwen3); final logit
// soft-capping (a Gemma3ForCausalLM, whose head goes through the autodiff whole).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import { HfPolicy } from '../../models/hf/policy.ts';
import { ATTENTION_SOFTCAP, HfOrtLearner } from '../../models/onnx/hf/hf-learner.ts';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { UserError } from '../../core/errors.ts';
import type { LogProbLoss } from '../../models/learner.ts';
import { Rng } from '../../core/rng.ts';
import type { RawImage } from '../../core/image.ts';
import type { EncodedPrompt, SequenceBatchItem, TokenLogProbs } from '../../models/types.ts';
import { hfCheckpointCopy, removeHfCopies } from '../helpers/hf-checkpoint-copy.ts';
import { parseHfConfig } from '../../models/hf/config.ts';
import { randomDecoderTensors, writeHfCheckpoint } from '../../models/hf/write-checkpoint.ts';
import { GEMMA3_CAUSAL_LAYOUT } from '../../models/gemma3/language-model.ts';
import { relativeError } from '../helpers/relative-error.ts';
import { HF_ARCHITECTURES, loadHfPolicy } from '../../models/registry.ts';

const TOL = 1e-4;

beforeAll(async () => {
  await initBackend('wasm', null);
});
afterAll(() => removeHfCopies());

function randomImage(seed: number): RawImage {
  const rng = new Rng(seed, 'image');
  return {
    width: 40,
    height: 30,
    channels: 3,
    data: Uint8Array.from({ length: 40 * 30 * 3 }, () => Math.floor(rng.next() * 256)),
  };
}

/** A loss nonlinear in the log-probs (so g depends on them), masked like the GRPO loss. */
function testLoss(seed: number): LogProbLoss {
  return (lp: TokenLogProbs) => {
    const [B, L] = lp.logProbs.shape;
    const c = tf.randomNormal([B, L], 0, 1, 'float32', seed);
    const e = tf.randomNormal([B, L], 0, 1, 'float32', seed + 1);
    return tf.sum(tf.mul(lp.mask, tf.add(tf.mul(c, lp.logProbs), tf.mul(e, tf.exp(lp.logProbs))))) as tf.Scalar;
  };
}

describe.each(['llama', 'qwen2', 'qwen3', 'idefics3', 'gemma3', 'qwen2_5_vl', 'qwen3_vl'])(
  'HfOrtLearner vs tfjs autodiff: %s',
  (name) => {
    let policy: HfPolicy;
    let learner: HfOrtLearner;
    let items: SequenceBatchItem[];
    const options = { useLora: true, withEntropy: true, temperature: 0.8 };

    beforeAll(async () => {
      policy = await loadHfPolicy(hfCheckpointCopy(name));
      policy.attachLora({ r: 4, alpha: 8 }, new Rng(5, 'lora'));
      let seed = 31;
      for (const v of policy.trainableVariables('lora'))
        v.assign(tf.add(v, tf.randomNormal(v.shape, 0, 0.1, 'float32', seed++)));
      // The output head in chunks of 3 rows (a Loop of several iterations, the last one padded: hf-train-head.ts); the
      // `parts` learner below keeps the default chunk (all rows at once here), so both are checked.
      learner = new HfOrtLearner(policy, { threads: 1, headChunkLogits: policy.decoder.config.vocabSize * 3 });
      const image = ['idefics3', 'gemma3', 'qwen2_5_vl', 'qwen3_vl'].includes(name);
      const first: EncodedPrompt = policy.encode([
        { type: 'text', text: 'Which move wins here? ' },
        ...(image ? [{ type: 'image' as const, image: randomImage(1) }] : []),
        { type: 'text', text: ' Answer:' },
      ]);
      const second: EncodedPrompt = policy.encode([{ type: 'text', text: 'List the files.' }]);
      const rng = new Rng(11, 'completions');
      const V = policy.decoder.config.vocabSize;
      const completion = (n: number) => Array.from({ length: n }, () => 3 + rng.int(V - 3));
      items = [
        ...[9, 4, 9, 1].map((n) => ({ prompt: first, completion: completion(n) })),
        ...[6, 0, 3].map((n) => ({ prompt: second, completion: completion(n) })),
      ];
    });
    afterAll(() => {
      learner.dispose();
      policy.dispose();
    });

    it('gives the loss and every LoRA gradient of tfjs autodiff within 1e-4', () => {
      const variables = policy.trainableVariables('lora');
      const loss = testLoss(3);
      const want = tf.variableGrads(() => loss(policy.tokenLogProbs(items, options)), variables);
      const got = learner.lossGradients(items, options, loss, variables);
      const err = relativeError(got.grads, want.grads);
      console.log(
        name,
        'ORT learner gradient relative error',
        err,
        'loss',
        got.value.dataSync()[0],
        want.value.dataSync()[0],
      );
      expect(err).toBeLessThan(TOL);
      expect(Math.abs(got.value.dataSync()[0] - want.value.dataSync()[0])).toBeLessThan(
        TOL * Math.max(1, Math.abs(want.value.dataSync()[0])),
      );
      // A group cut into one-token-budget parts (each part runs its prompt again), and the batch as two requests that
      // split a group: the same losses and gradient sums.
      const parts = new HfOrtLearner(policy, { threads: 1, logitBudget: policy.decoder.config.vocabSize * 5 });
      const split = parts.lossGradientsSum(
        [
          { batch: items.slice(0, 2), options, loss: testLoss(3) },
          { batch: items.slice(2), options, loss: testLoss(7) },
        ],
        variables,
      );
      const whole = learner.lossGradientsSum(
        [
          { batch: items.slice(0, 2), options, loss: testLoss(3) },
          { batch: items.slice(2), options, loss: testLoss(7) },
        ],
        variables,
      );
      parts.dispose();
      expect(relativeError(split.grads, whole.grads)).toBeLessThan(1e-5);
      split.values.forEach((v, i) => expect(v.dataSync()[0]).toBeCloseTo(whole.values[i].dataSync()[0], 5));
      tf.dispose([
        got.value,
        ...Object.values(got.grads),
        want.value,
        ...Object.values(want.grads),
        ...split.values,
        ...Object.values(split.grads),
        ...whole.values,
        ...Object.values(whole.grads),
      ]);
    });
  },
);

// qwen3: its q/k norms sit between the q/k projections' adapters and the loss.
describe.each(['llama', 'qwen3'])('HfOrtLearner against finite differences (%s)', (name) => {
  let policy: HfPolicy;
  let learner: HfOrtLearner;
  let items: SequenceBatchItem[];
  const options = { useLora: true, withEntropy: false, temperature: 1 };
  beforeAll(async () => {
    policy = await loadHfPolicy(hfCheckpointCopy(name));
    policy.attachLora({ r: 2, alpha: 4 }, new Rng(6, 'lora'));
    let seed = 41;
    for (const v of policy.trainableVariables('lora'))
      v.assign(tf.add(v, tf.randomNormal(v.shape, 0, 0.1, 'float32', seed++)));
    learner = new HfOrtLearner(policy, { threads: 1 });
    const prompt = policy.encode([{ type: 'text', text: 'Track the ball.' }]);
    const rng = new Rng(12, 'completions');
    items = [5, 2].map((n) => ({ prompt, completion: Array.from({ length: n }, () => 3 + rng.int(200)) }));
  });
  afterAll(() => {
    learner.dispose();
    policy.dispose();
  });

  it('matches central finite differences of the loss on a few coordinates', () => {
    const variables = policy.trainableVariables('lora');
    const loss = testLoss(5);
    const got = learner.lossGradients(items, options, loss, variables);
    const lossAt = () => tf.tidy(() => loss(policy.tokenLogProbs(items, options)).dataSync()[0]);
    const h = 1e-2;
    for (const v of [variables[0], variables[1], variables[variables.length - 1]]) {
      const grad = got.grads[v.name].dataSync();
      // The coordinate with the largest gradient, where float32 differences are most informative.
      let k = 0;
      for (let i = 1; i < grad.length; i++) if (Math.abs(grad[i]) > Math.abs(grad[k])) k = i;
      const base = v.dataSync().slice() as Float32Array;
      const at = (delta: number) => {
        const moved = base.slice();
        moved[k] += delta;
        v.assign(tf.tensor(moved, v.shape));
        return lossAt();
      };
      const fd = (at(h) - at(-h)) / (2 * h);
      v.assign(tf.tensor(base, v.shape));
      expect(Math.abs(fd - grad[k])).toBeLessThan(2e-2 * Math.max(1, Math.abs(grad[k])));
    }
    tf.dispose([got.value, ...Object.values(got.grads)]);
  });
});

describe('HfOrtLearner with final logit soft-capping (gemma3, the whole-head path)', () => {
  it('gives the loss and every LoRA gradient of tfjs autodiff within 1e-4', async () => {
    // A Gemma3ForCausalLM of the gemma3 fixture's text shape (only the CausalLM applies final_logit_softcapping),
    // random weights, the fixture copy's tokenizer.
    const dir = hfCheckpointCopy('gemma3');
    const fixture = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
    const config = {
      ...fixture.text_config,
      architectures: ['Gemma3ForCausalLM'],
      model_type: 'gemma3_text',
      final_logit_softcapping: 2,
    }; // small: the cap bends every logit
    writeHfCheckpoint(
      dir,
      config,
      randomDecoderTensors(
        parseHfConfig(config, HF_ARCHITECTURES).text,
        GEMMA3_CAUSAL_LAYOUT,
        new Rng(3, 'causal'),
        0.2,
      ),
    );
    const policy = await loadHfPolicy(dir);
    const learner = new HfOrtLearner(policy, { threads: 1 });
    try {
      expect(policy.decoder.config.finalLogitSoftcap).toBe(2);
      policy.attachLora({ r: 4, alpha: 8 }, new Rng(5, 'lora'));
      let seed = 51;
      for (const v of policy.trainableVariables('lora'))
        v.assign(tf.add(v, tf.randomNormal(v.shape, 0, 0.1, 'float32', seed++)));
      const prompt = policy.encode([{ type: 'text', text: 'Where is the ball?' }]);
      const rng = new Rng(13, 'completions');
      const items = [5, 3, 1].map((n) => ({ prompt, completion: Array.from({ length: n }, () => 3 + rng.int(200)) }));
      const options = { useLora: true, withEntropy: true, temperature: 0.9 };
      const variables = policy.trainableVariables('lora');
      const want = tf.variableGrads(() => testLoss(9)(policy.tokenLogProbs(items, options)), variables);
      const got = learner.lossGradients(items, options, testLoss(9), variables);
      expect(relativeError(got.grads, want.grads)).toBeLessThan(TOL);
      expect(Math.abs(got.value.dataSync()[0] - want.value.dataSync()[0])).toBeLessThan(
        TOL * Math.max(1, Math.abs(want.value.dataSync()[0])),
      );
      tf.dispose([got.value, ...Object.values(got.grads), want.value, ...Object.values(want.grads)]);
    } finally {
      learner.dispose();
      policy.dispose();
    }
  });
});

describe('HfOrtLearner refuses what its graph lacks', () => {
  it('attention soft-capping: one UserError when the learner is made, before any work', async () => {
    const dir = hfCheckpointCopy('gemma3');
    const path = join(dir, 'config.json');
    const config = JSON.parse(readFileSync(path, 'utf8'));
    config.text_config.attn_logit_softcapping = 50;
    writeFileSync(path, JSON.stringify(config));
    const policy = await loadHfPolicy(dir);
    try {
      expect(() => new HfOrtLearner(policy)).toThrow(UserError);
      expect(() => new HfOrtLearner(policy)).toThrow(ATTENTION_SOFTCAP);
    } finally {
      policy.dispose();
    }
  });
});
