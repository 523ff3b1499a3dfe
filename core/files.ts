// File helpers for long jobs: atomic writes (temp file + rename, so a killed process never leaves half a file),
// JSON files read through a zod schema, JSONL reading that tolerates a torn last line (the one a kill can leave) but
// reports corruption anywhere else.
import {
  mkdirSync,
  readFileSync,
  renameSync,
  writeFileSync,
  existsSync,
  readdirSync,
  appendFileSync,
  truncateSync,
  rmSync,
  statSync,
} from 'node:fs';
import { dirname, basename, join, resolve } from 'node:path';
import type { output, ZodError, ZodType } from 'zod';
import { UserError, describeZodError, systemErrorAsUserError } from './errors.ts';

/**
 * Create a folder and its parents; a folder that cannot be made is a UserError naming `named` (default: the folder),
 * e.g. "out/x: cannot create folder: a part of the path is a file, not a folder (ENOTDIR)".
 */
export function ensureDir(dir: string, named = dir): void {
  try {
    makeDirs(dir);
  } catch (error) {
    // mkdir -p reports a file in the way as EEXIST on that file: say what it means for the path the user gave.
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' || code === 'ENOTDIR')
      throw new UserError(`${named}: cannot create folder: a part of the path is a file, not a folder (ENOTDIR)`);
    throw systemErrorAsUserError(error, named, 'cannot create folder');
  }
}

/**
 * mkdir -p that ends. Node's `mkdirSync(dir, { recursive: true })` retries for ever when the kernel answers ENOENT for
 * a folder whose parent exists (procfs: /proc/self/x), spinning a core; here each missing folder is made once, from the
 * first existing ancestor down, and any failure is thrown as the system reported it.
 */
export function makeDirs(dir: string): void {
  const missing: string[] = [];
  for (let d = resolve(dir); !existsSync(d); d = dirname(d)) {
    missing.push(d);
    if (dirname(d) === d) break;
  }
  for (const d of missing.reverse()) {
    try {
      mkdirSync(d);
    } catch (error) {
      // Made by someone else meanwhile (two workers, two processes): that is what was wanted.
      if ((error as NodeJS.ErrnoException).code === 'EEXIST' && statSync(d).isDirectory()) continue;
      throw error;
    }
  }
}

/**
 * ensureDir for a job's output folder, made before its set-up so that a path that cannot be written fails at once.
 * Returns an undo for the way out of a failure: it removes the folders this call made, if nothing was written in them.
 */
export function claimDir(dir: string, named = dir): () => void {
  let top: string | null = null;
  for (let d = dir; !existsSync(d); d = dirname(d)) {
    top = d;
    if (dirname(d) === d) break;
  }
  ensureDir(dir, named);
  return () => {
    if (top !== null && isEmptyTree(top)) removeQuietly(top);
  };
}

/** Whether a folder holds no files at any depth (empty folders only). */
function isEmptyTree(dir: string): boolean {
  try {
    return readdirSync(dir, { withFileTypes: true }).every((e) => e.isDirectory() && isEmptyTree(join(dir, e.name)));
  } catch {
    return false;
  }
}

/** Remove a file or folder if it is there; never throws (used on the way out of a failure). */
export function removeQuietly(path: string): void {
  try {
    rmSync(path, { recursive: true, force: true });
  } catch {
    // nothing there, or nothing we may remove: either way nothing of ours is left to clean
  }
}

/**
 * Write a file atomically: the old content or the new, never a mix. A path that cannot be written (a read-only folder,
 * a parent that is a file, a folder in the way, a full disk) is a UserError naming `path`; the temp file is removed.
 */
export function writeFileAtomic(path: string, data: string | Uint8Array): void {
  ensureDir(dirname(path), path);
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    writeFileSync(tmp, data);
    renameSync(tmp, path);
  } catch (error) {
    removeQuietly(tmp);
    throw systemErrorAsUserError(error, path, 'cannot write');
  }
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
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw systemErrorAsUserError(error, `${options.prefix ?? ''}${path}`, 'cannot read');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
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
export function readJsonl<T = unknown>(
  path: string,
  options: ReadJsonlOptions = {},
): { rows: JsonlRow<T>[]; repaired: boolean } {
  if (!existsSync(path)) throw new UserError(`${path}: no such file`);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw systemErrorAsUserError(error, path, 'cannot read');
  }
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
  ensureDir(dirname(path), path);
  try {
    appendFileSync(path, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  } catch (error) {
    throw systemErrorAsUserError(error, path, 'cannot write');
  }
}
