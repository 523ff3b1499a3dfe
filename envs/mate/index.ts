// The MATE environment (cross-modal entity linking, Alonso et al.). How an item maps onto the Episode contract:
//   initialState  the scene as JSON without the attribute asked through the image ('' for img2img, which has no JSON)
//   actions       exactly one, always an image: the rendered scene (img2txt, txt2img, img2img) or a blank white image
//                 (txt2txt, as in the paper); its modality is fixed, --modality does not apply
//   question      "What is the <target> of <pointer>?"; target = the answer as the JSON writes it ("Object_3", "0.351",
//                 "[1.25, -0.4, 0.7]", "274.53", "red", "cone")
//   meta          task, object count, pointer/target attributes and values, linking attributes, the in-scene shots,
//                 and the full scene (for rendering and the out-of-scene error)
// Options (extra): --mate-task img2txt|txt2img|img2img|txt2txt|cross|unimodal|all or a comma list (default cross, the
// paper's headline), --mate-objects N or A-B within 3-10 (default 3-10), --mate-shots 0-2 (default 2, the paper's
// setting; the general --shots counts examples from other episodes, which MATE does not use).
// Items are balanced by cycling over every (task, object count, pointer, target) combination (episodes.ts); the
// split filter then keeps a hash-chosen 80/20 of them, so the balance in each split is close to, not exactly, uniform.
// Decisions where the paper is open: the renderer (render.ts), the precision of numbers (scene.ts), txt2txt and
// img2img pairs use only textual resp. visual attributes.
import { mateBaselineAnswer } from './baseline.ts';
import { UserError } from '../../core/errors.ts';
import { scoreMate } from '../../rewards/mate.ts';
import { summarizeMate } from './summary.ts';
import type { Env } from '../env.ts';
import type { Episode } from '../../core/episode.ts';
import type { RawImage } from '../../core/image.ts';
import { MATE_PROMPT_STYLES, matePrompt } from './prompt.ts';
import { mateCandidates } from './episodes.ts';
import { blankImage, renderScene } from './render.ts';
import type { MateObject } from './scene.ts';

function renderAction(episode: Episode, index: number, size: number): RawImage {
  if (index !== 0)
    throw new RangeError(`mate: episode ${episode.id} has one action (the scene image), not ${index + 1}`);
  if (episode.meta.task === 'txt2txt') return blankImage(size);
  const scene = episode.meta.scene;
  if (!Array.isArray(scene)) throw new UserError(`mate: episode ${episode.id} has no scene in its meta`);
  return renderScene({ objects: scene as MateObject[] }, size);
}

export const mateEnv: Env = {
  domain: 'mate',
  promptStyles: MATE_PROMPT_STYLES,
  modalities: ['image'],
  imageSizes: { chat: 512, model: 64 },
  candidates: mateCandidates,
  renderAction,
  prompt: matePrompt,
  score: scoreMate,
  intervalMethod: 'wilson',
  baselineAnswer: mateBaselineAnswer,
  summarize: summarizeMate,
};
