// Rows of Hugging Face parquet shards, read one row group at a time (hyparquet), so a test split of any size never
// sits in memory at once: a caller asks for some columns of every row, and for other columns (the images) only of the
// rows it keeps. Values keep the types Python's `datasets` gives them (core/python-json.ts): integers as bigint,
// floats as PyFloat, strings, lists; binary leaves (image bytes) stay Uint8Array. A file that is not parquet or lacks
// a column is one UserError naming the shard.
import { statSync } from 'node:fs';
import {
  asyncBufferFromFile,
  parquetMetadataAsync,
  parquetReadObjects,
  parquetSchema,
  type AsyncBuffer,
  type FileMetaData,
  type SchemaTree,
} from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { UserError } from '../../core/errors.ts';
import { PyFloat, type PyValue } from '../../core/python-json.ts';

/** A value read from a shard: a Python value, or bytes (image structs hold `{bytes, path}`). */
export type CellValue = PyValue | Uint8Array | CellValue[] | { [key: string]: CellValue };
export type Row = Record<string, CellValue>;

export interface OpenShard {
  path: string;
  file: AsyncBuffer;
  metadata: FileMetaData;
  schema: SchemaTree;
}

/** Open a shard and read its footer; a file that is not parquet is a UserError naming it. */
export async function openShard(path: string): Promise<OpenShard> {
  let file: AsyncBuffer;
  let metadata: FileMetaData;
  try {
    if (statSync(path).size < 12) throw new Error('too short to be parquet');
    file = await asyncBufferFromFile(path);
    metadata = await parquetMetadataAsync(file);
  } catch (error) {
    throw new UserError(
      `${path}: not a readable parquet shard (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  return { path, file, metadata, schema: parquetSchema(metadata) };
}

/** The top-level column names of a shard. */
export function columnNames(shard: OpenShard): string[] {
  return shard.schema.children.map((c) => c.element.name);
}

/** Refuse a shard without the columns a reader needs, naming the first missing one. */
export function requireColumns(shard: OpenShard, columns: string[], what: string): void {
  const have = new Set(columnNames(shard));
  const missing = columns.find((c) => !have.has(c));
  if (missing !== undefined)
    throw new UserError(`${shard.path}: missing column '${missing}' (${what} has ${columns.join(', ')})`);
}

/** Row-group boundaries of a shard: [start, end) row indices within it. */
export function rowGroupRanges(shard: OpenShard): [number, number][] {
  const ranges: [number, number][] = [];
  let start = 0;
  for (const group of shard.metadata.row_groups) {
    const end = start + Number(group.num_rows);
    ranges.push([start, end]);
    start = end;
  }
  return ranges;
}

/** Some columns of rows [start, end) of a shard, typed as Python reads them. */
export async function readRows(shard: OpenShard, columns: string[], start: number, end: number): Promise<Row[]> {
  let raw: Record<string, unknown>[];
  try {
    // utf8: false keeps unannotated binary (image bytes) as bytes; string columns carry the UTF8 annotation.
    raw = await parquetReadObjects({
      file: shard.file,
      metadata: shard.metadata,
      columns,
      rowStart: start,
      rowEnd: end,
      utf8: false,
      compressors,
    });
  } catch (error) {
    throw new UserError(
      `${shard.path}: rows ${start}-${end - 1} do not parse (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  const nodes = new Map(shard.schema.children.map((c) => [c.element.name, c]));
  return raw.map((r) => Object.fromEntries(columns.map((c) => [c, toCell(r[c], nodes.get(c)!)])));
}

function isList(node: SchemaTree): boolean {
  return node.element.converted_type === 'LIST' || node.element.logical_type?.type === 'LIST';
}

/** A decoded value with the Python type its schema node gives it. */
function toCell(value: unknown, node: SchemaTree): CellValue {
  if (value === null || value === undefined) return null;
  if (isList(node)) {
    // Three-level list (LIST → repeated group → element) or the legacy two-level form.
    const repeated = node.children[0];
    const element =
      repeated.element.type === undefined && repeated.children.length === 1 ? repeated.children[0] : repeated;
    return (value as unknown[]).map((v) => toCell(v, element));
  }
  if (node.children.length > 0) {
    const object = value as Record<string, unknown>;
    return Object.fromEntries(node.children.map((c) => [c.element.name, toCell(object[c.element.name], c)]));
  }
  switch (node.element.type) {
    case 'INT32':
    case 'INT64':
      return BigInt(value as number | bigint);
    case 'FLOAT':
    case 'DOUBLE':
      return new PyFloat(Number(value));
    case 'BOOLEAN':
      return Boolean(value);
    default:
      // A JSON-annotated column arrives parsed (hyparquet): numbers, objects, lists, as JSON.parse made them.
      return value instanceof Uint8Array ? value : fromJson(value);
  }
}

/**
 * A value JSON.parse made, with Python's types: whole numbers as int (bigint), others as float, lists and dicts
 * element by element. (JSON.parse has already read 2.0 as 2: such a float comes back an int.) Left as it was, a number
 * became the target "{}" (a JS number is no PyValue).
 */
function fromJson(value: unknown): CellValue {
  if (value === null || typeof value === 'string' || typeof value === 'boolean' || typeof value === 'bigint')
    return value;
  if (typeof value === 'number') return Number.isInteger(value) ? BigInt(value) : new PyFloat(value);
  if (Array.isArray(value)) return value.map(fromJson);
  if (typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fromJson(v)]));
  throw new UserError(`a parquet value of JavaScript type ${typeof value}, which no MET-Bench column holds`);
}
