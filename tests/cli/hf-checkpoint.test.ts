// Hugging Face checkpoint folders under `metrl evaluate`, `train` and `serve`, through the real binary:
// copies of the tiny fixtures (../shared/fixtures/hf) with a byte tokenizer added (tests/helpers/hf-checkpoint-copy.ts)
// are evaluated (rows written, resumable), trained with LoRA GRPO two steps on chess image episodes (rollout, reward,
// update, checkpoint; a run killed after step 1 and resumed ends with the uninterrupted run's adapter, byte for byte),
// served on 127.0.0.1, and given adapters: the trained one (`--adapter RUN/checkpoints/step-N`) and the PEFT fixture
// llama-lora (by --adapter, and by its base_model_name_or_path "../llama" when it sits next to a folder named llama).
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HF_FIXTURES, hfCheckpointCopy, hfScratchDir, removeHfCopies } from '../helpers/hf-checkpoint-copy.ts';
import { metrl, type CliResult } from './helpers.ts';
import { trainAndKill } from '../helpers/train-and-kill.ts';
import { startServe, type Served } from '../helpers/serve-process.ts';

/** The JSON rows of a jsonl file (each line must parse). */
const jsonRows = (file: string): Record<string, any>[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l));

const ok = (result: CliResult) => {
  if (result.code !== 0) throw new Error(`metrl exited ${result.code}: ${result.stderr}`);
  return result;
};

/** Greedy evaluation of a few shell items (the flags every evaluate below shares). */
const EVAL = (out: string, modality = 'text') => [
  '--domain',
  'shell',
  '--modality',
  modality,
  '--actions',
  '4',
  '--n',
  '3',
  '--max-tokens',
  '10',
  '--seed',
  '2',
  '--out',
  out,
  '--quiet',
];

async function evaluateRows(model: string[], out: string, modality = 'text'): Promise<Record<string, any>[]> {
  ok(await metrl(['evaluate', ...model, ...EVAL(out, modality)]));
  return jsonRows(join(out, `shell-${modality}.jsonl`));
}

// ---- serve -----------------------------------------------------------------------------------------------------

const servers: Served[] = [];

/** Start `metrl serve` with these model flags on a free port; resolves with its URL once it listens. */
async function startHfServe(model: string[]): Promise<Served> {
  const served = await startServe([...model, '--port', '0', '--model-id', 'hf']);
  servers.push(served);
  return served;
}

