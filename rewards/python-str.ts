// Python's string rules that the MET-Bench harness's parsers stand on (it runs on CPython 3.11): what `str.isspace()`
// and `re`'s `\s` call whitespace, where `str.splitlines()` breaks lines, `str.split()` and `str.strip()` without
// arguments, `int(str)` in base 10, and which characters `re.IGNORECASE` lets stand for a letter. JavaScript differs in
// each (its `\s` includes U+FEFF and lacks U+001C-U+001F and U+0085; it breaks lines only at LF/CR; Number() accepts
// "1e3" and rejects "١"), so the parsers use these instead. The character sets were read off CPython 3.11.7 with
// Unicode 14.0.0 by testing every code point; they are data, not code.

/** Every character `str.isspace()` and `re`'s `\s` accept (the two agree), as the inside of a regex class. */
const WHITESPACE = '\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';

/** `\s` as Python's `re` reads it, for building patterns. */
export const PY_SPACE = `[${WHITESPACE}]`;

const SPACE_RUN = new RegExp(`${PY_SPACE}+`, 'u');
const LEADING = new RegExp(`^${PY_SPACE}+`, 'u');
const TRAILING = new RegExp(`${PY_SPACE}+$`, 'u');

/** `str.splitlines()`: breaks at LF, CR, CRLF, VT, FF, FS, GS, RS, NEL, LS and PS; no empty last line. */
const LINE_BREAK = new RegExp(['\\r\\n', '[\\n\\v\\f\\r\\x1c-\\x1e\\x85\\u2028\\u2029]'].join('|'), 'u');

export function pySplitlines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split(LINE_BREAK);
  // A text that ends with a break has no line after it ("a\n" is one line).
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** `str.split()` without arguments: runs of whitespace separate, and no token is empty. */
export function pySplit(text: string): string[] {
  return text.split(SPACE_RUN).filter((t) => t !== '');
}

/** `str.strip()` without arguments. */
export function pyStrip(text: string): string {
  return text.replace(LEADING, '').replace(TRAILING, '');
}

/**
 * First code points of the runs of ten decimal digits (category Nd) in Unicode 14.0.0, which `int()` reads as 0-9:
 * each run holds 0 … 9 in order, and adjacent runs (the mathematical digits) each start a new 0.
 */
const DIGIT_ZEROS = [
  0x30, 0x660, 0x6f0, 0x7c0, 0x966, 0x9e6, 0xa66, 0xae6, 0xb66, 0xbe6, 0xc66, 0xce6, 0xd66, 0xde6, 0xe50, 0xed0, 0xf20,
  0x1040, 0x1090, 0x17e0, 0x1810, 0x1946, 0x19d0, 0x1a80, 0x1a90, 0x1b50, 0x1bb0, 0x1c40, 0x1c50, 0xa620, 0xa8d0,
  0xa900, 0xa9d0, 0xa9f0, 0xaa50, 0xabf0, 0xff10, 0x104a0, 0x10d30, 0x11066, 0x110f0, 0x11136, 0x111d0, 0x112f0,
  0x11450, 0x114d0, 0x11650, 0x116c0, 0x11730, 0x118e0, 0x11950, 0x11c50, 0x11d50, 0x11da0, 0x16a60, 0x16ac0, 0x16b50,
  0x1d7ce, 0x1d7d8, 0x1d7e2, 0x1d7ec, 0x1d7f6, 0x1e140, 0x1e2f0, 0x1e950, 0x1fbf0,
];

/** The value 0-9 of a decimal digit in any script, or null. */
function digitValue(codePoint: number): number | null {
  for (const zero of DIGIT_ZEROS) if (codePoint >= zero && codePoint < zero + 10) return codePoint - zero;
  return null;
}

/** CPython refuses to convert strings of more digits than this (sys.get_int_max_str_digits(), 3.11's default). */
const MAX_STR_DIGITS = 4300;

/**
 * `int(text)` in base 10, or null where Python raises ValueError: surrounding whitespace, one ASCII sign, then digits of
 * any script (mixing allowed), single underscores only between digits, at most 4300 digits.
 */
export function pyInt(text: string): bigint | null {
  const body = pyStrip(text);
  let at = 0;
  let negative = false;
  if (body[0] === '+' || body[0] === '-') {
    negative = body[0] === '-';
    at = 1;
  }
  let digits = '';
  let lastWasDigit = false;
  for (const ch of body.slice(at)) {
    if (ch === '_') {
      if (!lastWasDigit) return null;
      lastWasDigit = false;
      continue;
    }
    const value = digitValue(ch.codePointAt(0)!);
    if (value === null) return null;
    digits += String(value);
    lastWasDigit = true;
  }
  if (digits === '' || !lastWasDigit || digits.length > MAX_STR_DIGITS) return null;
  const magnitude = BigInt(digits);
  return negative ? -magnitude : magnitude;
}

/**
 * What `re.IGNORECASE` lets match each letter of the words the harness looks for ("final answer", "choice",
 * "candidate", "shell"): the two cases, plus dotted/dotless i for i and the long s for s (CPython's case equivalences).
 */
const CASELESS: Record<string, string> = { i: 'iI\u0130\u0131', s: 'sS\u017f' };

/** A word as a regex source that matches it case-insensitively the way Python's `re.IGNORECASE` does. */
export function pyCaseless(word: string): string {
  return [...word].map((ch) => `[${CASELESS[ch] ?? `${ch}${ch.toUpperCase()}`}]`).join('');
}
