// User-facing errors. A UserError is bad input (a flag, a file, a config): the CLI prints its message as one line
// and exits with status 2, with no stack trace. Anything else is a bug and keeps its stack.
import { ZodError } from 'zod';

export class UserError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UserError';
  }
}

/** What an operating-system error code means, in words a user can act on. */
const SYSTEM_REASONS: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted (read-only or immutable?)',
  EROFS: 'read-only file system',
  ENOTDIR: 'a part of the path is a file, not a folder',
  EISDIR: 'is a folder, a file was expected',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EEXIST: 'already exists',
  ENOENT: 'no such file or folder',
  ENAMETOOLONG: 'name too long',
  ELOOP: 'too many levels of symbolic links',
  EMFILE: 'too many open files',
  EBUSY: 'busy or locked',
  EFBIG: 'file too large',
  EIO: 'input/output error',
  ENOTEMPTY: 'folder not empty',
  EXDEV: 'cannot move across file systems',
};

/**
 * A file-system error (EACCES, ENOTDIR, ENOSPC …) as a UserError naming `path` (default: the path the error names):
 * these come from where the user pointed an output or input, not from a bug. `action` ('cannot write') goes before the
 * reason. Anything else is returned unchanged.
 */
export function systemErrorAsUserError(error: unknown, path?: string, action = ''): unknown {
  if (error instanceof UserError || !(error instanceof Error)) return error;
  const code = (error as NodeJS.ErrnoException).code;
  if (typeof code !== 'string' || !Object.hasOwn(SYSTEM_REASONS, code)) return error;
  const where = path ?? (error as NodeJS.ErrnoException).path;
  if (typeof where !== 'string') return error;
  return new UserError(`${where}: ${action === '' ? '' : `${action}: `}${SYSTEM_REASONS[code]} (${code})`);
}

/** The value at a zod issue's path inside the parsed input (zod 4 does not keep it in the issue by default). */
function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** One line naming the first offending field of a zod error, e.g. `--n: Too small: expected number to be >0 (got -1)`. */
export function describeZodError(error: ZodError, context = '', input?: unknown): string {
  const issue = error.issues[0];
  if (!issue) return `${context}invalid input`;
  const where = issue.path.length > 0 ? issue.path.join('.') : 'input';
  const bad =
    'input' in issue && issue.input !== undefined
      ? issue.input
      : input !== undefined
        ? valueAt(input, issue.path)
        : undefined;
  const shown = bad === undefined ? '' : JSON.stringify(bad);
  const received = shown !== undefined && shown !== '' && shown.length <= 80 ? ` (got ${shown})` : '';
  return `${context}${where}: ${issue.message}${received}`;
}

/** Parse with a zod schema, turning a validation failure into a UserError. */
export function parseOrFail<T>(
  schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: ZodError } },
  value: unknown,
  context = '',
): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new UserError(describeZodError(result.error, context, value));
}
