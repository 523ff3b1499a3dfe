// Shared wiring for CLI commands: validate the parsed flags with a zod schema and turn user errors into one line on
// stderr with exit status 2 (no stack trace); anything else is a bug and is reported with its stack, exit status 1.
import type { ZodType } from 'zod';
import { UserError, parseOrFail, systemErrorAsUserError } from '../core/errors.ts';
import { redact } from '../core/secrets.ts';

export function reportAndExit(thrown: unknown): never {
  // A file-system error that escaped the file helpers (EACCES on an output folder, ENOSPC …) still names its path in
  // one line: it is about where the user pointed metrl, not a bug.
  const error = systemErrorAsUserError(thrown);
  if (error instanceof UserError) {
    process.stderr.write(`metrl: error: ${redact(error.message)}\n`);
    process.exit(2);
  }
  process.stderr.write(
    `metrl: internal error: ${redact(error instanceof Error ? (error.stack ?? error.message) : String(error))}\n`,
  );
  process.exit(1);
}

/**
 * yargs turns `--n ten` into NaN for a number flag, and the zod message would then show "(got null)": name the flag
 * and the text the user typed instead.
 */
function rejectNaN(argv: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(argv)) {
    if (typeof value !== 'number' || !Number.isNaN(value)) continue;
    const flag = key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    throw new UserError(`--${flag}: expected a number, got ${JSON.stringify(typedValue(flag))}`);
  }
}

/** What followed `--flag` (or `--flag=`) on the command line, for messages. */
function typedValue(flag: string): string {
  const args = process.argv.slice(2);
  for (let i = 0; i < args.length; i++) {
    if (args[i] === `--${flag}`) return args[i + 1] ?? '';
    if (args[i].startsWith(`--${flag}=`)) return args[i].slice(flag.length + 3);
  }
  return 'a value that is not a number';
}

/** Build a yargs handler that validates argv with `schema` (flags named as on the command line) and runs `run`. */
export function handler<T>(schema: ZodType<T>, run: (options: T) => Promise<void> | void) {
  return async (argv: Record<string, unknown>): Promise<void> => {
    try {
      rejectNaN(argv);
      const options = parseOrFail(schema, argv, '--');
      await run(options);
    } catch (error) {
      reportAndExit(error);
    }
  };
}
