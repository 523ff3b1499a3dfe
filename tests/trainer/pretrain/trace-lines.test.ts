// Trace-line counts: a correct trace scores every line; a wrong action, a wrong state, an early stop or a line written
// under the wrong label each lower exactly the count they should.
import { describe, expect, it } from 'vitest';
import { getEnv } from '../../../envs/registry.ts';
import { generateEpisodes } from '../../../envs/generate.ts';
import { parseTraceLines, targetText } from '../../../models/builtin/template.ts';
import { addTraceLineCounts, traceLineCounts } from '../../../trainer/pretrain/trace-lines.ts';

describe('trace-line counts', async () => {
  const env = await getEnv('shell');
  const [episode] = generateEpisodes(env, { n: 1, actions: 4, split: 'test', seed: 'trace-lines', modality: 'text' });
  const truth = targetText(env, episode);
  const lines = truth.split('\n');

  it('reads back the lines targetText writes, up to the answer', () => {
    const parsed = parseTraceLines(truth);
    expect(parsed).toHaveLength(4);
    expect(parsed.map((l) => l.action)).toEqual(episode.actions.map((a) => a.text));
    expect(parsed.map((l) => l.state)).toEqual(env.traceStates!(episode));
    expect(parsed.map((l) => l.label)).toEqual(['A', 'C', 'D', 'E']);
  });

  it('counts every line of the true trace', () => {
    expect(traceLineCounts(env, episode, truth)).toEqual({ expected: 4, written: 4, actionCopied: 4, stateCorrect: 4 });
  });

  it('separates a wrong action from a wrong state', () => {
    const wrongAction = [...lines];
    const [a, b] = episode.actions[1].text.split(' swap ');
    wrongAction[1] = wrongAction[1].replace(`${a} swap ${b}`, `${b} swap ${a}`);
    expect(traceLineCounts(env, episode, wrongAction.join('\n'))).toMatchObject({
      written: 4,
      actionCopied: 3,
      stateCorrect: 4,
    });
    const wrongState = [...lines];
    const state = parseTraceLines(truth)[2].state;
    wrongState[2] = wrongState[2].replace(/-> \d$/, `-> ${state === '1' ? '2' : '1'}`);
    expect(traceLineCounts(env, episode, wrongState.join('\n'))).toMatchObject({
      written: 4,
      actionCopied: 4,
      stateCorrect: 3,
    });
  });

  it('counts only the lines written under their own label, before the answer', () => {
    const early = `${lines[0]}\n${lines[1]}\nFINAL ANSWER: 1`;
    expect(traceLineCounts(env, episode, early)).toEqual({ expected: 4, written: 2, actionCopied: 2, stateCorrect: 2 });
    const relabelled = [lines[0], lines[1].replace(/^C:/, 'A:'), ...lines.slice(2)].join('\n');
    expect(traceLineCounts(env, episode, relabelled).written).toBe(3);
    expect(traceLineCounts(env, episode, 'FINAL ANSWER: 2').written).toBe(0);
    const sum = addTraceLineCounts(traceLineCounts(env, episode, truth), traceLineCounts(env, episode, early));
    expect(sum).toEqual({ expected: 8, written: 6, actionCopied: 6, stateCorrect: 6 });
  });
});
