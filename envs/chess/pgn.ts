// A tolerant PGN reader: splits a file into games, each with its tag pairs and the SAN moves of its main line.
// Skipped: comments ({…} and ; to end of line), variations ((…), nested), NAGs ($n), move numbers (12. and 12...),
// annotation suffixes (!, ?, !?, …), % escape lines. A result token (1-0, 0-1, 1/2-1/2, *) ends a game, and so does a
// new tag section after moves. Legality is not checked here (envs/chess/games.ts replays the moves with chess.js).

import { UserError } from '../../core/errors.ts';

export interface PgnGame {
  tags: Record<string, string>;
  /** Main-line moves in SAN as written (annotation marks removed). */
  sans: string[];
}

const RESULT = /^(1-0|0-1|1\/2-1\/2|\*)$/;
const MOVE_NUMBER = /^\d+\.+/;
const TAG_PAIR = /^\[\s*([A-Za-z0-9_]+)\s+"((?:[^"\\]|\\.)*)"\s*\]/;

/** True when the text looks like PGN: a tag pair at the start of a line, or movetext starting with a move number. */
export function looksLikePgn(text: string): boolean {
  return (
    /^\s*\[\s*[A-Za-z0-9_]+\s+"/m.test(text) || /(^|\s)\d+\.(\.\.)?\s*([KQRBN]?[a-h]?[1-8]?x?[a-h][1-8]|O-O)/.test(text)
  );
}

/**
 * Split PGN text into games. A `[` that does not open a complete tag pair (`[Name "value"]` on one line) is a
 * UserError naming `label` and the line, rather than a move called '['.
 */
export function parsePgn(text: string, label = 'PGN'): PgnGame[] {
  const games: PgnGame[] = [];
  let current: PgnGame = { tags: {}, sans: [] };
  let inMoves = false;
  const finish = () => {
    if (current.sans.length > 0 || Object.keys(current.tags).length > 0) games.push(current);
    current = { tags: {}, sans: [] };
    inMoves = false;
  };

  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  let depth = 0; // variation nesting
  let inComment = false;
  for (const [lineIndex, line] of lines.entries()) {
    if (!inComment && depth === 0 && line.startsWith('%')) continue;
    let i = 0;
    while (i < line.length) {
      const ch = line[i];
      if (inComment) {
        const end = line.indexOf('}', i);
        if (end < 0) {
          i = line.length;
          break;
        }
        inComment = false;
        i = end + 1;
        continue;
      }
      if (ch === '{') {
        inComment = true;
        i++;
        continue;
      }
      if (ch === ';') break; // rest-of-line comment
      if (ch === '(') {
        depth++;
        i++;
        continue;
      }
      if (ch === ')') {
        if (depth > 0) depth--;
        i++;
        continue;
      }
      if (/\s/.test(ch)) {
        i++;
        continue;
      }
      if (depth > 0) {
        // Inside a variation: skip everything except brackets and comments, handled above.
        i++;
        continue;
      }
      if (ch === '[') {
        const match = TAG_PAIR.exec(line.slice(i));
        if (match) {
          if (inMoves) finish();
          current.tags[match[1]] = match[2].replace(/\\(.)/g, '$1');
          i += match[0].length;
          continue;
        }
        throw new UserError(
          `${label}:${lineIndex + 1}: unreadable tag pair ${JSON.stringify(line.slice(i, i + 60))} (expected [Name "value"] on one line)`,
        );
      }
      // A token: up to the next space or bracket/comment opener.
      let j = i;
      while (j < line.length && !/[\s{}();[\]]/.test(line[j])) j++;
      if (j === i) j = i + 1; // a stray closing bracket: consume it as its own token
      const token = line.slice(i, j);
      i = j;
      if (RESULT.test(token)) {
        finish();
        continue;
      }
      if (token.startsWith('$')) continue; // NAG
      let san = token.replace(MOVE_NUMBER, '');
      san = san.replace(/[!?]+$/, '');
      if (san === '') continue;
      current.sans.push(san);
      inMoves = true;
    }
  }
  finish();
  return games;
}
