// Games files for the chess environment: read a file of real games (PGN, or one game per line in UCI), detect which
// format it is, and replay every move with chess.js so that an illegal or unreadable move is reported up front as a
// UserError naming the game (1-based, in file order) and the ply (1-based within the game). Games are kept as a start
// position and UCI moves; episodes replay them on demand (envs/chess/episodes.ts).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { Chess, DEFAULT_POSITION, validateFen } from 'chess.js';
import { UserError } from '../../core/errors.ts';
import { looksLikePgn, parsePgn } from './pgn.ts';
import { UCI_PATTERN } from './uci.ts';

export interface Game {
  /** Full FEN of the position the game starts from (the standard start unless a PGN FEN header says otherwise). */
  startFen: string;
  /** The main line in UCI. */
  moves: string[];
  /** FEN after 0, CHECKPOINT_PLIES, 2 × CHECKPOINT_PLIES … plies, so an episode replays at most that many extra moves. */
  checkpoints: string[];
}

/** Plies between stored positions: memory (one FEN per 16 plies) against replay time for a window deep in a game. */
export const CHECKPOINT_PLIES = 16;

export type GamesFormat = 'pgn' | 'uci';

const RESULT_TOKEN = /^(1-0|0-1|1\/2-1\/2|\*)$/;

/**
 * A line of UCI moves: at least half its tokens are UCI moves or a result (so that one mistyped move is reported as
 * that move, with its game and ply, rather than the whole file as "neither PGN nor UCI"), and it is not PGN movetext.
 */
function isUciLine(line: string): boolean {
  const tokens = line
    .trim()
    .split(/\s+/)
    .filter((t) => t !== '');
  const uci = tokens.filter((t) => UCI_PATTERN.test(t.toLowerCase())).length;
  const moves = tokens.filter((t) => UCI_PATTERN.test(t.toLowerCase()) || RESULT_TOKEN.test(t)).length;
  return uci > 0 && moves * 2 >= tokens.length && !looksLikePgn(line);
}

/** UCI when the first non-empty line is (mostly) UCI moves; PGN when it has tag pairs or numbered movetext; else null. */
export function detectGamesFormat(text: string): GamesFormat | null {
  const firstLine = text.split(/\r?\n/).find((l) => l.trim() !== '');
  if (firstLine === undefined) return null;
  if (isUciLine(firstLine)) return 'uci';
  if (looksLikePgn(text)) return 'pgn';
  return null;
}

/** Apply one move (UCI or SAN) to the board, returning it in UCI, or throw the error that names game and ply. */
function applyMove(
  chess: Chess,
  move: string,
  label: string,
  game: number,
  ply: number,
  checkpoints: string[],
): string {
  let uci: string;
  try {
    const done = UCI_PATTERN.test(move)
      ? chess.move({ from: move.slice(0, 2), to: move.slice(2, 4), promotion: move[4] })
      : chess.move(move.replace(/^0-0-0/, 'O-O-O').replace(/^0-0/, 'O-O'));
    uci = done.from + done.to + (done.promotion ?? '');
  } catch {
    throw new UserError(`${label}: game ${game}, ply ${ply}: illegal or unreadable move '${move}'`);
  }
  if (ply % CHECKPOINT_PLIES === 0) checkpoints.push(chess.fen());
  return uci;
}

function gamesFromUci(text: string, label: string): Game[] {
  const games: Game[] = [];
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '') continue;
    const number = games.length + 1;
    const chess = new Chess();
    const checkpoints = [chess.fen()];
    const tokens = line
      .trim()
      .split(/\s+/)
      .filter((t) => !RESULT_TOKEN.test(t));
    const moves = tokens.map((token, i) => {
      const move = token.toLowerCase();
      if (!UCI_PATTERN.test(move))
        throw new UserError(`${label}: game ${number}, ply ${i + 1}: '${token}' is not a UCI move`);
      return applyMove(chess, move, label, number, i + 1, checkpoints);
    });
    games.push({ startFen: checkpoints[0], moves, checkpoints });
  }
  return games;
}

function gamesFromPgn(text: string, label: string): Game[] {
  return parsePgn(text, label).map((pgn, index) => {
    const number = index + 1;
    let startFen = DEFAULT_POSITION;
    if (pgn.tags.FEN !== undefined && pgn.tags.SetUp !== '0') {
      const check = validateFen(pgn.tags.FEN);
      if (!check.ok)
        throw new UserError(
          `${label}: game ${number}: FEN header is not a valid position (${check.error ?? pgn.tags.FEN})`,
        );
      startFen = pgn.tags.FEN;
    }
    const chess = new Chess(startFen);
    const checkpoints = [chess.fen()];
    const moves = pgn.sans.map((san, i) => applyMove(chess, san, label, number, i + 1, checkpoints));
    return { startFen: checkpoints[0], moves, checkpoints };
  });
}

/** Parse the text of a games file; `label` names it in error messages. */
export function parseGamesText(text: string, label: string): Game[] {
  const clean = text.replace(/^\uFEFF/, '');
  if (clean.trim() === '') throw new UserError(`${label}: the games file is empty`);
  const format = detectGamesFormat(clean);
  if (format === null) {
    const first = clean.split(/\r?\n/).find((l) => l.trim() !== '') ?? '';
    throw new UserError(
      `${label}: neither PGN nor one game per line in UCI (first line: ${JSON.stringify(first.slice(0, 60))})`,
    );
  }
  const games = format === 'uci' ? gamesFromUci(clean, label) : gamesFromPgn(clean, label);
  if (games.every((g) => g.moves.length === 0)) throw new UserError(`${label}: no game in the file has any moves`);
  return games;
}

/** Files already read in this process, keyed by content hash (replaying the moves is the slow part, not reading). */
const cache = new Map<string, Game[]>();

/** Read and validate a games file (PGN or UCI). */
export function readGamesFile(path: string): Game[] {
  if (!existsSync(path)) throw new UserError(`${path}: no such games file`);
  if (!statSync(path).isFile()) throw new UserError(`${path}: the games file is not a regular file`);
  const text = readFileSync(path, 'utf8');
  const key = createHash('sha256').update(text).digest('hex');
  const cached = cache.get(key);
  if (cached) return cached;
  const games = parseGamesText(text, path);
  cache.set(key, games);
  return games;
}
