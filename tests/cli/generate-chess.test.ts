// `metrl generate --domain chess` through the real binary (runs only once the chess environment is registered):
// rows from the shared real-games sample with image actions, and each bad games file → exit 2, one line, nothing
// written.
import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectUserError, metrl, scratchDir } from './helpers.ts';
import { availableDomains } from '../../envs/registry.ts';

function readRows(
  dir: string,
): Array<{ initial_state: string; target: string; actions: string[]; action_images_file_names: string[] }> {
  return readFileSync(join(dir, 'metadata.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
}

const chess = availableDomains().includes('chess');
describe.skipIf(!chess)('metrl generate (chess)', { concurrent: true }, () => {
  const shared = join(import.meta.dirname, '..', '..', '..', 'shared', 'data', 'millionbase-sample.uci');

  it('writes chess rows from a games file with image actions', async () => {
    const out = join(scratchDir('chess'), 'd');
    const result = await metrl([
      'generate',
      '--domain',
      'chess',
      '--modality',
      'image',
      '--n',
      '3',
      '--actions',
      '4',
      '--games',
      shared,
      '--image-size',
      '64',
      '--prompt',
      'fen-trace',
      '--out',
      out,
    ]);
    expect(result.code, result.stderr).toBe(0);
    const rows = readRows(out);
    expect(rows).toHaveLength(3);
    for (const row of rows) {
      expect(row.initial_state.split(' ')).toHaveLength(6);
      expect(row.target.split(' ')).toHaveLength(6);
      expect(row.actions.every((a) => /^[a-h][1-8][a-h][1-8][qrbn]?$/.test(a))).toBe(true);
      for (const path of row.action_images_file_names) expect(existsSync(join(out, path))).toBe(true);
    }
  });

  const chessBad: Array<[string, (dir: string) => string, RegExp]> = [
    ['missing games file', (dir) => join(dir, 'none.pgn'), /none\.pgn/],
    ['empty games file', (dir) => (writeFileSync(join(dir, 'empty.uci'), ''), join(dir, 'empty.uci')), /empty/i],
    [
      'not PGN or UCI',
      (dir) => (writeFileSync(join(dir, 'junk.txt'), 'hello world\nthis is not chess\n'), join(dir, 'junk.txt')),
      /junk\.txt/,
    ],
    [
      'illegal move',
      (dir) => (writeFileSync(join(dir, 'bad.uci'), 'e2e4 e7e5 e1e3\n'), join(dir, 'bad.uci')),
      /e1e3|ply 3/,
    ],
  ];
  it.each(chessBad)('%s → exit 2, one line, nothing written', async (_name, makeFile, pattern) => {
    const dir = scratchDir('chessbad');
    const games = makeFile(dir);
    mkdirSync(join(dir, 'parent'));
    const out = join(dir, 'parent', 'data');
    expectUserError(
      await metrl([
        'generate',
        '--domain',
        'chess',
        '--modality',
        'text',
        '--n',
        '2',
        '--actions',
        '2',
        '--games',
        games,
        '--out',
        out,
      ]),
      pattern,
    );
    expect(readdirSync(join(dir, 'parent'))).toEqual([]);
  });
});
