// `metrl evaluate --dataset`: the rows of a folder `metrl generate` wrote are the episodes evaluated (in each asked
// modality), its domain and action count the setting's; chat rows and missing paths are one line and exit 2.
import { describe, expect, it } from 'vitest';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { metrl, scratchDir, expectUserError } from './helpers.ts';

describe('metrl evaluate --dataset', () => {
  it("evaluates exactly the folder's rows, in both modalities, with its domain and action count", async () => {
    const root = scratchDir('eval-dataset');
    const data = join(root, 'shell');
    expect(
      (
        await metrl([
          'generate',
          '--domain',
          'shell',
          '--modality',
          'image',
          '--n',
          '6',
          '--actions',
          '3',
          '--image-size',
          '32',
          '--out',
          data,
          '--quiet',
        ])
      ).code,
    ).toBe(0);
    const out = join(root, 'out');
    // --domain and --actions say chess and 10: the folder's shell rows with 3 actions win.
    const result = await metrl([
      'evaluate',
      '--model',
      'baseline:game-start',
      '--dataset',
      data,
      '--domain',
      'chess',
      '--actions',
      '10',
      '--modality',
      'text,image',
      '--out',
      out,
      '--quiet',
    ]);
    expect(result.code).toBe(0);
    const ids = readFileSync(join(data, 'metadata.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).id);
    const selected = readFileSync(join(out, 'episodes.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(selected.map((r) => `${r.group}:${r.episode.id}`)).toEqual([
      ...ids.map((id) => `shell/text/T3:${id}`),
      ...ids.map((id) => `shell/image/T3:${id}`),
    ]);
    for (const r of selected)
      expect(r.episode.actions.every((a: { modality: string }) => a.modality === r.group.split('/')[1])).toBe(true);
    // Game Start on the rows: the shell's answer is the initial state; the summary counts every row in each modality.
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    expect(summary.settings.map((s: { key: string; items: number }) => `${s.key}:${s.items}`)).toEqual([
      'shell/text/T3/zero-shot:6',
      'shell/image/T3/zero-shot:6',
    ]);
    rmSync(root, { recursive: true, force: true });
  });

  it('refuses chat rows and missing paths with one line and exit 2', async () => {
    const root = scratchDir('eval-dataset-bad');
    const file = join(root, 'rows.jsonl');
    writeFileSync(
      file,
      `${JSON.stringify({ messages: [{ role: 'user', content: 'Where is the ball?' }], target: '2' })}\n`,
    );
    expectUserError(
      await metrl(['evaluate', '--model', 'baseline:game-start', '--dataset', file, '--out', join(root, 'o')]),
      /evaluate reads folders `metrl generate` wrote/,
    );
    expectUserError(
      await metrl([
        'evaluate',
        '--model',
        'baseline:game-start',
        '--dataset',
        join(root, 'none'),
        '--out',
        join(root, 'o'),
      ]),
      /--dataset .*none: no such file or folder/,
    );
    // The chess parsing travels with generated episodes: a dataset brings its own.
    const chess = join(root, 'chess');
    const made = await metrl([
      'generate',
      '--domain',
      'chess',
      '--modality',
      'text',
      '--n',
      '2',
      '--actions',
      '1',
      '--out',
      chess,
      '--quiet',
    ]);
    expect(made.code, made.stderr).toBe(0);
    expectUserError(
      await metrl([
        'evaluate',
        '--model',
        'baseline:game-start',
        '--dataset',
        chess,
        '--chess-answer',
        'lenient',
        '--out',
        join(root, 'o'),
      ]),
      /--chess-answer shapes generated episodes; rescore the run with metrl score --chess-answer/,
    );
    rmSync(root, { recursive: true, force: true });
  });
});
