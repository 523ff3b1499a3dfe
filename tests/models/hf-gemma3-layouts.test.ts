// Gemma 3's other checkpoint shapes, built from fixtures/hf/gemma3 in a temporary folder: Gemma3ForCausalLM (the text
// model alone, tensors under model.), the conditional model with the in-memory names (model.language_model.*), and
// PEFT adapters on its language model (module paths model.language_model.…, older language_model.model.… accepted,
// target_modules limited to the language model). The text references must hold for each.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../../models/backend.ts';
import { readHfLanguageModel } from '../../models/hf/load-decoder.ts';
import { createLora, loadPeftAdapter, savePeftAdapter } from '../../models/hf/peft.ts';
import { decodeSafetensors, encodeSafetensors, type NamedTensor } from '../../models/safetensors.ts';
import { Rng } from '../../core/rng.ts';
import { FIXTURES, TOL, logitsOf, maxDiff, readReference } from './hf-fixture.ts';
import { HF_ARCHITECTURES } from '../../models/registry.ts';

const GEMMA = join(FIXTURES, 'gemma3');
let tmp: string;
beforeAll(async () => {
  await initBackend('wasm', null);
  tmp = mkdtempSync(join(tmpdir(), 'metrl-gemma-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A folder with `config` and the fixture's tensors renamed by `rename` (null drops a tensor). */
function variant(name: string, config: unknown, rename: (k: string) => string | null): string {
  const dir = join(tmp, name);
  mkdirSync(dir);
  const { tensors } = decodeSafetensors(readFileSync(join(GEMMA, 'model.safetensors')));
  const out = new Map<string, NamedTensor>();
  for (const [k, v] of tensors) {
    const n = rename(k);
    if (n) out.set(n, v);
  }
  writeFileSync(join(dir, 'model.safetensors'), encodeSafetensors(out, { format: 'pt' }));
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  return dir;
}

function textBatchDiff(dir: string): number {
  const m = readHfLanguageModel(dir, HF_ARCHITECTURES);
  const ref = readReference('gemma3');
  const b = ref.json.text.batch;
  const d = maxDiff(
    logitsOf(m.decoder, { ids: b.input_ids, attentionMask: b.attention_mask }),
    ref.get('text.batch.logits').data,
    256,
    b.attention_mask.flat(),
  );
  m.decoder.dispose();
  return d;
}

describe('Gemma 3 checkpoint layouts', () => {
  it('Gemma3ForCausalLM: the text config at the top level, tensors under model.', () => {
    const composite = JSON.parse(readFileSync(join(GEMMA, 'config.json'), 'utf8'));
    const config = { ...composite.text_config, architectures: ['Gemma3ForCausalLM'], dtype: 'float32' };
    const dir = variant('causal', config, (k) =>
      k.startsWith('language_model.model.') ? k.slice('language_model.'.length) : null,
    );
    expect(textBatchDiff(dir)).toBeLessThan(TOL);
  });

  it('Gemma3ForConditionalGeneration saved with the in-memory names (model.language_model.*)', () => {
    const composite = JSON.parse(readFileSync(join(GEMMA, 'config.json'), 'utf8'));
    const dir = variant('modern', composite, (k) =>
      k.startsWith('language_model.model.')
        ? `model.language_model.${k.slice('language_model.model.'.length)}`
        : `model.${k}`,
    );
    expect(textBatchDiff(dir)).toBeLessThan(TOL);
  });
});

describe('PEFT adapters on Gemma 3', () => {
  it('use model.language_model.… keys, a language-model-only target_modules, and read older paths', () => {
    const m = readHfLanguageModel(GEMMA, HF_ARCHITECTURES);
    createLora(m.decoder, { r: 2, alpha: 4, targets: ['q', 'down'] }, new Rng(9));
    for (const v of m.decoder.loraVariables())
      if (v.shape[0] === 2) v.assign(tf.randomNormal(v.shape, 0, 0.3, 'float32', 11));
    const ids = [[2, 40, 41, 42, 43]];
    const expected = logitsOf(m.decoder, { ids });
    const dir = join(tmp, 'gemma-adapter');
    savePeftAdapter(m.decoder, dir, { baseModelNameOrPath: GEMMA, r: 2, alpha: 4 });
    const config = JSON.parse(readFileSync(join(dir, 'adapter_config.json'), 'utf8'));
    expect(config.target_modules).toBe('model\\.language_model\\.layers\\.\\d+\\.(self_attn|mlp)\\.(q_proj|down_proj)');
    expect(new RegExp(`^${config.target_modules}$`).test('model.language_model.layers.2.mlp.down_proj')).toBe(true);
    expect(
      new RegExp(`^${config.target_modules}$`).test(
        'model.vision_tower.vision_model.encoder.layers.0.self_attn.q_proj',
      ),
    ).toBe(false);
    const { tensors } = decodeSafetensors(readFileSync(join(dir, 'adapter_model.safetensors')));
    expect([...tensors.keys()].every((k) => k.startsWith('base_model.model.model.language_model.layers.'))).toBe(true);
    // An adapter written by older transformers names the same modules language_model.model.…
    const legacy = new Map(
      [...tensors].map(([k, v]) => [
        k.replace('base_model.model.model.language_model.', 'base_model.model.language_model.model.'),
        v,
      ]),
    );
    writeFileSync(join(dir, 'adapter_model.safetensors'), encodeSafetensors(legacy, { format: 'pt' }));
    const again = readHfLanguageModel(GEMMA, HF_ARCHITECTURES);
    loadPeftAdapter(again.decoder, dir);
    expect(maxDiff(logitsOf(again.decoder, { ids }), expected, 256)).toBe(0);
    m.decoder.dispose();
    again.decoder.dispose();
  });
});
