// The MCST environment (multi-constraint state tracking with negation): five levels, twelve domains, nine question
// types, Direct / CoT / State-Tracking prompts, exact-match reward after normalisation. Text only: the environment
// lists only the 'text' modality and renderAction refuses. See episodes.ts for options and questions.ts for the rules.
import { scoreMcst } from '../../rewards/mcst.ts';
import type { Env } from '../env.ts';
import { textOnlyActions } from '../text-only.ts';
import { mcstBaselineAnswer } from './baseline.ts';
import { MCST_PROMPT_STYLES, mcstPrompt } from './prompt.ts';
import { mcstCandidates } from './episodes.ts';
import { summarizeMcst } from './summary.ts';

export { withoutNegations } from './episodes.ts';

export const mcstEnv: Env = {
  domain: 'mcst',
  promptStyles: MCST_PROMPT_STYLES,
  ...textOnlyActions('mcst'),
  candidates: mcstCandidates,
  prompt: mcstPrompt,
  score: scoreMcst,
  intervalMethod: 'wilson',
  summarize: summarizeMcst,
  baselineAnswer: mcstBaselineAnswer,
};
