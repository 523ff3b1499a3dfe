// The "FINAL ANSWER:" convention of the boxes, MCST and REM parsers (chess, the shell game and Minecraft use the MET-Bench
// harness's own rules instead: rewards/chess.ts, choice-answer.ts): find the answer after the LAST marker (models often
// restate the marker while reasoning), skipping lines that hold only decoration (markdown left over from
// "**FINAL ANSWER:**", a lone "\boxed{"). Each domain's reward decides what happens without a marker and how the
// answer line itself is read. Baselines write their answers in the same convention (finalAnswerResponse).

/** How an answer is written: the marker in the form every parser reads. */
const FINAL_ANSWER_CUE = 'FINAL ANSWER: ';

/** A response that commits to `answer` and nothing else, e.g. a baseline's. */
export function finalAnswerResponse(answer: string): string {
  return `${FINAL_ANSWER_CUE}${answer}`;
}

/** The marker, tolerating markdown emphasis before the colon ("**Final Answer**:"). */
const FINAL_ANSWER_MARKER = /final\s+answer\s*[*_]*\s*:/gi;

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

/** What wraps short answers (boxes contents, MCST names and places): LaTeX \boxed/\text, code, emphasis, brackets, quotes. */
export const ANSWER_DECORATION = /\\boxed|\\text|[`*{}[\]$"“”]/g;

/**
 * The line holding a short answer: the first meaningful line after the last marker; without a marker, the response
 * when it is a single meaningful line; else null.
 */
export function shortAnswerLine(response: string): string | null {
  const after = textAfterLastMarker(response);
  if (after === null) {
    const lines = meaningfulLines(response, ANSWER_DECORATION);
    return lines.length === 1 ? lines[0] : null;
  }
  return meaningfulLines(after, ANSWER_DECORATION)[0] ?? null;
}
