// Secrets in use (API keys read from the environment) and their redaction. A key is registered where it is read;
// everything the project stores or prints that may carry text from outside (an upstream's error message, a model's
// reply, a failure on stderr) goes through `redact`, so an upstream that echoes the Authorization header cannot put the
// key into rows, logs or error lines.

const secrets = new Set<string>();

/** Keys shorter than this are not treated as secrets (redacting "a" or "1" would garble every text). */
const MIN_SECRET_LENGTH = 6;

/** Remember a secret's value so that `redact` hides it from now on. */
export function registerSecret(value: string | undefined): void {
  if (value !== undefined && value.length >= MIN_SECRET_LENGTH) secrets.add(value);
}

/** The text with every registered secret replaced by "[redacted]". */
export function redact(text: string): string {
  let out = text;
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join('[redacted]');
  return out;
}

/** A JSON-like value with every string redacted (for rows written to disk). */
export function redactDeep<T>(value: T): T {
  if (secrets.size === 0) return value;
  return JSON.parse(redact(JSON.stringify(value))) as T;
}
