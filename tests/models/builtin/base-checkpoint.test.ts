import { beforeAll, describe, expect, it, vi } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initBackend } from '../../../models/backend.ts';
import { BuiltinPolicy } from '../../../models/builtin/policy.ts';
import { loadBaseCheckpoint, saveBaseCheckpoint } from '../../../models/builtin/base-checkpoint.ts';
import { loadAdapter, saveAdapter } from '../../../models/builtin/peft-adapter.ts';
import { decodeSafetensors } from '../../../models/safetensors.ts';
import { loraAdapters } from '../../../models/builtin/lora.ts';
import { diskShapes, weightEntries } from '../../../models/builtin/weights.ts';
import { UserError } from '../../../core/errors.ts';
import { Rng } from '../../../core/rng.ts';

const TINY = { dModel: 32, nLayers: 2, nHeads: 2, dMlp: 64, imageSize: 16, patchSize: 8 };
const dir = () => mkdtempSync(join(tmpdir(), 'metrl-ckpt-'));
const maxAbsDiff = (a: tf.Tensor, b: tf.Tensor): number => tf.tidy(() => tf.max(tf.abs(tf.sub(a, b))).dataSync()[0]);

beforeAll(async () => {
  await initBackend('wasm', null);
});

describe('base checkpoints', () => {
  it('checks a config that claims a far larger architecture against the weights before building anything', () => {
    const policy = BuiltinPolicy.create({ architecture: TINY, seed: 3 });
    const out = join(dir(), 'claims-large');
    saveBaseCheckpoint(policy, out);
    policy.dispose();
    const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
    config.architecture = { ...config.architecture, dModel: 2048, nLayers: 32, nHeads: 16, dMlp: 8192 };
    writeFileSync(join(out, 'config.json'), JSON.stringify(config));
    const create = vi.spyOn(BuiltinPolicy, 'create');
    try {
      expect(() => loadBaseCheckpoint(out)).toThrow(
        /tensor model\.embed_tokens\.weight has shape \[\d+,32\] but config\.json's architecture needs \[\d+,2048\]/,
      );
      expect(create).not.toHaveBeenCalled();
    } finally {
      create.mockRestore();
    }
  });

  it('diskShapes lists exactly the tensors and on-disk shapes the built model has', () => {
    const policy = BuiltinPolicy.create({ architecture: TINY, seed: 3 });
    const built = new Map(
      weightEntries(policy.weights).map((e) => [
        e.name,
        e.transposeOnDisk ? [...e.variable.shape].reverse() : [...e.variable.shape],
      ]),
    );
    expect(diskShapes(policy.arch)).toEqual(built);
    policy.dispose();
  });

  it('round-trips weights, tokenizer and architecture', () => {
    const policy = BuiltinPolicy.create({ architecture: TINY, seed: 3 });
    const out = join(dir(), 'base');
    saveBaseCheckpoint(policy, out, { note: 'test' });
    const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
    expect(config).toMatchObject({
      format: 'metrl-vlm',
      formatVersion: 1,
      note: 'test',
      architecture: { dModel: 32, nLayers: 2 },
    });
    const file = decodeSafetensors(readFileSync(join(out, 'model.safetensors')));
    // Linear weights are stored [out, in] as torch.nn.Linear does.
    expect(file.tensors.get('model.layers.0.mlp.up_proj.weight')!.shape).toEqual([64, 32]);
    const loaded = loadBaseCheckpoint(out);
    const prompt = policy.encode([{ type: 'text', text: 'shell\n1\n2 swap 1\nFINAL ANSWER: ' }]);
    const a = policy.sequenceLogits(prompt);
    const b = loaded.sequenceLogits(prompt);
    expect(maxAbsDiff(a, b)).toBe(0);
    tf.dispose([a, b]);
    policy.dispose();
    loaded.dispose();
  });

  it('names what is wrong with a missing, incomplete or foreign checkpoint', () => {
    const missing = join(dir(), 'nothing-here');
    expect(() => loadBaseCheckpoint(missing)).toThrow(new UserError(`${missing}: no such checkpoint folder`));

    const policy = BuiltinPolicy.create({ architecture: TINY, seed: 3 });
    const incomplete = join(dir(), 'incomplete');
    saveBaseCheckpoint(policy, incomplete);
    rmSync(join(incomplete, 'tokenizer.json'));
    expect(() => loadBaseCheckpoint(incomplete)).toThrow(/incomplete checkpoint \(missing tokenizer.json\)/);

    const foreign = join(dir(), 'foreign');
    saveBaseCheckpoint(policy, foreign);
    const config = JSON.parse(readFileSync(join(foreign, 'config.json'), 'utf8'));
    config.architecture.dMlp = 48;
    writeFileSync(join(foreign, 'config.json'), JSON.stringify(config));
    expect(() => loadBaseCheckpoint(foreign)).toThrow(
      /model.layers.0.mlp.up_proj.weight has shape \[64,32\] but config.json's architecture needs \[48,32\]/,
    );

    config.architecture.dMlp = 64;
    config.architecture.nLayers = 1;
    writeFileSync(join(foreign, 'config.json'), JSON.stringify(config));
    expect(() => loadBaseCheckpoint(foreign)).toThrow(/tensors this architecture does not use/);

    config.architecture.nLayers = 2;
    config.architecture.flashAttention = true;
    writeFileSync(join(foreign, 'config.json'), JSON.stringify(config));
    expect(() => loadBaseCheckpoint(foreign)).toThrow(UserError);

    writeFileSync(join(foreign, 'config.json'), '{"format": "metrl-vlm", "formatVersion": 99, "architecture": {}}');
    expect(() => loadBaseCheckpoint(foreign)).toThrow(/formatVersion/);
    policy.dispose();
  });
});

