// Broken Hugging Face checkpoint folders through the real CLI (bad input): each is one line naming the
// file and the tensor or key, exit status 2, and no run folder left behind, for `evaluate`, `train` and `serve`. The
// loaders' own unit tests check the messages in detail; this checks that the CLI path reaches them, prints nothing
// else first (the backend line is held back until a model has loaded) and fails before anything is written.
import { afterAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeSafetensors, encodeSafetensors } from '../../models/safetensors.ts';
import { hfCheckpointCopy, hfScratchDir, removeHfCopies, shardCheckpoint } from '../helpers/hf-checkpoint-copy.ts';
import { expectUserError, metrl } from './helpers.ts';

const editJson = (path: string, edit: (json: Record<string, any>) => void) => {
  const json = JSON.parse(readFileSync(path, 'utf8'));
  edit(json);
  writeFileSync(path, JSON.stringify(json, null, 2));
};
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

interface Case {
  name: string;
  /** The flags naming the model (--checkpoint, maybe --adapter) and the pattern its one error line must match. */
  make(): { flags: string[]; error: RegExp };
  /** Whether `train` takes these flags too (train has no --adapter). */
  train: boolean;
}

const CASES: Case[] = [
  {
    name: 'a missing shard',
    train: true,
    make() {
      const dir = hfCheckpointCopy('llama');
      const { shards, index } = shardCheckpoint(dir);
      rmSync(shards[1]);
      return {
        flags: ['--checkpoint', dir],
        error: new RegExp(
          `${escapeRegExp(index)}: names model-00002-of-00002\\.safetensors \\(tensor [\\w.]+\\), which is missing`,
        ),
      };
    },
  },
  {
    name: 'a partial (truncated) shard',
    train: true,
    make() {
      const dir = hfCheckpointCopy('llama');
      const { shards } = shardCheckpoint(dir);
      const bytes = readFileSync(shards[1]);
      writeFileSync(shards[1], bytes.subarray(0, bytes.length - 100));
      return {
        flags: ['--checkpoint', dir],
        error: new RegExp(`${escapeRegExp(shards[1])}: tensor [\\w.]+ has data_offsets .* beyond the file size`),
      };
    },
  },
  {
    name: 'an index naming a file that is not there',
    train: true,
    make() {
      const dir = hfCheckpointCopy('llama');
      const { index } = shardCheckpoint(dir);
      editJson(index, (j) => (j.weight_map['lm_head.weight'] = 'model-00003-of-00003.safetensors'));
      return {
        flags: ['--checkpoint', dir],
        error: new RegExp(
          `${escapeRegExp(index)}: names model-00003-of-00003\\.safetensors \\(tensor lm_head\\.weight\\)`,
        ),
      };
    },
  },
  {
    name: 'a tensor whose shape disagrees with config.json',
    train: true,
    make() {
      const dir = hfCheckpointCopy('llama');
      editJson(join(dir, 'config.json'), (c) => (c.intermediate_size = 96));
      return {
        flags: ['--checkpoint', dir],
        error: new RegExp(
          `${escapeRegExp(join(dir, 'model.safetensors'))}: tensor model\\.layers\\.0\\.mlp\\.\\w+_proj\\.weight has shape \\[.*\\], .*config\\.json implies`,
        ),
      };
    },
  },
  {
    name: 'a config missing a required key',
    train: true,
    make() {
      const dir = hfCheckpointCopy('llama');
      editJson(join(dir, 'config.json'), (c) => delete c.hidden_size);
      return {
        flags: ['--checkpoint', dir],
        error: new RegExp(`${escapeRegExp(join(dir, 'config.json'))}: missing key 'hidden_size'`),
      };
    },
  },
  {
    name: 'a tokenizer.json that does not parse',
    train: true,
    make() {
      const dir = hfCheckpointCopy('llama');
      writeFileSync(join(dir, 'tokenizer.json'), '{"version": "1.0", "model": ');
      return {
        flags: ['--checkpoint', dir],
        error: new RegExp(`${escapeRegExp(join(dir, 'tokenizer.json'))}: not valid JSON`),
      };
    },
  },
  {
    name: 'a chat template that fails to render',
    train: true,
    make() {
      const dir = hfCheckpointCopy('llama', {
        tokenizer: { chatTemplate: "{{ raise_exception('this template renders nothing') }}" },
      });
      return {
        flags: ['--checkpoint', dir],
        error: new RegExp(
          `${escapeRegExp(join(dir, 'tokenizer_config.json'))}: chat template failed to render: this template renders nothing`,
        ),
      };
    },
  },
  {
    name: 'a chat template that loops 1e8 times',
    train: true,
    make() {
      const dir = hfCheckpointCopy('llama', {
        tokenizer: { chatTemplate: '{% for i in range(100000000) %}{{ i }}{% endfor %}' },
      });
      return {
        flags: ['--checkpoint', dir],
        error: new RegExp(
          `${escapeRegExp(join(dir, 'tokenizer_config.json'))}: chat template stopped: range\\(\\) of 100000000 items`,
        ),
      };
    },
  },
  {
    name: 'a chat template that renders an empty prompt',
    train: true,
    make() {
      const dir = hfCheckpointCopy('llama', { tokenizer: { chatTemplate: '{% for m in messages %}{% endfor %}' } });
      return {
        flags: ['--checkpoint', dir],
        error: new RegExp(
          `${escapeRegExp(join(dir, 'tokenizer_config.json'))}: the chat template renders an empty prompt`,
        ),
      };
    },
  },
  {
    name: 'a chat template that does not parse',
    train: true,
    make() {
      const dir = hfCheckpointCopy('idefics3', {
        tokenizer: { chatTemplate: '{% for m in messages %}{{ m.content }' },
      });
      return {
        flags: ['--checkpoint', dir],
        error: new RegExp(`${escapeRegExp(join(dir, 'tokenizer_config.json'))}: chat template does not parse`),
      };
    },
  },
  {
    name: 'an unsupported architecture',
    train: true,
    make() {
      const dir = hfCheckpointCopy('llama');
      editJson(join(dir, 'config.json'), (c) => {
        c.model_type = 'mistral';
        c.architectures = ['MistralForCausalLM'];
      });
      return {
        flags: ['--checkpoint', dir],
        error:
          /unsupported architecture mistral \(supported: .*llama, qwen2, qwen3, gemma3_text, gemma3, idefics3, qwen2_5_vl, qwen3_vl\)$/,
      };
    },
  },
  {
    name: 'an adapter targeting a module the base lacks',
    train: false,
    make() {
      const base = hfCheckpointCopy('llama');
      const adapter = hfCheckpointCopy('llama-lora');
      const weights = join(adapter, 'adapter_model.safetensors');
      const file = decodeSafetensors(readFileSync(weights), weights);
      const [name, tensor] = [...file.tensors].find(([n]) => n.includes('layers.1.self_attn.q_proj.lora_A'))!;
      file.tensors.delete(name);
      file.tensors.set(name.replace('layers.1.', 'layers.7.'), tensor);
      writeFileSync(weights, encodeSafetensors(file.tensors, file.metadata));
      return {
        flags: ['--checkpoint', base, '--adapter', adapter],
        error: new RegExp(
          `${escapeRegExp(weights)}: tensor base_model\\.model\\.model\\.layers\\.7\\.self_attn\\.q_proj\\.lora_A\\.weight targets module model\\.layers\\.7\\.self_attn\\.q_proj, which .* does not have`,
        ),
      };
    },
  },
  {
    name: 'an adapter whose rank disagrees with its config',
    train: false,
    make() {
      const base = hfCheckpointCopy('llama');
      const adapter = hfCheckpointCopy('llama-lora');
      editJson(join(adapter, 'adapter_config.json'), (c) => (c.r = 8));
      return {
        flags: ['--checkpoint', base, '--adapter', adapter],
        error: new RegExp(
          `${escapeRegExp(join(adapter, 'adapter_model.safetensors'))}: tensor [\\w.]+lora_[AB]\\.weight has shape \\[.*\\], .*r = 8 in adapter_config\\.json implies`,
        ),
      };
    },
  },
  {
    name: 'an adapter trained on a base of another shape',
    train: false,
    make() {
      const base = hfCheckpointCopy('qwen2');
      const adapter = hfCheckpointCopy('llama-lora');
      return {
        flags: ['--checkpoint', base, '--adapter', adapter],
        error: new RegExp(
          `${escapeRegExp(join(adapter, 'adapter_model.safetensors'))}: tensor [\\w.]+lora_[AB]\\.weight has shape \\[.*\\], the base model .* implies`,
        ),
      };
    },
  },
];

