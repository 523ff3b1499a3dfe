// The boxes environment (Kim & Schuster, "Entity Tracking in Language Models"): 7 boxes, Move / Remove / Put, one
// cloze question "Box N contains" per episode, exact-set reward. Text only: there are no image actions, so the
// environment lists only the 'text' modality and renderAction refuses. See scenario.ts for the split kinds and T.
import { UserError } from '../../core/errors.ts';
import { scoreBoxes } from '../../rewards/boxes.ts';
import type { Env } from '../env.ts';
import { boxesBaselineAnswer } from './baseline.ts';
import { BOXES_PROMPT_STYLES, boxesPrompt } from './prompt.ts';
import { boxesCandidates } from './scenario.ts';
import { summarizeBoxes } from './summary.ts';

export const boxesEnv: Env = {
  domain: 'boxes',
  promptStyles: BOXES_PROMPT_STYLES,
  modalities: ['text'],
  imageSizes: { chat: 0, model: 0 },
  candidates: boxesCandidates,
  renderAction() {
    throw new UserError('boxes: the domain has text actions only; there are no image actions to render (use --modality text)');
  },
  prompt: boxesPrompt,
  score: scoreBoxes,
  intervalMethod: 'wilson',
  summarize: summarizeBoxes,
  baselineAnswer: boxesBaselineAnswer,
};
