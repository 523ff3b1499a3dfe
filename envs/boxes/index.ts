// The boxes environment (Kim & Schuster, "Entity Tracking in Language Models"): 7 boxes, Move / Remove / Put, one
// cloze question "Box N contains" per episode, exact-set reward. Text only: there are no image actions, so the
// environment lists only the 'text' modality and renderAction refuses. See episodes.ts for the split kinds and T.
import { scoreBoxes } from '../../rewards/boxes.ts';
import type { Env } from '../env.ts';
import { textOnlyActions } from '../text-only.ts';
import { boxesBaselineAnswer } from './baseline.ts';
import { BOXES_PROMPT_STYLES, boxesPrompt } from './prompt.ts';
import { boxesCandidates } from './episodes.ts';
import { summarizeBoxes } from './summary.ts';

export const boxesEnv: Env = {
  domain: 'boxes',
  promptStyles: BOXES_PROMPT_STYLES,
  ...textOnlyActions('boxes'),
  candidates: boxesCandidates,
  prompt: boxesPrompt,
  score: scoreBoxes,
  intervalMethod: 'wilson',
  summarize: summarizeBoxes,
  baselineAnswer: boxesBaselineAnswer,
};