afterAll(removeHfCopies);

describe('broken Hugging Face checkpoints through the CLI', () => {
  for (const c of CASES) {
    it(`${c.name}: one line naming the file, exit 2, nothing written`, async () => {
      const { flags, error } = c.make();
      const root = hfScratchDir('hf-bad');
      const evalOut = join(root, 'eval');
      const trainOut = join(root, 'train');
      // The three commands run side by side (each is a process that fails in its first seconds).
      const [evaluated, trained, served] = await Promise.all([
        metrl([
          'evaluate',
          ...flags,
          '--domain',
          'shell',
          '--modality',
          'text',
          '--n',
          '2',
          '--out',
          evalOut,
          '--quiet',
        ]),
        c.train
          ? metrl([
              'train',
              ...flags,
              '--domain',
              'shell',
              '--modality',
              'text',
              '--steps',
              '1',
              '--out',
              trainOut,
              '--quiet',
            ])
          : null,
        // serve fails before it binds a port: it exits instead of printing its URL.
        metrl(['serve', ...flags, '--port', '0']),
      ]);
      expectUserError(evaluated, error);
      if (trained) expectUserError(trained, error);
      expectUserError(served, error);
      expect(existsSync(evalOut)).toBe(false);
      expect(existsSync(trainOut)).toBe(false);
    }, 60_000);
  }
});
