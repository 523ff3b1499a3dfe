// Minecraft's choice parsing follows the MET-Bench harness's grammar (metbench/scoring.py _parse_choice_answer): the
// answer after the last "final answer:" marker, decoration stripped, exactly one choice 1-4, optionally named
// "choice"/"candidate"/"shell" with "#", optionally ending in "." or "!". And the Game Start ("nothing changed")
// answer picks the candidate most like the initial state.
import { describe, expect, it } from 'vitest';
import { parseChoice, scoreMinecraft } from '../../rewards/minecraft.ts';
import { unchangedChoice } from '../../envs/minecraft/index.ts';
import { minecraftEnv } from '../../envs/minecraft/index.ts';
import type { Episode } from '../../core/episode.ts';

describe('minecraft choice parsing', () => {
  it('accepts what the harness accepts', () => {
    const ok: [string, string][] = [
      ['FINAL ANSWER: 4', '4'],
      ['3', '3'],
      ['Final answer: choice 2.', '2'],
      ['final answer:candidate #1!', '1'],
      ['FINAL ANSWER: **3**', '3'],
      ['FINAL ANSWER: \\boxed{2}', '2'],
      ['FINAL ANSWER: [4]', '4'],
      ['I think 1.\nFINAL ANSWER: 1\nFINAL ANSWER: 3', '3'],
      ['FINAL ANSWER: `2`\nbecause…', '2'],
    ];
    for (const [response, choice] of ok) expect(parseChoice(response)).toBe(choice);
  });

  it('refuses what the harness refuses', () => {
    for (const response of [
      'FINAL ANSWER: 5',
      'FINAL ANSWER: 0',
      'FINAL ANSWER: 1 or 2',
      'FINAL ANSWER: 3 because it moved',
      'The answer is 2',
      'FINAL ANSWER: #2',
      '',
      '12',
    ]) {
      expect(parseChoice(response)).toBeNull();
    }
  });

  it('scores 1 for the right choice, 0 and invalid otherwise', () => {
    expect(scoreMinecraft({ target: '4', response: 'FINAL ANSWER: 4' })).toMatchObject({
      reward: 1,
      valid: true,
      prediction: '4',
    });
    expect(scoreMinecraft({ target: '4', response: 'FINAL ANSWER: 3' })).toMatchObject({ reward: 0, valid: true });
    expect(scoreMinecraft({ target: '4', response: 'four' })).toMatchObject({
      reward: 0,
      valid: false,
      prediction: null,
    });
  });
});

describe('minecraft baselines', () => {
  const episode = (initial: string, candidates: string[]): Episode => ({
    id: 'mc',
    domain: 'minecraft',
    split: 'test',
    initialState: initial,
    actions: [{ text: 'Walk forward 8 blocks', modality: 'text' }],
    target: '1',
    meta: { candidate_states: candidates },
  });

  it('Game Start picks the candidate that changed least', () => {
    const initial = '{"pos": [1.0, 64.0, 3.0], "yaw": 90.0, "hp": 20}';
    expect(
      unchangedChoice(
        episode(initial, [
          '{"pos": [9.0, 64.0, 3.0], "yaw": 0.0, "hp": 20}',
          '{"pos": [1.0, 64.0, 3.0], "yaw": 90.0, "hp": 20}',
          '{"pos": [1.0, 64.0, 5.0], "yaw": 90.0, "hp": 20}',
          '{}',
        ]),
      ),
    ).toBe('2');
    expect(
      unchangedChoice(
        episode(initial, [
          '{"pos": [9.0, 64.0, 3.0], "yaw": 0.0, "hp": 20}',
          '{"pos": [1.0, 64.0, 4.0], "yaw": 90.0, "hp": 20}',
          '{}',
          '{"hp": 19}',
        ]),
      ),
    ).toBe('2');
  });

  it('random draws each choice about a quarter of the time', async () => {
    const { Rng } = await import('../../core/rng.ts');
    const rng = new Rng(1, 'mc');
    const counts = new Map<string, number>();
    for (let i = 0; i < 4000; i++) {
      const a = minecraftEnv.baselineAnswer!(episode('{}', ['{}', '{}', '{}', '{}']), 'random', rng);
      counts.set(a, (counts.get(a) ?? 0) + 1);
    }
    expect([...counts.keys()].sort()).toEqual(['1', '2', '3', '4']);
    for (const c of counts.values()) expect(Math.abs(c / 4000 - 0.25)).toBeLessThan(0.03);
  });
});
