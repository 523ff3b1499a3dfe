// Responses written to be hard, each with the MET-Bench harness's verdict on it and the rule that decides it
// (metbench/scoring.py at 16f2bf30, python-chess 1.11's Board(fen), fen(), status(); Python's str and re). The harness
// itself scored every one of them: tests/fixtures/metbench-harness/ holds its per-row results, and the tests check
// both metrl's verdict and the harness's recorded one against what is stated here.

const START = 'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1';
/** After 1.e4 e5 2.Nf3. */
const NF3 = 'rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2';
const NF3_BOARD = NF3.split(' ')[0];
/** After 1.e4: no black pawn can take on e3, so python-chess writes no en passant square. */
const E4 = 'rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1';
/** After 1.e4 e5 2.Ke2: the castling rights are gone for white. */
const KE2 = 'rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPPKPPP/RNBQ1BNR b kq - 1 2';
/** After 1.e4 d5 2.e5 f5: e5xf6 en passant is legal, so f6 stays. */
const F5 = 'rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3';
const QUEEN = '3Qk3/8/8/8/8/8/8/4K3 b - - 0 50';

export interface ChessCase {
  id: string;
  target: string;
  /** null: the row's initial_state is null, and the harness counts changed squares from the standard start. */
  initial: string | null;
  response: string;
  /** The FEN the harness parses, as python-chess's fen() writes it, or null for an invalid answer. */
  parsed: string | null;
  why: string;
}

const chess = (
  id: string,
  response: string,
  parsed: string | null,
  why: string,
  target = NF3,
  initial: string | null = START,
): ChessCase => ({ id, target, initial, response, parsed, why });

