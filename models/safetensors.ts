// A small reader and writer for the safetensors format (the weight format Hugging Face tools read): an 8-byte
// little-endian header length N, then N bytes of JSON mapping each tensor name to {dtype, shape, data_offsets} plus an
// optional "__metadata__" map of strings, then the raw little-endian tensor bytes. We read F32, F16 and BF16 (all
// converted to float32) and write F32, which is what the built-in model needs.
import { z } from 'zod';
import { UserError } from '../core/errors.ts';

export interface NamedTensor {
  shape: number[];
  data: Float32Array;
}

export interface SafetensorsFile {
  tensors: Map<string, NamedTensor>;
  metadata: Record<string, string>;
}

const BYTES_PER_ELEMENT: Record<string, number> = { F32: 4, F16: 2, BF16: 2 };

/** Serialise tensors (float32) and string metadata into safetensors bytes. Tensors are written in name order. */
export function encodeSafetensors(
  tensors: Map<string, NamedTensor>,
  metadata: Record<string, string> = {},
): Uint8Array {
  const names = [...tensors.keys()].sort();
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  let offset = 0;
  for (const name of names) {
    const t = tensors.get(name)!;
    const expected = t.shape.reduce((a, b) => a * b, 1);
    if (expected !== t.data.length)
      throw new Error(`safetensors: ${name} has ${t.data.length} values for shape [${t.shape}]`);
    header[name] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + t.data.length * 4] };
    offset += t.data.length * 4;
  }
  let json = JSON.stringify(header);
  // Pad the header with spaces so the data starts 8-byte aligned (allowed by the spec, and what other writers do).
  while ((8 + Buffer.byteLength(json)) % 8 !== 0) json += ' ';
  const headerBytes = Buffer.from(json, 'utf8');
  const out = new Uint8Array(8 + headerBytes.length + offset);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(headerBytes.length), true);
  out.set(headerBytes, 8);
  let pos = 8 + headerBytes.length;
  for (const name of names) {
    const data = tensors.get(name)!.data;
    for (let i = 0; i < data.length; i++) view.setFloat32(pos + i * 4, data[i], true);
    pos += data.length * 4;
  }
  return out;
}

/** One tensor's header entry, as the spec has it. */
const TensorEntrySchema = z.object({
  dtype: z.string(),
  shape: z.array(z.number().int().min(0)),
  data_offsets: z.tuple([z.number().int().min(0), z.number().int().min(0)]),
});

/** What a header entry is, for a message: "null", "an array", "a string". */
function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

/** Parse safetensors bytes. `source` names the file in error messages. */
export function decodeSafetensors(bytes: Uint8Array, source = 'safetensors'): SafetensorsFile {
  if (bytes.length < 8) throw new UserError(`${source}: too short to be a safetensors file`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // Kept as a bigint for the message: 2^60 must print as 1152921504606846976, not as a rounded float.
  const declared = view.getBigUint64(0, true);
  if (declared > BigInt(bytes.length - 8))
    throw new UserError(`${source}: header length ${declared} exceeds the file size (${bytes.length} bytes)`);
  const headerLength = Number(declared);
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset + 8, headerLength).toString('utf8'));
  } catch {
    throw new UserError(`${source}: header is not valid JSON`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new UserError(
      `${source}: header must be a JSON object mapping tensor names to {dtype, shape, data_offsets}, got ${kindOf(parsed)}`,
    );
  }
  const header = parsed as Record<string, unknown>;
  const dataStart = 8 + headerLength;
  const dataLength = bytes.length - dataStart;
  const tensors = new Map<string, NamedTensor>();
  let metadata: Record<string, string> = {};
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') {
      const m = z.record(z.string(), z.string()).nullable().safeParse(entry);
      if (!m.success) throw new UserError(`${source}: __metadata__ must map names to strings`);
      metadata = m.data ?? {};
      continue;
    }
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
      throw new UserError(
        `${source}: tensor ${name}: entry must be an object {dtype, shape, data_offsets}, got ${kindOf(entry)}`,
      );
    }
    const checked = TensorEntrySchema.safeParse(entry);
    if (!checked.success) {
      const field = String(checked.error.issues[0]?.path[0] ?? 'entry');
      const value = (entry as Record<string, unknown>)[field];
      const shown = value === undefined ? 'missing' : `got ${JSON.stringify(value)?.slice(0, 60)}`;
      const wanted =
        field === 'dtype'
          ? 'a string'
          : field === 'shape'
            ? 'a list of non-negative integers'
            : 'two non-negative integers [begin, end]';
      throw new UserError(`${source}: tensor ${name}: ${field} must be ${wanted} (${shown})`);
    }
    const e = checked.data;
    const width = Object.hasOwn(BYTES_PER_ELEMENT, e.dtype) ? BYTES_PER_ELEMENT[e.dtype] : undefined;
    if (!width)
      throw new UserError(
        `${source}: tensor ${name} has dtype ${JSON.stringify(e.dtype)}, which metrl does not read (F32, F16 and BF16 are read)`,
      );
    const [begin, end] = e.data_offsets;
    const count = e.shape.reduce((a, b) => a * b, 1);
    if (!(begin <= end && end <= dataLength && end - begin === count * width)) {
      throw new UserError(
        `${source}: tensor ${name} has data_offsets [${begin}, ${end}] inconsistent with its shape [${e.shape}] (${count} × ${width} bytes) or the data size (${dataLength} bytes)`,
      );
    }
    const data = new Float32Array(count);
    const base = dataStart + begin;
    if (e.dtype === 'F32') for (let i = 0; i < count; i++) data[i] = view.getFloat32(base + i * 4, true);
    else if (e.dtype === 'F16')
      for (let i = 0; i < count; i++) data[i] = halfToFloat(view.getUint16(base + i * 2, true));
    else for (let i = 0; i < count; i++) data[i] = bfloat16ToFloat(view.getUint16(base + i * 2, true));
    tensors.set(name, { shape: e.shape, data });
  }
  return { tensors, metadata };
}

const scratch = new DataView(new ArrayBuffer(4));

/** bfloat16 is the top half of a float32. */
export function bfloat16ToFloat(bits: number): number {
  scratch.setUint32(0, bits << 16, false);
  return scratch.getFloat32(0, false);
}

/** IEEE 754 half precision → number (handles subnormals, infinities and NaN). */
export function halfToFloat(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * 2 ** -14 * (fraction / 1024);
  if (exponent === 0x1f) return fraction ? NaN : sign * Infinity;
  return sign * 2 ** (exponent - 15) * (1 + fraction / 1024);
}
