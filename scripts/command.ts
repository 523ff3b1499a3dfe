// Shared wiring for CLI commands: validate the parsed flags with a zod schema and turn user errors into one line on
// stderr with exit status 2 (no stack trace); anything else is a bug and is reported with its stack, exit status 1.
import type { ZodType } from 'zod';
import { UserError, parseOrFail } from '../core/errors.ts';

export function reportAndExit(error: unknown): never {
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
