// `npm run bench -- qwen3-vl-2b`: whether a Qwen3-VL-2B-shaped checkpoint trains on images on this machine, and what it
// costs. The bench writes a random-weight Qwen3VLForConditionalGeneration of Qwen3-VL-2B-Instruct's shape (text:
// hidden 2048, 28 layers, 16 heads / 8 KV heads of 128, intermediate 6144, vocabulary 151,936 tied, interleaved
// multimodal RoPE [24, 20, 20]; vision: 24 blocks of 1024, patch 16, DeepStack after blocks 5, 11 and 17), the real
// Qwen3 tokenizer (../shared/fixtures/hf/tokenizer-qwen3) with a Qwen-VL chat template and the Hub's processor
// settings, then runs one GRPO step of one chess prompt with 5 image actions and G = 8 completions of at most 64 tokens
// through the real `metrl train --engine ort` in a child process, and reports the step's phases and the child's peak
// memory.
// The checkpoint goes to METRL_QWEN3VL_DIR when set (kept and reused), else to a temporary folder removed afterwards.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchRow } from './table.ts';
import { Rng } from '../core/rng.ts';
import { writeJsonAtomic } from '../core/files.ts';
import { SHARED_DIR } from '../core/paths.ts';
import { parseHfConfig } from '../models/hf/config.ts';
import { expectedDecoderTensors } from '../models/hf/load-decoder.ts';
import { writeHfCheckpoint, type HostTensor } from '../models/hf/write-checkpoint.ts';
import { QWEN3_VL_LAYOUTS } from '../models/qwen3_vl/language-model.ts';
import { HF_ARCHITECTURES } from '../models/registry.ts';
import { trainChild } from './gemma-1b.bench.ts';

/** Qwen3-VL-2B-Instruct's config.json: the fields that shape the model (transformers 4.57's nested layout). */
const QWEN3_VL_2B_CONFIG = {
  architectures: ['Qwen3VLForConditionalGeneration'],
  model_type: 'qwen3_vl',
  dtype: 'float32',
  image_token_id: 151655,
  video_token_id: 151656,
  vision_start_token_id: 151652,
  vision_end_token_id: 151653,
  tie_word_embeddings: true,
  text_config: {
    model_type: 'qwen3_vl_text',
    attention_bias: false,
    head_dim: 128,
    hidden_act: 'silu',
    hidden_size: 2048,
    initializer_range: 0.02,
    intermediate_size: 6144,
    max_position_embeddings: 262144,
    num_attention_heads: 16,
    num_hidden_layers: 28,
    num_key_value_heads: 8,
    rms_norm_eps: 1e-6,
    rope_scaling: { mrope_interleaved: true, mrope_section: [24, 20, 20], rope_type: 'default' },
    rope_theta: 5000000,
    tie_word_embeddings: true,
    vocab_size: 151936,
    bos_token_id: 151643,
    eos_token_id: 151645,
  },
  vision_config: {
    model_type: 'qwen3_vl',
    deepstack_visual_indexes: [5, 11, 17],
    depth: 24,
    hidden_act: 'gelu_pytorch_tanh',
    hidden_size: 1024,
    in_channels: 3,
    intermediate_size: 4096,
    num_heads: 16,
    num_position_embeddings: 2304,
    out_hidden_size: 2048,
    patch_size: 16,
    spatial_merge_size: 2,
    temporal_patch_size: 2,
  },
};

/** A Qwen-VL turn format: images as <|vision_start|><|image_pad|><|vision_end|>, which the processor expands. */
const CHAT_TEMPLATE =
  "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' }}{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for p in m['content'] %}{% if p['type'] == 'image' %}{{ '<|vision_start|><|image_pad|><|vision_end|>' }}{% else %}{{ p['text'] }}{% endif %}{% endfor %}{% endif %}{{ '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

const progress = (what: string) =>
  process.stderr.write(`bench qwen3-vl-2b: ${what} (${new Date().toISOString().slice(11, 19)})\n`);

