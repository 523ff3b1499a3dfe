// Test doubles for developing the trainer without the built-in model: a tiny tfjs policy (a prompt-conditioned
// bigram model with a LoRA adapter on its output projection) and a tiny environment (answer the initial digit, or
// the digit after one swap). Small enough that a training step takes milliseconds.
import * as tf from '@tensorflow/tfjs';
import { Rng } from '../../core/rng.ts';
import { UserError } from '../../core/errors.ts';
import type { Completion, EncodedPrompt, ModelInput, Policy, SamplingOptions, SequenceBatchItem, TokenLogProbs } from '../../models/types.ts';
import type { Env, Episode } from '../../envs/types.ts';
import type { AdapterStore } from '../../trainer/checkpoint.ts';
import { decodeSafetensors, encodeSafetensors } from '../../models/safetensors.ts';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const VOCAB = ['<eos>', ...'0123456789 swap|:'.split('')];
const EOS = 0;

export class ToyPolicy implements Policy {
  readonly architecture = { kind: 'toy', d: 8 };
  readonly emb: tf.Variable;
  readonly w: tf.Variable;
  readonly loraA: tf.Variable;
  readonly loraB: tf.Variable;

  constructor(seed: number, readonly d = 8, rank = 2) {
    const rng = new Rng(seed, 'toy');
    const r = (n: number, s: number) => Float32Array.from({ length: n }, () => rng.normal() * s);
    const V = VOCAB.length;
    this.emb = tf.variable(tf.tensor2d(r(V * d, 0.5), [V, d]), false);
    this.w = tf.variable(tf.tensor2d(r(2 * d * V, 0.5), [2 * d, V]), false);
    this.loraA = tf.variable(tf.tensor2d(r(2 * d * rank, 0.3), [2 * d, rank]), true);
    this.loraB = tf.variable(tf.tensor2d(r(rank * V, 0.3), [rank, V]), true);
  }

  encode(input: ModelInput): EncodedPrompt {
    const text = input.map((p) => (p.type === 'text' ? p.text : '')).join('');
    return { tokens: [...text].map((c) => Math.max(0, VOCAB.indexOf(c))), images: [] };
  }

  decode(tokens: number[]): string {
    return tokens.filter((t) => t !== EOS).map((t) => VOCAB[t]).join('');
  }

  /** Logits of the next token from [mean prompt embedding, previous token embedding]: [n, V]. */
  private logits(promptTokens: number[][], prev: number[], useLora: boolean): tf.Tensor2D {
    return tf.tidy(() => {
      const ctx = tf.stack(promptTokens.map((p) => tf.mean(tf.gather(this.emb, tf.tensor1d(p, 'int32')), 0)));
      const x = tf.concat([ctx, tf.gather(this.emb, tf.tensor1d(prev, 'int32'))], 1) as tf.Tensor2D;
      let out: tf.Tensor2D = tf.matMul(x, this.w as tf.Tensor2D);
      if (useLora) out = tf.add(out, tf.matMul(tf.matMul(x, this.loraA as tf.Tensor2D), this.loraB as tf.Tensor2D));
      return out;
    });
  }

  sampleGroup(prompt: EncodedPrompt, group: number, options: SamplingOptions, rng: Rng): Completion[] {
    const out: Completion[] = [];
    for (let g = 0; g < group; g++) {
      const tokens: number[] = [];
      const logProbs: number[] = [];
      let prev = prompt.tokens[prompt.tokens.length - 1];
      let finished = false;
      while (tokens.length < options.maxNewTokens) {
        const lp = tf.tidy(() => tf.logSoftmax(this.logits([prompt.tokens], [prev], true)).dataSync());
        let next: number;
        if (options.temperature === 0) next = lp.indexOf(Math.max(...lp));
        else next = rng.weighted(Array.from(lp, (x) => Math.exp(x / options.temperature)));
        tokens.push(next);
        logProbs.push(lp[next]);
        prev = next;
        if (next === EOS) {
          finished = true;
          break;
        }
      }
      out.push({ tokens, text: this.decode(tokens), logProbs: Float32Array.from(logProbs), finished });
    }
    return out;
  }

