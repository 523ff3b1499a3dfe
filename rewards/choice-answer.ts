// The MET-Bench harness's answer grammar for a numbered choice (metbench/scoring.py's _parse_choice_answer, which
// both the shell game, 1-3, and Minecraft, 1-4, use), in Python's string rules (rewards/python-str.ts). The text after
// the LAST "final answer:" (the marker's following whitespace, line breaks included, belongs to it) is cut to its first
// line; without a marker the whole response counts. Then `\boxed` and ` * { } [ ] are removed and what is left, stripped,
// must be exactly the choice, optionally after "choice", "candidate" or "shell" (any case) with an optional "#",
// optionally followed by one "." or "!". "#3", "2 .", "$2$", "**Final Answer**: 2" (no colon right after the words)
// and "FINAL ANSWER: **" with the choice on the next line are invalid; "shell #2", "Candidate 2" are fine.
import { PY_SPACE, pyCaseless, pySplitlines, pyStrip } from './python-str.ts';

const MARKER = new RegExp(`${pyCaseless('final')}${PY_SPACE}+${pyCaseless('answer')}${PY_SPACE}*:${PY_SPACE}*`, 'gu');
const WORD = `(?:${['choice', 'candidate', 'shell'].map(pyCaseless).join('|')})`;

/** The choice 1…maximum a response commits to, or null. */
export function parseChoiceAnswer(response: string | null | undefined, maximum: number): number | null {
  if (!response) return null;
  let text = pyStrip(response);
  const markers = [...text.matchAll(MARKER)];
  if (markers.length > 0) {
    const last = markers[markers.length - 1];
    text = pyStrip(text.slice(last.index + last[0].length));
    text = text === '' ? '' : pySplitlines(text)[0];
  }
  text = pyStrip(text.replaceAll('\\boxed', '').replace(/[`*{}[\]]/g, ''));
  const whole = new RegExp(`^(?:${WORD}${PY_SPACE}*#?${PY_SPACE}*)?([1-${maximum}])[.!]?$`, 'u');
  const match = whole.exec(text);
  return match ? Number(match[1]) : null;
}
