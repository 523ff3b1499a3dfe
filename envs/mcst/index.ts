// The MCST environment (multi-constraint state tracking with negation): five levels, twelve domains, nine question
// types, Direct / CoT / State-Tracking prompts, exact-match reward after normalisation. Text only: the environment
// lists only the 'text' modality and renderAction refuses. See scenario.ts for options and questions.ts for the rules.
import { UserError } from '../../core/errors.ts';
import { scoreMcst } from '../../rewards/mcst.ts';
import type { Env } from '../env.ts';
import { mcstBaselineAnswer } from './baseline.ts';
import { MCST_PROMPT_STYLES, mcstPrompt } from './prompt.ts';
import { mcstCandidates } from './scenario.ts';
import { summarizeMcst } from './summary.ts';

export { withoutNegations } from './scenario.ts';

export const mcstEnv: Env = {
  domain: 'mcst',
  promptStyles: MCST_PROMPT_STYLES,
  modalities: ['text'],
  imageSizes: { chat: 0, model: 0 },
  candidates: mcstCandidates,
  renderAction() {
    throw new UserError('mcst: the domain has text actions only; there are no image actions to render (use --modality text)');
  },
  prompt: mcstPrompt,
  score: scoreMcst,
  intervalMethod: 'wilson',
  summarize: summarizeMcst,
  baselineAnswer: mcstBaselineAnswer,
};
