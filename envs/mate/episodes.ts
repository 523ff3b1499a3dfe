// MATE episodes: this environment's options (--mate-task, --mate-objects, --mate-shots; index.ts documents them) and
// the candidate stream, balanced by cycling through every (task, object count, pointer, target) combination in
// shuffled blocks, each item a fresh scene with a unique pointer value.
import { z } from 'zod';
import { parseOrFail, UserError } from '../../core/errors.ts';
import type { Rng } from '../../core/rng.ts';
import type { Candidate, SampleOptions } from '../env.ts';
import { rangeSchema } from './range.ts';
import {
  linkingAttributes,
  MATE_TASKS,
  omittedAttributes,
  questionText,
  sceneShots,
  TASK_PAIRS,
  uniqueObjects,
  type AttributePair,
  type MateTask,
} from './questions.ts';
import { attributeText, sampleScene, sceneJson } from './scene.ts';

const TASK_GROUPS: Record<string, MateTask[]> = {
  cross: ['img2txt', 'txt2img'],
  unimodal: ['img2img', 'txt2txt'],
  all: [...MATE_TASKS],
};

const taskSchema = z.string().transform((s, ctx) => {
  const tasks = new Set<MateTask>();
  for (const part of s.split(',').map((p) => p.trim())) {
    if (TASK_GROUPS[part]) TASK_GROUPS[part].forEach((t) => tasks.add(t));
    else if ((MATE_TASKS as readonly string[]).includes(part)) tasks.add(part as MateTask);
    else {
      ctx.addIssue({
        code: 'custom',
        message: `unknown task '${part}' (choose from ${[...MATE_TASKS, ...Object.keys(TASK_GROUPS)].join(', ')})`,
      });
      return z.NEVER;
    }
  }
  return MATE_TASKS.filter((t) => tasks.has(t));
});

const optionsSchema = z.object({
  'mate-task': taskSchema.default(['img2txt', 'txt2img']),
  'mate-objects': rangeSchema(3, 10).default([3, 10]),
  'mate-shots': z.coerce.number().int().min(0).max(2).default(2),
});

/** Read this environment's options from the command's extras (kebab-case or camelCase keys; others ignored). */
export function mateOptions(extra: Record<string, unknown>): MateOptions {
  const pick = (kebab: string, camel: string) => extra[kebab] ?? extra[camel];
  const parsed = parseOrFail(
    optionsSchema,
    {
      'mate-task': pick('mate-task', 'mateTask'),
      'mate-objects': pick('mate-objects', 'mateObjects'),
      'mate-shots': pick('mate-shots', 'mateShots'),
    },
    '--',
  );
  return { tasks: parsed['mate-task'], objects: parsed['mate-objects'], shots: parsed['mate-shots'] };
}

export interface MateOptions {
  tasks: MateTask[];
  objects: [number, number];
  shots: number;
}

interface Combo {
  task: MateTask;
  count: number;
  pair: AttributePair;
}

const SCENE_TRIES = 200;

/** Build one item for a combination, or null when no scene with a unique pointer turned up. */
function makeItem(rng: Rng, combo: Combo, shots: number): Candidate | null {
  for (let t = 0; t < SCENE_TRIES; t++) {
    const scene = sampleScene(rng, combo.count);
    const candidates = uniqueObjects(scene, combo.pair.pointer);
    if (candidates.length === 0) continue;
    const object = rng.pick(candidates);
    const omit = omittedAttributes(combo.task, combo.pair);
    const json = omit === null ? '' : sceneJson(scene, omit);
    const question = questionText(object, combo.pair);
    const shotList = sceneShots(rng, scene, combo.task, combo.pair, object, shots);
    const target = attributeText(object, combo.pair.target);
    return {
      initialState: json,
      actionTexts: [combo.task === 'txt2txt' ? 'blank image' : 'scene image'],
      question,
      target,
      fingerprintExtra: `${sceneJson(scene, [])}\u001f${question}`,
      meta: {
        task: combo.task,
        objectCount: combo.count,
        pointerAttribute: combo.pair.pointer,
        pointerValue: attributeText(object, combo.pair.pointer),
        targetAttribute: combo.pair.target,
        targetObject: object.name,
        linkingAttributes: linkingAttributes(scene, object, combo.task, combo.pair),
        shots: shotList,
        scene: scene.objects.map((o) => ({ ...o, coords: [...o.coords] })),
      },
    };
  }
  return null;
}

/** Endless stream of items: shuffled blocks holding every (task, count, pair) once, so all are equally frequent. */
function* mateItems(rng: Rng, options: MateOptions): Generator<Candidate> {
  const combos: Combo[] = [];
  for (const task of options.tasks) {
    for (let count = options.objects[0]; count <= options.objects[1]; count++) {
      for (const pair of TASK_PAIRS[task]) combos.push({ task, count, pair });
    }
  }
  if (combos.length === 0) throw new UserError('mate: no task selected');
  for (;;) {
    for (const combo of rng.shuffle(combos)) {
      const item = makeItem(rng, combo, options.shots);
      if (item) yield item;
    }
  }
}

export function mateCandidates(rng: Rng, options: SampleOptions): Iterable<Candidate> {
  return mateItems(rng, mateOptions(options.extra));
}
