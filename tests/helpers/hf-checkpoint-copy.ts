// Test helper: a runnable copy of a tiny Hugging Face fixture folder (../shared/fixtures/hf/<name>) for tests that go
// through the CLI. The fixtures hold no tokenizer and a context of 256 positions; the copy gets the byte tokenizer of
// byte-tokenizer.ts (with the image tokens its architecture needs) and a larger max_position_embeddings, so the
// environments' long reference prompts fit. The reference files are left behind (they are read in place by the
// model tests). `shardCheckpoint` rewrites a copy's model.safetensors as two shards and an index, as save_pretrained
// does for large models.
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SHARED_DIR } from '../../core/paths.ts';
import { readSafetensorsHeader } from '../../models/hf/weights.ts';
import { decodeSafetensors } from '../../models/safetensors.ts';
import { writeSafetensorsFile, type HostTensor } from '../../models/hf/write-checkpoint.ts';
import {
  GEMMA3_SPECIALS,
  IDEFICS3_SPECIALS,
  QWEN_VL_SPECIALS,
  writeByteTokenizer,
  type ByteTokenizerOptions,
} from './byte-tokenizer.ts';

export const HF_FIXTURES = join(SHARED_DIR, 'fixtures', 'hf');

/** Temp folders made here (the copies are a few MB each): removeHfCopies() deletes them after a test file. */
const made: string[] = [];

/** A fresh temp folder, deleted by removeHfCopies(); for a test's run folders beside its copies. */
export function hfScratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `metrl-hf-${prefix}-`));
  made.push(dir);
  return dir;
}

/** Delete every folder hfCheckpointCopy and hfScratchDir made in this process. */
export function removeHfCopies(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** The tokenizer options each fixture needs: its image tokens and the text its template writes for an image. */
const TOKENIZERS: Record<string, ByteTokenizerOptions> = {
  idefics3: { specials: IDEFICS3_SPECIALS, imagePlaceholder: '<image>' },
  gemma3: { specials: GEMMA3_SPECIALS, imagePlaceholder: '<start_of_image>' },
  qwen2_5_vl: { specials: QWEN_VL_SPECIALS, imagePlaceholder: '<|vision_start|><|image_pad|><|vision_end|>' },
  qwen3_vl: { specials: QWEN_VL_SPECIALS, imagePlaceholder: '<|vision_start|><|image_pad|><|vision_end|>' },
};

export interface CopyOptions {
  /** Where to put the copy (default: a fresh temp folder named after the fixture). */
  dir?: string;
  /** max_position_embeddings of the language model (default 4096; null keeps the fixture's config.json as it is). */
  context?: number | null;
  /** Tokenizer options (default: the fixture's image tokens, the default chat template). */
  tokenizer?: ByteTokenizerOptions;
}

/** Copy fixture `name` without its reference files, add a byte tokenizer and raise the context. Returns the folder. */
export function hfCheckpointCopy(name: string, options: CopyOptions = {}): string {
  const dir = options.dir ?? join(hfScratchDir(name), name);
  cpSync(join(HF_FIXTURES, name), dir, {
    recursive: true,
    filter: (src) => !/reference\.(json|safetensors)$|[/\\]preprocess$/.test(src),
  });
  // The Qwen-VL fixtures keep their processor's settings beside its references.
  const processor = join(HF_FIXTURES, name, 'preprocess', 'preprocessor_config.json');
  if (name.startsWith('qwen') && existsSync(processor)) cpSync(processor, join(dir, 'preprocessor_config.json'));
  if (!name.endsWith('-lora')) {
    writeByteTokenizer(dir, options.tokenizer ?? TOKENIZERS[name] ?? {});
    if (options.context === null) return dir;
    const configPath = join(dir, 'config.json');
    const config = JSON.parse(readFileSync(configPath, 'utf8'));
    (config.text_config ?? config).max_position_embeddings = options.context ?? 4096;
    writeFileSync(configPath, JSON.stringify(config, null, 2));
  }
  return dir;
}

/** Split `dir`/model.safetensors into model-00001-of-00002 and -00002-of-00002 with model.safetensors.index.json. */
export function shardCheckpoint(dir: string): { shards: string[]; index: string } {
  const single = join(dir, 'model.safetensors');
  const { tensors } = decodeSafetensors(readFileSync(single), single);
  const names = [...tensors.keys()].sort();
  const shards = ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'];
  const half = Math.ceil(names.length / 2);
  const weightMap: Record<string, string> = {};
  let total = 0;
  shards.forEach((file, k) => {
    const part = new Map<string, HostTensor>();
    for (const n of names.slice(k * half, (k + 1) * half)) {
      part.set(n, tensors.get(n)!);
      weightMap[n] = file;
      total += tensors.get(n)!.data.byteLength;
    }
    writeSafetensorsFile(join(dir, file), part);
  });
  // The shards hold every tensor of the single file, under the same names and shapes.
  const held = shards.reduce((n, f) => n + readSafetensorsHeader(join(dir, f)).size, 0);
  if (held !== names.length) throw new Error(`shardCheckpoint: ${held} of ${names.length} tensors written`);
  const index = join(dir, 'model.safetensors.index.json');
  writeFileSync(index, JSON.stringify({ metadata: { total_size: total }, weight_map: weightMap }, null, 2));
  rmSync(single);
  return { shards: shards.map((f) => join(dir, f)), index };
}
