// `metrl generate` through the real binary: the files it writes (rows valid against the dataset contract, images
// decodable and the right size, message image paths present), determinism from --seed, train/test disjointness by
// fingerprint, few-shot examples drawn from the train split, and --force. Bad input: generate-errors.test.ts.
import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { expectUserError, metrl, scratchDir } from './helpers.ts';
import { fingerprint, splitOf } from '../../core/fingerprint.ts';
import { decodePng } from '../../core/image.ts';
import { applySwap } from '../../envs/shell/episodes.ts';
import { parseSwap } from '../../envs/shell/render.ts';

const part = z.union([
  z.object({ type: z.literal('text'), text: z.string() }),
  z.object({ type: z.literal('image_url'), image_url: z.object({ url: z.string() }) }),
]);
const rowSchema = z.object({
  id: z.string(),
  domain: z.string(),
  split: z.enum(['train', 'test']),
  initial_state: z.string(),
  actions: z.array(z.string()),
  modalities: z.array(z.enum(['text', 'image'])),
  images: z.array(z.string().nullable()),
  action_images_file_names: z.array(z.string()),
  target: z.string(),
  question: z.string().optional(),
  prompt: z.string(),
  messages: z.array(z.object({ role: z.enum(['system', 'user', 'assistant']), content: z.array(part) })).min(1),
  meta: z.record(z.string(), z.unknown()),
});
type Row = z.infer<typeof rowSchema>;

