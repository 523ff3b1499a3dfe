// Checkpoint tensors: sharded folders load tensor by tensor (same logits as the single file), F16/BF16 upcast, and
// every broken folder (missing or partial shard, an index naming a missing file, a shape config.json contradicts, a
// header that is not a JSON object) is one UserError naming the file and the tensor or key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initBackend } from '../../models/backend.ts';
import { readHfLanguageModel } from '../../models/hf/load-decoder.ts';
import { CheckpointTensors } from '../../models/hf/weights.ts';
import { decodeSafetensors, encodeSafetensors, type NamedTensor } from '../../models/safetensors.ts';
import { UserError } from '../../core/errors.ts';
import { FIXTURES, TOL, logitsOf, maxDiff, readReference } from './hf-fixture.ts';
import { HF_ARCHITECTURES } from '../../models/registry.ts';

let tmp: string;
const LLAMA = join(FIXTURES, 'llama');

/** A copy of the llama fixture's config with its weights split into two shards + index. */
function shardedLlama(name: string): string {
  const dir = join(tmp, name);
  mkdirSync(dir);
  cpSync(join(LLAMA, 'config.json'), join(dir, 'config.json'));
  const { tensors } = decodeSafetensors(readFileSync(join(LLAMA, 'model.safetensors')));
  const names = [...tensors.keys()].sort();
  const shards = [names.slice(0, 10), names.slice(10)];
  const weightMap: Record<string, string> = {};
  shards.forEach((part, k) => {
    const file = `model-0000${k + 1}-of-00002.safetensors`;
    writeFileSync(join(dir, file), encodeSafetensors(new Map(part.map((n) => [n, tensors.get(n)!])), { format: 'pt' }));
    for (const n of part) weightMap[n] = file;
  });
  writeFileSync(
    join(dir, 'model.safetensors.index.json'),
    JSON.stringify({ metadata: { total_size: 0 }, weight_map: weightMap }, null, 2),
  );
  return dir;
}

function llamaCopy(name: string): string {
  const dir = join(tmp, name);
  cpSync(LLAMA, dir, { recursive: true });
  return dir;
}

/** Raw safetensors bytes with 16-bit tensors given as bit patterns. */
function encode16(tensors: Record<string, { dtype: 'F16' | 'BF16'; shape: number[]; bits: number[] }>): Uint8Array {
  const header: Record<string, unknown> = {};
  let offset = 0;
  for (const [name, t] of Object.entries(tensors)) {
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + t.bits.length * 2] };
    offset += t.bits.length * 2;
  }
  const json = Buffer.from(JSON.stringify(header));
  const out = Buffer.alloc(8 + json.length + offset);
  out.writeBigUInt64LE(BigInt(json.length), 0);
  json.copy(out, 8);
  let pos = 8 + json.length;
  for (const t of Object.values(tensors)) for (const b of t.bits) pos = out.writeUInt16LE(b, pos);
  return out;
}

