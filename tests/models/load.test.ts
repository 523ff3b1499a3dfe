// What `--checkpoint DIR` means: a base checkpoint, a PEFT adapter on the base it names (or --base), or a training
// run folder (its latest adapter on the base the run started from). Written with models/ code; the loaded adapter must
// change the model's output exactly as the saved one does.
import { beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { Rng } from '../../core/rng.ts';
import { SHARED_DIR } from '../../core/paths.ts';
import { initBackend } from '../../models/backend.ts';
import { BuiltinPolicy } from '../../models/builtin/policy.ts';
import { saveBaseCheckpoint } from '../../models/builtin/base-checkpoint.ts';
import { saveAdapter } from '../../models/builtin/peft-adapter.ts';
import { loadPolicy, resolveCheckpoint } from '../../models/load.ts';

const arch = { dModel: 32, nLayers: 1, nHeads: 2, dMlp: 64, maxContext: 128, imageSize: 32, patchSize: 16 };
let root = '';
let base = '';
let adapter = '';
let run = '';
let expected: number[] = [];

const prompt = (p: BuiltinPolicy) => p.encode([{ type: 'text', text: 'shell\n1\n1 swap 2\nFINAL ANSWER: ' }]);
const lastLogits = (p: BuiltinPolicy) =>
  tf.tidy(() =>
    Array.from((p.sequenceLogits(prompt(p)).slice([prompt(p).tokens.length - 1, 0], [1, -1]) as tf.Tensor).dataSync()),
  );

beforeAll(async () => {
  await initBackend(undefined, null);
  root = mkdtempSync(join(tmpdir(), 'metrl-load-'));
  base = join(root, 'base');
  const policy = BuiltinPolicy.create({ architecture: arch, seed: 3 });
  saveBaseCheckpoint(policy, base);
  // An adapter with non-zero B, so that it changes the output.
  const lora = policy.attachLora({ r: 4, alpha: 8 }, new Rng(1));
  for (const v of policy.trainableVariables('lora')) v.assign(tf.randomNormal(v.shape, 0, 0.3, 'float32', 7));
  expect(lora).toBeTruthy();
  expected = lastLogits(policy);
  adapter = join(root, 'adapter');
  saveAdapter(policy, adapter, { baseModel: base });
  run = join(root, 'run');
  mkdirSync(join(run, 'checkpoints'), { recursive: true });
  saveAdapter(policy, join(run, 'checkpoints', 'step-3'));
  writeFileSync(join(run, 'checkpoints', 'latest'), 'step-3\n');
  writeFileSync(join(run, 'config.json'), JSON.stringify({ domain: 'shell', checkpoint: base }));
  policy.dispose();
});

describe('--checkpoint resolution', () => {
  it('recognises base checkpoints, adapters and training runs', () => {
    expect(resolveCheckpoint(base)).toEqual({ base, adapter: null });
    expect(resolveCheckpoint(adapter)).toEqual({ base, adapter });
    expect(resolveCheckpoint(run)).toEqual({ base, adapter: join(run, 'checkpoints', 'step-3') });
    expect(resolveCheckpoint(join(run, 'checkpoints', 'step-3'), base).base).toBe(base);
  });

  it('takes a Hugging Face folder for a base checkpoint, whose architecture the registry names', () => {
    const llama = join(SHARED_DIR, 'fixtures', 'hf', 'llama');
    expect(resolveCheckpoint(llama)).toEqual({ base: llama, adapter: null });
  });

  it('names what is wrong', () => {
    expect(() => resolveCheckpoint(join(root, 'nope'))).toThrow(/no such folder/);
    expect(() => resolveCheckpoint(root)).toThrow(/neither a base checkpoint, a LoRA adapter nor a training run/);
    expect(() => resolveCheckpoint(base, base)).toThrow(/--base applies to adapters/);
    // An adapter whose named base is not here is refused, naming the base and --base (not put on the shipped base).
    const elsewhere = join(root, 'adapter-elsewhere');
    mkdirSync(elsewhere);
    writeFileSync(
      join(elsewhere, 'adapter_config.json'),
      JSON.stringify({
        peft_type: 'LORA',
        r: 4,
        lora_alpha: 8,
        target_modules: ['q_proj'],
        base_model_name_or_path: 'HuggingFaceTB/SmolLM2-135M',
      }),
    );
    expect(() => resolveCheckpoint(elsewhere)).toThrow(
      /the adapter's base model HuggingFaceTB\/SmolLM2-135M \(base_model_name_or_path in adapter_config\.json\) is not a folder here; name the base model folder with --base DIR/,
    );
    expect(resolveCheckpoint(elsewhere, base)).toEqual({ base, adapter: elsewhere });
  });

  it('loads the adapter onto its base: the same logits as the policy that saved it', async () => {
    for (const dir of [adapter, run]) {
      const loaded = await loadPolicy(dir, { log: () => {} });
      expect(loaded.policy).toBeInstanceOf(BuiltinPolicy);
      const got = lastLogits(loaded.policy as BuiltinPolicy);
      got.forEach((v, i) => expect(v).toBeCloseTo(expected[i], 4));
      loaded.policy.dispose();
    }
    const plain = await loadPolicy(base, { log: () => {} });
    expect(lastLogits(plain.policy as BuiltinPolicy).some((v, i) => Math.abs(v - expected[i]) > 1e-3)).toBe(true);
    plain.policy.dispose();
  });
});