/** Every tensor of the vision tower under model.visual. (the names models/qwen3_vl/vision-weights.ts reads). */
function visionShapes(v: typeof QWEN3_VL_2B_CONFIG.vision_config): Map<string, number[]> {
  const { hidden_size: D, intermediate_size: I, out_hidden_size: out, spatial_merge_size: m } = v;
  const merged = D * m * m;
  const p = 'model.visual.';
  const shapes = new Map<string, number[]>();
  const linear = (name: string, inDim: number, outDim: number) => {
    shapes.set(`${p}${name}.weight`, [outDim, inDim]);
    shapes.set(`${p}${name}.bias`, [outDim]);
  };
  const norm = (name: string, n: number) => {
    shapes.set(`${p}${name}.weight`, [n]);
    shapes.set(`${p}${name}.bias`, [n]);
  };
  shapes.set(`${p}patch_embed.proj.weight`, [D, v.in_channels, v.temporal_patch_size, v.patch_size, v.patch_size]);
  shapes.set(`${p}patch_embed.proj.bias`, [D]);
  shapes.set(`${p}pos_embed.weight`, [v.num_position_embeddings, D]);
  for (let i = 0; i < v.depth; i++) {
    norm(`blocks.${i}.norm1`, D);
    linear(`blocks.${i}.attn.qkv`, D, 3 * D);
    linear(`blocks.${i}.attn.proj`, D, D);
    norm(`blocks.${i}.norm2`, D);
    linear(`blocks.${i}.mlp.linear_fc1`, D, I);
    linear(`blocks.${i}.mlp.linear_fc2`, I, D);
  }
  const merger = (q: string, normWidth: number) => {
    norm(`${q}norm`, normWidth);
    linear(`${q}linear_fc1`, merged, merged);
    linear(`${q}linear_fc2`, merged, out);
  };
  merger('merger.', D);
  v.deepstack_visual_indexes.forEach((_, j) => merger(`deepstack_merger_list.${j}.`, merged));
  return shapes;
}

/**
 * Random weights of the given shapes at a few nanoseconds a value: matrices (and the patch kernel) normal(0, σ), each
 * entry one of 2^16 normal draws picked by a xorshift stream (speed does not depend on which normals they are); norm
 * weights 1, biases 0, as a freshly initialised model has them.
 */
function tabledTensors(shapes: Map<string, number[]>, sigma: number, seed: string): Map<string, HostTensor> {
  const rng = new Rng(0, seed);
  const table = Float32Array.from({ length: 1 << 16 }, () => {
    const u = 1 - rng.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng.next()) * sigma;
  });
  let x = 0x9e3779b9;
  const out = new Map<string, HostTensor>();
  for (const [name, shape] of shapes) {
    const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
    if (shape.length >= 2) {
      for (let i = 0; i < data.length; i++) {
        x ^= x << 13;
        x ^= x >>> 17;
        x ^= x << 5;
        data[i] = table[x & 0xffff];
      }
    } else if (!name.endsWith('.bias')) data.fill(1);
    out.set(name, { shape, data });
  }
  return out;
}

