// The shell game environment (MET-Bench): ball start 1-3 in text, T swaps "x swap y" as text or images, target the
// ball's final shell "1"-"3". Binary reward, so accuracy intervals are Wilson intervals.
import { UserError } from '../../core/errors.ts';
import { scoreShell } from '../../rewards/shell.ts';
import type { Env } from '../env.ts';
import type { Episode } from '../../core/episode.ts';
import type { RawImage } from '../../core/image.ts';
import { randomShellSwap, shellBaselineAnswer } from './baseline.ts';
import { SHELL_PROMPT_STYLES, shellPerceptionProbe, shellPrompt } from './prompt.ts';
import { parseSwap, renderSwap } from './render.ts';
import { shellCandidates } from './episodes.ts';
import { readShellSwap } from './perception-answer.ts';
import { summarizeShell } from './summary.ts';

function renderAction(episode: Episode, index: number, size: number): RawImage {
  const action = episode.actions[index];
  if (!action) throw new RangeError(`shell: episode ${episode.id} has no action ${index}`);
  const swap = parseSwap(action.text);
  if (!swap)
    throw new UserError(
      `shell: action ${index + 1} of ${episode.id} is not "x swap y": ${JSON.stringify(action.text)}`,
    );
  return renderSwap(swap, size);
}

export const shellEnv: Env = {
  domain: 'shell',
  promptStyles: SHELL_PROMPT_STYLES,
  imageSizes: { chat: 512, model: 64 },
  candidates: shellCandidates,
  renderAction,
  actionImageFromText: true,
  prompt: shellPrompt,
  perceptionProbe: shellPerceptionProbe,
  readPerceptionAnswer: readShellSwap,
  score: scoreShell,
  intervalMethod: 'wilson',
  summarize: summarizeShell,
  baselineAnswer: shellBaselineAnswer,
  randomPerceptionAnswer: randomShellSwap,
  traceStates(episode) {
    let ball = Number(episode.initialState);
    return episode.actions.map((action, i) => {
      const swap = parseSwap(action.text);
      if (!swap)
        throw new UserError(
          `shell: action ${i + 1} of ${episode.id} is not "x swap y": ${JSON.stringify(action.text)}`,
        );
      if (ball === swap[0]) ball = swap[1];
      else if (ball === swap[1]) ball = swap[0];
      return String(ball);
    });
  },
};
