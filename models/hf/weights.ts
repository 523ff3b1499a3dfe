// The tensors of a Hugging Face checkpoint folder, read lazily: `model.safetensors`, or shards
// `model-0000k-of-0000n.safetensors` listed by `model.safetensors.index.json`. Opening reads only the JSON headers, so
// shapes can be checked against config.json before any weight is loaded; each tensor is then read from its own byte
// range (fs.readSync into a buffer of its own size) and upcast to float32. A file is never held whole in memory.
//
// Memory: weights live as float32 in tfjs, so a bf16/f16 checkpoint takes twice its file size once loaded.
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { z } from 'zod';
import { UserError } from '../../core/errors.ts';
import { halfToFloat } from '../safetensors.ts';
import { readJson } from '../../core/files.ts';

export const SINGLE_FILE = 'model.safetensors';
const INDEX_FILE = 'model.safetensors.index.json';

/** Where one tensor's bytes are. */
export interface TensorEntry {
  name: string;
  /** Path of the safetensors file holding it. */
  file: string;
  dtype: string;
  shape: number[];
  /** Absolute byte range in the file. */
  begin: number;
  end: number;
}

const READABLE_DTYPES: Record<string, number> = { F32: 4, F16: 2, BF16: 2 };

/** The header of one safetensors file: tensor entries by name (data not read). */
export function readSafetensorsHeader(path: string): Map<string, TensorEntry> {
  if (!existsSync(path)) throw new UserError(`${path}: no such file`);
  const size = statSync(path).size;
  const fd = openSync(path, 'r');
  try {
    if (size < 8) throw new UserError(`${path}: too short to be a safetensors file`);
    const head = Buffer.alloc(8);
    readSync(fd, head, 0, 8, 0);
    const headerLength = Number(head.readBigUInt64LE(0));
    if (headerLength > size - 8) throw new UserError(`${path}: header length ${headerLength} exceeds the file size`);
    const headerBytes = Buffer.alloc(headerLength);
    readSync(fd, headerBytes, 0, headerLength, 8);
    let header: unknown;
    try {
      header = JSON.parse(headerBytes.toString('utf8'));
    } catch {
      throw new UserError(`${path}: header is not valid JSON`);
    }
    if (header === null || typeof header !== 'object' || Array.isArray(header))
      throw new UserError(`${path}: header is not a JSON object`);
    const dataStart = 8 + headerLength;
    const entries = new Map<string, TensorEntry>();
    for (const [name, value] of Object.entries(header as Record<string, unknown>)) {
      if (name === '__metadata__') continue;
      const e = value as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
      const shapeOk = Array.isArray(e?.shape) && e.shape.every((n) => Number.isInteger(n) && n >= 0);
      const offsetsOk =
        Array.isArray(e?.data_offsets) &&
        e.data_offsets.length === 2 &&
        e.data_offsets.every((n) => Number.isInteger(n) && n >= 0);
      if (typeof e?.dtype !== 'string' || !shapeOk || !offsetsOk)
        throw new UserError(`${path}: tensor ${name} lacks a valid dtype, shape or data_offsets`);
      const [b, en] = e.data_offsets as [number, number];
      const begin = dataStart + b;
      const end = dataStart + en;
      if (end < begin || end > size)
        throw new UserError(`${path}: tensor ${name} has data_offsets [${b}, ${en}] beyond the file size`);
      entries.set(name, { name, file: path, dtype: e.dtype, shape: e.shape as number[], begin, end });
    }
    return entries;
  } finally {
    closeSync(fd);
  }
}

const IndexSchema = z.object({ weight_map: z.record(z.string(), z.string()) }).loose();

/** Float32 values from raw little-endian F32 / F16 / BF16 bytes (the bytes' buffer is reused for F32). */
function toFloat32(bytes: Uint8Array, dtype: string, count: number): Float32Array {
  if (dtype === 'F32') return new Float32Array(bytes.buffer, bytes.byteOffset, count);
  const halves = new Uint16Array(bytes.buffer, bytes.byteOffset, count);
  if (dtype === 'BF16') {
    // bfloat16 is the top half of a float32: shift the 16 bits left by 16 (exact).
    const bits = new Uint32Array(count);
    for (let i = 0; i < count; i++) bits[i] = halves[i] << 16;
    return new Float32Array(bits.buffer);
  }
  const out = new Float32Array(count);
  const table = halfTable();
  for (let i = 0; i < count; i++) out[i] = table[halves[i]];
  return out;
}

let halfLookup: Float32Array | null = null;
/** Every float16 bit pattern's value (256 KiB, built once). */
function halfTable(): Float32Array {
  if (!halfLookup) {
    halfLookup = new Float32Array(65536);
    for (let i = 0; i < 65536; i++) halfLookup[i] = halfToFloat(i);
  }
  return halfLookup;
}

/** A checkpoint folder's tensors: names, shapes and dtypes known up front, values read on demand. */
export class CheckpointTensors {
  /** `source` names where the tensor list came from (the single file or the index) in messages. */
  private constructor(
    readonly dir: string,
    readonly source: string,
    readonly entries: Map<string, TensorEntry>,
  ) {}

