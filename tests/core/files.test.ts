import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { appendJsonl, claimDir, readJson, readJsonl, writeFileAtomic, writeJsonAtomic } from '../../core/files.ts';
import { z } from 'zod';
import { UserError } from '../../core/errors.ts';
import { fingerprint, splitOf } from '../../core/fingerprint.ts';

const dir = () => mkdtempSync(join(tmpdir(), 'metrl-files-'));

describe('JSONL files', () => {
  it('round-trips rows with line numbers', () => {
    const path = join(dir(), 'a.jsonl');
    appendJsonl(path, [{ a: 1 }, { a: 2 }]);
    appendJsonl(path, [{ a: 3 }]);
    expect(readJsonl(path).rows.map((r) => [r.line, (r.value as { a: number }).a])).toEqual([
      [1, 1],
      [2, 2],
      [3, 3],
    ]);
  });

  it('repairs a torn last line and keeps the rest', () => {
    const path = join(dir(), 'b.jsonl');
    writeFileSync(path, '{"a":1}\n{"a":2}\n{"a":');
    const { rows, repaired } = readJsonl(path, { repairTornTail: true });
    expect(repaired).toBe(true);
    expect(rows).toHaveLength(2);
    expect(readFileSync(path, 'utf8')).toBe('{"a":1}\n{"a":2}\n');
  });

  it('reports corruption in the middle with its line number', () => {
    const path = join(dir(), 'c.jsonl');
    writeFileSync(path, '{"a":1}\nnot json\n{"a":3}\n');
    expect(() => readJsonl(path, { repairTornTail: true })).toThrow(UserError);
    expect(() => readJsonl(path)).toThrow(/c\.jsonl:2/);
  });

  it('writes atomically', () => {
    const path = join(dir(), 'x', 'y.txt');
    writeFileAtomic(path, 'hello');
    expect(readFileSync(path, 'utf8')).toBe('hello');
  });
});

describe('readJson', () => {
  const schema = z.object({ n: z.number().int().positive() });

  it('returns the parsed value when it fits the schema', () => {
    const path = join(dir(), 'ok.json');
    writeJsonAtomic(path, { n: 3 });
    expect(readJson(path, schema)).toEqual({ n: 3 });
  });

  it('names the file in one line for a missing file, bad JSON and a value the schema rejects', () => {
    const d = dir();
    expect(() => readJson(join(d, 'none.json'), schema)).toThrow(/none\.json: no such file$/);
    writeFileSync(join(d, 'torn.json'), '{"n": 3');
    expect(() => readJson(join(d, 'torn.json'), schema, { prefix: '--config: ' })).toThrow(
      /^--config: .*torn\.json: not valid JSON$/,
    );
    writeFileSync(join(d, 'bad.json'), '{"n": -1}');
    expect(() => readJson(join(d, 'bad.json'), schema)).toThrow(UserError);
    expect(() => readJson(join(d, 'bad.json'), schema)).toThrow(/bad\.json: n: .*\(got -1\)$/);
    expect(() => readJson(join(d, 'bad.json'), schema, { invalid: 'not a count' })).toThrow(/bad\.json: not a count$/);
  });
});

describe('fingerprint splits', () => {
  it('sends about 20% of fingerprints to test, deterministically', () => {
    let test = 0;
    for (let i = 0; i < 5000; i++) if (splitOf(fingerprint('shell', i)) === 'test') test++;
    expect(test / 5000).toBeGreaterThan(0.17);
    expect(test / 5000).toBeLessThan(0.23);
    expect(splitOf(fingerprint('a', 'b'))).toBe(splitOf(fingerprint('a', 'b')));
  });
});

describe('claimDir', () => {
  it('makes the folder and its missing parents; the undo removes them while nothing was written', () => {
    const root = dir();
    const release = claimDir(join(root, 'a', 'b', 'c'));
    expect(existsSync(join(root, 'a', 'b', 'c'))).toBe(true);
    release();
    expect(existsSync(join(root, 'a'))).toBe(false);
    expect(existsSync(root)).toBe(true);
  });

  it('keeps what holds a file, and a folder that was there before', () => {
    const root = dir();
    const release = claimDir(join(root, 'x', 'y'));
    writeFileSync(join(root, 'x', 'y', 'metrics.jsonl'), '{}\n');
    release();
    expect(existsSync(join(root, 'x', 'y', 'metrics.jsonl'))).toBe(true);
    mkdirSync(join(root, 'before'));
    claimDir(join(root, 'before'))();
    expect(existsSync(join(root, 'before'))).toBe(true);
  });

  it('a path under a file is one UserError naming the path as given', () => {
    const root = dir();
    writeFileSync(join(root, 'f'), '');
    expect(() => claimDir(join(root, 'f', 'out'), 'f/out')).toThrow(/^f\/out: cannot create folder: .*ENOTDIR/);
  });
});
