import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeSafetensors, encodeSafetensors, halfToFloat, bfloat16ToFloat } from '../../models/safetensors.ts';
import { UserError } from '../../core/errors.ts';

const dir = () => mkdtempSync(join(tmpdir(), 'metrl-st-'));

/** A safetensors file assembled by hand from the spec: u64 LE header size, JSON header, raw little-endian data. */
function handWritten(): Uint8Array {
  const header = JSON.stringify({
    __metadata__: { format: 'pt', note: 'hand' },
    w32: { dtype: 'F32', shape: [2, 2], data_offsets: [0, 16] },
    h16: { dtype: 'F16', shape: [3], data_offsets: [16, 22] },
    b16: { dtype: 'BF16', shape: [2], data_offsets: [22, 26] },
  });
  const headerBytes = Buffer.from(header, 'utf8');
  const bytes: number[] = [];
  let n = headerBytes.length;
  for (let i = 0; i < 8; i++) {
    bytes.push(n & 0xff);
    n = Math.floor(n / 256);
  }
  bytes.push(...headerBytes);
  // F32 1.0, -2.0, 0.5, 3.0: IEEE bit patterns 0x3f800000, 0xc0000000, 0x3f000000, 0x40400000, little-endian.
  bytes.push(0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0, 0x00, 0x00, 0x00, 0x3f, 0x00, 0x00, 0x40, 0x40);
  // F16 1.0 (0x3c00), -2.0 (0xc000), 65504 (0x7bff).
  bytes.push(0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b);
  // BF16 1.0 (0x3f80), -0.5 (0xbf00).
  bytes.push(0x80, 0x3f, 0x00, 0xbf);
  return Uint8Array.from(bytes);
}

describe('safetensors', () => {
  it('reads a file written byte by byte from the spec (F32, F16, BF16, metadata)', () => {
    const path = join(dir(), 'hand.safetensors');
    writeFileSync(path, handWritten());
    const file = decodeSafetensors(readFileSync(path));
    expect(file.metadata).toEqual({ format: 'pt', note: 'hand' });
    expect(file.tensors.get('w32')).toEqual({ shape: [2, 2], data: Float32Array.from([1, -2, 0.5, 3]) });
    expect(Array.from(file.tensors.get('h16')!.data)).toEqual([1, -2, 65504]);
    expect(Array.from(file.tensors.get('b16')!.data)).toEqual([1, -0.5]);
  });

  it('round-trips what it writes, with an 8-byte aligned data section', () => {
    const tensors = new Map([
      ['b', { shape: [3], data: Float32Array.from([1.5, -0, 1e-30]) }],
      ['a.weight', { shape: [2, 3], data: Float32Array.from([1, 2, 3, 4, 5, 6]) }],
    ]);
    const path = join(dir(), 'rt.safetensors');
    writeFileSync(path, encodeSafetensors(tensors, { format: 'pt' }));
    const bytes = readFileSync(path);
    const headerLength = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
    expect((8 + headerLength) % 8).toBe(0);
    const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8'));
    expect(header['a.weight']).toEqual({ dtype: 'F32', shape: [2, 3], data_offsets: [0, 24] });
    const back = decodeSafetensors(bytes);
    expect(back.metadata).toEqual({ format: 'pt' });
    expect(back.tensors.get('a.weight')).toEqual(tensors.get('a.weight'));
    expect(back.tensors.get('b')).toEqual(tensors.get('b'));
  });

  it('decodes half-precision edge cases', () => {
    expect(halfToFloat(0x0001)).toBe(2 ** -24);
    expect(halfToFloat(0x7c00)).toBe(Infinity);
    expect(halfToFloat(0xfc00)).toBe(-Infinity);
    expect(Number.isNaN(halfToFloat(0x7e00))).toBe(true);
    expect(bfloat16ToFloat(0x4049)).toBeCloseTo(3.140625, 6);
  });

  it('rejects truncated and inconsistent files with UserError', () => {
    const good = handWritten();
    expect(() => decodeSafetensors(good.subarray(0, 5), 'f')).toThrow(UserError);
    expect(() => decodeSafetensors(good.subarray(0, good.length - 2), 'f')).toThrow(/data_offsets/);
    const bad = Uint8Array.from(good);
    bad[8] = 0x5b; // '{' → '[' breaks the JSON
    expect(() => decodeSafetensors(bad, 'f')).toThrow(/not valid JSON/);
  });

  /** A file whose header is the given JSON text (padded to 8 bytes) and `data` bytes of zeros. */
  function withHeader(json: string, data = 0): Uint8Array {
    const header = Buffer.from(json.padEnd(Math.ceil(json.length / 8) * 8, ' '));
    const out = new Uint8Array(8 + header.length + data);
    new DataView(out.buffer).setBigUint64(0, BigInt(header.length), true);
    out.set(header, 8);
    return out;
  }

  it.each([
    ['null', 'null', /f: header must be a JSON object .* got null/],
    ['an array', '[1, 2]', /f: header must be a JSON object .* got an array/],
    ['a number', '7', /f: header must be a JSON object .* got a number/],
    ['an entry that is null', '{"w": null}', /f: tensor w: entry must be an object .* got null/],
    ['an entry that is an array', '{"w": [1]}', /f: tensor w: entry must be an object .* got an array/],
    [
      'a missing dtype',
      '{"w": {"shape": [1], "data_offsets": [0, 4]}}',
      /f: tensor w: dtype must be a string \(missing\)/,
    ],
    [
      'an unknown dtype',
      '{"w": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}}',
      /f: tensor w has dtype "I64", which metrl does not read/,
    ],
    [
      'a dtype inherited from Object',
      '{"w": {"dtype": "constructor", "shape": [1], "data_offsets": [0, 4]}}',
      /dtype "constructor"/,
    ],
    [
      'a negative dimension',
      '{"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}',
      /f: tensor w: shape must be a list of non-negative integers/,
    ],
    [
      'offsets as strings',
      '{"w": {"dtype": "F32", "shape": [1], "data_offsets": ["0", "4"]}}',
      /f: tensor w: data_offsets must be two non-negative integers/,
    ],
    ['metadata that is not strings', '{"__metadata__": {"a": 1}}', /f: __metadata__ must map names to strings/],
  ])('names a header that is %s in one line', (_what, json, pattern) => {
    const bytes = withHeader(json, 8);
    expect(() => decodeSafetensors(bytes, 'f')).toThrow(UserError);
    expect(() => decodeSafetensors(bytes, 'f')).toThrow(pattern);
  });

  it('prints a huge declared header length exactly (2^60, not a rounded float)', () => {
    const bytes = new Uint8Array(16);
    new DataView(bytes.buffer).setBigUint64(0, 2n ** 60n, true);
    expect(() => decodeSafetensors(bytes, 'f')).toThrow(
      'f: header length 1152921504606846976 exceeds the file size (16 bytes)',
    );
  });
});