  /** Open `dir`: model.safetensors, or the shards listed by model.safetensors.index.json. */
  static open(dir: string): CheckpointTensors {
    const single = join(dir, SINGLE_FILE);
    const index = join(dir, INDEX_FILE);
    if (existsSync(index)) {
      const { weight_map: weightMap } = readJson(index, IndexSchema, {
        invalid: 'lacks a weight_map object of tensor name → shard file',
      });
      const headers = new Map<string, Map<string, TensorEntry>>();
      for (const shard of new Set(Object.values(weightMap))) {
        const path = join(dir, shard);
        if (!existsSync(path)) {
          const tensor = Object.keys(weightMap).find((k) => weightMap[k] === shard);
          throw new UserError(`${index}: names ${shard} (tensor ${tensor}), which is missing from ${dir}`);
        }
        headers.set(shard, readSafetensorsHeader(path));
      }
      const entries = new Map<string, TensorEntry>();
      for (const [name, shard] of Object.entries(weightMap)) {
        const entry = headers.get(shard)!.get(name);
        if (!entry)
          throw new UserError(
            `${join(dir, shard)}: lacks tensor ${name}, which ${basename(index)} places there (partial shard?)`,
          );
        entries.set(name, entry);
      }
      return new CheckpointTensors(dir, index, entries);
    }
    if (existsSync(single)) return new CheckpointTensors(dir, single, readSafetensorsHeader(single));
    throw new UserError(`${dir}: no ${SINGLE_FILE} or ${INDEX_FILE} (not a Hugging Face checkpoint folder?)`);
  }

  /** Tensors of one already-read header (e.g. an adapter file). */
  static fromEntries(dir: string, source: string, entries: Map<string, TensorEntry>): CheckpointTensors {
    return new CheckpointTensors(dir, source, entries);
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  /** The entry of a tensor that must exist. */
  entry(name: string): TensorEntry {
    const e = this.entries.get(name);
    if (!e) throw new UserError(`${this.source}: missing tensor ${name}`);
    return e;
  }

  /**
   * Check that every expected tensor exists with the expected shape (before anything is read). `expected` maps names
   * to shapes; `why` says where the shapes come from (e.g. the config.json path) for the message.
   */
  checkShapes(expected: Map<string, number[]>, why: string): void {
    for (const [name, shape] of expected) {
      const e = this.entry(name);
      if (e.shape.length !== shape.length || e.shape.some((n, i) => n !== shape[i])) {
        throw new UserError(
          `${e.file}: tensor ${name} has shape [${e.shape.join(', ')}], ${why} implies [${shape.join(', ')}]`,
        );
      }
      const width = READABLE_DTYPES[e.dtype];
      if (!width) throw new UserError(`${e.file}: tensor ${name} has dtype ${e.dtype} (F32, F16 and BF16 are read)`);
      const count = shape.reduce((a, b) => a * b, 1);
      if (e.end - e.begin !== count * width)
        throw new UserError(
          `${e.file}: tensor ${name} has ${e.end - e.begin} bytes, its shape and ${e.dtype} need ${count * width}`,
        );
    }
  }

  /**
   * Read one tensor as float32 (F32, F16 and BF16 on disk). With `scratch`, the bytes are read into its buffer (grown
   * when too small) instead of a fresh one: the returned data is then valid only until the next read with it, for a
   * caller that copies it at once (a transpose). A large checkpoint then leaves one scratch buffer behind for the
   * garbage collector instead of one buffer per tensor (4 GB of them for a 1 B-parameter model).
   */
  read(name: string, scratch?: { buffer: ArrayBuffer | null }): { shape: number[]; data: Float32Array } {
    const e = this.entry(name);
    const width = READABLE_DTYPES[e.dtype];
    if (!width) throw new UserError(`${e.file}: tensor ${name} has dtype ${e.dtype} (F32, F16 and BF16 are read)`);
    const count = e.shape.reduce((a, b) => a * b, 1);
    if (e.end - e.begin !== count * width)
      throw new UserError(
        `${e.file}: tensor ${name} has ${e.end - e.begin} bytes, its shape and ${e.dtype} need ${count * width}`,
      );
    // A fresh ArrayBuffer is aligned, so the float views below need no copy.
    const need = count * width;
    if (scratch && (scratch.buffer === null || scratch.buffer.byteLength < need))
      scratch.buffer = new ArrayBuffer(need);
    const bytes = new Uint8Array(scratch ? scratch.buffer! : new ArrayBuffer(need), 0, need);
    const fd = openSync(e.file, 'r');
    try {
      let done = 0;
      while (done < bytes.length) {
        const n = readSync(fd, bytes, done, bytes.length - done, e.begin + done);
        if (n <= 0) throw new UserError(`${e.file}: ends inside tensor ${name}`);
        done += n;
      }
    } finally {
      closeSync(fd);
    }
    return { shape: e.shape, data: toFloat32(bytes, e.dtype, count) };
  }
}
