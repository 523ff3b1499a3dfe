// File helpers for long jobs: atomic writes (temp file + rename, so a killed process never leaves half a file),
// JSONL reading that tolerates a torn last line (the one a kill can leave) but reports corruption anywhere else.
import { mkdirSync, readFileSync, renameSync, writeFileSync, existsSync, readdirSync, appendFileSync, truncateSync } from 'node:fs';
import { dirname, basename, join } from 'node:path';
import { UserError } from './errors.ts';

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
