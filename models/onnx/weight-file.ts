// One file of a decoder's base weights that every ONNX Runtime session of it maps:
// the sampler's decoder graph and the learner's training graph name their weights alike (`<module>.weight`,
// `lm_head`), and each weight is written here once, at a page-aligned offset, the first time a graph asks. Each graph
// then refers to it as ONNX external data, and ORT maps the file instead of copying it, so the weights sit in memory
// once (the page cache's copy, shared by both sessions' mappings) instead of once per session.
// ONNX Runtime accepts external data only beside the model file, so the models are written into the same folder for
// the moment a session reads them. The folder (metrl-weights-<pid>-*, in the system's temporary folder: TMPDIR) lives
// as long as the process; one left behind by a killed process is removed by the next process that opens a weight file.
import { closeSync, mkdtempSync, openSync, readdirSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemErrorAsUserError } from '../../core/errors.ts';

/** Offsets are aligned to a page, so that ORT may map each tensor in place. */
const ALIGN = 4096;
export const WEIGHT_FILE = 'weights.bin';
/** Weights smaller than a page stay inline in each model (norm vectors, biases). */
export const SHARE_MIN_BYTES = ALIGN;

interface Entry {
  offset: number;
  length: number;
}

/** Remove the weight folders of processes that no longer run (killed before their exit hook ran). */
function removeAbandoned(): void {
  let names: string[];
  try {
    names = readdirSync(tmpdir());
  } catch {
    return;
  }
  for (const name of names) {
    const pid = /^metrl-weights-(\d+)-/.exec(name)?.[1];
    if (!pid || Number(pid) === process.pid) continue;
    try {
      process.kill(Number(pid), 0);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ESRCH')
        rmSync(join(tmpdir(), name), { recursive: true, force: true });
    }
  }
}

/** The files this process has open, removed by one exit handler (not one listener per file). */
const live = new Set<SharedWeightFile>();
const removeLive = () => {
  for (const file of [...live]) file.dispose();
};

export class SharedWeightFile {
  readonly dir: string;
  private fd: number;
  private readonly entries = new Map<string, Entry>();
  private length = 0;
  private models = 0;
  private readonly label: string;

  constructor(label: string) {
    removeAbandoned();
    this.dir = mkdtempSync(join(tmpdir(), `metrl-weights-${process.pid}-`));
    this.fd = openSync(join(this.dir, WEIGHT_FILE), 'w+');
    live.add(this);
    if (live.size === 1) process.once('exit', removeLive);
    this.label = label;
  }

  /**
   * The offset of weight `name` in the file, its `bytes` written there on first use (null: known to be there already,
   * of `byteLength` bytes); the same name must hold the same number of bytes.
   */
  place(name: string, bytes: Uint8Array | null, byteLength = bytes?.byteLength ?? 0): Entry {
    const known = this.entries.get(name);
    if (known) {
      if (known.length !== byteLength)
        throw new Error(`internal: shared weight ${name} is ${known.length} bytes, now ${byteLength}`);
      return known;
    }
    if (!bytes) throw new Error(`internal: shared weight ${name} is not in the file yet`);
    const offset = Math.ceil(this.length / ALIGN) * ALIGN;
    try {
      for (let done = 0; done < bytes.byteLength; )
        done += writeSync(this.fd, bytes, done, bytes.byteLength - done, offset + done);
    } catch (error) {
      throw systemErrorAsUserError(error, join(this.dir, WEIGHT_FILE), `cannot write the ${this.label}'s weights`);
    }
    const entry = { offset, length: bytes.byteLength };
    this.entries.set(name, entry);
    this.length = offset + bytes.byteLength;
    return entry;
  }

  /** Bytes written so far (the weights of every graph built over it). */
  get bytes(): number {
    return this.length;
  }

  /** Whether weight `name` is in the file already (its bytes need not be read again). */
  has(name: string): boolean {
    return this.entries.has(name);
  }

  /** Read `length` bytes of weight `name` from `start` (a row of the embedding table, say). */
  read(name: string, start: number, into: Uint8Array): void {
    const entry = this.entries.get(name);
    if (!entry || start + into.byteLength > entry.length)
      throw new Error(`internal: shared weight ${name} has no bytes ${start}…${start + into.byteLength}`);
    for (let done = 0; done < into.byteLength; )
      done += readSync(this.fd, into, done, into.byteLength - done, entry.offset + start + done);
  }

  /** A fresh model file name in the folder, for a session to load from. */
  modelPath(): string {
    return join(this.dir, `model-${this.models++}.onnx`);
  }

  dispose(): void {
    if (this.fd < 0) return;
    closeSync(this.fd);
    this.fd = -1;
    live.delete(this);
    if (live.size === 0) process.removeListener('exit', removeLive);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

const files = new WeakMap<object, SharedWeightFile>();

/** The weight file of `owner` (a decoder), made on first use and kept while the owner lives or the process runs. */
export function weightFileOf(owner: object, label: string): SharedWeightFile {
  let file = files.get(owner);
  if (!file) files.set(owner, (file = new SharedWeightFile(label)));
  return file;
}
