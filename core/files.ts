// File helpers for long jobs: atomic writes (temp file + rename, so a killed process never leaves half a file),
// JSON files read through a zod schema, JSONL reading that tolerates a torn last line (the one a kill can leave) but
// reports corruption anywhere else. Layer: core/.
import { mkdirSync, readFileSync, renameSync, writeFileSync, existsSync, readdirSync, appendFileSync, truncateSync } from 'node:fs';
import { dirname, basename, join } from 'node:path';
import type { output, ZodError, ZodType } from 'zod';
import { UserError, describeZodError } from './errors.ts';

export function ensureDir(dir: string): void {
  mkdirSync(dir, { recursive: true });
}

/** Write a file atomically: the old content or the new, never a mix. */
export function writeFileAtomic(path: string, data: string | Uint8Array): void {
  ensureDir(dirname(path));
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  writeFileSync(tmp, data);
  renameSync(tmp, path);
}

export function writeJsonAtomic(path: string, value: unknown): void {
  writeFileAtomic(path, JSON.stringify(value, null, 2) + '\n');
}

export interface ReadJsonOptions {
  /** Put in front of every message, e.g. '--config: ' for a file named by a flag. */
  prefix?: string;
  /** The message (after "<path>: ") when the JSON does not fit the schema; default: the first offending field. */
  invalid?: string | ((error: ZodError) => string);
}

/**
 * Read a JSON file and check it with `schema`. Every failure is a UserError naming the file: "<path>: no such file",
 * "<path>: not valid JSON", or "<path>: <invalid>" when the value does not fit the schema.
 */
export function readJson<S extends ZodType>(path: string, schema: S, options: ReadJsonOptions = {}): output<S> {
  const where = `${options.prefix ?? ''}${path}: `;
  if (!existsSync(path)) throw new UserError(`${where}no such file`);
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    throw new UserError(`${where}not valid JSON`);
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const { invalid } = options;
  if (invalid === undefined) throw new UserError(describeZodError(parsed.error, where, value));
  throw new UserError(`${where}${typeof invalid === 'string' ? invalid : invalid(parsed.error)}`);
}

/** True when the directory does not exist or is empty. */
export function isEmptyDir(dir: string): boolean {
  return !existsSync(dir) || readdirSync(dir).length === 0;
}

export interface JsonlRow<T = unknown> {
  line: number; // 1-based line number in the file
  value: T;
}

export interface ReadJsonlOptions {
  /** Drop (and optionally truncate away) an unparseable final line without a newline: the trace of a killed writer. */
  repairTornTail?: boolean;
}

/**
 * Read a JSONL file. A line that does not parse is a UserError naming the file and line, except a torn last line
 * when `repairTornTail` is set: that one is cut from the file and reported in `repaired`.
 */
export function readJsonl<T = unknown>(path: string, options: ReadJsonlOptions = {}): { rows: JsonlRow<T>[]; repaired: boolean } {
  if (!existsSync(path)) throw new UserError(`${path}: no such file`);
  const text = readFileSync(path, 'utf8');
  const lines = text.split('\n');
  const endsClean = text.endsWith('\n') || text.length === 0;
  const rows: JsonlRow<T>[] = [];
  let offset = 0;
  let repaired = false;
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i];
    const isLast = i === lines.length - 1;
    if (raw.trim() !== '') {
      try {
        rows.push({ line: i + 1, value: JSON.parse(raw) as T });
      } catch {
        if (isLast && !endsClean && options.repairTornTail) {
          truncateSync(path, Buffer.byteLength(text.slice(0, offset)));
          repaired = true;
          break;
        }
        throw new UserError(`${path}:${i + 1}: not valid JSON`);
      }
    }
    offset += raw.length + 1;
  }
  return { rows, repaired };
}

/** Append rows to a JSONL file, one write per call so that a kill tears at most the last line. */
export function appendJsonl(path: string, rows: unknown[]): void {
  if (rows.length === 0) return;
  ensureDir(dirname(path));
  appendFileSync(path, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
}
