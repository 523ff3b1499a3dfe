// MATE questions: the four tasks and their pointer/target attribute pairs, the wording of pointers and questions,
// the JSON each task shows, the linking attributes of a cross-modal item and its in-scene shots.
//
// Tasks (the paper's section 3 and 6.1):
//   img2txt  pointer visual (colour or shape), target textual (name, rotation, size, 3D coordinates); the JSON omits the pointer.
//   txt2img  pointer textual, target visual; the JSON omits the target.
//   img2img  pointer and target visual (colour→shape, shape→colour); no JSON, only the image.
//   txt2txt  pointer and target textual (two different ones); the full JSON and a blank image.
// The pointer's value is unique in the scene. Shots (0-2) are solved questions about other objects of the same scene,
// of the same task and target attribute, preferably with the same pointer attribute too.
import type { Rng } from '../../core/rng.ts';
import {
  attributeText,
  MATE_COLORS,
  MATE_SHAPES,
  sizeClass,
  type MateAttribute,
  type MateObject,
  type MateScene,
} from './scene.ts';

export const MATE_TASKS = ['img2txt', 'txt2img', 'img2img', 'txt2txt'] as const;
export type MateTask = (typeof MATE_TASKS)[number];

const VISUAL_ATTRIBUTES = ['color', 'shape'] as const satisfies readonly MateAttribute[];
const TEXTUAL_ATTRIBUTES = ['name', 'rotation', 'size', 'coords'] as const satisfies readonly MateAttribute[];

export interface AttributePair {
  pointer: MateAttribute;
  target: MateAttribute;
}

function pairs(pointers: readonly MateAttribute[], targets: readonly MateAttribute[]): AttributePair[] {
  return pointers.flatMap((pointer) => targets.filter((t) => t !== pointer).map((target) => ({ pointer, target })));
}

export const TASK_PAIRS: Record<MateTask, AttributePair[]> = {
  img2txt: pairs(VISUAL_ATTRIBUTES, TEXTUAL_ATTRIBUTES),
  txt2img: pairs(TEXTUAL_ATTRIBUTES, VISUAL_ATTRIBUTES),
  img2img: pairs(VISUAL_ATTRIBUTES, VISUAL_ATTRIBUTES),
  txt2txt: pairs(TEXTUAL_ATTRIBUTES, TEXTUAL_ATTRIBUTES),
};

/** Attributes the JSON leaves out for a task and pair; null = no JSON at all (img2img). */
export function omittedAttributes(task: MateTask, pair: AttributePair): MateAttribute[] | null {
  switch (task) {
    case 'img2txt':
      return [pair.pointer];
    case 'txt2img':
      return [pair.target];
    case 'img2img':
      return null;
    case 'txt2txt':
      return [];
  }
}

/** "the red object", "the cone", "the object named Object_3", "the object at the coordinates [..]", … */
function pointerPhrase(object: MateObject, attribute: MateAttribute): string {
  const value = attributeText(object, attribute);
  switch (attribute) {
    case 'color':
      return `the ${value} object`;
    case 'shape':
      return `the ${value}`;
    case 'name':
      return `the object named ${value}`;
    case 'coords':
      return `the object at the coordinates ${value}`;
    default:
      return `the object with a ${attribute} of ${value}`;
  }
}

const TARGET_NOUN: Record<MateAttribute, string> = {
  name: 'name',
  rotation: 'rotation',
  size: 'size',
  coords: '3D coordinates',
  color: 'color',
  shape: 'shape',
  material: 'material',
};

export function targetNoun(attribute: MateAttribute): string {
  return TARGET_NOUN[attribute];
}

export function questionText(object: MateObject, pair: AttributePair): string {
  const verb = pair.target === 'coords' ? 'are' : 'is';
  return `What ${verb} the ${targetNoun(pair.target)} of ${pointerPhrase(object, pair.pointer)}?`;
}

/** Answer options listed for visual targets (the paper lists them to fix the vocabulary). */
export function answerOptions(attribute: MateAttribute): readonly string[] | null {
  if (attribute === 'color') return MATE_COLORS;
  if (attribute === 'shape') return MATE_SHAPES;
  return null;
}

/** Objects whose value of `attribute` no other object shares. */
export function uniqueObjects(scene: MateScene, attribute: MateAttribute): MateObject[] {
  const counts = new Map<string, number>();
  for (const o of scene.objects)
    counts.set(attributeText(o, attribute), (counts.get(attributeText(o, attribute)) ?? 0) + 1);
  return scene.objects.filter((o) => counts.get(attributeText(o, attribute)) === 1);
}

/** Attributes seen in both the image and the JSON that can link the object across modalities. */
const LINKABLE = ['shape', 'color', 'material', 'size'] as const;
type Linkable = (typeof LINKABLE)[number];

function linkValue(o: MateObject, a: Linkable): string {
  return a === 'size' ? sizeClass(o.size) : o[a];
}

/**
 * The smallest set of attributes shown in both modalities that singles the object out (the paper's key attributes;
 * size counts by its visible class); ['coords'] when only the position does. Null for unimodal tasks.
 */
export function linkingAttributes(
  scene: MateScene,
  object: MateObject,
  task: MateTask,
  pair: AttributePair,
): string[] | null {
  if (task !== 'img2txt' && task !== 'txt2img') return null;
  const shared = LINKABLE.filter((a) => a !== pair.pointer && a !== pair.target);
  const others = scene.objects.filter((o) => o !== object);
  for (let k = 1; k <= shared.length; k++) {
    for (const combo of combinations(shared, k)) {
      if (others.every((o) => combo.some((a) => linkValue(o, a) !== linkValue(object, a)))) return combo;
    }
  }
  return ['coords'];
}

function combinations<T>(items: readonly T[], k: number): T[][] {
  if (k === 0) return [[]];
  if (items.length < k) return [];
  const [first, ...rest] = items;
  return [...combinations(rest, k - 1).map((c) => [first, ...c]), ...combinations(rest, k)];
}

export interface MateShot {
  question: string;
  answer: string;
  pointer: MateAttribute;
  target: MateAttribute;
}

/** Up to `count` solved questions about other objects of the scene, same task and target attribute. */
export function sceneShots(
  rng: Rng,
  scene: MateScene,
  task: MateTask,
  pair: AttributePair,
  asked: MateObject,
  count: number,
): MateShot[] {
  const shots: MateShot[] = [];
  const used = new Set<MateObject>([asked]);
  const samePointer = [pair];
  const sameTarget = TASK_PAIRS[task].filter((p) => p.target === pair.target && p.pointer !== pair.pointer);
  for (let i = 0; i < count; i++) {
    let chosen: { object: MateObject; pair: AttributePair } | null = null;
    for (const options of [samePointer, rng.shuffle(sameTarget)]) {
      for (const p of options) {
        const free = uniqueObjects(scene, p.pointer).filter((o) => !used.has(o));
        if (free.length > 0) {
          chosen = { object: rng.pick(free), pair: p };
          break;
        }
      }
      if (chosen) break;
    }
    if (!chosen) break;
    used.add(chosen.object);
    shots.push({
      question: questionText(chosen.object, chosen.pair),
      answer: attributeText(chosen.object, chosen.pair.target),
      pointer: chosen.pair.pointer,
      target: chosen.pair.target,
    });
  }
  return shots;
}