  tokenLogProbs(batch: SequenceBatchItem[], options: { useLora: boolean; withEntropy?: boolean }): TokenLogProbs {
    const T = Math.max(1, ...batch.map((b) => b.completion.length));
    const prompts: number[][] = [];
    const prevs: number[] = [];
    const targets: number[] = [];
    const mask: number[] = [];
    for (const b of batch) {
      for (let t = 0; t < T; t++) {
        const real = t < b.completion.length;
        prompts.push(b.prompt.tokens);
        prevs.push(t === 0 ? b.prompt.tokens[b.prompt.tokens.length - 1] : real ? b.completion[t - 1] : EOS);
        targets.push(real ? b.completion[t] : EOS);
        mask.push(real ? 1 : 0);
      }
    }
    const logits = this.logits(prompts, prevs, options.useLora);
    const logp = tf.logSoftmax(logits);
    const picked = tf.sum(tf.mul(logp, tf.oneHot(tf.tensor1d(targets, 'int32'), VOCAB.length)), 1);
    const result: TokenLogProbs = { logProbs: picked.reshape([batch.length, T]) as tf.Tensor2D, mask: tf.tensor2d(mask, [batch.length, T]) };
    if (options.withEntropy) result.entropy = tf.neg(tf.sum(tf.mul(tf.exp(logp), logp), 1)).reshape([batch.length, T]) as tf.Tensor2D;
    return result;
  }

  trainableVariables(scope: 'lora' | 'base'): tf.Variable[] {
    return scope === 'lora' ? [this.loraA, this.loraB] : [this.emb, this.w];
  }
}

/** Saves the adapter variables in order (not PEFT: the toy has no module names). */
export function toyAdapterStore(policy: ToyPolicy): AdapterStore {
  return {
    files: ['adapter_model.safetensors'],
    save(dir) {
      const tensors = new Map(policy.trainableVariables('lora').map((v, i) => [`lora.${i}`, { shape: v.shape, data: v.dataSync() as Float32Array }]));
      writeFileSync(join(dir, 'adapter_model.safetensors'), encodeSafetensors(tensors));
    },
    load(dir) {
      const path = join(dir, 'adapter_model.safetensors');
      if (!existsSync(path)) throw new UserError(`${dir}: no adapter`);
      const { tensors } = decodeSafetensors(readFileSync(path));
      policy.trainableVariables('lora').forEach((v, i) => v.assign(tf.tensor(tensors.get(`lora.${i}`)!.data, v.shape)));
    },
  };
}

/** Initial digit 1-3 and `actions` swaps; the answer is where the ball ends up. */
export const toyEnv: Env = {
  domain: 'shell',
  promptStyles: ['compact'],
  imageSizes: { chat: 32, model: 16 },
  intervalMethod: 'wilson',
  *candidates(rng, options) {
    for (;;) {
      let ball = rng.range(1, 3);
      const initial = String(ball);
      const actions: string[] = [];
      for (let i = 0; i < options.actions; i++) {
        const [x, y] = rng.sample([1, 2, 3], 2);
        actions.push(`${x} swap ${y}`);
        if (ball === x) ball = y;
        else if (ball === y) ball = x;
      }
      yield { initialState: initial, actionTexts: actions, target: String(ball), fingerprintExtra: String(rng.nextUint32()) };
    }
  },
  renderAction() {
    throw new Error('toy env has no images');
  },
  prompt() {
    return [];
  },
  score({ target, response }) {
    const valid = /^[123]$/.test(response.trim());
    return { reward: valid && response.trim() === target ? 1 : 0, valid, prediction: valid ? response.trim() : null, metrics: {} };
  },
};

export function toyEncode(policy: ToyPolicy) {
  return (e: Episode) => policy.encode([{ type: 'text', text: `${e.initialState}|${e.actions.map((a) => a.text).join('|')}:` }]);
}
