// The model registry tells architectures apart by config.json: the built-in checkpoint by its `format`, a Hugging
// Face folder by `model_type`. A Hugging Face folder is no longer taken for a broken built-in checkpoint (it used to
// fail with "incomplete checkpoint (missing tokenizer.json)"); an architecture not registered is named in the error.
import { beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SHARED_DIR } from '../../core/paths.ts';
import { UserError } from '../../core/errors.ts';
import { initBackend } from '../../models/backend.ts';
import { BuiltinPolicy } from '../../models/builtin/policy.ts';
import { saveBaseCheckpoint } from '../../models/builtin/base-checkpoint.ts';
import { loadBaseModel, modelTypeOf, supportedModelTypes } from '../../models/registry.ts';

const HF_FIXTURES = join(SHARED_DIR, 'fixtures', 'hf');
let root = '';

function folderWithConfig(name: string, config: unknown): string {
  const dir = join(root, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  return dir;
}

beforeAll(async () => {
  await initBackend('wasm', null);
  root = mkdtempSync(join(tmpdir(), 'metrl-registry-'));
});

describe('model registry', () => {
  it('recognises the built-in checkpoint and loads it into a policy with the same weights', async () => {
    const saved = BuiltinPolicy.create({
      architecture: { dModel: 32, nLayers: 1, nHeads: 2, dMlp: 64, maxContext: 96, imageSize: 32, patchSize: 16 },
      seed: 4,
    });
    const dir = join(root, 'builtin');
    saveBaseCheckpoint(saved, dir);
    expect(modelTypeOf(dir)).toBe('metrl-vlm');
    const loaded = await loadBaseModel(dir);
    expect(loaded).toBeInstanceOf(BuiltinPolicy);
    expect(loaded.contextLimit).toBe(96);
    expect(loaded.imageSize).toBe(32);
    expect(Array.from((loaded as BuiltinPolicy).weights.embed.dataSync())).toEqual(
      Array.from(saved.weights.embed.dataSync()),
    );
    loaded.dispose();
    saved.dispose();
  });

  it('reads the model_type of the Hugging Face fixtures', () => {
    for (const name of ['llama', 'qwen2', 'qwen3', 'gemma3', 'idefics3', 'qwen2_5_vl', 'qwen3_vl'])
      expect(modelTypeOf(join(HF_FIXTURES, name))).toBe(name);
  });

  it('names an architecture it does not support, with the supported ones', async () => {
    const dir = folderWithConfig('foreign', { model_type: 'not-a-model', architectures: ['NotAModelForCausalLM'] });
    await expect(loadBaseModel(dir)).rejects.toThrow(
      new UserError(`${dir}: unsupported architecture not-a-model (supported: ${supportedModelTypes().join(', ')})`),
    );
    expect(supportedModelTypes()).toContain('metrl-vlm');
  });

  it('says what is wrong with a folder it cannot place', async () => {
    await expect(loadBaseModel(join(root, 'nope'))).rejects.toThrow(/nope: no such checkpoint folder/);
    mkdirSync(join(root, 'empty'));
    await expect(loadBaseModel(join(root, 'empty'))).rejects.toThrow(
      /empty: incomplete checkpoint \(missing config.json\)/,
    );
    const unnamed = folderWithConfig('unnamed', { architectures: ['SomethingForCausalLM'] });
    await expect(loadBaseModel(unnamed)).rejects.toThrow(
      /names no model_type \(architectures: SomethingForCausalLM\) and is not a built-in checkpoint/,
    );
    const broken = join(root, 'broken');
    mkdirSync(broken);
    writeFileSync(join(broken, 'config.json'), '{not json');
    await expect(loadBaseModel(broken)).rejects.toThrow(/config.json: not valid JSON/);
  });
});