/** Write the checkpoint folder (config, weights, tokenizer, processor); returns its parameter count. */
export function writeQwen3VlFolder(dir: string, config: typeof QWEN3_VL_2B_CONFIG = QWEN3_VL_2B_CONFIG): number {
  const parsed = parseHfConfig(config, HF_ARCHITECTURES);
  const shapes = new Map([
    ...expectedDecoderTensors(parsed.text, QWEN3_VL_LAYOUTS[0]),
    ...visionShapes(config.vision_config),
  ]);
  const tensors = tabledTensors(shapes, config.text_config.initializer_range, 'bench-qwen3-vl');
  let parameters = 0;
  for (const t of tensors.values()) parameters += t.data.length;
  mkdirSync(dir, { recursive: true });
  writeHfCheckpoint(dir, config, tensors);
  const tokenizer = join(SHARED_DIR, 'fixtures', 'hf', 'tokenizer-qwen3');
  copyFileSync(join(tokenizer, 'tokenizer.json'), join(dir, 'tokenizer.json'));
  const tc = JSON.parse(readFileSync(join(tokenizer, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
  writeJsonAtomic(join(dir, 'tokenizer_config.json'), { ...tc, chat_template: CHAT_TEMPLATE });
  copyFileSync(
    join(SHARED_DIR, 'fixtures', 'hf', 'qwen3_vl', 'preprocess', 'preprocessor_config.hub.json'),
    join(dir, 'preprocessor_config.json'),
  );
  return parameters;
}

export async function run(): Promise<BenchRow[]> {
  const kept = process.env.METRL_QWEN3VL_DIR;
  const root = mkdtempSync(join(tmpdir(), 'metrl-qwen3vl-'));
  const dir = kept ?? join(root, 'qwen3-vl-2b-shape');
  try {
    if (!existsSync(join(dir, 'model.safetensors'))) {
      progress('writing the checkpoint (about 8.5 GB of float32)');
      writeQwen3VlFolder(dir);
    }
    // A reward with a spread inside each group (a random model never answers right), so the update has work to do.
    const reward = join(root, 'last-char.ts');
    writeFileSync(
      reward,
      'export default (completion: string): number => (completion.length === 0 ? 0 : completion.charCodeAt(completion.length - 1) % 3) / 2;\n',
    );
    const out = join(root, 'run');
    progress('one GRPO step: one chess prompt of 5 image actions, G = 8, metrl train --engine ort');
    const result = await trainChild([
      'train',
      '--checkpoint',
      dir,
      '--engine',
      'ort',
      '--domain',
      'chess',
      '--modality',
      'image',
      '--actions',
      '5',
      '--prompts-per-step',
      '1',
      '--group-size',
      '8',
      // A random model writes every completion to the cap, and the step's cost grows with it: 64 tokens, room for a
      // chess answer's FEN, not the task's fitted default (1.25 × a 5-move trace).
      '--max-completion-tokens',
      '64',
      '--steps',
      '1',
      '--test-size',
      '1',
      '--eval-every',
      '1',
      '--reward',
      reward,
      '--quiet',
      '--out',
      out,
    ]);
    if (result.code !== 0)
      throw new Error(`metrl train exited ${result.code}: ${result.stderr.trim().split('\n').slice(-3).join(' | ')}`);
    const rows = readFileSync(join(out, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const step = rows.find((r) => r.type === 'train') as
      | { time: Record<string, number>; completionLength: number; rolloutTokensPerSecond: number }
      | undefined;
    if (!step) throw new Error('the run logged no training step');
    const load = loadavg()[0].toFixed(1);
    const group = 'qwen3-vl 2b shape, chess image (ort, cpu)';
    const note = `1 prompt × 8, 5 images, completions ${step.completionLength.toFixed(0)} tokens on average; load ${load}`;
    return [
      { group, name: 'peak RSS of metrl train', value: result.peak / 2 ** 30, unit: 'GiB', note: 'float32 weights' },
      {
        group,
        name: 'peak PSS of metrl train',
        value: result.peakPss / 2 ** 30,
        unit: 'GiB',
        note: 'sampled every 0.2 s',
      },
      { group, name: 'step: rollout', value: step.time.rollout, unit: 's', note },
      { group, name: 'step: reference and old log-probs', value: step.time.logprobs, unit: 's', note },
      { group, name: 'step: update', value: step.time.update, unit: 's', note },
      { group, name: 'step: total', value: step.time.total, unit: 's', note },
      { group, name: 'rollout tokens/s', value: step.rolloutTokensPerSecond, unit: 'tok/s', note },
      {
        group,
        name: 'whole command (load, 2 evaluations, step)',
        value: result.seconds,
        unit: 's',
        note: `load ${load}`,
      },
    ];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
