// JSON as Python's `json` module reads and writes it, for fingerprints that must equal a Python tool's byte for byte
// (the MET-Bench harness hashes `json.dumps(value, sort_keys=True, separators=(",", ":"))`). JavaScript's JSON
// differs in ways that change the hash: it turns 1.0 into 1 and 1e-05 into 0.00001, loses integers past 2^53, leaves
// non-ASCII characters and DEL unescaped (Python's default ensure_ascii escapes them as \uXXXX) and sorts keys by
// UTF-16 code unit. So values keep Python's types: integers as bigint, floats as number (a PyFloat wrapper, so that
// 2.0 stays a float), strings, booleans, null, lists and dicts.

/** A float as Python holds it: `value` may be integral (2.0) and still prints as a float. */
export class PyFloat {
  constructor(readonly value: number) {}
}

export type PyValue = null | boolean | bigint | PyFloat | string | PyValue[] | { [key: string]: PyValue };

/** Python's json.loads: integers without a fraction or exponent become bigint, other numbers PyFloat. */
export function pyLoads(text: string): PyValue {
  let at = 0;
  const fail = (what: string): never => {
    throw new SyntaxError(`${what} at position ${at}`);
  };
  const space = () => {
    while (at < text.length && ' \t\n\r'.includes(text[at])) at++;
  };
  const value = (): PyValue => {
    space();
    const c = text[at];
    if (c === '{') {
      at++;
      const out: { [key: string]: PyValue } = {};
      space();
      if (text[at] === '}') return (at++, out);
      for (;;) {
        space();
        if (text[at] !== '"') fail('expected a string key');
        const key = string();
        space();
        if (text[at++] !== ':') fail("expected ':'");
        out[key] = value();
        space();
        const sep = text[at++];
        if (sep === '}') return out;
        if (sep !== ',') fail("expected ',' or '}'");
      }
    }
    if (c === '[') {
      at++;
      const out: PyValue[] = [];
      space();
      if (text[at] === ']') return (at++, out);
      for (;;) {
        out.push(value());
        space();
        const sep = text[at++];
        if (sep === ']') return out;
        if (sep !== ',') fail("expected ',' or ']'");
      }
    }
    if (c === '"') return string();
    for (const [word, v] of [
      ['true', true],
      ['false', false],
      ['null', null],
      ['NaN', new PyFloat(NaN)],
      ['Infinity', new PyFloat(Infinity)],
      ['-Infinity', new PyFloat(-Infinity)],
    ] as const) {
      if (text.startsWith(word, at)) return ((at += word.length), v);
    }
    const m = /^-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(at, at + 400));
    if (!m) return fail('unexpected character');
    at += m[0].length;
    return m[1] === undefined && m[2] === undefined ? BigInt(m[0]) : new PyFloat(Number(m[0]));
  };
  const string = (): string => {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: JSON strings may not hold raw control characters.
    const m = /^"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/.exec(text.slice(at));
    if (!m) return fail('bad string');
    at += m[0].length;
    return JSON.parse(m[0]) as string;
  };
  const result = value();
  space();
  if (at !== text.length) fail('extra data');
  return result;
}

const SHORT_ESCAPES: Record<string, string> = {
  '"': '\\"',
  '\\': '\\\\',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\b': '\\b',
  '\f': '\\f',
};

/** A string as json.dumps writes it with ensure_ascii: printable ASCII as is, everything else escaped. */
function pyString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    const code = s.charCodeAt(i);
    if (SHORT_ESCAPES[ch] !== undefined) out += SHORT_ESCAPES[ch];
    else if (code >= 0x20 && code <= 0x7e) out += ch;
    else out += `\\u${code.toString(16).padStart(4, '0')}`; // UTF-16 units: astral characters become surrogate pairs, as in Python
  }
  return `${out}"`;
}

/** float.__repr__: the shortest round-trip digits, fixed notation for 1e-4 <= |x| < 1e16, else d.ddde±XX. */
export function pyFloatRepr(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return 'Infinity';
  if (x === -Infinity) return '-Infinity';
  const sign = x < 0 || Object.is(x, -0) ? '-' : '';
  if (x === 0) return `${sign}0.0`;
  const [mantissa, exp] = Math.abs(x).toExponential().split('e');
  const digits = mantissa.replace('.', '');
  const decpt = Number(exp) + 1; // the value is 0.<digits> × 10^decpt
  if (decpt > 16 || decpt < -3) {
    const e = decpt - 1;
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${m}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  }
  if (decpt <= 0) return `${sign}0.${'0'.repeat(-decpt)}${digits}`;
  if (decpt >= digits.length) return `${sign}${digits}${'0'.repeat(decpt - digits.length)}.0`;
  return `${sign}${digits.slice(0, decpt)}.${digits.slice(decpt)}`;
}

/** Compare keys as Python compares str: by code point. */
function byCodePoint(a: string, b: string): number {
  const ca = [...a].map((c) => c.codePointAt(0)!);
  const cb = [...b].map((c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(ca.length, cb.length); i++) if (ca[i] !== cb[i]) return ca[i] - cb[i];
  return ca.length - cb.length;
}

export interface PyDumpsOptions {
  sortKeys?: boolean;
  /** Spaces per level (Python's indent=N, with separators (",", ": ")); absent: compact (",", ":"). */
  indent?: number;
  /** Without indent: json.dumps's default separators (", ", ": ") instead of the compact ones. */
  spaced?: boolean;
}

/**
 * json.dumps(value, sort_keys=…, separators=(",", ":")), with `spaced` plain json.dumps(value), or with indent
 * json.dumps(value, indent=N).
 */
export function pyDumps(value: PyValue, options: PyDumpsOptions = {}): string {
  const { sortKeys = false, indent, spaced = false } = options;
  const comma = indent === undefined && spaced ? ', ' : ',';
  const write = (v: PyValue, depth: number): string => {
    if (v === null) return 'null';
    if (v === true) return 'true';
    if (v === false) return 'false';
    if (typeof v === 'bigint') return v.toString();
    if (v instanceof PyFloat) return pyFloatRepr(v.value);
    if (typeof v === 'string') return pyString(v);
    const inner = indent === undefined ? '' : `\n${' '.repeat(indent * (depth + 1))}`;
    const outer = indent === undefined ? '' : `\n${' '.repeat(indent * depth)}`;
    const colon = indent === undefined && !spaced ? ':' : ': ';
    if (Array.isArray(v)) {
      if (v.length === 0) return '[]';
      return `[${inner}${v.map((x) => write(x, depth + 1)).join(`${comma}${inner}`)}${outer}]`;
    }
    const keys = Object.keys(v);
    if (keys.length === 0) return '{}';
    if (sortKeys) keys.sort(byCodePoint);
    return `{${inner}${keys.map((k) => `${pyString(k)}${colon}${write(v[k], depth + 1)}`).join(`${comma}${inner}`)}${outer}}`;
  };
  return write(value, 0);
}
