// Small parquet shards in the schemas of the official MET-Bench Hub sets (config "full", split "test"), written with
// hyparquet-writer at test time: chess and shell rows (example_id, initial_state, actions, states, final_state,
// image_actions as a list of {bytes, path} image structs) and Minecraft rows (example_id, initial_state and
// candidate_states as JSON strings, action, correct_choice, and the screenshots as image structs).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';

export interface TrackRow {
  example_id: string;
  initial_state: string | number;
  actions: string[];
  /** Objects only with stateKind 'json' (a JSON column may hold any JSON: what a broken shard holds). */
  states: (string | number | Record<string, unknown>)[];
  image_actions?: Uint8Array[];
}

export interface MinecraftRow {
  example_id: string;
  initial_state: string;
  action: string;
  candidate_states: string[];
  correct_choice: number;
  image_initial_state?: Uint8Array;
  image_candidate_states?: Uint8Array[];
}

const str = (name: string) => ({ name, type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' });
const scalar = (name: string, kind: 'string' | 'int' | 'json') =>
  kind === 'string'
    ? str(name)
    : kind === 'json'
      ? { name, type: 'BYTE_ARRAY', converted_type: 'JSON', repetition_type: 'OPTIONAL' }
      : { name, type: 'INT64', repetition_type: 'OPTIONAL' };
const list = (name: string, element: Record<string, unknown>[]) => [
  { name, repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  ...element,
];
const imageStruct = (name: string) => [
  { name, repetition_type: 'OPTIONAL', num_children: 2 },
  { name: 'bytes', type: 'BYTE_ARRAY', repetition_type: 'OPTIONAL' },
  str('path'),
];
const image = (bytes: Uint8Array, i: number) => ({ bytes, path: `${i}.png` });

function write(
  path: string,
  schema: Record<string, unknown>[],
  columnData: { name: string; data: unknown[] }[],
  rowGroupSize: number,
): void {
  mkdirSync(dirname(path), { recursive: true });
  const root = { name: 'schema', num_children: columnData.length };
  writeFileSync(
    path,
    new Uint8Array(parquetWriteBuffer({ schema: [root, ...schema], columnData, rowGroupSize } as never)),
  );
}

/** A chess or shell shard; shell states as int64 when `stateKind` is 'int', JSON numbers when 'json' (chess: FEN strings). */
export function writeTrackShard(
  path: string,
  rows: TrackRow[],
  options: { stateKind?: 'string' | 'int' | 'json'; images?: boolean; rowGroupSize?: number; omit?: string[] } = {},
): void {
  const kind = options.stateKind ?? 'string';
  const images = options.images ?? true;
  const columns = [
    { schema: [str('example_id')], data: { name: 'example_id', data: rows.map((r) => r.example_id) } },
    {
      schema: [scalar('initial_state', kind)],
      data: {
        name: 'initial_state',
        data: rows.map((r) =>
          kind === 'int' ? BigInt(r.initial_state) : kind === 'json' ? Number(r.initial_state) : r.initial_state,
        ),
      },
    },
    { schema: list('actions', [str('element')]), data: { name: 'actions', data: rows.map((r) => r.actions) } },
    {
      schema: list('states', [scalar('element', kind)]),
      data: {
        name: 'states',
        data: rows.map((r) =>
          r.states.map((s) =>
            kind === 'int' ? BigInt(s as number) : kind === 'json' ? (typeof s === 'object' ? s : Number(s)) : s,
          ),
        ),
      },
    },
    {
      schema: [scalar('final_state', kind)],
      data: {
        name: 'final_state',
        data: rows.map((r) =>
          kind === 'int'
            ? BigInt(r.states.at(-1) as number)
            : kind === 'json'
              ? typeof r.states.at(-1) === 'object'
                ? r.states.at(-1)
                : Number(r.states.at(-1))
              : r.states.at(-1),
        ),
      },
    },
    ...(images
      ? [
          {
            schema: list('image_actions', imageStruct('element')),
            data: { name: 'image_actions', data: rows.map((r) => (r.image_actions ?? []).map(image)) },
          },
        ]
      : []),
  ].filter((c) => !(options.omit ?? []).includes(c.data.name));
  write(
    path,
    columns.flatMap((c) => c.schema),
    columns.map((c) => c.data),
    options.rowGroupSize ?? 2,
  );
}

export function writeMinecraftShard(path: string, rows: MinecraftRow[], options: { rowGroupSize?: number } = {}): void {
  const schema = [
    str('example_id'),
    str('initial_state'),
    str('action'),
    ...list('candidate_states', [str('element')]),
    scalar('correct_choice', 'int'),
    ...imageStruct('image_initial_state'),
    ...list('image_candidate_states', imageStruct('element')),
  ];
  const columnData = [
    { name: 'example_id', data: rows.map((r) => r.example_id) },
    { name: 'initial_state', data: rows.map((r) => r.initial_state) },
    { name: 'action', data: rows.map((r) => r.action) },
    { name: 'candidate_states', data: rows.map((r) => r.candidate_states) },
    { name: 'correct_choice', data: rows.map((r) => BigInt(r.correct_choice)) },
    { name: 'image_initial_state', data: rows.map((r) => image(r.image_initial_state ?? new Uint8Array(), 0)) },
    { name: 'image_candidate_states', data: rows.map((r) => (r.image_candidate_states ?? []).map(image)) },
  ];
  write(path, schema, columnData, options.rowGroupSize ?? 2);
}

/** Bytes with a PNG signature and a marker byte: enough for the reader, which keeps image bytes as they are. */
export const PNG = (n: number) => new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, n]);

/** Five shell rows, T = 3: row 1 repeats row 0's task (same start, same first three swaps), row 4 is too short. */
export function shellRows(): TrackRow[] {
  const swaps = ['1 swap 2', '2 swap 3', '1 swap 3', '1 swap 2'];
  const run = (start: number, actions: string[]) => {
    const states = [start];
    for (const a of actions) {
      const [x, y] = a.split(' swap ').map(Number);
      const b = states.at(-1)!;
      states.push(b === x ? y : b === y ? x : b);
    }
    return states;
  };
  const row = (id: string, start: number, actions: string[]): TrackRow => ({
    example_id: id,
    initial_state: start,
    actions,
    states: run(start, actions),
    image_actions: actions.map((_, i) => PNG(i)),
  });
  return [
    row('shell-test-000000', 1, swaps),
    // Same initial state and first three actions as row 0 (T = 3): the same task, skipped.
    row('shell-test-000001', 1, [...swaps.slice(0, 3), '2 swap 3']),
    row('shell-test-000002', 3, swaps),
    row('shell-test-000003', 2, ['2 swap 3', '1 swap 2', '1 swap 3', '2 swap 3']),
    row('shell-test-000004', 2, ['1 swap 2', '1 swap 3']), // short: stops a selection that reaches it
  ];
}
