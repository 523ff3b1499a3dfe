// The "FINAL ANSWER:" convention shared by the reference parsers: find the answer after the LAST marker (models often
// restate the marker while reasoning), skipping lines that hold only decoration (markdown left over from
// "**FINAL ANSWER:**", a lone "\boxed{"). Each domain's reward decides what happens without a marker and how the
// answer line itself is read.

/** The marker, tolerating markdown emphasis before the colon ("**Final Answer**:"). */
export const FINAL_ANSWER_MARKER = /final\s+answer\s*[*_]*\s*:/gi;

/** The text after the last marker, or null when the response has none. */
export function textAfterLastMarker(response: string): string | null {
  let last: RegExpExecArray | null = null;
  for (const match of response.matchAll(FINAL_ANSWER_MARKER)) last = match as RegExpExecArray;
  return last === null ? null : response.slice(last.index + last[0].length);
}

/** Lines of `text` that still hold something once `decoration` (a global regex) is removed. */
export function meaningfulLines(text: string, decoration: RegExp): string[] {
  return text.split(/\r?\n/).filter((line) => line.replace(decoration, '').trim() !== '');
}