async function chat(served: Served, content: string): Promise<Record<string, any>> {
  const response = await fetch(`${served.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content }], temperature: 0, max_tokens: 8 }),
  });
  expect(response.status).toBe(200);
  return response.json();
}

afterEach(() => {
  for (const s of servers.splice(0)) if (s.child.exitCode === null) s.child.kill('SIGKILL');
});
afterAll(removeHfCopies);

// ---- train -----------------------------------------------------------------------------------------------------

let idefics3 = '';
let llama = '';

beforeAll(() => {
  idefics3 = hfCheckpointCopy('idefics3');
  llama = hfCheckpointCopy('llama');
});

// A random model never writes a valid FEN, so every chess reward is 0 and GRPO's gradient is zero: weight decay is
// what moves the LoRA weights (lora_A shrinks by lr × decay a step, lora_B stays 0), so that step 2's adapter differs
// from step 1's and resuming has to restore them. That LoRA gradients flow through an image prompt is checked
// in-process (tests/models/hf-cli-loader.test.ts).
const TRAIN = () => [
  'train',
  '--checkpoint',
  idefics3,
  '--domain',
  'chess',
  '--modality',
  'image',
  '--steps',
  '2',
  '--train-size',
  '4',
  '--test-size',
  '2',
  '--eval-every',
  '1',
  '--checkpoint-every',
  '1',
  '--max-completion-tokens',
  '8',
  '--group-size',
  '2',
  '--prompts-per-step',
  '1',
  '--temperature',
  '1',
  '--learning-rate',
  '0.05',
  '--weight-decay',
  '1',
  '--seed',
  '3',
  '--quiet',
];

/** Metrics without wall-clock fields. */
function comparable(runDir: string) {
  return jsonRows(join(runDir, 'metrics.jsonl')).map(
    ({ time, rolloutTokensPerSecond, learnerTokensPerSecond, seconds, ...rest }) => withoutStepTime(rest),
  );
}

describe('Hugging Face checkpoints through the CLI', () => {
  it('evaluates a Llama folder: rows written as JSON, and --resume reuses every one', async () => {
    const out = join(hfScratchDir('hf-eval'), 'run');
    const rows = await evaluateRows(['--checkpoint', llama], out);
    expect(rows).toHaveLength(3);
    for (const r of rows) {
      expect(r).toMatchObject({ domain: 'shell', modality: 'text', prompt: 'zero-shot', status: 'ok', error: null });
      expect(typeof r.response).toBe('string');
      // The reference wording through the byte tokenizer: hundreds of prompt tokens, at most 10 new ones.
      expect(r.usage.prompt_tokens).toBeGreaterThan(200);
      expect(r.usage.completion_tokens).toBeLessThanOrEqual(10);
    }
    expect(JSON.parse(readFileSync(join(out, 'config.json'), 'utf8')).model).toEqual({
      kind: 'checkpoint',
      path: llama,
    });
    const before = jsonRows(join(out, 'shell-text.jsonl'));
    const again = ok(await metrl(['evaluate', '--checkpoint', llama, ...EVAL(out), '--resume']));
    expect(again.stdout + again.stderr).toMatch(/\(0 asked now, 3 reused\)/);
    expect(jsonRows(join(out, 'shell-text.jsonl'))).toEqual(before);
  }, 120_000);

  it('evaluates an Idefics3 folder on image episodes', async () => {
    const out = join(hfScratchDir('hf-eval-image'), 'run');
    const rows = await evaluateRows(['--checkpoint', idefics3], out, 'image');
    expect(rows).toHaveLength(3);
    for (const r of rows) expect(r).toMatchObject({ modality: 'image', image_ratio: 1, status: 'ok', error: null });
    // The same episodes in text: the image prompts differ from them (each of the 4 moves is an image, shown as the
    // fixture's 7-token block <fake_token_around_image><global-img><image>×4<fake_token_around_image>).
    const text = await evaluateRows(['--checkpoint', idefics3], join(hfScratchDir('hf-eval-image'), 'run'), 'text');
    expect(text.map((r) => r.episode_id)).toEqual(rows.map((r) => r.episode_id));
    expect(rows.map((r) => r.usage.prompt_tokens)).not.toEqual(text.map((r) => r.usage.prompt_tokens));
  }, 120_000);

  it('puts the PEFT fixture llama-lora on a Llama copy, by --adapter and by its base_model_name_or_path', async () => {
    const root = hfScratchDir('hf-lora');
    const base = await evaluateRows(['--checkpoint', llama], join(root, 'base'));
    const byFlag = await evaluateRows(
      ['--checkpoint', llama, '--adapter', join(HF_FIXTURES, 'llama-lora')],
      join(root, 'flag'),
    );
    // The adapter copy sits next to a folder named llama: "../llama" in its adapter_config.json finds it.
    const pair = hfScratchDir('hf-pair');
    hfCheckpointCopy('llama', { dir: join(pair, 'llama') });
    const adapter = hfCheckpointCopy('llama-lora', { dir: join(pair, 'llama-lora') });
    const byName = await evaluateRows(['--checkpoint', adapter], join(root, 'name'));
    expect(JSON.parse(readFileSync(join(root, 'name', 'config.json'), 'utf8')).model).toMatchObject({
      kind: 'checkpoint',
      path: adapter,
    });
    // The adapter changes the greedy answers; both ways of naming it give the same ones.
    expect(byFlag.map((r) => r.response)).not.toEqual(base.map((r) => r.response));
    expect(byName.map((r) => r.response)).toEqual(byFlag.map((r) => r.response));
  }, 180_000);

  it('serves a Llama folder on 127.0.0.1, with and without the llama-lora adapter', async () => {
    const plain = await startHfServe(['--checkpoint', llama]);
    expect(plain.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const a = await chat(plain, 'Where is the ball?');
    expect(a.choices).toHaveLength(1);
    expect(typeof a.choices[0].message.content).toBe('string');
    expect(a.usage.completion_tokens).toBeGreaterThan(0);
    expect(a.usage.completion_tokens).toBeLessThanOrEqual(8);
    const adapted = await startHfServe(['--checkpoint', llama, '--adapter', join(HF_FIXTURES, 'llama-lora')]);
    expect(adapted.stderr()).toMatch(/adapter .*llama-lora/);
    const b = await chat(adapted, 'Where is the ball?');
    expect(b.usage.prompt_tokens).toBe(a.usage.prompt_tokens);
    expect(b.choices[0].message.content).not.toBe(a.choices[0].message.content);
  }, 120_000);

  it('trains an Idefics3 folder two steps on chess images; a killed run resumes to the same adapter, which evaluate and serve load', async () => {
    const root = hfScratchDir('hf-train');
    const whole = join(root, 'whole');
    const cut = join(root, 'cut');
    const full = await metrl([...TRAIN(), '--out', whole]);
    expect(full.stderr).toBe('');
    expect(full.code).toBe(0);
    const metrics = jsonRows(join(whole, 'metrics.jsonl'));
    const steps = metrics.filter((m) => m.type === 'train');
    expect(steps.map((m) => m.step)).toEqual([1, 2]);
    // Rollout, reward and update happened: sampled completions, scored, an optimiser step that moved the LoRA weights.
    expect(steps.every((m) => m.updated && m.completionLength > 0 && m.groups === 1 && Number.isFinite(m.loss))).toBe(
      true,
    );
    expect(jsonRows(join(whole, 'samples.jsonl')).filter((r) => r.step === 2)).toHaveLength(2);
    expect(metrics.filter((m) => m.type === 'eval').map((m) => `${m.step}:${m.modality}`)).toEqual([
      '0:image',
      '0:text',
      '1:image',
      '1:text',
      '2:image',
      '2:text',
    ]);
    const step2 = join(whole, 'checkpoints', 'step-2');
    const config = JSON.parse(readFileSync(join(step2, 'adapter_config.json'), 'utf8'));
    expect(config).toMatchObject({ peft_type: 'LORA', r: 16, lora_alpha: 32, base_model_name_or_path: idefics3 });
    expect(readFileSync(join(step2, 'adapter_model.safetensors'))).not.toEqual(
      readFileSync(join(whole, 'checkpoints', 'step-1', 'adapter_model.safetensors')),
    );

    await trainAndKill([...TRAIN(), '--out', cut], join(cut, 'checkpoints', 'latest'), 1);
    expect(existsSync(join(cut, 'checkpoints', 'step-2'))).toBe(false);
    const resumed = await metrl(['train', '--resume', '--out', cut, '--quiet']);
    expect(resumed.stderr).toBe('');
    expect(resumed.code).toBe(0);
    expect(comparable(cut)).toEqual(comparable(whole));
    for (const f of ['adapter_model.safetensors', 'adapter_config.json', 'optimizer.safetensors']) {
      expect(readFileSync(join(cut, 'checkpoints', 'step-2', f)), f).toEqual(readFileSync(join(step2, f)));
    }

    // The trained adapter on its base: evaluate records it and answers with it; serve loads it. (Its lora_B is 0, so
    // its answers are the base's: that an adapter changes answers is the llama-lora test above.)
    const out = join(root, 'eval');
    const rows = await evaluateRows(['--checkpoint', idefics3, '--adapter', step2], out, 'image');
    expect(rows.every((r) => r.status === 'ok')).toBe(true);
    expect(JSON.parse(readFileSync(join(out, 'config.json'), 'utf8')).model).toEqual({
      kind: 'checkpoint',
      path: step2,
      base: idefics3,
    });
    const served = await startHfServe(['--checkpoint', idefics3, '--adapter', step2]);
    expect(served.stderr()).toContain(`adapter ${step2}`);
    expect((await chat(served, 'Which piece moved?')).choices).toHaveLength(1);
  }, 300_000);
});

/** TRL's step_time is wall-clock seconds too. */
function withoutStepTime<T extends { trl?: Record<string, unknown> }>(row: T): T {
  if (!row.trl) return row;
  const { step_time: _, ...trl } = row.trl;
  return { ...row, trl };
}
