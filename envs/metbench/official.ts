// The official MET-Bench test sets (vanyacohen/MET-Bench-Chess, -Shell, -Minecraft on the Hub: config "full", split
// "test", parquet shards), read as the authors' harness reads them so that metrl's scores can be set beside the
// published ones. What the harness does (metbench/data.py and evaluate.py of github.com/vanyacohen/MET-Bench, read for
// behaviour, not copied):
//   - rows in source order (shards sorted by name, rows in order), and for each its task input's fingerprint: the
//     sha256 of json.dumps(value, sort_keys=True, separators=(",", ":")) of [initial_state, the first T actions] for
//     chess and shell, of [json.loads(initial_state), action, [json.loads(s) for s in candidate_states]] for Minecraft;
//   - a chess or shell row with fewer than T actions or at most T states stops the selection (the harness raises);
//   - a row whose fingerprint was seen is skipped; the first `limit` (500) new ones are the selection, and fewer than
//     that is an error;
//   - chess and shell trajectories are cut to T actions (T = 10) and the target is states[T], the state after action T;
//     a Minecraft target is correct_choice;
//   - `<domain>-selection.json` records the dataset, its revision, the split, T and each example's example_id,
//     source_row and fingerprint (json.dumps(…, indent=2) and a newline).
// Rows are read one row group at a time; images are read only for the rows selected, and kept as the bytes the set
// stores (envs/dataset-images.ts).
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, join, relative, resolve, sep } from 'node:path';
import { UserError } from '../../core/errors.ts';
import { PyFloat, pyDumps, pyLoads, type PyValue } from '../../core/python-json.ts';
import type { Domain, Episode } from '../../core/episode.ts';
import { imageMime, putDatasetImage } from '../dataset-images.ts';
import { minecraftQuestion } from '../minecraft/prompt.ts';
import {
  columnNames,
  openShard,
  readRows,
  requireColumns,
  rowGroupRanges,
  type CellValue,
  type OpenShard,
  type Row,
} from './parquet-rows.ts';

export type OfficialDomain = Extract<Domain, 'chess' | 'shell' | 'minecraft'>;

/** The revisions the harness pins (metbench/data.py RELEASES). */
export const RELEASES: Record<OfficialDomain, { repo: string; revision: string }> = {
  chess: { repo: 'vanyacohen/MET-Bench-Chess', revision: '904aa58057bf84e0521424f8578f1cae6e6a8ac6' },
  shell: { repo: 'vanyacohen/MET-Bench-Shell', revision: '69dc45b9a0bbf57c3104fca0fc647669bdbf744a' },
  minecraft: { repo: 'vanyacohen/MET-Bench-Minecraft', revision: '26a94db00630b8ba25f2b23e0db21feffe1f602a' },
};

/** The harness's default: 500 distinct tasks per domain. */
export const OFFICIAL_LIMIT = 500;
const CONFIG = 'full';

const TRACK_COLUMNS = ['example_id', 'initial_state', 'actions', 'states'];
const MINECRAFT_COLUMNS = ['example_id', 'initial_state', 'action', 'candidate_states', 'correct_choice'];
const TRACK_IMAGES = ['image_actions'];
const MINECRAFT_IMAGES = ['image_initial_state', 'image_candidate_states'];

/** Where a set came from, as the selection manifest names it. */
export interface OfficialSource {
  /** Repository id (owner/name), from the hf:// address or the Hugging Face cache path; else the harness's. */
  repo: string;
  /** The commit, when known (hf://, or a path inside a Hugging Face cache snapshot); null for a plain folder. */
  revision: string | null;
}

export interface OfficialSelection {
  domain: OfficialDomain;
  source: OfficialSource;
  /** T for chess and shell; null for Minecraft (one action per task). */
  actions: number | null;
  episodes: Episode[];
  /** `<domain>-selection.json` as the harness writes it. */
  manifestFile: string;
  manifest: string;
  /** How many test rows were read to find the selection. */
  rowsScanned: number;
}

/** Is PATH a local copy of a Hub parquet dataset (a .parquet file, or a folder holding parquet shards)? */
export function isParquetDataset(path: string): boolean {
  const full = resolve(path);
  if (!existsSync(full)) return false;
  if (statSync(full).isFile()) return full.endsWith('.parquet');
  return parquetFiles(full).length > 0;
}

function parquetFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue;
      const p = join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      // Files in a Hugging Face cache snapshot are symlinks to blobs.
      else if (entry.name.endsWith('.parquet') && statSync(p).isFile()) out.push(p);
    }
  };
  walk(dir);
  return out.sort();
}

