// MET-Bench's third domain, Minecraft forward prediction: from an initial state and a text action ("Walk forward 8
// blocks"), pick which of four candidate next states is the right one. A dataset-kind environment: there is no
// generator, the tasks come from the published set (envs/metbench/official.ts reads it; `metrl evaluate --dataset`).
// Text modality shows the states as JSON snapshots; image modality as first-person screenshots, the set's own bytes,
// which reach chat models unchanged (eval/query-to-chat.ts). The built-in model and local Hugging Face checkpoints read
// pictures through renderAction, which has no screenshots to draw: they evaluate the text modality only. Binary reward
// (rewards/minecraft.ts), so accuracy intervals are Wilson intervals. Baselines: a uniform choice, and Game Start's
// "nothing changed" (the candidate most like the initial state).
import { UserError } from '../../core/errors.ts';
import { scoreMinecraft, MINECRAFT_CHOICES } from '../../rewards/minecraft.ts';
import type { Env } from '../env.ts';
import { candidateStates, MINECRAFT_PROMPT_STYLES, minecraftPrompt } from './prompt.ts';
import { PyFloat, pyDumps, pyLoads, type PyValue } from '../../core/python-json.ts';
import type { Episode } from '../../core/episode.ts';

/** Every leaf of a JSON state by its path ("pos.0" → "1.0"), for comparing states field by field. */
function leaves(value: PyValue, path = '', out = new Map<string, string>()): Map<string, string> {
  if (value !== null && typeof value === 'object' && !(value instanceof PyFloat)) {
    for (const [k, v] of Object.entries(value as Record<string, PyValue>)) leaves(v, `${path}.${k}`, out);
  } else out.set(path, pyDumps(value));
  return out;
}

/**
 * The Game Start answer to a choice: the candidate most like the initial state (the most leaves with the same value;
 * the first on a tie), i.e. the prediction that the action changed nothing. States that are not JSON compare whole.
 */
export function unchangedChoice(episode: Episode): string {
  const parse = (s: string) => {
    try {
      return leaves(pyLoads(s));
    } catch {
      return new Map([['', s]]);
    }
  };
  const start = parse(episode.initialState);
  let best = 0;
  let bestScore = -1;
  candidateStates(episode).forEach((state, i) => {
    const fields = parse(state);
    let same = 0;
    for (const [k, v] of fields) if (start.get(k) === v) same++;
    const score = same - Math.abs(fields.size - start.size) / 1e6;
    if (score > bestScore) [best, bestScore] = [i, score];
  });
  return String(best + 1);
}

export const minecraftEnv: Env = {
  domain: 'minecraft',
  promptStyles: MINECRAFT_PROMPT_STYLES,
  // The action is text in both of the harness's modalities; an evaluation's --modality image shows the states as
  // screenshots (the episode's action label carries that choice, eval/selection.ts relabels it). Listing 'text' alone
  // keeps training (the built-in model, text only) from asking for an image transfer modality it cannot draw.
  modalities: ['text'],
  imageSizes: { chat: 0, model: 0 },
  candidates() {
    throw new UserError(
      'minecraft has no episode generator: its tasks come from the published set (metrl evaluate --dataset hf://vanyacohen/MET-Bench-Minecraft or a local copy)',
    );
  },
  renderAction(episode) {
    throw new UserError(
      `minecraft: screenshots of ${episode.id} are sent to chat models as the dataset stores them; the built-in model and local checkpoints read --modality text only`,
    );
  },
  prompt: minecraftPrompt,
  score: scoreMinecraft,
  intervalMethod: 'wilson',
  baselineAnswer(episode, baseline, rng) {
    // 'random' is the chance line (25%); 'game-start' predicts, as in chess and shell, that nothing changes.
    return baseline === 'game-start' ? unchangedChoice(episode) : String(rng.range(1, MINECRAFT_CHOICES));
  },
};
