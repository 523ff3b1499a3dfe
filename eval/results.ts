// Per-item results on disk: `<domain>-<modality>.jsonl`, one row per item. Rows are appended as items finish (one
// write each, so a kill tears at most the last line); `--resume` reads them back, repairing a torn last line and
// refusing to go on past corruption anywhere else (the line is named, nothing is dropped silently). When a run ends
// the files are rewritten atomically with exactly one row per item, in selection order.
import { z } from 'zod';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { UserError } from '../core/errors.ts';
import { appendJsonl, readJsonl, writeFileAtomic } from '../core/files.ts';
import { redactDeep } from '../core/secrets.ts';
import { DOMAINS, MODALITY_SETTINGS, type Domain, type ModalitySetting } from '../core/episode.ts';
import { TASKS, type ItemRow } from './types.ts';

function resultsFile(domain: Domain, modality: ModalitySetting): string {
  return `${domain}-${modality}.jsonl`;
}

const RESULTS_FILE = new RegExp(`^(${DOMAINS.join('|')})-(${MODALITY_SETTINGS.join('|')})\\.jsonl$`);

const usageSchema = z.object({ prompt_tokens: z.number(), completion_tokens: z.number(), total_tokens: z.number() });

/** What a row must hold to be reused; extra fields are kept as they are. */
const rowSchema = z
  .object({
    id: z.string(),
    setting: z.string(),
    episode_id: z.string(),
    domain: z.enum(DOMAINS),
    modality: z.enum(MODALITY_SETTINGS),
    task: z.enum(TASKS),
    target: z.string(),
    response: z.string().nullable(),
    reward: z.number().nullable(),
    valid: z.boolean().nullable(),
    status: z.enum(['ok', 'error']),
    usage: usageSchema.nullable(),
    error: z.string().nullable(),
  })
  .passthrough();

export interface PreviousResults {
  /** Latest row per item id (a failed row followed by a retried one: the retry wins). */
  rows: Map<string, ItemRow>;
  /** Files whose torn last line was cut. */
  repaired: string[];
}

export function readResults(dir: string): PreviousResults {
  const rows = new Map<string, ItemRow>();
  const repaired: string[] = [];
  if (!existsSync(dir)) return { rows, repaired };
  for (const name of readdirSync(dir)
    .filter((f) => RESULTS_FILE.test(f))
    .sort()) {
    const path = join(dir, name);
    const read = readJsonl(path, { repairTornTail: true });
    if (read.repaired) repaired.push(name);
    for (const { line, value } of read.rows) {
      const parsed = rowSchema.safeParse(value);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new UserError(`${path}:${line}: not a result row (${issue?.path.join('.') || 'row'}: ${issue?.message})`);
      }
      const row = parsed.data as unknown as ItemRow;
      const before = rows.get(row.id);
      // An ok row is never replaced by a later failure of the same item (it cannot happen, but be safe).
      if (!before || before.status !== 'ok' || row.status === 'ok') rows.set(row.id, row);
    }
  }
  return { rows, repaired };
}

export class ResultsWriter {
  constructor(private readonly dir: string) {}

  append(row: ItemRow): void {
    appendJsonl(join(this.dir, resultsFile(row.domain, row.modality)), [redactDeep(row)]);
  }

  /** Rewrite every results file with one row per item, in the given order. */
  compact(rows: ItemRow[]): void {
    const byFile = new Map<string, ItemRow[]>();
    for (const row of rows) {
      const file = resultsFile(row.domain, row.modality);
      if (!byFile.has(file)) byFile.set(file, []);
      byFile.get(file)!.push(row);
    }
    for (const [file, list] of byFile)
      writeFileAtomic(join(this.dir, file), list.map((r) => JSON.stringify(r)).join('\n') + '\n');
  }
}