describe('LoRA adapters in PEFT layout', () => {
  it('writes adapter_config.json and PEFT tensor names, and loads them back into another instance', () => {
    const policy = BuiltinPolicy.create({ architecture: TINY, seed: 4, lora: { r: 4, alpha: 8 } });
    for (const [i, a] of loraAdapters(policy.lora!).entries())
      a.b.assign(tf.randomNormal(a.b.shape, 0, 0.2, 'float32', i));
    const out = join(dir(), 'adapter');
    saveAdapter(policy, out, { baseModel: 'checkpoints/base' });
    const config = JSON.parse(readFileSync(join(out, 'adapter_config.json'), 'utf8'));
    expect(config).toMatchObject({
      peft_type: 'LORA',
      task_type: 'CAUSAL_LM',
      r: 4,
      lora_alpha: 8,
      base_model_name_or_path: 'checkpoints/base',
    });
    expect(config.target_modules).toEqual(['q_proj', 'k_proj', 'v_proj', 'o_proj', 'up_proj', 'down_proj']);
    const file = decodeSafetensors(readFileSync(join(out, 'adapter_model.safetensors')));
    expect(file.tensors.get('base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight')!.shape).toEqual([4, 32]);
    expect(file.tensors.get('base_model.model.model.layers.1.mlp.down_proj.lora_B.weight')!.shape).toEqual([32, 4]);
    expect(file.tensors.size).toBe(2 * 6 * 2);

    const other = BuiltinPolicy.create({ architecture: TINY, seed: 4 });
    loadAdapter(other, out);
    const prompt = policy.encode([{ type: 'text', text: 'chess\ne2e4\n' }]);
    const a = policy.sequenceLogits(prompt);
    const b = other.sequenceLogits(prompt);
    expect(maxAbsDiff(a, b)).toBeLessThan(1e-6);
    tf.dispose([a, b]);

    const wider = BuiltinPolicy.create({ architecture: { ...TINY, dModel: 48, nHeads: 2 }, seed: 1 });
    expect(() => loadAdapter(wider, out)).toThrow(/has shape \[4,32\] but this model needs \[4,48\]/);
    expect(wider.lora).toBeNull();
    expect(() => loadAdapter(wider, join(dir(), 'none'))).toThrow(/no such adapter folder/);
    policy.dispose();
    other.dispose();
    wider.dispose();
  });

  it('rejects an adapter_config.json that is not LoRA', () => {
    const policy = BuiltinPolicy.create({ architecture: TINY, seed: 4 });
    policy.attachLora({ r: 2 }, new Rng(1));
    const out = join(dir(), 'adapter');
    saveAdapter(policy, out);
    writeFileSync(
      join(out, 'adapter_config.json'),
      JSON.stringify({ peft_type: 'IA3', r: 2, lora_alpha: 4, target_modules: ['q_proj'] }),
    );
    expect(() => loadAdapter(policy, out)).toThrow(/peft_type/);
    policy.dispose();
  });
});