function readRows(dir: string): Row[] {
  return readFileSync(join(dir, 'metadata.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => rowSchema.parse(JSON.parse(l)));
}

const fp = (r: Row) => fingerprint(r.domain, r.initial_state, r.actions.join(' '), '');

function jsonType(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

describe('metrl generate (shell)', () => {
  it('writes valid rows, images at the requested size, and messages whose images exist', async () => {
    const out = join(scratchDir('gen'), 'shell');
    const result = await metrl([
      'generate',
      '--domain',
      'shell',
      '--modality',
      'mixed',
      '--image-ratio',
      '0.5',
      '--n',
      '8',
      '--actions',
      '4',
      '--seed',
      '3',
      '--image-size',
      '64',
      '--prompt',
      'few-shot',
      '--shots',
      '2',
      '--out',
      out,
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/wrote 8 test rows and \d+ images/);
    const rows = readRows(out);
    expect(rows).toHaveLength(8);
    const referenced = new Set<string>();
    for (const row of rows) {
      expect(row).toMatchObject({ domain: 'shell', split: 'test', prompt: 'few-shot' });
      expect(row.actions).toHaveLength(4);
      // the target follows the swaps
      expect(row.target).toBe(
        String(row.actions.reduce((ball, a) => applySwap(ball, parseSwap(a)!), Number(row.initial_state))),
      );
      // images[i] is a path exactly for image actions; file_names lists them in order
      row.modalities.forEach((m, i) => expect(row.images[i] === null).toBe(m === 'text'));
      expect(row.action_images_file_names).toEqual(row.images.filter((p) => p !== null));
      // few-shot: two solved examples (user, assistant) before the question
      expect(row.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
      const urls = row.messages.flatMap((m) =>
        m.content.flatMap((p) => (p.type === 'image_url' ? [p.image_url.url] : [])),
      );
      const last = row.messages[row.messages.length - 1].content.flatMap((p) =>
        p.type === 'image_url' ? [p.image_url.url] : [],
      );
      expect(last).toEqual(row.action_images_file_names);
      urls.forEach((u) => referenced.add(u));
    }
    expect(referenced.size).toBeGreaterThan(0);
    for (const path of referenced) {
      expect(path.startsWith('images/')).toBe(true);
      const image = await decodePng(readFileSync(join(out, path)));
      expect([image.width, image.height]).toEqual([64, 64]);
    }
    // no stray files: every image on disk is referenced by some message
    expect(
      readdirSync(join(out, 'images'))
        .map((f) => `images/${f}`)
        .sort(),
    ).toEqual([...referenced].sort());
    // every row has the same keys with the same JSON types (what Arrow needs to infer one schema)
    const shape = (r: Row) =>
      Object.entries(r)
        .map(([k, v]) => `${k}:${jsonType(v)}`)
        .sort()
        .join(',');
    expect(new Set(rows.map(shape)).size).toBe(1);
    const generation = JSON.parse(readFileSync(join(out, 'generation.json'), 'utf8'));
    expect(generation).toMatchObject({
      domain: 'shell',
      n: 8,
      actions: 4,
      seed: 3,
      modality: 'mixed',
      imageRatio: 0.5,
      imageSize: 64,
    });
  });

  it('is deterministic from --seed, and another seed gives other episodes', async () => {
    const base = scratchDir('seed');
    const args = (seed: string, out: string) => [
      'generate',
      '--domain',
      'shell',
      '--modality',
      'image',
      '--n',
      '5',
      '--actions',
      '3',
      '--seed',
      seed,
      '--image-size',
      '64',
      '--out',
      join(base, out),
    ];
    const [a, b, c] = await Promise.all([metrl(args('7', 'a')), metrl(args('7', 'b')), metrl(args('8', 'c'))]);
    expect([a.code, b.code, c.code]).toEqual([0, 0, 0]);
    const text = (d: string) => readFileSync(join(base, d, 'metadata.jsonl'), 'utf8');
    expect(text('a')).toBe(text('b'));
    expect(text('c')).not.toBe(text('a'));
    for (const file of readdirSync(join(base, 'a', 'images'))) {
      expect(readFileSync(join(base, 'b', 'images', file)).equals(readFileSync(join(base, 'a', 'images', file)))).toBe(
        true,
      );
    }
  });

  it('train and test are disjoint by fingerprint; few-shot examples come from the train split', async () => {
    const base = scratchDir('split');
    const common = ['--domain', 'shell', '--modality', 'text', '--actions', '3', '--seed', '1'];
    const [train, test] = await Promise.all([
      metrl(['generate', ...common, '--n', '200', '--split', 'train', '--out', join(base, 'train')]),
      metrl([
        'generate',
        ...common,
        '--n',
        '60',
        '--split',
        'test',
        '--prompt',
        'few-shot',
        '--shots',
        '5',
        '--out',
        join(base, 'test'),
      ]),
    ]);
    expect([train.code, test.code]).toEqual([0, 0]);
    const trainRows = readRows(join(base, 'train'));
    const testRows = readRows(join(base, 'test'));
    expect(trainRows.every((r) => r.split === 'train' && splitOf(fp(r)) === 'train')).toBe(true);
    expect(testRows.every((r) => r.split === 'test' && splitOf(fp(r)) === 'test')).toBe(true);
    const trainPrints = new Set(trainRows.map(fp));
    expect(testRows.filter((r) => trainPrints.has(fp(r)))).toEqual([]);
    // Each shot's initial state and moves, read back from the prompt text, fingerprint into the train split.
    const shotTurns = testRows[0].messages.filter((_, i) => i < 10 && i % 2 === 0);
    expect(shotTurns).toHaveLength(5);
    for (const turn of shotTurns) {
      const text = turn.content.map((p) => (p.type === 'text' ? p.text : '')).join('');
      const m = /The initial state is: (\d)\nHere are the moves played:\n((?:\d swap \d\n)+)/.exec(text)!;
      const moves = m[2].trim().split('\n');
      expect(moves).toHaveLength(3);
      expect(splitOf(fingerprint('shell', m[1], moves.join(' '), ''))).toBe('train');
    }
  });

  it('refuses a non-empty --out without --force and leaves it untouched; --force replaces it', async () => {
    const out = scratchDir('force');
    writeFileSync(join(out, 'keep.txt'), 'mine');
    const refused = await metrl(['generate', '--domain', 'shell', '--modality', 'text', '--n', '2', '--out', out]);
    expectUserError(refused, /exists and is not empty/);
    expect(readdirSync(out)).toEqual(['keep.txt']);
    const forced = await metrl([
      'generate',
      '--domain',
      'shell',
      '--modality',
      'text',
      '--n',
      '2',
      '--out',
      out,
      '--force',
    ]);
    expect(forced.code, forced.stderr).toBe(0);
    expect(readdirSync(out).sort()).toEqual(['generation.json', 'images', 'metadata.jsonl']);
  });
});
