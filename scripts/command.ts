// Shared wiring for CLI commands: validate the parsed flags with a zod schema and turn user errors into one line on
// stderr with exit status 2 (no stack trace); anything else is a bug and is reported with its stack, exit status 1.
import type { ZodType } from 'zod';
import { UserError, parseOrFail, systemErrorAsUserError } from '../core/errors.ts';

export function reportAndExit(thrown: unknown): never {
  // A file-system error that escaped the file helpers (EACCES on an output folder, ENOSPC …) still names its path in
  // one line: it is about where the user pointed metrl, not a bug.
  const error = systemErrorAsUserError(thrown);
  if (error instanceof UserError) {
    process.stderr.write(`metrl: error: ${error.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`metrl: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
}

/** Build a yargs handler that validates argv with `schema` (flags named as on the command line) and runs `run`. */
export function handler<T>(schema: ZodType<T>, run: (options: T) => Promise<void> | void) {
  return async (argv: Record<string, unknown>): Promise<void> => {
    try {
      const options = parseOrFail(schema, argv, '--');
      await run(options);
    } catch (error) {
      reportAndExit(error);
    }
  };
}