/**
 * The shards of one split, in the order `datasets` streams them (sorted by path): `full/<split>-*.parquet` or
 * `full/<split>/*.parquet` (config "full"), else `data/<split>-*` or `<split>-*` for a set without configs. PATH may
 * also name a single shard.
 */
export function splitShards(path: string, split: 'test' | 'train'): string[] {
  const full = resolve(path);
  if (statSync(full).isFile()) return [full];
  const files = parquetFiles(full).map((f) => ({ f, parts: relative(full, f).split(sep) }));
  const inSplit = (parts: string[]) =>
    parts.length >= 2 &&
    (parts[parts.length - 2] === split ||
      basename(parts[parts.length - 1]).startsWith(`${split}-`) ||
      basename(parts[parts.length - 1]) === `${split}.parquet`);
  const configured = files.filter(({ parts }) => parts.includes(CONFIG));
  const pool = configured.length > 0 ? configured : files;
  const shards = pool.filter(
    ({ parts }) =>
      inSplit(parts) || (parts.length === 1 && (parts[0].startsWith(`${split}-`) || parts[0] === `${split}.parquet`)),
  );
  return shards.map(({ f }) => f);
}

/** The repository and revision a path inside a Hugging Face cache names (…/datasets--owner--name/snapshots/<sha>/…). */
function cacheSource(path: string): OfficialSource | null {
  const m = /datasets--([^/\\]+)--([^/\\]+)[/\\]snapshots[/\\]([0-9a-f]{40})/.exec(resolve(path));
  return m ? { repo: `${m[1]}/${m[2]}`, revision: m[3] } : null;
}

/** Which domain a set is: by its repository name when known, else by its columns and first row. */
function detectDomain(shard: OpenShard, firstInitial: CellValue | undefined, repo: string | null): OfficialDomain {
  const byRepo =
    repo &&
    (Object.entries(RELEASES) as [OfficialDomain, { repo: string }][]).find(
      ([, r]) => r.repo.toLowerCase() === repo.toLowerCase(),
    );
  if (byRepo) return byRepo[0];
  const columns = new Set(columnNames(shard));
  if (columns.has('candidate_states')) return 'minecraft';
  if (!columns.has('initial_state'))
    throw new UserError(
      `${shard.path}: missing column 'initial_state': not a MET-Bench test shard (chess and shell have ${TRACK_COLUMNS.join(', ')}; Minecraft has ${MINECRAFT_COLUMNS.join(', ')})`,
    );
  // A chess state is a FEN (ranks separated by '/'); a shell state is the ball's shell.
  return typeof firstInitial === 'string' && firstInitial.includes('/') ? 'chess' : 'shell';
}

/** sha256 of the task input as the harness serialises it. */
export function taskFingerprint(value: PyValue): string {
  return createHash('sha256')
    .update(pyDumps(value, { sortKeys: true }), 'utf8')
    .digest('hex');
}

/** str(value) in Python, for the scalar states and ids the sets hold. */
function pyStr(value: CellValue): string {
  if (typeof value === 'string') return value;
  if (value instanceof Uint8Array) throw new TypeError('bytes have no text form here');
  return pyDumps(value as PyValue);
}

function asList(value: CellValue, what: string, where: string): CellValue[] {
  if (!Array.isArray(value)) throw new UserError(`${where}: column '${what}' is not a list`);
  return value;
}

/** A chess or shell cell: a string or an integer; anything else is a UserError naming the column and what it holds. */
function scalar(value: CellValue, what: string, where: string): void {
  if (typeof value === 'string' || typeof value === 'bigint') return;
  const kind =
    value === null
      ? 'null'
      : value instanceof Uint8Array
        ? 'bytes'
        : Array.isArray(value)
          ? 'a list'
          : value instanceof PyFloat
            ? 'a float'
            : typeof value === 'object'
              ? 'an object'
              : typeof value;
  throw new UserError(
    `${where}: column '${what}' holds ${kind}, not text or an integer: not a MET-Bench chess or shell row`,
  );
}

function asJson(value: CellValue, what: string, where: string): PyValue {
  if (typeof value !== 'string') throw new UserError(`${where}: column '${what}' is not a JSON string`);
  try {
    return pyLoads(value);
  } catch (error) {
    throw new UserError(`${where}: column '${what}' is not JSON (${(error as Error).message})`);
  }
}

/** The bytes of an image struct {bytes, path}; the sets embed the bytes. */
function imageBytes(value: CellValue, where: string): { bytes: Uint8Array; mime: string } {
  const bytes =
    value !== null && typeof value === 'object' && !(value instanceof Uint8Array) && !Array.isArray(value)
      ? (value as Record<string, CellValue>).bytes
      : undefined;
  if (!(bytes instanceof Uint8Array))
    throw new UserError(`${where}: an image without embedded bytes (expected a {bytes, path} struct)`);
  const mime = imageMime(bytes);
  if (mime === null) throw new UserError(`${where}: image bytes that are neither PNG, JPEG, WebP nor GIF`);
  return { bytes, mime };
}