export const CHESS_CASES: ChessCase[] = [
  chess('plain', `FINAL ANSWER: ${NF3}`, NF3, 'six tokens on a "final answer" line'),
  chess('no-space', `final answer:${NF3}`, NF3, '":" is cleaned to a space, so the placement is its own token'),
  chess('markdown', `**Final Answer:** \`${NF3}\``, NF3, '* and ` are cleaned'),
  chess('quoted', `FINAL ANSWER: "${NF3}"`, NF3, '" is cleaned'),
  chess('boxed', `Final answer: \\boxed{${NF3}}`, NF3, '\\boxed{ and } are cleaned'),
  chess('bracketed', `FINAL ANSWER: [${NF3}]`, NF3, '[ and ] are cleaned'),
  chess('full-stop', `FINAL ANSWER: ${NF3}.`, NF3, '"." is cleaned'),
  chess('reasoning-above', `e2e4, e7e5, g1f3.\nFINAL ANSWER: ${NF3}`, NF3, 'lines without the marker are skipped'),
  chess('reasoning-below', `FINAL ANSWER: ${NF3}\nThe knight came out.`, NF3, 'read bottom-up, the marker line wins'),
  chess('last-marker', `Final answer: ${START}\nWait.\nFinal answer: ${NF3}`, NF3, 'the lowest marker line wins'),
  chess(
    'ambiguous-falls-back',
    `Final answer: ${NF3}\nFinal answer: ${START} or ${NF3}`,
    NF3,
    'two FENs make the last line no answer; the one above it has one',
  ),
  chess('fence-on-line', 'FINAL ANSWER: ```' + NF3 + '```', NF3, 'backticks are cleaned'),
  chess(
    'mid-sentence',
    `So the final answer is, ${NF3}`,
    NF3,
    'the marker may sit anywhere on the line; "," is cleaned',
  ),
  chess(
    'placement-beside',
    `FINAL ANSWER: ${NF3} (board ${NF3_BOARD})`,
    NF3,
    'a placement alone is no six-token FEN, so the line holds exactly one',
  ),
  chess('seventh-token', `FINAL ANSWER: ${NF3} 0`, NF3, 'the window starting at "b" is no FEN: still one'),
  chess(
    'plus-halfmove',
    `FINAL ANSWER: ${NF3_BOARD} b KQkq - +1 2`,
    NF3,
    'the clocks are read by int(), which takes a sign; fen() writes 1',
  ),
  chess(
    'fullmove-zero',
    `FINAL ANSWER: ${START.replace(/ 1$/, ' 0')}`,
    START,
    'fullmove 0 is allowed and becomes 1',
    START,
  ),
  chess('arabic-digit', `FINAL ANSWER: ${NF3_BOARD} b KQkq - \u0661 \u0662`, NF3, 'int() reads digits of any script'),
  chess('underscore', `FINAL ANSWER: ${NF3_BOARD} b KQkq - 1 0_2`, NF3, 'int() reads "0_2" as 2'),
  chess(
    'ep-not-capturable',
    `FINAL ANSWER: ${E4.replace(' - ', ' e3 ')}`,
    E4,
    'fen() writes an en passant square only when a capture is legal: e3 becomes "-"',
    E4,
  ),
  chess('ep-capturable', `FINAL ANSWER: ${F5}`, F5, 'e5xf6 is legal, so f6 stays', F5),
  chess(
    'ep-wrong-rank',
    `FINAL ANSWER: ${NF3_BOARD} b KQkq e4 1 2`,
    NF3,
    'any square name is a syntactically valid en passant square',
  ),
  chess(
    'xfen-castling',
    `FINAL ANSWER: ${START.replace('KQkq', 'HAha')}`,
    START,
    'X-FEN file letters; fen() writes KQkq',
    START,
  ),
  chess(
    'repeated-castling',
    `FINAL ANSWER: ${START.replace('KQkq', 'KKkk')}`,
    START.replace('KQkq', 'Kk'),
    'the castling syntax allows repeats',
    START,
  ),
  chess(
    'unusable-castling',
    `FINAL ANSWER: ${KE2.replace(' kq ', ' KQkq ')}`,
    KE2,
    'rights without a king on e1 are dropped by fen() (and make the board illegal)',
    KE2,
  ),
  chess(
    'promoted-mark',
    `FINAL ANSWER: 3Q~k3/8/8/8/8/8/8/4K3 b - - 0 50`,
    QUEEN,
    '"~" after a piece marks it promoted',
    QUEEN,
  ),
  chess(
    'kelvin-king',
    `FINAL ANSWER: 3Qk3/8/8/8/8/8/8/4\u212a3 b - - 0 50`,
    QUEEN,
    'Python lower-cases U+212A KELVIN SIGN to "k"',
    QUEEN,
  ),
  chess(
    'unicode-spaces',
    `FINAL ANSWER:\u00a0${NF3.replaceAll(' ', '\u3000')}`,
    NF3,
    'str.split() splits at no-break and ideographic spaces',
  ),
  chess(
    'line-separator',
    `FINAL ANSWER: ${NF3}\u2028Earlier guess: ${START}`,
    NF3,
    'splitlines() breaks at U+2028, so the two FENs are on two lines',
  ),
  chess('bare-cr', `Earlier: ${START}\rFINAL ANSWER: ${NF3}`, NF3, 'splitlines() breaks at a bare CR'),
  chess(
    'opposite-check',
    'FINAL ANSWER: 4k3/8/8/8/8/8/8/4R1K1 w - - 0 1',
    '4k3/8/8/8/8/8/8/4R1K1 w - - 0 1',
    'parses; the board is illegal (the side not to move is in check)',
  ),
  chess('placement-only', `FINAL ANSWER: ${NF3_BOARD}`, null, 'no run of six tokens'),
  chess('three-fields', `FINAL ANSWER: ${NF3_BOARD} b KQkq`, null, 'no run of six tokens'),
  chess('five-fields', `FINAL ANSWER: ${NF3_BOARD} b KQkq - 1`, null, 'five fields and the marker words make no FEN'),
  chess('split-lines', `FINAL ANSWER: ${NF3_BOARD}\nb KQkq - 1 2`, null, 'lines are scored one at a time'),
  chess('next-line', `FINAL ANSWER:\n${NF3}`, null, 'the FEN is not on the marker line'),
  chess('turn-x', `FINAL ANSWER: ${NF3_BOARD} x KQkq - 1 2`, null, 'the side to move must be w or b'),
  chess('turn-W', `FINAL ANSWER: ${NF3_BOARD} W KQkq - 1 2`, null, 'the side to move is case-sensitive'),
  chess('bang', `FINAL ANSWER: ${NF3}!`, null, '"!" is not cleaned and int("2!") fails'),
  chess('question', `FINAL ANSWER: ${NF3}?`, null, '"?" is not cleaned'),
  chess('dollars', `FINAL ANSWER: $${NF3}$`, null, '"$" is not cleaned'),
  chess('curly-quotes', `FINAL ANSWER: \u201c${NF3}\u201d`, null, 'curly quotes are not cleaned'),
  chess('kqKQ', `FINAL ANSWER: ${NF3_BOARD} b kqKQ - 1 2`, null, 'white castling letters must come first'),
  chess('bare-fen', `  ${NF3}  `, null, 'no "final answer" line'),
  chess(
    'seven-ranks',
    'FINAL ANSWER: rnbqkbnr/pppp1ppp/8/4p3/4P3/PPPP1PPP/RNBQKB1R b KQkq - 1 2',
    null,
    'eight rows are required',
  ),
  chess(
    'wide-rank',
    'FINAL ANSWER: rnbqkbnr/pppp1ppp/8/4p4/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2',
    null,
    'a row of nine squares',
  ),
  chess(
    'adjacent-digits',
    'FINAL ANSWER: rnbqkbnr/pppp1ppp/8/4p3/44/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2',
    null,
    '"44" is two digits in a row',
  ),
  chess(
    'bad-letter',
    'FINAL ANSWER: rnbqkbnr/pppp1ppp/8/4x3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2',
    null,
    '"x" is no piece',
  ),
  chess('tilde-first', `FINAL ANSWER: ~${NF3.slice(1)}`, null, '"~" must follow a piece'),
  chess('negative-clock', `FINAL ANSWER: ${NF3_BOARD} b KQkq - -1 2`, null, 'the halfmove clock cannot be negative'),
  chess('bad-ep', `FINAL ANSWER: ${NF3_BOARD} b KQkq i9 1 2`, null, 'no square i9'),
  chess(
    'huge-clock',
    `FINAL ANSWER: ${NF3_BOARD} b KQkq - ${'1'.repeat(4301)} 2`,
    null,
    'int() refuses more than 4300 digits',
  ),
  chess('twice', `FINAL ANSWER: ${NF3} ${NF3}`, null, 'the same FEN twice is two candidates'),
  chess('dotted-I', `F\u0130NAL ANSWER: ${NF3}`, null, '"İ".lower() is "i̇", so the line has no "final answer"'),
  chess('template', 'FINAL ANSWER: [FEN HERE]', null, 'no FEN'),
  chess('empty', '', null, 'an empty response is invalid'),
  chess('no-initial', `FINAL ANSWER: ${NF3}`, NF3, 'changed squares are counted from the standard start', NF3, null),
];