beforeAll(async () => {
  await initBackend('wasm', null);
  tmp = mkdtempSync(join(tmpdir(), 'metrl-hfw-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('sharded checkpoints', () => {
  it("load through the index and give the single file's logits", () => {
    const dir = shardedLlama('sharded');
    const m = readHfLanguageModel(dir, HF_ARCHITECTURES);
    const ref = readReference('llama');
    const b = ref.json.batch;
    const d = maxDiff(
      logitsOf(m.decoder, { ids: b.input_ids, attentionMask: b.attention_mask }),
      ref.get('batch.logits').data,
      256,
      b.attention_mask.flat(),
    );
    m.decoder.dispose();
    expect(d).toBeLessThan(TOL);
  });

  it('refuse a missing shard, naming the index and the file', () => {
    const dir = shardedLlama('missing');
    unlinkSync(join(dir, 'model-00002-of-00002.safetensors'));
    expect(() => readHfLanguageModel(dir, HF_ARCHITECTURES)).toThrow(UserError);
    expect(() => readHfLanguageModel(dir, HF_ARCHITECTURES)).toThrow(
      /model\.safetensors\.index\.json: names model-00002-of-00002\.safetensors \(tensor .+\), which is missing/,
    );
  });

  it('refuse an index that names a file that is not there', () => {
    const dir = shardedLlama('renamed');
    const index = JSON.parse(readFileSync(join(dir, 'model.safetensors.index.json'), 'utf8'));
    index.weight_map['lm_head.weight'] = 'model-00003-of-00003.safetensors';
    writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify(index));
    expect(() => readHfLanguageModel(dir, HF_ARCHITECTURES)).toThrow(
      /names model-00003-of-00003\.safetensors \(tensor lm_head\.weight\), which is missing/,
    );
  });

  it('refuse a partial shard (a tensor the index places in a file that lacks it)', () => {
    const dir = shardedLlama('partial');
    const { tensors } = decodeSafetensors(readFileSync(join(dir, 'model-00002-of-00002.safetensors')));
    const dropped = [...tensors.keys()][0];
    tensors.delete(dropped);
    writeFileSync(
      join(dir, 'model-00002-of-00002.safetensors'),
      encodeSafetensors(tensors as Map<string, NamedTensor>),
    );
    expect(() => readHfLanguageModel(dir, HF_ARCHITECTURES)).toThrow(
      new RegExp(`model-00002-of-00002\\.safetensors: lacks tensor ${dropped.replace(/\./g, '\\.')}`),
    );
  });
});

describe('broken single-file checkpoints', () => {
  it('refuse a tensor whose shape config.json contradicts, before reading weights', () => {
    const dir = llamaCopy('shape');
    const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...cfg, intermediate_size: 96 }));
    expect(() => readHfLanguageModel(dir, HF_ARCHITECTURES)).toThrow(
      /model\.safetensors: tensor model\.layers\.0\.mlp\.gate_proj\.weight has shape \[128, 64\], .*config\.json implies \[96, 64\]/,
    );
  });

  it('refuse a missing tensor and a config missing a key, naming them', () => {
    const dir = llamaCopy('missing-tensor');
    const { tensors } = decodeSafetensors(readFileSync(join(dir, 'model.safetensors')));
    tensors.delete('model.norm.weight');
    writeFileSync(join(dir, 'model.safetensors'), encodeSafetensors(tensors));
    expect(() => readHfLanguageModel(dir, HF_ARCHITECTURES)).toThrow(
      /model\.safetensors: missing tensor model\.norm\.weight/,
    );
    const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
    delete cfg.num_hidden_layers;
    writeFileSync(join(dir, 'config.json'), JSON.stringify(cfg));
    expect(() => readHfLanguageModel(dir, HF_ARCHITECTURES)).toThrow(/config\.json: missing key 'num_hidden_layers'/);
  });

  it('refuse a header that is not JSON or not an object, and a folder with no weights', () => {
    const dir = llamaCopy('header');
    const bad = Buffer.alloc(8 + 4);
    bad.writeBigUInt64LE(4n, 0);
    bad.write('[1] ', 8);
    writeFileSync(join(dir, 'model.safetensors'), bad);
    expect(() => readHfLanguageModel(dir, HF_ARCHITECTURES)).toThrow(/model\.safetensors: header is not a JSON object/);
    bad.write('{{{{', 8);
    writeFileSync(join(dir, 'model.safetensors'), bad);
    expect(() => readHfLanguageModel(dir, HF_ARCHITECTURES)).toThrow(/model\.safetensors: header is not valid JSON/);
    unlinkSync(join(dir, 'model.safetensors'));
    expect(() => readHfLanguageModel(dir, HF_ARCHITECTURES)).toThrow(
      /no model\.safetensors or model\.safetensors\.index\.json/,
    );
  });
});

describe('16-bit weights', () => {
  it('upcast F16 and BF16 to float32 exactly', () => {
    const dir = join(tmp, 'half');
    mkdirSync(dir);
    writeFileSync(
      join(dir, 'model.safetensors'),
      encode16({
        h: { dtype: 'F16', shape: [5], bits: [0x3c00, 0xc000, 0x3800, 0x7bff, 0x0001] },
        b: { dtype: 'BF16', shape: [2, 2], bits: [0x3f80, 0xc040, 0x3eb1, 0x0000] },
      }),
    );
    const t = CheckpointTensors.open(dir);
    expect(Array.from(t.read('h').data)).toEqual([1, -2, 0.5, 65504, 2 ** -24]);
    expect(Array.from(t.read('b').data)).toEqual([1, -3, new Float32Array(new Uint32Array([0x3eb10000]).buffer)[0], 0]);
    expect(t.read('b').shape).toEqual([2, 2]);
  });
});