export interface SelectOptions {
  /** Distinct tasks to select (the harness's --limit, 500). */
  limit: number;
  /** T, the actions kept of each chess or shell trajectory (the harness's --actions, 10). */
  actions: number;
  /** Read and keep the selected rows' images (an image modality is evaluated). */
  images: boolean;
  /** Repository and revision, when the caller knows them (hf://). */
  source?: OfficialSource;
  /** The split read (default test, which the harness evaluates; train rows are for `metrl train`). */
  split?: 'test' | 'train';
  /** Return the distinct tasks there are when fewer than `limit` (training); the harness's selection refuses. */
  atMost?: boolean;
  /** Fingerprints to leave out (train tasks that are also test tasks). */
  exclude?: Set<string>;
}

/** Read PATH's test split and select the tasks the harness would, as episodes in source order. */
export async function selectOfficial(path: string, options: SelectOptions): Promise<OfficialSelection> {
  const split = options.split ?? 'test';
  const shardPaths = splitShards(path, split);
  if (shardPaths.length === 0)
    throw new UserError(
      `--dataset ${path}: no ${split} shards (expected ${CONFIG}/${split}-*.parquet, as the Hub stores MET-Bench)`,
    );
  const known = options.source ?? cacheSource(path);
  let domain: OfficialDomain | null = null;
  const episodes: Episode[] = [];
  const seen = new Set<string>();
  let sourceRow = 0;
  const T = options.actions;
  for (const shardPath of shardPaths) {
    const shard = await openShard(shardPath);
    if (domain === null) {
      const first =
        columnNames(shard).includes('initial_state') && shard.metadata.row_groups.length > 0
          ? (await readRows(shard, ['initial_state'], 0, 1))[0]?.initial_state
          : undefined;
      domain = detectDomain(shard, first, known?.repo ?? null);
    }
    const minecraft = domain === 'minecraft';
    const columns = minecraft ? MINECRAFT_COLUMNS : TRACK_COLUMNS;
    requireColumns(shard, columns, `a MET-Bench ${domain} test shard`);
    const imageColumns = minecraft ? MINECRAFT_IMAGES : TRACK_IMAGES;
    if (options.images)
      requireColumns(shard, [...columns, ...imageColumns], `a MET-Bench ${domain} test shard with images`);
    for (const [start, end] of rowGroupRanges(shard)) {
      const rows = await readRows(shard, columns, start, end);
      const kept: { at: number; episode: Episode }[] = [];
      for (let i = 0; i < rows.length; i++, sourceRow++) {
        const where = `${shardPath}: ${split} row ${sourceRow}`;
        const made = minecraft
          ? minecraftTask(rows[i], sourceRow, where)
          : trackTask(domain, rows[i], sourceRow, T, where);
        made.episode.split = split;
        if (seen.has(made.fingerprint) || options.exclude?.has(made.fingerprint)) continue;
        seen.add(made.fingerprint);
        kept.push({ at: i, episode: made.episode });
        if (episodes.length + kept.length === options.limit) break;
      }
      if (options.images && kept.length > 0) {
        const first = start + kept[0].at;
        const last = start + kept[kept.length - 1].at;
        const imageRows = await readRows(shard, imageColumns, first, last + 1);
        for (const { at, episode } of kept)
          attachImages(
            episode,
            imageRows[start + at - first],
            minecraft,
            T,
            `${shardPath}: ${split} row ${episode.meta.source_row}`,
          );
      }
      episodes.push(...kept.map((k) => k.episode));
      if (episodes.length === options.limit) return finish(domain, known, options, episodes, sourceRow + 1);
    }
  }
  if (options.atMost && episodes.length > 0) return finish(domain!, known, options, episodes, sourceRow);
  throw new UserError(
    `--dataset ${path}: only ${episodes.length} distinct ${domain} tasks among its ${sourceRow} ${split} rows, ${options.limit} asked (the harness selects ${OFFICIAL_LIMIT}; lower --n)`,
  );
}

