// The official MET-Bench sets read as the authors' harness reads them (envs/metbench/official.ts), on small shards
// written at test time in the published schemas: selection order, duplicate task inputs skipped by fingerprint,
// truncation to T, the target after action T, image structs kept for the selected rows only, the short-trajectory
// stop, and the manifest. Fingerprints were printed by CPython (hashlib.sha256 of json.dumps(sort_keys=True,
// separators=(",", ":"))) on the same task inputs.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Chess } from 'chess.js';
import { selectOfficial, splitShards, taskFingerprint } from '../../envs/metbench/official.ts';
import { datasetImage } from '../../envs/dataset-images.ts';
import { UserError } from '../../core/errors.ts';
import { PNG, shellRows, writeMinecraftShard, writeTrackShard } from '../helpers/metbench-parquet.ts';

describe('official MET-Bench selection', () => {
  it('selects the first distinct tasks in source order, cuts to T and targets the state after action T', async () => {
    const root = mkdtempSync(join(tmpdir(), 'metrl-official-'));
    // Two shards: datasets streams them in name order, rows in order; row groups of two rows.
    const rows = shellRows();
    writeTrackShard(join(root, 'full', 'test-00000-of-00002.parquet'), rows.slice(0, 2), { stateKind: 'int' });
    writeTrackShard(join(root, 'full', 'test-00001-of-00002.parquet'), rows.slice(2), { stateKind: 'int' });
    writeTrackShard(join(root, 'full', 'train-00000-of-00001.parquet'), rows.slice(0, 1), { stateKind: 'int' });
    expect(splitShards(root, 'test').map((p) => p.slice(root.length))).toEqual([
      '/full/test-00000-of-00002.parquet',
      '/full/test-00001-of-00002.parquet',
    ]);
    const got = await selectOfficial(root, { limit: 3, actions: 3, images: true });
    expect(got.domain).toBe('shell');
    expect(got.episodes.map((e) => [e.id, e.meta.source_row])).toEqual([
      ['shell-test-000000', 0],
      ['shell-test-000002', 2],
      ['shell-test-000003', 3],
    ]);
    const first = got.episodes[0];
    expect(first.actions.map((a) => a.text)).toEqual(['1 swap 2', '2 swap 3', '1 swap 3']);
    expect(first.initialState).toBe('1');
    expect(first.target).toBe(String(rows[0].states[3]));
    // Python: [1, ["1 swap 2", "2 swap 3", "1 swap 3"]] with the shell's integer initial state.
    expect(first.meta.fingerprint).toBe('48a1e20dd0373386adb04973a7b203c650a1f4256a9524e9f68cb264bc168c28');
    // Images: the first T action pictures of each selected row, as stored.
    expect(first.meta.images).toHaveLength(3);
    expect(datasetImage({ episode: got.episodes[1], index: 2 })?.bytes).toEqual(PNG(2));
    expect(got.manifestFile).toBe('shell-selection.json');
    expect(JSON.parse(got.manifest)).toEqual({
      dataset: 'vanyacohen/MET-Bench-Shell',
      revision: null,
      split: 'test',
      actions: 3,
      examples: got.episodes.map((e) => ({
        example_id: e.id,
        source_row: e.meta.source_row,
        fingerprint: e.meta.fingerprint,
      })),
    });
    expect(got.manifest.endsWith('}\n')).toBe(true);
    // A fourth task needs row 4, a short trajectory: the harness raises there, so does the reader.
    await expect(selectOfficial(root, { limit: 4, actions: 3, images: false })).rejects.toThrow(
      /test row 4: a short trajectory \(2 actions, 3 states\)/,
    );
    // Fewer distinct tasks than asked (T = 1: rows 0 and 1 are one task): an error naming the count.
    await expect(selectOfficial(root, { limit: 5, actions: 1, images: false })).rejects.toThrow(
      /only 4 distinct shell tasks among its 5 test rows, 5 asked/,
    );
    rmSync(root, { recursive: true, force: true });
  });

  it('a string initial state hashes as a string, as in Python', () => {
    expect(taskFingerprint(['1', ['1 swap 2', '2 swap 3', '1 swap 3']])).toBe(
      '7508bf7921fd11b9a6064f4ff6a51bf42a2e9f9803a71d7b2648cc5af40f088e',
    );
  });

  it('reads chess rows: FEN states, the target FEN after move T', async () => {
    const root = mkdtempSync(join(tmpdir(), 'metrl-official-chess-'));
    const moves = ['e2e4', 'e7e5', 'g1f3', 'b8c6'];
    const game = new Chess();
    const states = [game.fen()];
    for (const m of moves) {
      game.move({ from: m.slice(0, 2), to: m.slice(2, 4) });
      states.push(game.fen());
    }
    writeTrackShard(
      join(root, 'full', 'test-00000-of-00001.parquet'),
      [{ example_id: 'chess-test-000000', initial_state: states[0], actions: moves, states }],
      { images: false },
    );
    const got = await selectOfficial(root, { limit: 1, actions: 2, images: false });
    expect(got.domain).toBe('chess');
    expect(got.episodes[0].target).toBe(states[2]);
    expect(got.episodes[0].actions.map((a) => a.text)).toEqual(['e2e4', 'e7e5']);
    expect(JSON.parse(got.manifest).actions).toBe(2);
    // Images asked of a shard without the image column: one error naming it.
    await expect(selectOfficial(root, { limit: 1, actions: 2, images: true })).rejects.toThrow(
      /missing column 'image_actions'/,
    );
    rmSync(root, { recursive: true, force: true });
  });

  it('reads Minecraft rows: fingerprint of the parsed JSON states, duplicates skipped, screenshots kept', async () => {
    const root = mkdtempSync(join(tmpdir(), 'metrl-official-mc-'));
    const initial =
      '{"pos": [1.0, 64.5, -3.25], "yaw": 90.0, "biome": "snowy_plains", "name": "caf\u00e9 \u{1F600}", "tick": 12345678901234567890, "tiny": 1e-05, "big": 1e16}';
    const candidates = [
      '{"pos": [1.0, 64.5, 4.75], "yaw": 90.0}',
      '{"pos": [9.0, 64.5, -3.25], "yaw": 90.0}',
      '{"pos": [1.0, 65.5, -3.25], "yaw": 0.0}',
      '{"pos": [1.0, 64.5, -3.25], "yaw": -90.0}',
    ];
    // Row 1 is row 0 with its JSON written differently (key order, spacing): the same task after json.loads.
    const reordered =
      '{"yaw":90.0,"pos":[1.0,64.5,-3.25],"name":"caf\u00e9 \u{1F600}","biome":"snowy_plains","tick":12345678901234567890,"tiny":1e-05,"big":1e16}';
    const shots = (k: number) => ({
      image_initial_state: PNG(10 * k),
      image_candidate_states: [1, 2, 3, 4].map((i) => PNG(10 * k + i)),
    });
    writeMinecraftShard(join(root, 'full', 'test-00000-of-00001.parquet'), [
      {
        example_id: 'mc-0',
        initial_state: initial,
        action: 'Walk forward 8 blocks',
        candidate_states: candidates,
        correct_choice: 1,
        ...shots(1),
      },
      {
        example_id: 'mc-1',
        initial_state: reordered,
        action: 'Walk forward 8 blocks',
        candidate_states: candidates,
        correct_choice: 1,
        ...shots(2),
      },
      {
        example_id: 'mc-2',
        initial_state: initial,
        action: 'Turn left',
        candidate_states: [...candidates].reverse(),
        correct_choice: 4,
        ...shots(3),
      },
    ]);
    const got = await selectOfficial(root, { limit: 2, actions: 10, images: true });
    expect(got.domain).toBe('minecraft');
    expect(got.episodes.map((e) => [e.id, e.target])).toEqual([
      ['mc-0', '1'],
      ['mc-2', '4'],
    ]);
    expect(got.episodes[0].meta.fingerprint).toBe('cbfb79c1b133eef6300f788d2d74d175f8f194c4f0ce9bb5cc84c1f8f9bc5c8b');
    expect(JSON.parse(got.manifest).actions).toBeNull();
    expect(datasetImage({ episode: got.episodes[1], index: 0 })?.bytes).toEqual(PNG(30));
    expect(datasetImage({ episode: got.episodes[1], index: 4 })?.bytes).toEqual(PNG(34));
    rmSync(root, { recursive: true, force: true });
  });

  it('refuses a shard that does not parse and a shard without a needed column, naming the file', async () => {
    const root = mkdtempSync(join(tmpdir(), 'metrl-official-bad-'));
    writeFileSync(join(root, 'test-00000-of-00001.parquet'), 'PAR1 this is not parquet at all PAR1');
    await expect(selectOfficial(root, { limit: 1, actions: 3, images: false })).rejects.toThrow(UserError);
    await expect(selectOfficial(root, { limit: 1, actions: 3, images: false })).rejects.toThrow(
      /test-00000-of-00001.parquet: not a readable parquet shard/,
    );
    const other = mkdtempSync(join(tmpdir(), 'metrl-official-col-'));
    writeTrackShard(join(other, 'full', 'test-00000-of-00001.parquet'), shellRows().slice(0, 1), {
      stateKind: 'int',
      omit: ['states'],
    });
    await expect(selectOfficial(other, { limit: 1, actions: 3, images: false })).rejects.toThrow(
      /missing column 'states'/,
    );
    rmSync(root, { recursive: true, force: true });
    rmSync(other, { recursive: true, force: true });
  });

  it('reads a states column of JSON numbers (a JSON-annotated parquet column) as the integers they are', async () => {
    const root = mkdtempSync(join(tmpdir(), 'metrl-official-json-'));
    const rows = shellRows();
    writeTrackShard(join(root, 'full', 'test-00000-of-00001.parquet'), rows.slice(0, 4), {
      stateKind: 'json',
      images: false,
    });
    const got = await selectOfficial(root, { limit: 3, actions: 3, images: false });
    expect(got.episodes.map((e) => e.target)).toEqual([
      String(rows[0].states[3]),
      String(rows[2].states[3]),
      String(rows[3].states[3]),
    ]);
    expect(got.episodes[0].initialState).toBe('1');
    // The same task as the int64 set: the fingerprint reads the JSON integer as Python's int.
    expect(got.episodes[0].meta.fingerprint).toBe('48a1e20dd0373386adb04973a7b203c650a1f4256a9524e9f68cb264bc168c28');
    rmSync(root, { recursive: true, force: true });
  });

  it('refuses, while reading, a shard whose states are JSON objects, naming the shard, row and column', async () => {
    const root = mkdtempSync(join(tmpdir(), 'metrl-official-objects-'));
    const rows = shellRows().map((r) => ({ ...r, states: r.states.map((st) => ({ position: st })) }));
    writeTrackShard(join(root, 'full', 'test-00000-of-00001.parquet'), rows.slice(0, 2), {
      stateKind: 'json',
      images: false,
    });
    const error = await selectOfficial(root, { limit: 1, actions: 3, images: false }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UserError);
    expect((error as Error).message).toMatch(
      /test-00000-of-00001\.parquet.*: column 'states\[0\]' holds an object, not text or an integer: not a MET-Bench chess or shell row$/,
    );
    rmSync(root, { recursive: true, force: true });
  });
});
