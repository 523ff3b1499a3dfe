// The REM environment (egocentric multi-frame trajectories, Thompson et al.). How a trajectory maps onto the Episode
// contract:
//   actions       one per frame, always shown as an image (the modality is fixed; --modality does not apply): action i
//                 is frame i and its text the camera move that led to it ("start" for the first frame, then "move
//                 forward 1m", "rotate left 15°", "rotate right 15°"); the prompt writes each move between its frames
//   initialState  the movement annotations in one compact line ("moves between frames (F = …): LLFFR"), as the paper's
//                 message lists them before the images; chat prompts write each move between its frames instead, and
//                 the built-in model's compact layout (initial state, then the images) reads them from here. The world
//                 itself is in meta, never shown
//   question      one question; target its short answer ("3", "red cones", "equal", "left", "same time")
//   meta          variant, category, number of frames, objects, duplicates, objects seen, comparison options and
//                 counts, and the world (objects and start pose) from which frames are rendered
// Several questions are asked about each trajectory (one per category it supports); they share a split key, so a
// trajectory is entirely in train or entirely in test.
// Options (extra): --rem-variant baseline|full-rotation|single-frame (default baseline); --actions T is the trajectory
// length in frames for baseline (full-rotation always has 24 frames, single-frame 1); --rem-objects N or A-B
// (default: one of the paper's 8, 16, 24, 36, 48; single-frame 24-48; full-rotation always 24); --rem-duplicates N or
// A-B, objects that repeat a colour-shape already present (default: from the least the count allows, max(0, N-24), up
// to half the objects; full-rotation: 1-2 duplicated targets); --rem-question all|counting|comparison|left-right|
// temporal or a comma list (default all). Decisions where the paper is open: the renderer, field of view and
// visibility threshold (render.ts), the trajectory pattern and layouts (world.ts), question wording (questions.ts).
import { remBaselineAnswer } from './baseline.ts';
import { UserError } from '../../core/errors.ts';
import { scoreRem } from '../../rewards/rem.ts';
import { summarizeRem } from './summary.ts';
import type { Env } from '../env.ts';
import type { Episode } from '../../core/episode.ts';
import type { RawImage } from '../../core/image.ts';
import { remCandidates } from './episodes.ts';
import { REM_PROMPT_STYLES, remPrompt } from './prompt.ts';
import { renderFrame } from './render.ts';
import { framePoses, type RemWorld } from './world.ts';

function worldOf(episode: Episode): RemWorld {
  const world = episode.meta.world as RemWorld | undefined;
  if (!world || !Array.isArray(world.objects) || !world.start)
    throw new UserError(`rem: episode ${episode.id} has no world in its meta`);
  return world;
}

function renderAction(episode: Episode, index: number, size: number): RawImage {
  if (!(index >= 0 && index < episode.actions.length))
    throw new RangeError(`rem: episode ${episode.id} has no frame ${index + 1}`);
  const world = worldOf(episode);
  const poses = framePoses(
    world,
    episode.actions.slice(0, index + 1).map((a) => a.text),
  );
  return renderFrame(world, poses[index], size).image!;
}

export const remEnv: Env = {
  domain: 'rem',
  promptStyles: REM_PROMPT_STYLES,
  modalities: ['image'],
  imageSizes: { chat: 512, model: 64 },
  candidates: remCandidates,
  renderAction,
  prompt: remPrompt,
  score: scoreRem,
  intervalMethod: 'wilson',
  baselineAnswer: remBaselineAnswer,
  summarize: summarizeRem,
};
