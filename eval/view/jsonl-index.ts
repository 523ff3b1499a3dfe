// An index of a JSONL log that may be large and that another process may be appending to, for `metrl view`'s sample
// pages: the file is read once in pieces (never whole: a large samples.jsonl costs a few pieces here, not its
// size again as a string), each line parsed and reduced to the few fields the page filters on (its key) with its byte
// offset; later calls read only what was appended since (a file that shrank or was replaced is read again). A page
// then reads just its own lines at their offsets. Like jsonl-rows.ts it never writes and never throws on content: a
// last line without its newline counts when it parses (and is read again next time), is left out quietly when it
// does not (torn: the writer is mid-line, or was killed); a bad line elsewhere is left out and named in `problems`.
import { open, stat } from 'node:fs/promises';
import { basename } from 'node:path';

/** What the index keeps of a line: the caller's key, and where the line is. */
export interface IndexedRow<K> {
  key: K;
  offset: number;
  length: number;
}

export interface JsonlIndex<K> {
  rows: IndexedRow<K>[];
  /** The file does not exist (yet, or any more). */
  missing: boolean;
  problems: string[];
}

/** A line's key, or a sentence saying why the value is not a row. */
export type KeyOf<K> = (value: unknown) => { key: K } | { error: string };

interface Cached {
  keyOf: unknown;
  ino: number;
  /** Bytes indexed: up to the end of the last complete line. */
  size: number;
  rows: IndexedRow<unknown>[];
  /** The last line when it has no newline yet and parses. */
  tail: IndexedRow<unknown> | null;
  problems: string[];
  bad: number;
  line: number;
}

const MAX_PROBLEMS = 5;
const PIECE_BYTES = 1024 * 1024;
const cache = new Map<string, Cached>();
/** One indexing pass per file at a time: concurrent page requests wait for the same pass. */
const passes = new Map<string, Promise<void>>();

export async function indexJsonl<K>(path: string, keyOf: KeyOf<K>): Promise<JsonlIndex<K>> {
  for (let running = passes.get(path); running; running = passes.get(path)) await running.catch(() => undefined);
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(path);
  } catch {
    cache.delete(path);
    return { rows: [], missing: true, problems: [] };
  }
  let entry = cache.get(path);
  if (!entry || entry.keyOf !== keyOf || entry.ino !== info.ino || info.size < entry.size) {
    entry = { keyOf, ino: info.ino, size: 0, rows: [], tail: null, problems: [], bad: 0, line: 0 };
    cache.set(path, entry);
    if (cache.size > 64) cache.delete(cache.keys().next().value!);
  }
  if (info.size > entry.size) {
    const pass = extend(path, entry as Cached, keyOf, info.size);
    passes.set(path, pass);
    try {
      await pass;
    } catch (error) {
      cache.delete(path);
      const code = (error as NodeJS.ErrnoException).code ?? 'error';
      return { rows: [], missing: true, problems: [`${basename(path)}: cannot be read (${code})`] };
    } finally {
      passes.delete(path);
    }
  }
  const problems = [...entry.problems];
  if (entry.bad > MAX_PROBLEMS) problems.push(`${basename(path)}: ${entry.bad - MAX_PROBLEMS} more bad lines left out`);
  const rows = (entry.tail ? [...entry.rows, entry.tail] : entry.rows) as IndexedRow<K>[];
  return { rows, missing: false, problems };
}

/** Index the lines from entry.size up to `size`, in pieces; a last line without its newline waits for it. */
async function extend<K>(path: string, entry: Cached, keyOf: KeyOf<K>, size: number): Promise<void> {
  const file = await open(path, 'r');
  try {
    let at = entry.size;
    let carry = Buffer.alloc(0);
    const piece = Buffer.alloc(PIECE_BYTES);
    while (at + carry.length < size) {
      const { bytesRead } = await file.read(
        piece,
        0,
        Math.min(PIECE_BYTES, size - at - carry.length),
        at + carry.length,
      );
      if (bytesRead === 0) break;
      const data =
        carry.length > 0 ? Buffer.concat([carry, piece.subarray(0, bytesRead)]) : piece.subarray(0, bytesRead);
      let start = 0;
      for (let nl = data.indexOf(10, start); nl >= 0; nl = data.indexOf(10, start)) {
        addLine(path, entry, keyOf, data.subarray(start, nl), at + start);
        start = nl + 1;
      }
      at += start;
      carry = Buffer.from(data.subarray(start));
    }
    entry.size = at;
    entry.tail = null;
    if (carry.length > 0) {
      let value: unknown;
      try {
        value = JSON.parse(carry.toString('utf8'));
      } catch {
        return; // torn
      }
      const keyed = keyOf(value);
      if (!('error' in keyed)) entry.tail = { key: keyed.key, offset: at, length: carry.length };
    }
  } finally {
    await file.close();
  }
}

function addLine<K>(path: string, entry: Cached, keyOf: KeyOf<K>, bytes: Buffer, offset: number): void {
  entry.line++;
  const text = bytes.toString('utf8');
  if (text.trim() === '') return;
  const note = (why: string) => {
    if (++entry.bad <= MAX_PROBLEMS) entry.problems.push(`${basename(path)}:${entry.line}: ${why}`);
  };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    note('not valid JSON (left out)');
    return;
  }
  const keyed = keyOf(value);
  if ('error' in keyed) note(`${keyed.error} (left out)`);
  else entry.rows.push({ key: keyed.key, offset, length: bytes.length });
}

/** The parsed lines of `rows` (all of one file), read at their offsets. */
export async function readIndexed(path: string, rows: IndexedRow<unknown>[]): Promise<unknown[]> {
  if (rows.length === 0) return [];
  const file = await open(path, 'r');
  try {
    const out: unknown[] = [];
    for (const r of rows) {
      const buffer = Buffer.alloc(r.length);
      await file.read(buffer, 0, r.length, r.offset);
      out.push(JSON.parse(buffer.toString('utf8')));
    }
    return out;
  } finally {
    await file.close();
  }
}