export interface ChoiceCase {
  id: string;
  response: string;
  /** The harness's parse: parse_shell_arrangement for shell (1-3), parse_minecraft_choice for minecraft (1-4). */
  choice: number | null;
  why: string;
}

const choice = (id: string, response: string, parsed: number | null, why: string): ChoiceCase => ({
  id,
  response,
  choice: parsed,
  why,
});

export const SHELL_CASES: ChoiceCase[] = [
  choice('bare', '2', 2, 'without a marker the whole response must be the answer'),
  choice('spaces', '  3 \n', 3, 'stripped'),
  choice('marker', 'FINAL ANSWER: 2', 2, 'after the last marker'),
  choice('shell-word', 'final answer: shell 1', 1, '"shell" may come first'),
  choice('shell-dot', 'Final Answer: Shell 3.', 3, 'any case, one "." after'),
  choice('choice-bang', 'FINAL ANSWER: choice 2!', 2, '"choice", one "!" after'),
  choice('candidate', 'FINAL ANSWER: Candidate 2', 2, '"candidate" may come first'),
  choice('shell-hash', 'FINAL ANSWER: shell #2', 2, 'a "#" may follow the word'),
  choice('shell-hash-spaced', 'FINAL ANSWER: Shell # 2', 2, 'spaces around the "#"'),
  choice('bracketed', 'FINAL ANSWER: [2]', 2, '[ ] are removed'),
  choice('braced', 'FINAL ANSWER: {3}', 3, '{ } are removed'),
  choice('backticks', 'FINAL ANSWER: `1`', 1, 'backticks are removed'),
  choice('bold', 'FINAL ANSWER: **2**', 2, '* is removed'),
  choice('bold-marker', '**FINAL ANSWER:** 3', 3, 'the marker is "final answer:", the stars after it are removed'),
  choice('boxed', 'FINAL ANSWER: \\boxed{2}', 2, '\\boxed and braces are removed'),
  choice('next-line', 'FINAL ANSWER:\n\n2', 2, "the marker's trailing whitespace takes the line breaks"),
  choice('line-separator', 'FINAL ANSWER:\u20282', 2, 'U+2028 is whitespace to re'),
  choice('reasoning-below', 'FINAL ANSWER: 1\nBecause the last swap moved it.', 1, 'only the first line counts'),
  choice('last-marker', 'FINAL ANSWER: 1\nWait, one more swap.\nFINAL ANSWER: 3', 3, 'the last marker wins'),
  choice('space-colon', 'Final Answer : 2', 2, 'whitespace may precede the colon'),
  choice('dotless-i', 'f\u0131nal answer: 2', 2, 're.IGNORECASE lets "ı" stand for "i"'),
  choice('dotted-I', 'F\u0130NAL ANSWER: 2', 2, 're.IGNORECASE lets "İ" stand for "i"'),
  choice('long-s', 'final an\u017fwer: \u017fhell 3', 3, 're.IGNORECASE lets "ſ" stand for "s"'),
  choice('unit-separator', 'FINAL ANSWER: 2\x1f', 2, 'U+001F is whitespace to str.strip()'),
  choice('hash-only', 'FINAL ANSWER: #3', null, 'a "#" only after choice/candidate/shell'),
  choice('hash-spaced', 'FINAL ANSWER: # 2', null, 'a "#" only after choice/candidate/shell'),
  choice('space-dot', 'FINAL ANSWER: 2 .', null, 'the "." must follow the digit'),
  choice('dollars', 'FINAL ANSWER: $2$', null, '"$" is not removed'),
  choice('latex-boxed', 'FINAL ANSWER: $\\boxed{3}$', null, '"$" is not removed'),
  choice(
    'bold-words',
    '**Final Answer**: 2',
    null,
    'no colon right after the words, so no marker: the whole text must be the answer',
  ),
  choice('stars-then-line', 'FINAL ANSWER: **\n2', null, 'the first line after the marker is "**", empty once cleaned'),
  choice('bom', 'FINAL ANSWER: 2\ufeff', null, 'U+FEFF is not whitespace to Python'),
  choice('no-colon', 'FINAL ANSWER 2', null, 'no colon, no marker'),
  choice('twelve', '12', null, 'not one choice'),
  choice('or', 'FINAL ANSWER: 1 or 2', null, 'not one choice'),
  choice('zero', '0', null, 'out of range'),
  choice('four', 'FINAL ANSWER: 4', null, 'out of range for the shell game'),
  choice('decimal', 'FINAL ANSWER: 2.5', null, 'not a whole choice'),
  choice('words-after', 'FINAL ANSWER: shell 2 (it moved twice)', null, 'words after the answer'),
  choice('marker-only', 'FINAL ANSWER:', null, 'nothing after the marker'),
  choice('empty', '', null, 'an empty response is invalid'),
  choice('prose', 'The ball is under shell 2.', null, 'no marker and not a bare answer'),
  choice('two-lines', 'I think\n2', null, 'no marker: the whole response must be the answer'),
];

export const MINECRAFT_CASES: ChoiceCase[] = [
  choice('mc-four', 'FINAL ANSWER: 4', 4, 'Minecraft offers four choices'),
  choice('mc-candidate', 'final answer: candidate #3!', 3, '"candidate", "#" and "!" as for the shell game'),
  choice('mc-five', 'FINAL ANSWER: 5', null, 'out of range'),
  choice('mc-hash', 'FINAL ANSWER: #2', null, 'a "#" only after the word'),
];
