// `metrl evaluate --dataset` on the official MET-Bench sets (local parquet shards, and hf:// through a stand-in Hub on
// 127.0.0.1): the harness's selection recorded in <domain>-selection.json, the prompts a chat model receives (the
// dataset's own pictures, unchanged), scores with Wilson intervals, and bad input as one line and exit 2.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { metrl, scratchDir, expectUserError } from './helpers.ts';
import { startUpstream, type Upstream } from '../eval/upstream.ts';
import { startFakeHub } from '../helpers/fake-hub.ts';
import { shellRows, writeMinecraftShard, writeTrackShard, type MinecraftRow } from '../helpers/metbench-parquet.ts';
import { encodePng, blankImage } from '../../core/image.ts';

type Part = { type: string; text?: string; image_url?: { url: string } };

let upstream: Upstream;
let answer = 'FINAL ANSWER: 2';
beforeAll(async () => {
  upstream = await startUpstream(() => ({ kind: 'answer', text: answer }));
});
afterAll(async () => upstream.close());

const dataUrl = (bytes: Uint8Array) => `data:image/png;base64,${Buffer.from(bytes).toString('base64')}`;

describe('metrl evaluate on the official MET-Bench sets', () => {
  it("shell: the harness selection, the set's pictures sent unchanged, scores against states[T]", async () => {
    const root = scratchDir('official-shell');
    const rows = shellRows();
    const pictures = await Promise.all([0, 1, 2, 3].map((i) => encodePng(blankImage(4 + i, 4))));
    for (const r of rows) r.image_actions = r.actions.map((_, i) => pictures[i]);
    writeTrackShard(join(root, 'data', 'full', 'test-00000-of-00001.parquet'), rows, { stateKind: 'int' });
    const out = join(root, 'out');
    upstream.requests.length = 0;
    answer = 'FINAL ANSWER: 2';
    const result = await metrl([
      'evaluate',
      '--model',
      'm',
      '--endpoint',
      `${upstream.url}/v1`,
      '--dataset',
      join(root, 'data'),
      '--n',
      '3',
      '--actions',
      '3',
      '--modality',
      'text,image',
      '--workers',
      '1',
      '--out',
      out,
      '--metbench-files',
      '--quiet',
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const manifest = JSON.parse(readFileSync(join(out, 'shell-selection.json'), 'utf8'));
    expect(manifest.examples.map((e: { source_row: number }) => e.source_row)).toEqual([0, 2, 3]);
    // The harness's folder names each task as the set does, beside the same selection manifest.
    expect(readFileSync(join(out, 'metbench', 'shell-selection.json'), 'utf8')).toBe(
      readFileSync(join(out, 'shell-selection.json'), 'utf8'),
    );
    const harnessRows = readFileSync(join(out, 'metbench', 'shell-image.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(harnessRows.map((r) => [r.example_id, r.source_row, r.fingerprint])).toEqual(
      manifest.examples.map((e: Record<string, unknown>) => [e.example_id, e.source_row, e.fingerprint]),
    );
    // Every request: three moves, the dataset's first three pictures in the image modality.
    expect(upstream.requests).toHaveLength(6);
    const image = upstream.requests.map((r) => r.body.messages[0].content).filter((c): c is Part[] => Array.isArray(c));
    expect(image).toHaveLength(3);
    for (const parts of image)
      expect(parts.filter((p) => p.type === 'image_url').map((p) => p.image_url!.url)).toEqual(
        pictures.slice(0, 3).map(dataUrl),
      );
    // Scores: "2" is right where the ball is under shell 2 after three swaps.
    const targets = [0, 2, 3].map((i) => String(rows[i].states[3]));
    const right = targets.filter((t) => t === '2').length;
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    for (const s of summary.settings) {
      expect(s.items).toBe(3);
      expect(s.summary.accuracy).toBeCloseTo(right / 3, 10);
      expect(s.summary.ci95.method).toBe('wilson');
    }
    rmSync(root, { recursive: true, force: true });
  });

  it('an interrupted evaluation resumes without asking finished items again, the pictures read again from --dataset', async () => {
    const root = scratchDir('official-resume');
    const rows = shellRows();
    const picture = await encodePng(blankImage(5, 5));
    for (const r of rows) r.image_actions = r.actions.map(() => picture);
    writeTrackShard(join(root, 'full', 'test-00000-of-00001.parquet'), rows, { stateKind: 'int' });
    const out = join(root, 'out');
    const args = [
      'evaluate',
      '--model',
      'm',
      '--endpoint',
      `${upstream.url}/v1`,
      '--dataset',
      root,
      '--n',
      '3',
      '--actions',
      '3',
      '--modality',
      'image',
      '--workers',
      '1',
      '--out',
      out,
      '--quiet',
    ];
    upstream.requests.length = 0;
    expect((await metrl([...args, '--limit', '1'])).code).toBe(0);
    expect(upstream.requests).toHaveLength(1);
    const resumed = await metrl([...args, '--resume']);
    expect(resumed.stderr).toBe('');
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain('(2 asked now, 1 reused)');
    expect(upstream.requests).toHaveLength(3);
    for (const r of upstream.requests)
      expect(
        (r.body.messages[0].content as Part[]).filter((p) => p.type === 'image_url').map((p) => p.image_url!.url),
      ).toEqual([dataUrl(picture), dataUrl(picture), dataUrl(picture)]);
    rmSync(root, { recursive: true, force: true });
  });

  it('minecraft: text and image prompts in the harness wording, choice parsing, Wilson intervals', async () => {
    const root = scratchDir('official-mc');
    const frames = await Promise.all([0, 1, 2, 3, 4].map((i) => encodePng(blankImage(3 + i, 3))));
    const row = (id: string, initial: string, choice: number): MinecraftRow => ({
      example_id: id,
      initial_state: initial,
      action: 'Walk forward 8 blocks',
      candidate_states: ['{"z": 1}', '{"z": 2}', '{"z": 3}', '{"z": 4}'],
      correct_choice: choice,
      image_initial_state: frames[0],
      image_candidate_states: frames.slice(1),
    });
    writeMinecraftShard(join(root, 'full', 'test-00000-of-00001.parquet'), [
      row('mc-0', '{"z": 0}', 2),
      row('mc-1', '{"z": 0}', 3),
      row('mc-2', '{"z": 9}', 1),
      row('mc-3', '{"z": 8}', 2),
    ]);
    const out = join(root, 'out');
    upstream.requests.length = 0;
    answer = 'Reasoning…\n**FINAL ANSWER: 2**';
    const result = await metrl([
      'evaluate',
      '--model',
      'm',
      '--endpoint',
      `${upstream.url}/v1`,
      '--dataset',
      root,
      '--n',
      '3',
      '--modality',
      'text,image',
      '--workers',
      '1',
      '--out',
      out,
      '--quiet',
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(
      JSON.parse(readFileSync(join(out, 'minecraft-selection.json'), 'utf8')).examples.map(
        (e: { example_id: string }) => e.example_id,
      ),
    ).toEqual(['mc-0', 'mc-2', 'mc-3']);
    const [text, ...rest] = upstream.requests.map((r) => r.body.messages);
    // The harness's default for Minecraft is chain of thought; the text prompt is one string.
    expect(text).toEqual([
      {
        role: 'user',
        content:
          'You are evaluating a Minecraft gameplay trajectory. You will see a JSON game-state snapshot and an action that was performed. Your task is to identify which of the candidate game states is the correct next state after the action was taken.\n\n' +
          'Action performed: Walk forward 8 blocks\n\nInput state:\n{"z": 0}\n\nCandidate next states:\n\nChoice 1:\n{"z": 1}\n\nChoice 2:\n{"z": 2}\n\nChoice 3:\n{"z": 3}\n\nChoice 4:\n{"z": 4}\n\n' +
          'Which game state (1-4) is the correct next state after the action "Walk forward 8 blocks"? Think step by step about how the game state should change given the action, then output your answer as FINAL ANSWER: [1-4].',
      },
    ]);
    const image = rest.find((m) => Array.isArray(m[0].content))![0].content as Part[];
    expect(image.map((p) => (p.type === 'text' ? p.text : p.image_url!.url))).toEqual([
      'You are evaluating a Minecraft gameplay trajectory. You will see a first-person screenshot from the game and an action that was performed. Your task is to identify which of the candidate images shows the correct next frame after the action was taken.\n\nAction performed: Walk forward 8 blocks\n\nInput frame:',
      dataUrl(frames[0]),
      // Separate parts, as metbench/prompts.py build_minecraft_context sends them (not merged into one text part).
      '\nCandidate next frames:',
      '\nChoice 1:',
      dataUrl(frames[1]),
      '\nChoice 2:',
      dataUrl(frames[2]),
      '\nChoice 3:',
      dataUrl(frames[3]),
      '\nChoice 4:',
      dataUrl(frames[4]),
      '\nWhich image (1-4) shows the correct next frame after the action "Walk forward 8 blocks"? Think step by step about how the scene should change given the action, then output your answer as FINAL ANSWER: [1-4].',
    ]);
    // Two of the three selected tasks have choice 2: 66.7% with the Wilson interval for 2/3.
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    for (const s of summary.settings) {
      expect(s.summary.accuracy).toBeCloseTo(2 / 3, 10);
      expect(s.summary.ci95.method).toBe('wilson');
      expect(s.summary.ci95.low).toBeCloseTo(0.2077, 3);
      expect(s.summary.ci95.high).toBeCloseTo(0.9385, 3);
    }
    // `metrl score` rescores the rows the same way.
    const rescored = await metrl(['score', join(out, 'minecraft-text.jsonl')]);
    expect(rescored.code).toBe(0);
    expect(JSON.parse(rescored.stdout).domains.minecraft.accuracy).toBeCloseTo(2 / 3, 10);

    rmSync(root, { recursive: true, force: true });
  });

  it('hf://: downloads into the Hugging Face cache with HF_TOKEN, then reads the cache offline', async () => {
    const root = scratchDir('official-hf');
    const repoDir = join(root, 'repo');
    writeTrackShard(join(repoDir, 'full', 'test-00000-of-00001.parquet'), shellRows().slice(0, 4), {
      stateKind: 'int',
    });
    writeFileSync(join(repoDir, 'README.md'), '---\nconfigs: []\n---\n');
    const pinned = '69dc45b9a0bbf57c3104fca0fc647669bdbf744a';
    const hub = await startFakeHub('vanyacohen/MET-Bench-Shell', pinned, repoDir);
    const cache = join(root, 'cache');
    const token = 'hf_secret_token_for_tests';
    const env = { HF_HUB_CACHE: cache, HF_ENDPOINT: hub.url, HF_TOKEN: token, HF_HUB_OFFLINE: '' };
    const out = join(root, 'out');
    const result = await metrl(
      [
        'evaluate',
        '--model',
        'baseline:game-start',
        '--dataset',
        'hf://vanyacohen/MET-Bench-Shell',
        '--n',
        '3',
        '--actions',
        '3',
        '--out',
        out,
        '--quiet',
      ],
      { env },
    );
    await hub.close();
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(
      existsSync(
        join(
          cache,
          'datasets--vanyacohen--MET-Bench-Shell',
          'snapshots',
          pinned,
          'full',
          'test-00000-of-00001.parquet',
        ),
      ),
    ).toBe(true);
    // Only the shards were fetched (not README.md), each request carrying the token.
    expect(hub.requests.filter((r) => r.path.includes('/resolve/')).every((r) => r.path.endsWith('.parquet'))).toBe(
      true,
    );
    expect(hub.requests.every((r) => r.authorization === `Bearer ${token}`)).toBe(true);
    const manifest = JSON.parse(readFileSync(join(out, 'shell-selection.json'), 'utf8'));
    expect([manifest.dataset, manifest.revision, manifest.examples.length]).toEqual([
      'vanyacohen/MET-Bench-Shell',
      pinned,
      3,
    ]);
    // The token appears nowhere: not on stdout, not in the run folder.
    expect(result.stdout).not.toContain(token);
    for (const f of readdirSync(out)) expect(readFileSync(join(out, f), 'utf8')).not.toContain(token);
    // The server is gone: the cached revision is read offline, and a revision not in the cache is one line.
    const again = await metrl(
      [
        'evaluate',
        '--model',
        'baseline:game-start',
        '--dataset',
        `hf://vanyacohen/MET-Bench-Shell@${pinned}`,
        '--n',
        '3',
        '--actions',
        '3',
        '--out',
        join(root, 'out2'),
        '--quiet',
      ],
      { env: { ...env, HF_HUB_OFFLINE: '1' } },
    );
    expect(again.code).toBe(0);
    expect(readFileSync(join(root, 'out2', 'shell-selection.json'), 'utf8')).toBe(
      readFileSync(join(out, 'shell-selection.json'), 'utf8'),
    );
    const missing = await metrl(
      [
        'evaluate',
        '--model',
        'baseline:game-start',
        '--dataset',
        `hf://vanyacohen/MET-Bench-Shell@${'0'.repeat(40)}`,
        '--out',
        join(root, 'out3'),
      ],
      { env: { ...env, HF_HUB_OFFLINE: '1' } },
    );
    expectUserError(
      missing,
      /revision 0{40} of vanyacohen\/MET-Bench-Shell is not in the Hugging Face cache .* HF_HUB_OFFLINE is set/,
    );
    expect(existsSync(join(root, 'out3'))).toBe(false);
    rmSync(root, { recursive: true, force: true });
  });

  it('bad input: not a dataset, a shard that does not parse, a missing column, a revision the Hub does not have', async () => {
    const root = scratchDir('official-bad');
    const run = (dataset: string, env?: Record<string, string>) =>
      metrl(
        [
          'evaluate',
          '--model',
          'baseline:random',
          '--dataset',
          dataset,
          '--n',
          '1',
          '--actions',
          '3',
          '--out',
          join(root, 'o'),
        ],
        { env },
      );
    mkdirSync(join(root, 'empty'));
    expectUserError(
      await run(join(root, 'empty')),
      /--dataset .*empty: the folder has no metadata.jsonl .* nor parquet shards/,
    );
    mkdirSync(join(root, 'broken', 'full'), { recursive: true });
    writeFileSync(join(root, 'broken', 'full', 'test-00000-of-00001.parquet'), 'not parquet');
    expectUserError(await run(join(root, 'broken')), /test-00000-of-00001.parquet: not a readable parquet shard/);
    writeTrackShard(join(root, 'nocol', 'full', 'test-00000-of-00001.parquet'), shellRows().slice(0, 1), {
      stateKind: 'int',
      omit: ['actions'],
    });
    expectUserError(await run(join(root, 'nocol')), /missing column 'actions'/);
    expectUserError(await run('hf://vanyacohen/MET-Bench-Nothing'), /name a revision/);
    const hub = await startFakeHub('vanyacohen/MET-Bench-Shell', '1'.repeat(40), join(root, 'nocol'));
    const absent = await run(`hf://vanyacohen/MET-Bench-Shell@${'2'.repeat(40)}`, {
      HF_HUB_CACHE: join(root, 'cache'),
      HF_ENDPOINT: hub.url,
      HF_TOKEN: 'hf_zzz',
      HF_HUB_OFFLINE: '',
    });
    await hub.close();
    expectUserError(absent, /cannot download/);
    expect(absent.stderr).not.toContain('hf_zzz');
    expect(existsSync(join(root, 'o'))).toBe(false);
    rmSync(root, { recursive: true, force: true });
  });
});
