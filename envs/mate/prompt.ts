// MATE prompts in the paper's wording (Appendix H, Figures 6-11): one user message holding the scene image (a blank
// image for txt2txt) then the instructions, the JSON (not for img2img), the answer format, answer options for visual
// targets, the item's own in-scene shots and the question. Styles: 'few-shot' shows the item's shots (0-2, fixed at
// generation by --mate-shots, as in the paper where shots come from the same scene), 'zero-shot' leaves them out, 'cot'
// asks for the paper's step-by-step linking before the answer. Shots from other episodes (PromptOptions.shots) are not
// used: a MATE shot belongs to the item's scene.
import { UserError } from '../../core/errors.ts';
import type { Episode, PromptMessage } from '../../core/episode.ts';
import type { PromptOptions } from '../env.ts';
import { answerOptions, targetNoun, type MateShot, type MateTask } from './questions.ts';
import type { MateAttribute } from './scene.ts';

export const MATE_PROMPT_STYLES = ['few-shot', 'zero-shot', 'cot'] as const;

const PLACEHOLDER: Record<string, string> = {
  name: 'NAME',
  rotation: 'ROTATION',
  size: 'SIZE',
  coords: '[X, Y, Z]',
  color: 'COLOR',
  shape: 'SHAPE',
};

const IMAGE_INTRO =
  'This image shows a minimalist arrangement of 3D geometric shapes made of different materials and colors.';
const JSON_INTRO =
  'The following JSON contains information about all objects in the scene in the image, including their name, 3D coordinates (represented as [X, Y, Z]), material, and other attributes.';

function pointerPlace(task: MateTask): string {
  return task === 'img2txt' || task === 'img2img' ? 'in the image' : 'in the JSON';
}

function job(task: MateTask, pointerDescription: string, target: MateAttribute): string {
  const noun = targetNoun(target);
  switch (task) {
    case 'img2img':
      return `Your job is to identify ${pointerDescription} in the image and determine its ${noun}`;
    case 'txt2txt':
      return `Your job is to analyze this information, find ${pointerDescription}, and retrieve its ${noun} from its attributes`;
    case 'img2txt':
      return `Your job is to identify ${pointerDescription} in the image, find the same object in the JSON and retrieve its ${noun} from its attributes`;
    case 'txt2img':
      return `Your job is to find ${pointerDescription} in the JSON, identify the same object in the image and determine its ${noun}`;
  }
}

/** The pointer phrase inside the question ("What is the name of the red object?" → "the red object"). */
function pointerOf(question: string): string {
  const m = /^What (?:is|are) the .+? of (the .+)\?$/.exec(question);
  if (!m) throw new UserError(`mate: cannot read the pointer of question ${JSON.stringify(question)}`);
  return m[1];
}

export function matePrompt(episode: Episode, options: PromptOptions): PromptMessage[] {
  if (!(MATE_PROMPT_STYLES as readonly string[]).includes(options.style)) {
    throw new UserError(`mate: unknown prompt style '${options.style}' (choose from ${MATE_PROMPT_STYLES.join(', ')})`);
  }
  const meta = episode.meta;
  const task = meta.task as MateTask;
  const target = meta.targetAttribute as MateAttribute;
  const question = episode.question ?? '';
  const format = `{"answer": "${PLACEHOLDER[target]}"}`;
  const lines: string[] = [];
  if (task !== 'txt2txt') lines.push(IMAGE_INTRO);
  if (task !== 'img2img')
    lines.push(task === 'txt2txt' ? JSON_INTRO.replace(' in the scene in the image', ' in a scene') : JSON_INTRO);
  lines.push(`${job(task, pointerOf(question), target)} in the following format: ${format}`);
  const opts = answerOptions(target);
  if (opts)
    lines.push(
      `Select your answer from the following options: ${opts.slice(0, -1).join(', ')}, or ${opts[opts.length - 1]}.`,
    );
  if (options.style === 'cot') {
    lines.push(
      `Think step by step: first find the object that matches the pointer ${pointerPlace(task)} and list its attributes, then ` +
        'name the attributes that distinguish it from the other objects, locate the object with those attributes, and ' +
        `retrieve its ${targetNoun(target)}. End your response with your answer in the following format: ${format}.`,
    );
  } else {
    lines.push(
      `Do not add any additional text to your answer, provide your answer always in the following format: ${format}.`,
    );
  }
  if (task !== 'img2img')
    lines.push(
      `Here is the JSON containing details about all objects in the scene in the image: ${episode.initialState}`,
    );
  const shots = options.style === 'zero-shot' ? [] : ((meta.shots as MateShot[] | undefined) ?? []);
  if (shots.length > 0)
    lines.push(`For example: ${shots.map((s) => `${s.question} {"answer": ${JSON.stringify(s.answer)}}`).join(' ')}`);
  lines.push(`Now answer the following question: ${question}`);
  return [
    {
      role: 'user',
      parts: [
        { type: 'image', ref: { episode, index: 0 } },
        { type: 'text', text: lines.join(' ') },
      ],
    },
  ];
}
