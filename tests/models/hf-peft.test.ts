// PEFT LoRA adapters on the Hugging Face decoders: fixtures/hf/llama-lora reproduces its references on fixtures/hf/llama,
// the writer produces the adapter_config.json PEFT 0.17.1 writes (byte for byte) and reads back exactly, fresh
// adapters change nothing until trained and carry gradients, and adapters that do not fit the base are refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import { readHfLanguageModel, type LoadedHfModel } from '../../models/hf/load-decoder.ts';
import {
  createLora,
  detachLora,
  loadPeftAdapter,
  localBaseOf,
  readPeftConfig,
  savePeftAdapter,
  targetModulesFor,
} from '../../models/hf/peft.ts';
import { decodeSafetensors, encodeSafetensors } from '../../models/safetensors.ts';
import { UserError } from '../../core/errors.ts';
import { Rng } from '../../core/rng.ts';
import { FIXTURES, TOL, logitsOf, maxDiff, readReference, textReferenceChecks } from './hf-fixture.ts';
import { HF_ARCHITECTURES } from '../../models/registry.ts';

const LORA_DIR = join(FIXTURES, 'llama-lora');
let base: LoadedHfModel;
let tmp: string;

beforeAll(async () => {
  await initBackend('wasm', null);
  base = readHfLanguageModel(join(FIXTURES, 'llama'), HF_ARCHITECTURES);
  tmp = mkdtempSync(join(tmpdir(), 'metrl-peft-'));
});
afterAll(() => {
  base?.decoder.dispose();
  rmSync(tmp, { recursive: true, force: true });
});

describe('PEFT adapter fixtures/hf/llama-lora', () => {
  it('resolves its base from base_model_name_or_path and reproduces the references', () => {
    const config = readPeftConfig(LORA_DIR);
    expect([config.r, config.alpha, config.useRslora]).toEqual([4, 8, false]);
    expect(localBaseOf(LORA_DIR, config)).toBe(join(FIXTURES, 'llama'));
    loadPeftAdapter(base.decoder, LORA_DIR);
    expect(base.decoder.loraVariables()).toHaveLength(2 * 7 * 2);
    const r = textReferenceChecks(base.decoder, readReference('llama-lora'));
    console.log('llama-lora', r);
    for (const [k, v] of Object.entries(r)) {
      if (typeof v === 'boolean') expect(v, k).toBe(true);
      else expect(v, k).toBeLessThan(TOL);
    }
    // LoRA off on the same weights is the base model (the reference policy).
    const b = readReference('llama').json.batch;
    const off = logitsOf(base.decoder, { ids: b.input_ids, attentionMask: b.attention_mask, useLora: false });
    expect(maxDiff(off, readReference('llama').get('batch.logits').data, 256, b.attention_mask.flat())).toBeLessThan(
      TOL,
    );
  });

  it('writes the adapter_config.json PEFT 0.17.1 writes and reads the adapter back exactly', () => {
    loadPeftAdapter(base.decoder, LORA_DIR);
    const fixtureConfig = readFileSync(join(LORA_DIR, 'adapter_config.json'), 'utf8');
    const out = join(tmp, 'written');
    const targets = JSON.parse(fixtureConfig).target_modules as string[];
    savePeftAdapter(base.decoder, out, { baseModelNameOrPath: '../llama', r: 4, alpha: 8, targetModules: targets });
    expect(readFileSync(join(out, 'adapter_config.json'), 'utf8')).toBe(fixtureConfig);
    // Same tensor names, shapes and values as the fixture's file (PEFT's layout, float32).
    const mine = decodeSafetensors(readFileSync(join(out, 'adapter_model.safetensors')));
    const theirs = decodeSafetensors(readFileSync(join(LORA_DIR, 'adapter_model.safetensors')));
    expect([...mine.tensors.keys()].sort()).toEqual([...theirs.tensors.keys()].sort());
    expect(mine.metadata).toEqual({ format: 'pt' });
    for (const [name, t] of theirs.tensors) {
      expect(mine.tensors.get(name)!.shape, name).toEqual(t.shape);
      expect(Buffer.from(mine.tensors.get(name)!.data.buffer).equals(Buffer.from(t.data.buffer)), name).toBe(true);
    }
    // Reading the written folder back gives bit-identical variables.
    const before = base.decoder.loraVariables().map((v) => v.dataSync().slice());
    loadPeftAdapter(base.decoder, out);
    const after = base.decoder.loraVariables().map((v) => v.dataSync().slice());
    expect(after.length).toBe(before.length);
    after.forEach((a, i) => expect(Buffer.from(a.buffer).equals(Buffer.from(before[i].buffer))).toBe(true));
    // Without an explicit list the writer names the adapted projections.
    savePeftAdapter(base.decoder, join(tmp, 'default'), { baseModelNameOrPath: null, r: 4, alpha: 8 });
    expect(JSON.parse(readFileSync(join(tmp, 'default', 'adapter_config.json'), 'utf8')).target_modules).toEqual([
      'q_proj',
      'k_proj',
      'v_proj',
      'o_proj',
      'gate_proj',
      'up_proj',
      'down_proj',
    ]);
  });
});