/** A chess or shell row: the task input, cut to T actions, and the state after action T. */
function trackTask(
  domain: OfficialDomain,
  row: Row,
  sourceRow: number,
  T: number,
  where: string,
): { fingerprint: string; episode: Episode } {
  const actions = asList(row.actions, 'actions', where);
  const states = asList(row.states, 'states', where);
  // The sets hold states and actions as text (FENs, UCI moves, shell positions) or integers; anything else (a JSON
  // object, a list) would become a target no answer can match, found only after the run folder is written.
  scalar(row.initial_state, 'initial_state', where);
  actions.forEach((a, i) => scalar(a, `actions[${i}]`, where));
  states.forEach((st, i) => scalar(st, `states[${i}]`, where));
  if (actions.length < T || states.length <= T) {
    throw new UserError(
      `${where}: a short trajectory (${actions.length} actions, ${states.length} states) where ${T} actions need at least ${T} actions and ${T + 1} states; the harness stops here too`,
    );
  }
  const prefix = actions.slice(0, T);
  const fingerprint = taskFingerprint([row.initial_state as PyValue, prefix as PyValue[]]);
  const id = row.example_id === null ? `${domain}-test-row${sourceRow}` : pyStr(row.example_id);
  const episode: Episode = {
    id,
    domain,
    split: 'test',
    initialState: pyStr(row.initial_state),
    actions: prefix.map((a) => ({ text: pyStr(a), modality: 'text' as const })),
    target: pyStr(states[T]),
    meta: { example_id: exampleId(row.example_id), source_row: sourceRow, fingerprint },
  };
  return { fingerprint, episode };
}

/** A Minecraft row: the initial state, the action, four candidate next states and the correct choice. */
function minecraftTask(row: Row, sourceRow: number, where: string): { fingerprint: string; episode: Episode } {
  const candidates = asList(row.candidate_states, 'candidate_states', where);
  if (typeof row.action !== 'string') throw new UserError(`${where}: column 'action' is not text`);
  const fingerprint = taskFingerprint([
    asJson(row.initial_state, 'initial_state', where),
    row.action,
    candidates.map((c) => asJson(c, 'candidate_states', where)),
  ]);
  const choice = pyStr(row.correct_choice);
  if (!/^[1-9]$/.test(choice) || Number(choice) > candidates.length)
    throw new UserError(`${where}: correct_choice ${choice} is not one of 1-${candidates.length}`);
  const candidateStates = candidates.map((c) => pyStr(c));
  const id = row.example_id === null ? `minecraft-test-row${sourceRow}` : pyStr(row.example_id);
  const episode: Episode = {
    id,
    domain: 'minecraft',
    split: 'test',
    initialState: pyStr(row.initial_state),
    actions: [{ text: row.action, modality: 'text' }],
    target: choice,
    question: minecraftQuestion(candidateStates),
    meta: {
      example_id: exampleId(row.example_id),
      source_row: sourceRow,
      fingerprint,
      candidate_states: candidateStates,
    },
  };
  return { fingerprint, episode };
}

/** example_id as JSON keeps it (episodes are JSON): a string, or an integer id as a number. */
function exampleId(value: CellValue): string | number | null {
  if (value === null) return null;
  return typeof value === 'bigint' ? Number(value) : pyStr(value);
}

/** Keep a selected row's pictures (the first T action images; Minecraft: the initial frame, then the candidates). */
function attachImages(episode: Episode, row: Row, minecraft: boolean, T: number, where: string): void {
  const pictures = minecraft
    ? [row.image_initial_state, ...asList(row.image_candidate_states, 'image_candidate_states', where)]
    : asList(row.image_actions, 'image_actions', where).slice(0, T);
  const keys = pictures.map((picture, i) => {
    const key = `${episode.id}#${i}`;
    putDatasetImage(key, imageBytes(picture, where));
    return key;
  });
  episode.meta.images = keys;
}

function finish(
  domain: OfficialDomain,
  known: OfficialSource | null,
  options: SelectOptions,
  episodes: Episode[],
  rowsScanned: number,
): OfficialSelection {
  const source = known ?? { repo: RELEASES[domain].repo, revision: null };
  const actions = domain === 'minecraft' ? null : options.actions;
  // Key order and layout as the harness's selection_manifest and write_json (indent 2, trailing newline).
  const manifest: PyValue = {
    dataset: source.repo,
    revision: source.revision,
    split: 'test',
    actions: actions === null ? null : BigInt(actions),
    examples: episodes.map((e) => ({
      example_id:
        typeof e.meta.example_id === 'number' ? BigInt(e.meta.example_id) : (e.meta.example_id as string | null),
      source_row: BigInt(e.meta.source_row as number),
      fingerprint: e.meta.fingerprint as string,
    })),
  };
  return {
    domain,
    source,
    actions,
    episodes,
    manifestFile: `${domain}-selection.json`,
    manifest: `${pyDumps(manifest, { indent: 2 })}\n`,
    rowsScanned,
  };
}
