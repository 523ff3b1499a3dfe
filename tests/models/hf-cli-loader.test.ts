// Every fixture folder of ../shared/fixtures/hf loaded through the loader the CLI uses (models/load.ts loadPolicy →
// models/registry.ts → HfPolicy.load) meets its references: logits within 1e-4 and greedy ids exact. The unit tests
// load the same folders through the architecture loaders directly; this keeps the CLI path and the unit path from
// diverging (the policy's tokenizer, template, adapter resolution and image handling sit in between). The folders
// are temporary copies with a byte tokenizer added and config.json untouched (the fixtures hold no tokenizer); the
// references are read in place. The VLMs are checked through the Policy interface itself: greedy sampling and the
// learner's log-probabilities on the reference image prompt, against log-softmax of the reference logits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { Rng } from '../../core/rng.ts';
import { initBackend } from '../../models/backend.ts';
import { HfPolicy } from '../../models/hf/policy.ts';
import { loadPolicy } from '../../models/load.ts';
import type { Policy } from '../../models/policy.ts';
import { loadBaseModel } from '../../models/registry.ts';
import { hfCheckpointCopy, hfScratchDir, removeHfCopies } from '../helpers/hf-checkpoint-copy.ts';
import { TOL, readReference, textReferenceChecks, type Reference } from './hf-fixture.ts';

const opened: Policy[] = [];
const silent = () => {};

beforeAll(async () => {
  await initBackend('wasm', null);
});
afterAll(() => {
  opened.forEach((p) => p.dispose());
  removeHfCopies();
});

/** loadPolicy on a copy of fixture `name` (config.json as the fixture has it), as `--checkpoint COPY` does. */
async function cliPolicy(name: string, dir?: string): Promise<HfPolicy> {
  const copy = hfCheckpointCopy(name, { context: null, ...(dir ? { dir } : {}) });
  const { policy } = await loadPolicy(copy, { log: silent });
  opened.push(policy);
  expect(policy).toBeInstanceOf(HfPolicy);
  return policy as HfPolicy;
}

function expectWithin(checks: Record<string, number | boolean>): void {
  for (const [k, v] of Object.entries(checks)) {
    if (typeof v === 'boolean') expect(v, k).toBe(true);
    else expect(v, k).toBeLessThan(TOL);
  }
}

/** log-softmax of row `r` of a [rows, V] tensor, at column `c`. */
function logSoftmaxAt(data: Float32Array, V: number, r: number, c: number): number {
  const row = data.subarray(r * V, (r + 1) * V);
  const max = Math.max(...row);
  const logZ = max + Math.log(row.reduce((s, x) => s + Math.exp(x - max), 0));
  return row[c] - logZ;
}

/**
 * An image prompt of a VLM reference through the Policy interface: greedy sampling gives the reference ids with the
 * reference step log-probabilities, and the learner's log-probabilities of the prompt's last three tokens (after the
 * image) are log-softmax of the reference logits.
 */
function checkImagePrompt(policy: Policy, ref: Reference, key: string, logitsName: string): void {
  const j = ref.json[key];
  const ids: number[] = j.input_ids[0];
  const pixels = ref.get(`${key}.pixel_values`).data;
  const V = 256;
  const [completion] = policy.sampleGroup(
    { tokens: ids, images: [pixels] },
    1,
    { temperature: 0, topP: 1, maxNewTokens: j.greedy.max_new_tokens },
    new Rng(0, 'greedy'),
  );
  expect(completion.tokens).toEqual(j.greedy.new_ids);
  const steps = ref.get(`${key}.greedy.step_logits`).data;
  const stepDiff = Math.max(
    ...j.greedy.new_ids.map((id: number, s: number) =>
      Math.abs(completion.logProbs[s] - logSoftmaxAt(steps, V, s, id)),
    ),
  );
  expect(stepDiff).toBeLessThan(TOL);

  const cut = ids.length - 3;
  const logits = ref.get(logitsName).data; // [1, T, V]
  const scored = policy.tokenLogProbs(
    [{ prompt: { tokens: ids.slice(0, cut), images: [pixels] }, completion: ids.slice(cut) }],
    { useLora: false },
  );
  const got = scored.logProbs.dataSync();
  tf.dispose([scored.logProbs, scored.mask, ...(scored.entropy ? [scored.entropy] : [])]);
  const learnerDiff = Math.max(
    ...ids.slice(cut).map((id, i) => Math.abs(got[i] - logSoftmaxAt(logits, V, cut - 1 + i, id))),
  );
  expect(learnerDiff).toBeLessThan(TOL);
}

