// Games files: PGN (comments, variations, NAGs, FEN headers) and one-game-per-line UCI, with clear errors that name
// the game and the ply.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_POSITION } from 'chess.js';
import { SHARED_DIR } from '../../core/paths.ts';
import { UserError } from '../../core/errors.ts';
import { detectGamesFormat, parseGamesText, readGamesFile } from '../../envs/chess/games.ts';
import { parsePgn } from '../../envs/chess/pgn.ts';

const SAMPLE = join(SHARED_DIR, 'data', 'millionbase-sample.uci');
const dir = mkdtempSync(join(tmpdir(), 'metrl-chess-games-'));
let files = 0;
function file(name: string, text: string): string {
  const path = join(dir, `${++files}-${name}`);
  writeFileSync(path, text);
  return path;
}

const PGN = `[Event "Test one"]
[White "A"]
[Black "B"]
[Result "1-0"]

1. e4 {best by test} e5 2. Nf3 (2. f4 exf4 3. Nf3 (3. Bc4 Qh4+)) 2... Nc6 $1 3. Bb5!? a6 ; the Morphy defence
4. Ba4 Nf6 5. O-O Be7 6. Re1 b5 7. Bb3 d6 8. c3 O-O 1-0

[Event "Test two"]
[SetUp "1"]
[FEN "4k3/P7/8/8/8/8/8/4K3 w - - 0 1"]

1. a8=Q+ Kd7 2. Qb7+ *

[Event "Black to move"]
[SetUp "1"]
[FEN "4k3/8/8/8/8/8/p7/4K3 b - - 0 40"]

40... a1=N 41. Kd2 Nb3+ 1/2-1/2
`;

describe('PGN reader', () => {
  it('keeps the main line only, skipping comments, variations, NAGs, annotations and move numbers', () => {
    const games = parsePgn(PGN);
    expect(games).toHaveLength(3);
    expect(games[0].sans).toEqual([
      'e4',
      'e5',
      'Nf3',
      'Nc6',
      'Bb5',
      'a6',
      'Ba4',
      'Nf6',
      'O-O',
      'Be7',
      'Re1',
      'b5',
      'Bb3',
      'd6',
      'c3',
      'O-O',
    ]);
    expect(games[0].tags.Event).toBe('Test one');
    expect(games[1].tags.FEN).toBe('4k3/P7/8/8/8/8/8/4K3 w - - 0 1');
  });

  it('replays to UCI, honouring FEN headers and promotions for both sides', () => {
    const games = parseGamesText(PGN, 'test.pgn');
    expect(games[0].startFen).toBe(DEFAULT_POSITION);
    expect(games[0].moves.slice(0, 4)).toEqual(['e2e4', 'e7e5', 'g1f3', 'b8c6']);
    expect(games[0].moves[8]).toBe('e1g1');
    expect(games[0].moves[15]).toBe('e8g8');
    expect(games[1]).toMatchObject({ startFen: '4k3/P7/8/8/8/8/8/4K3 w - - 0 1', moves: ['a7a8q', 'e8d7', 'a8b7'] });
    expect(games[2].moves).toEqual(['a2a1n', 'e1d2', 'a1b3']);
  });

  it('ignores a FEN header when SetUp says 0', () => {
    const games = parseGamesText('[SetUp "0"]\n[FEN "4k3/8/8/8/8/8/8/4K3 w - - 0 1"]\n\n1. e4 e5 *\n', 'x.pgn');
    expect(games[0].startFen).toBe(DEFAULT_POSITION);
  });

  it('reads movetext without tags, and games separated only by tags', () => {
    const games = parseGamesText('1.d4 d5 2.c4\n[Event "b"]\n1. Nf3 Nf6\n', 'x.pgn');
    expect(games.map((g) => g.moves)).toEqual([
      ['d2d4', 'd7d5', 'c2c4'],
      ['g1f3', 'g8f6'],
    ]);
  });
});

describe('games files', () => {
  it('reads the 40 Millionbase games as UCI', () => {
    const games = readGamesFile(SAMPLE);
    expect(games).toHaveLength(40);
    expect(games[0].moves.slice(0, 3)).toEqual(['c2c4', 'e7e5', 'g2g3']);
    expect(games.every((g) => g.startFen === DEFAULT_POSITION && g.moves.length > 10)).toBe(true);
  });

  it('detects the format', () => {
    expect(detectGamesFormat('e2e4 e7e5\nd2d4\n')).toBe('uci');
    expect(detectGamesFormat(PGN)).toBe('pgn');
    expect(detectGamesFormat('1. e4 e5 *')).toBe('pgn');
    expect(detectGamesFormat('hello world\n')).toBeNull();
  });

  const errors: Array<[string, string, RegExp]> = [
    ['illegal UCI move', 'e2e4 e7e5\ne2e4 e7e5 e4e5\n', /bad\.txt: game 2, ply 3: illegal or unreadable move 'e4e5'/],
    ['non-UCI token in a UCI file', 'e2e4 e7e5\nd2d4 hello\n', /game 2, ply 2: 'hello' is not a UCI move/],
    [
      'promotion without piece',
      'a2a4 h7h5 a4a5 h5h4 a5a6 h4h3 a6b7 h3g2 b7a8\n',
      /game 1, ply 9: illegal or unreadable move 'b7a8'/,
    ],
    [
      'illegal SAN',
      '[Event "a"]\n\n1. e4 e5 *\n\n[Event "b"]\n\n1. e4 e5 2. Ke3 *\n',
      /game 2, ply 3: illegal or unreadable move 'Ke3'/,
    ],
    ['unreadable SAN', '1. e4 e5 2. Nf9 *\n', /game 1, ply 3: illegal or unreadable move 'Nf9'/],
    [
      'bad FEN header',
      '[SetUp "1"]\n[FEN "8/8/8 w - - 0 1"]\n\n1. e4 *\n',
      /game 1: FEN header is not a valid position/,
    ],
    ['empty', '  \n\n', /the games file is empty/],
    ['neither format', 'this is not chess\n', /neither PGN nor one game per line in UCI/],
    [
      'a bad token on the first line of a UCI file',
      'e2e4 e7e5 g1f3 xx99\n',
      /bad\.txt: game 1, ply 4: 'xx99' is not a UCI move/,
    ],
    [
      'a truncated PGN tag',
      '[Event "a"]\n[Site "b\n\n1. e4 e5 *\n',
      /bad\.txt:2: unreadable tag pair "\[Site \\"b" \(expected \[Name "value"\] on one line\)/,
    ],
  ];
  for (const [name, text, message] of errors) {
    it(`reports ${name} as a UserError`, () => {
      const path = file('bad.txt', text);
      expect(() => readGamesFile(path)).toThrow(UserError);
      expect(() => readGamesFile(path)).toThrow(message);
    });
  }

  it('reports a missing file', () => {
    expect(() => readGamesFile(join(dir, 'nope.pgn'))).toThrow(/no such games file/);
  });
});
