// Reading markdown as GitHub renders it, for the documentation tests: prose lines outside code fences, heading
// anchors (GitHub's slugs), the section under an anchor, and relative links.
/** The lines of a markdown file outside fenced code blocks, each with its 1-based number. */
export function proseLines(text: string): Array<{ line: number; text: string }> {
  const out: Array<{ line: number; text: string }> = [];
  let fence: string | null = null;
  text.split('\n').forEach((raw, i) => {
    const m = /^\s{0,3}(`{3,}|~{3,})/.exec(raw);
    if (m) {
      const marker = m[1]!;
      if (fence === null) fence = marker;
      else if (marker[0] === fence[0] && marker.length >= fence.length) fence = null;
      return;
    }
    if (fence === null && !/^( {4}|\t)/.test(raw)) out.push({ line: i + 1, text: raw });
  });
  return out;
}

/** GitHub's anchor for a heading's text (github-slugger): lowercase, drop punctuation but `-` and `_`, spaces → `-`. */
export function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link shows its text
    .replace(/<[^>]+>/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** The text of the section under heading `anchor` (to the next heading of the same or a higher level); null if none. */
export function section(text: string, anchor: string): string | null {
  const lines = text.split('\n');
  const seen = new Map<string, number>();
  let start = -1;
  let level = 0;
  let fence: string | null = null;
  for (let i = 0; i < lines.length; i++) {
    const fm = /^\s{0,3}(`{3,}|~{3,})/.exec(lines[i]!);
    if (fm) {
      if (fence === null) fence = fm[1]!;
      else if (fm[1]![0] === fence[0] && fm[1]!.length >= fence.length) fence = null;
      continue;
    }
    if (fence !== null) continue;
    const m = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(lines[i]!);
    if (!m) continue;
    if (start >= 0 && m[1]!.length <= level) return lines.slice(start, i).join('\n');
    const base = slug(m[2]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    if (start < 0 && (n === 0 ? base : `${base}-${n}`) === anchor) {
      start = i;
      level = m[1]!.length;
    }
  }
  return start >= 0 ? lines.slice(start).join('\n') : null;
}

/** Every anchor a file's headings give, duplicates numbered -1, -2, … as GitHub numbers them. */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const { text: line } of proseLines(text)) {
    const m = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** The relative links and images of a markdown text (inline code stripped), with their line numbers. */
export function links(text: string): Array<{ line: number; target: string }> {
  const out: Array<{ line: number; target: string }> = [];
  for (const { line, text: raw } of proseLines(text)) {
    const prose = raw.replace(/(`+)[^`]*?\1/g, '');
    for (const m of prose.matchAll(/!?\[(?:[^\][]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
      out.push({ line, target });
    }
  }
  return out;
}