describe('fixture folders through the CLI loader (loadPolicy)', () => {
  for (const [name, prefix] of [
    ['llama', ''],
    ['llama-bf16', ''],
    ['qwen2', ''],
    ['qwen3', ''],
    ['gemma3', 'text.'],
  ] as const) {
    it(`${name}: the text references`, async () => {
      const policy = await cliPolicy(name);
      expectWithin(textReferenceChecks(policy.decoder, readReference(name), prefix));
    });
  }

  it('gemma3: the image prompt (bidirectional image block) through sampling and the learner', async () => {
    checkImagePrompt(await cliPolicy('gemma3'), readReference('gemma3'), 'image', 'image.logits_with_token_type_ids');
  });

  it('idefics3: the image prompt through sampling and the learner; LoRA gradients flow through it', async () => {
    const policy = await cliPolicy('idefics3');
    const ref = readReference('idefics3');
    checkImagePrompt(policy, ref, 'one_image', 'one_image.logits');
    // What `metrl train` does on image episodes: fresh LoRA (B = 0, so nothing changes yet), then a gradient of the
    // completion's log-probability that reaches every adapter matrix through the image prompt.
    policy.attachLora({ r: 4, alpha: 8 }, new Rng(1, 'lora'));
    const ids: number[] = ref.json.one_image.input_ids[0];
    const item = {
      prompt: { tokens: ids.slice(0, -3), images: [ref.get('one_image.pixel_values').data] },
      completion: ids.slice(-3),
    };
    const variables = policy.trainableVariables('lora');
    const { value, grads } = tf.variableGrads(() => {
      const lp = policy.tokenLogProbs([item], { useLora: true });
      return tf.sum(tf.mul(lp.logProbs, lp.mask)) as tf.Scalar;
    }, variables);
    value.dispose();
    expect(Object.keys(grads)).toHaveLength(variables.length);
    const norms = Object.values(grads).map((g) => tf.tidy(() => tf.norm(g).dataSync()[0]));
    tf.dispose(Object.values(grads));
    expect(norms.every(Number.isFinite)).toBe(true);
    // lora_A's gradient is 0 while B = 0; every lora_B gets one.
    expect(norms.filter((n) => n > 0).length).toBeGreaterThanOrEqual(variables.length / 2);
  });

  it('llama-lora: the adapter next to a folder named llama finds its base by base_model_name_or_path and meets its references', async () => {
    const pair = hfScratchDir('hf-loader-lora');
    const base = hfCheckpointCopy('llama', { dir: join(pair, 'llama'), context: null });
    const adapter = hfCheckpointCopy('llama-lora', { dir: join(pair, 'llama-lora') });
    const loaded = await loadPolicy(adapter, { log: silent });
    opened.push(loaded.policy);
    expect([loaded.base, loaded.adapter]).toEqual([base, adapter]);
    expectWithin(textReferenceChecks((loaded.policy as HfPolicy).decoder, readReference('llama-lora')));
    // The registry alone gives the bare base: the llama references.
    const bare = (await loadBaseModel(base)) as HfPolicy;
    opened.push(bare);
    expectWithin(textReferenceChecks(bare.decoder, readReference('llama')));
  });
});
