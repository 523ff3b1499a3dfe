// MET-Bench's third domain, Minecraft forward prediction: from an initial state and a text action ("Walk forward 8
// blocks"), pick which of four candidate next states is the right one. A dataset-kind environment: there is no
// generator, the tasks come from the published set (envs/metbench/official.ts reads it; `metrl evaluate --dataset`).
// Text modality shows the states as JSON snapshots; image modality as first-person screenshots, the set's own bytes,
// which reach chat models unchanged (eval/query-to-chat.ts). The built-in model and local Hugging Face checkpoints read
// pictures through renderAction, which has no screenshots to draw: they evaluate the text modality only. Binary reward
// (rewards/minecraft.ts), so accuracy intervals are Wilson intervals.
import { UserError } from '../../core/errors.ts';
import { scoreMinecraft, MINECRAFT_CHOICES } from '../../rewards/minecraft.ts';
import type { Env } from '../env.ts';
import { MINECRAFT_PROMPT_STYLES, minecraftPrompt } from './prompt.ts';

export const minecraftEnv: Env = {
  domain: 'minecraft',
  promptStyles: MINECRAFT_PROMPT_STYLES,
  imageSizes: { chat: 0, model: 0 },
  candidates() {
    throw new UserError('minecraft has no episode generator: its tasks come from the published set (metrl evaluate --dataset hf://vanyacohen/MET-Bench-Minecraft or a local copy)');
  },
  renderAction(episode) {
    throw new UserError(`minecraft: screenshots of ${episode.id} are sent to chat models as the dataset stores them; the built-in model and local checkpoints read --modality text only`);
  },
  prompt: minecraftPrompt,
  score: scoreMinecraft,
  intervalMethod: 'wilson',
  baselineAnswer(_episode, baseline, rng) {
    // The paper's chance line for Minecraft is a uniform choice (25%); there is no "game start" answer to a choice.
    if (baseline === 'game-start') throw new UserError('minecraft: baseline:game-start has no answer to a choice among candidates (use baseline:random)');
    return String(rng.range(1, MINECRAFT_CHOICES));
  },
};