describe('fresh LoRA adapters', () => {
  it('start as the base model (B = 0), carry gradients, and target only the requested projections', () => {
    const vars = createLora(base.decoder, { r: 8, alpha: 16, targets: ['q', 'v'] }, new Rng(3, 'lora'));
    expect(vars).toHaveLength(2 * 2 * 2);
    const ids = [[1, 5, 9, 200, 17]];
    const withLora = logitsOf(base.decoder, { ids });
    const without = logitsOf(base.decoder, { ids, useLora: false });
    expect(maxDiff(withLora, without, 256)).toBe(0);
    const { grads } = tf.variableGrads(
      () => tf.sum(tf.square(base.decoder.forward({ ids, logits: 'all' }).logits!)) as tf.Scalar,
      vars,
    );
    const norms = vars.map((v) => tf.tidy(() => tf.norm(grads[v.name]).dataSync()[0]));
    Object.values(grads).forEach((g) => g.dispose());
    // With B = 0 only B receives a gradient; A's is exactly zero.
    vars.forEach((v, i) => (v.shape[0] === 64 ? expect(norms[i]).toBe(0) : expect(norms[i]).toBeGreaterThan(0)));
    expect(targetModulesFor(base.decoder, ['q_proj'])).toEqual(['q_proj']);
    detachLora(base.decoder);
    expect(base.decoder.loraVariables()).toHaveLength(0);
  });
});

describe('learner memory: recomputed blocks', () => {
  it('give the same loss and LoRA gradients as the plain backward pass (llama-lora, padded batch)', () => {
    loadPeftAdapter(base.decoder, LORA_DIR);
    const b = readReference('llama').json.batch;
    const vars = base.decoder.loraVariables();
    const loss = (recompute: boolean) => () =>
      tf.tidy(() => {
        const logits = base.decoder.forward({
          ids: b.input_ids,
          attentionMask: b.attention_mask,
          logitsFrom: 6,
          recompute,
        }).logits!;
        return tf.mean(tf.square(tf.logSoftmax(logits))) as tf.Scalar;
      });
    const plain = tf.variableGrads(loss(false), vars);
    const again = tf.variableGrads(loss(true), vars);
    expect(Math.abs(plain.value.dataSync()[0] - again.value.dataSync()[0])).toBeLessThan(1e-6);
    let worst = 0;
    let scale = 0;
    for (const v of vars) {
      worst = Math.max(
        worst,
        tf.tidy(() => tf.max(tf.abs(tf.sub(plain.grads[v.name], again.grads[v.name]))).dataSync()[0]),
      );
      scale = Math.max(
        scale,
        tf.tidy(() => tf.max(tf.abs(plain.grads[v.name])).dataSync()[0]),
      );
    }
    [plain, again].forEach((r) => {
      r.value.dispose();
      Object.values(r.grads).forEach((g) => g.dispose());
    });
    console.log('recompute vs plain gradients', { worst, scale });
    expect(scale).toBeGreaterThan(1e-3);
    expect(worst).toBeLessThan(1e-5 * Math.max(1, scale));
  });
});

describe('adapters that do not fit the base', () => {
  function adapterCopy(name: string): string {
    const dir = join(tmp, name);
    cpSync(LORA_DIR, dir, { recursive: true });
    return dir;
  }

  it('refuses a rank that disagrees with adapter_config.json, naming the file and tensor', () => {
    const dir = adapterCopy('rank');
    const cfg = JSON.parse(readFileSync(join(dir, 'adapter_config.json'), 'utf8'));
    writeFileSync(join(dir, 'adapter_config.json'), JSON.stringify({ ...cfg, r: 8 }));
    const call = () => loadPeftAdapter(base.decoder, dir);
    expect(call).toThrow(UserError);
    expect(call).toThrow(
      /adapter_model\.safetensors: tensor base_model\.model\.model\.layers\.0\..*lora_A\.weight has shape \[4, \d+\], the base model and r = 8 .* implies \[8, \d+\]/,
    );
  });

  it('refuses a target module the base does not have', () => {
    const dir = adapterCopy('absent');
    const { tensors } = decodeSafetensors(readFileSync(join(LORA_DIR, 'adapter_model.safetensors')));
    const renamed = new Map([...tensors].map(([k, v]) => [k.replace('layers.1.', 'layers.7.'), v]));
    writeFileSync(join(dir, 'adapter_model.safetensors'), encodeSafetensors(renamed, { format: 'pt' }));
    expect(() => loadPeftAdapter(base.decoder, dir)).toThrow(
      /adapter_model\.safetensors: tensor .*layers\.7\..* targets module model\.layers\.7\..*, which this llama language model does not have/,
    );
  });

  it('refuses DoRA and a missing adapter_config.json in one line', () => {
    const dir = adapterCopy('dora');
    const cfg = JSON.parse(readFileSync(join(dir, 'adapter_config.json'), 'utf8'));
    writeFileSync(join(dir, 'adapter_config.json'), JSON.stringify({ ...cfg, use_dora: true }));
    expect(() => loadPeftAdapter(base.decoder, dir)).toThrow(
      /adapter_config\.json: use_dora: true \(DoRA\) is not supported/,
    );
    expect(() => loadPeftAdapter(base.decoder, join(tmp, 'nowhere'))).toThrow(/adapter_config\.json: no such file/);
  });
});
