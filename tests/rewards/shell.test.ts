// The shell game parser and reward, case by case: the shapes real completions take (markdown, LaTeX, trailing
// reasoning), each with the MET-Bench harness's verdict (metbench/scoring.py's _parse_choice_answer; the harder cases,
// checked against the harness itself, are in metbench-cases.ts).
import { describe, expect, it } from 'vitest';
import { parseShellAnswer, scoreShell } from '../../rewards/shell.ts';
import { UserError } from '../../core/errors.ts';

const cases: Array<[string, string | null]> = [
  // accepted whole answers
  ['2', '2'],
  ['  3 \n', '3'],
  ['FINAL ANSWER: 2', '2'],
  ['final answer: shell 1', '1'],
  ['Final Answer: Shell 3.', '3'],
  ['FINAL ANSWER: choice 2!', '2'],
  ['FINAL ANSWER: shell #1', '1'],
  ['FINAL ANSWER: [2]', '2'],
  ['FINAL ANSWER: {3}', '3'],
  ['FINAL ANSWER: `1`', '1'],
  ['FINAL ANSWER: **2**', '2'],
  ['**FINAL ANSWER:** 3', '3'],
  ['FINAL ANSWER: \\boxed{2}', '2'],
  ['FINAL ANSWER:\n\n2', '2'],
  ['FINAL ANSWER: 1\nBecause the last swap moved it to shell 1.', '1'],
  // the LAST marker wins
  ['Start: 2. 1 swap 2 → 1. FINAL ANSWER: 1\nWait, I missed a swap. 1 swap 3 → 3.\nFINAL ANSWER: 3', '3'],
  ['Step by step: ball at 2, then 3.\nFINAL ANSWER: [3]', '3'],
  // rejected: ambiguous or malformed
  ['FINAL ANSWER: #1', null], // "#" only after choice/candidate/shell
  ['**Final Answer**: 3', null], // no colon right after the words: no marker
  ['FINAL ANSWER: $\\boxed{3}$', null], // "$" is not removed
  ['12', null],
  ['1 or 2', null],
  ['FINAL ANSWER: 1 or 2', null],
  ['0', null],
  ['4', null],
  ['2.5', null],
  ['FINAL ANSWER: 2.5', null],
  ['FINAL ANSWER: 4', null],
  ['FINAL ANSWER: shell 2 (it moved twice)', null],
  ['FINAL ANSWER: the ball is under shell 2', null],
  ['FINAL ANSWER:', null],
  ['', null],
  ['The ball is under shell 2.', null], // no marker and not a bare answer
  ['I think\n2', null], // no marker: the whole response must be the answer
  ['FINAL ANSWER: two', null],
  ['FINAL ANSWER: 2, 3', null],
  ['FINAL ANSWER: 2 swap 3', null],
];

describe('parseShellAnswer', () => {
  it.each(cases)('%j → %j', (response, expected) => {
    expect(parseShellAnswer(response)).toBe(expected);
  });
});

describe('scoreShell', () => {
  it('scores 1 for the right shell', () => {
    expect(scoreShell({ target: '2', response: 'FINAL ANSWER: 2' })).toEqual({
      reward: 1,
      valid: true,
      prediction: '2',
      metrics: { exact: true },
      harness: { invalid_pred: 0, successes: 1, trials: 1 },
    });
  });
  it('scores 0 for a wrong but valid shell', () => {
    expect(scoreShell({ target: '2', response: 'FINAL ANSWER: 3' })).toEqual({
      reward: 0,
      valid: true,
      prediction: '3',
      metrics: { exact: false },
      harness: { invalid_pred: 0, successes: 0, trials: 1 },
    });
  });
  it('scores 0 and invalid for an ambiguous answer, even if it mentions the target', () => {
    expect(scoreShell({ target: '1', response: 'FINAL ANSWER: 1 or 2' })).toEqual({
      reward: 0,
      valid: false,
      prediction: null,
      metrics: { exact: false },
      harness: { invalid_pred: 1, successes: 0, trials: 1 },
    });
  });
  it('rejects a target that is not a shell', () => {
    expect(() => scoreShell({ target: '4', response: '4' })).toThrow(UserError);
    // as the harness, which compares str(target) with "1", "2", "3" and stops otherwise
    expect(() => scoreShell({ target: ' 2', response: '2' })).toThrow(UserError);
  });
});
