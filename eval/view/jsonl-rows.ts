// Reading a JSONL log that another process may be writing, for `metrl view`: never writes (unlike core/files.ts's
// repair), never throws on content. A missing file reads as `missing`; a torn last line (the writer mid-line, or
// killed) is left out quietly; a bad line elsewhere is left out and named in `problems`, so the page can say so.
// Parsed rows are cached per file and reused while its size and modification time stay the same.
import { readFileSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import type { output, ZodType } from 'zod';

export interface Rows<T> {
  rows: T[];
  /** The file does not exist (yet, or any more). */
  missing: boolean;
  /** One line per bad row ("samples.jsonl:12: not valid JSON"), at most a few. */
  problems: string[];
  /** Size and modification time: changes when the file does. */
  stamp: string;
}

/** A row parser: the row, or a sentence saying why the value is not one. */
export type RowParser<T> = (value: unknown) => { row: T } | { error: string };

/** A parser from a zod schema; a value it refuses is "not <what>". */
export function schemaRows<S extends ZodType>(schema: S, what: string): RowParser<output<S>> {
  return (value) => {
    const parsed = schema.safeParse(value);
    return parsed.success ? { row: parsed.data } : { error: `not ${what}` };
  };
}

const MAX_PROBLEMS = 5;
const cache = new Map<string, { stamp: string; parse: unknown; result: Rows<unknown> }>();

/** The file's size and modification time, or '' when it cannot be stat'ed. */
export function fileStamp(path: string): string {
  try {
    const s = statSync(path);
    return `${s.size}:${s.mtimeMs}`;
  } catch {
    return '';
  }
}

export function readRows<T>(path: string, parse: RowParser<T>): Rows<T> {
  const stamp = fileStamp(path);
  if (stamp === '') return { rows: [], missing: true, problems: [], stamp };
  const hit = cache.get(path);
  if (hit && hit.stamp === stamp && hit.parse === parse) return hit.result as Rows<T>;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    return {
      rows: [],
      missing: true,
      problems: [`${basename(path)}: cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`],
      stamp: '',
    };
  }
  const lines = text.split('\n');
  const rows: T[] = [];
  const problems: string[] = [];
  let bad = 0;
  const note = (line: number, why: string) => {
    if (++bad <= MAX_PROBLEMS) problems.push(`${basename(path)}:${line}: ${why}`);
  };
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      if (i === lines.length - 1) return; // torn tail: the writer is mid-line or was killed
      note(i + 1, 'not valid JSON (left out)');
      return;
    }
    const parsed = parse(value);
    if ('error' in parsed) note(i + 1, `${parsed.error} (left out)`);
    else rows.push(parsed.row);
  });
  if (bad > MAX_PROBLEMS) problems.push(`${basename(path)}: ${bad - MAX_PROBLEMS} more bad lines left out`);
  const result: Rows<T> = { rows, missing: false, problems, stamp };
  cache.set(path, { stamp, parse, result });
  if (cache.size > 64) cache.delete(cache.keys().next().value!);
  return result;
}
