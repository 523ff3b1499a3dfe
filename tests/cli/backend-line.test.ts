// The "tfjs backend: …" line is printed only once the model has loaded: a checkpoint error is then the only line on
// stderr (train, evaluate, serve), and `--quiet` silences the line. An evaluation's config.json records what was
// loaded: base, adapter and its step, backend, inference engine.
import { describe, expect, it } from 'vitest';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectUserError, metrl, PROJECT, scratchDir } from './helpers.ts';
import { DEFAULT_ENGINE } from '../../models/engine.ts';

/** A base checkpoint whose config.json and tokenizer are real but whose weights are not safetensors. */
function brokenBase(): string {
  const dir = join(scratchDir('broken-base'), 'base');
  mkdirSync(dir);
  copyFileSync(join(PROJECT, 'checkpoints', 'base', 'config.json'), join(dir, 'config.json'));
  copyFileSync(join(PROJECT, 'checkpoints', 'base', 'tokenizer.json'), join(dir, 'tokenizer.json'));
  writeFileSync(join(dir, 'model.safetensors'), 'not safetensors at all');
  return dir;
}

describe.concurrent('the backend line', () => {
  it('--backend webgpu: one line saying why not and naming --device webgpu, exit 2, nothing written', async () => {
    const out = join(scratchDir('backend-webgpu'), 'base');
    const result = await metrl(['pretrain', '--out', out, '--backend', 'webgpu', '--steps', '1']);
    expectUserError(
      result,
      /^metrl: error: --backend webgpu: tfjs's WebGPU backend cannot run in Node \(.+OffscreenCanvas.+\); for a GPU use ONNX Runtime's WebGPU provider: --device webgpu/,
    );
    expect(result.stdout).toBe('');
    expect(existsSync(out)).toBe(false);
  });

  it('train: a broken checkpoint is the only line', async () => {
    const out = join(scratchDir('train-broken'), 'run');
    expectUserError(
      await metrl([
        'train',
        '--domain',
        'shell',
        '--modality',
        'text',
        '--steps',
        '1',
        '--checkpoint',
        brokenBase(),
        '--out',
        out,
      ]),
      /model\.safetensors/,
    );
  });

  it('evaluate: a broken checkpoint is the only line', async () => {
    const out = join(scratchDir('eval-broken'), 'run');
    expectUserError(
      await metrl(['evaluate', '--checkpoint', brokenBase(), '--domain', 'shell', '--n', '1', '--out', out]),
      /model\.safetensors/,
    );
  });

  it('serve: a broken checkpoint is the only line', async () => {
    expectUserError(await metrl(['serve', '--checkpoint', brokenBase(), '--port', '0']), /model\.safetensors/);
  });

  it('serve: an address it cannot bind is the only line', async () => {
    expectUserError(
      await metrl([
        'serve',
        '--checkpoint',
        join(PROJECT, 'checkpoints', 'base'),
        '--host',
        '999.1.1.1',
        '--port',
        '0',
      ]),
      /--host 999\.1\.1\.1: not an address of this machine/,
    );
  });

  it('evaluate --quiet prints nothing; config.json records base, adapter, step, backend and engine', async () => {
    const out = join(scratchDir('eval-quiet'), 'run');
    const result = await metrl([
      'evaluate',
      '--checkpoint',
      join(PROJECT, 'checkpoints', 'base'),
      '--domain',
      'shell',
      '--n',
      '1',
      '--actions',
      '3',
      '--max-tokens',
      '4',
      '--quiet',
      '--out',
      out,
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8')) as { loaded?: Record<string, unknown> };
    expect(config.loaded).toEqual({
      base: join(PROJECT, 'checkpoints', 'base'),
      adapter: null,
      adapter_step: null,
      backend: expect.stringMatching(/^(node-gpu|node|wasm|cpu)$/),
      engine: DEFAULT_ENGINE,
      ...(DEFAULT_ENGINE === 'ort' ? { ort: { device: 'cpu', threads: null } } : {}),
    });
  });
});
