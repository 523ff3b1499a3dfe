// REM episodes: the trajectory (world, frames and the camera moves between them) drawn for the variant and options,
// then the questions it supports, one candidate episode per question, all sharing the trajectory's split key. The
// options (--rem-variant, --rem-objects, --rem-duplicates, --rem-question) are read here; index.ts documents them.
import { z } from 'zod';
import { parseOrFail, UserError } from '../../core/errors.ts';
import { fingerprint, splitOf } from '../../core/fingerprint.ts';
import type { Rng } from '../../core/rng.ts';
import { rangeSchema } from '../mate/range.ts';
import type { Candidate, SampleOptions } from '../env.ts';
import {
  askCategory,
  countingQuestion,
  fullRotationQuestions,
  REM_CATEGORIES,
  sightings,
  type RemCategory,
  type RemQuestion,
} from './questions.ts';
import { frameCoverage } from './render.ts';
import {
  baselineMoves,
  baselineWorld,
  duplicateBounds,
  framePoses,
  fullRotationWorld,
  MOVE_FORWARD,
  ROTATE_LEFT,
  ROTATE_RIGHT,
  singleFrameWorld,
  START,
  type RemWorld,
} from './world.ts';

const REM_VARIANTS = ['baseline', 'full-rotation', 'single-frame'] as const;
type RemVariant = (typeof REM_VARIANTS)[number];
const PAPER_OBJECT_COUNTS = [8, 16, 24, 36, 48];

export interface RemOptions {
  variant: RemVariant;
  objects: [number, number] | null;
  duplicates: [number, number] | null;
  categories: RemCategory[];
}

const categorySchema = z.string().transform((s, ctx) => {
  const out = new Set<RemCategory>();
  for (const part of s.split(',').map((p) => p.trim())) {
    if (part === 'all') REM_CATEGORIES.forEach((c) => out.add(c));
    else if ((REM_CATEGORIES as readonly string[]).includes(part)) out.add(part as RemCategory);
    else {
      ctx.addIssue({
        code: 'custom',
        message: `unknown question type '${part}' (choose from all, ${REM_CATEGORIES.join(', ')})`,
      });
      return z.NEVER;
    }
  }
  return REM_CATEGORIES.filter((c) => out.has(c));
});

const optionsSchema = z.object({
  'rem-variant': z.enum(REM_VARIANTS).default('baseline'),
  'rem-objects': rangeSchema(2, 64).optional(),
  'rem-duplicates': rangeSchema(0, 62).optional(),
  'rem-question': categorySchema.default([...REM_CATEGORIES]),
});

/** Read this environment's options from the command's extras (kebab-case or camelCase keys; others ignored). */
export function remOptions(extra: Record<string, unknown>): RemOptions {
  const pick = (kebab: string, camel: string) => extra[kebab] ?? extra[camel];
  const o = parseOrFail(
    optionsSchema,
    {
      'rem-variant': pick('rem-variant', 'remVariant'),
      'rem-objects': pick('rem-objects', 'remObjects'),
      'rem-duplicates': pick('rem-duplicates', 'remDuplicates'),
      'rem-question': pick('rem-question', 'remQuestion'),
    },
    '--',
  );
  const variant = o['rem-variant'];
  if (variant !== 'baseline' && !o['rem-question'].includes('counting')) {
    throw new UserError(`--rem-question: the ${variant} variant asks counting questions only`);
  }
  if (variant === 'full-rotation' && o['rem-objects'])
    throw new UserError('--rem-objects: full-rotation always has 24 objects');
  const duplicates = o['rem-duplicates'] ?? null;
  if (variant === 'full-rotation' && duplicates && (duplicates[0] < 1 || duplicates[1] > 2)) {
    throw new UserError('--rem-duplicates: full-rotation duplicates 1 or 2 targets');
  }
  return { variant, objects: o['rem-objects'] ?? null, duplicates, categories: o['rem-question'] };
}

function drawObjectsAndDuplicates(rng: Rng, options: RemOptions): [number, number] {
  const count = options.objects
    ? rng.range(options.objects[0], options.objects[1])
    : options.variant === 'single-frame'
      ? rng.range(24, 48)
      : rng.pick(PAPER_OBJECT_COUNTS);
  const [lo, hi] = duplicateBounds(count);
  const wanted = options.duplicates ?? [lo, Math.max(lo, Math.floor(count / 2))];
  const a = Math.max(lo, wanted[0]);
  const b = Math.min(hi, wanted[1]);
  if (a > b)
    throw new UserError(
      `--rem-duplicates: ${wanted[0]}-${wanted[1]} is impossible with ${count} objects (allowed ${lo}-${hi})`,
    );
  return [count, rng.range(a, b)];
}

interface Trajectory {
  world: RemWorld;
  actionTexts: string[];
  duplicates: number;
}

function trajectory(rng: Rng, options: RemOptions, frames: number): Trajectory {
  if (options.variant === 'full-rotation') {
    const targets = options.duplicates ? rng.range(options.duplicates[0], options.duplicates[1]) : rng.range(1, 2);
    const world = fullRotationWorld(rng, targets);
    const turn = rng.bool() ? ROTATE_LEFT : ROTATE_RIGHT;
    return { world, actionTexts: [START, ...Array.from({ length: 23 }, () => turn)], duplicates: targets };
  }
  const [count, duplicates] = drawObjectsAndDuplicates(rng, options);
  if (options.variant === 'single-frame')
    return { world: singleFrameWorld(rng, count, duplicates), actionTexts: [START], duplicates };
  const world = baselineWorld(rng, count, duplicates);
  return { world, actionTexts: [START, ...baselineMoves(rng, world, frames - 1)], duplicates };
}

const MAX_BARREN_TRAJECTORIES = 500;

const MOVE_LETTER: Record<string, string> = { [MOVE_FORWARD]: 'F', [ROTATE_LEFT]: 'L', [ROTATE_RIGHT]: 'R' };

/** The moves as one compact line: a letter per move, in order (empty for a single frame). */
function movesLine(actionTexts: readonly string[]): string {
  return `moves between frames (F = move forward 1m, L = rotate left 15°, R = rotate right 15°): ${actionTexts
    .slice(1)
    .map((t) => MOVE_LETTER[t])
    .join('')}`;
}

export function* remCandidates(rng: Rng, sample: SampleOptions): Generator<Candidate> {
  const options = remOptions(sample.extra);
  if (options.variant === 'baseline' && !(sample.actions >= 1))
    throw new UserError(`--actions: a trajectory needs at least 1 frame, got ${sample.actions}`);
  let barren = 0; // trajectories in a row that supported none of the asked question types
  for (;;) {
    const { world, actionTexts, duplicates } = trajectory(rng, options, sample.actions);
    const worldJson = JSON.stringify(world);
    const splitKey = `${worldJson}\u001f${actionTexts.join('|')}`;
    // Skip rendering trajectories the shared generator would drop anyway (same rule as envs/generate.ts).
    if (sample.split && splitOf(fingerprint('rem', 'split-key', splitKey)) !== sample.split) continue;
    const s = sightings(world, frameCoverage(world, framePoses(world, actionTexts)));
    let questions: RemQuestion[];
    if (options.variant === 'full-rotation') questions = fullRotationQuestions(rng, world, s);
    else if (options.variant === 'single-frame') {
      questions = (['color', 'shape', 'color-shape'] as const)
        .map((kind) => countingQuestion(rng, world, s, kind))
        .filter((q) => q !== null);
    } else {
      questions = rng
        .shuffle(options.categories)
        .map((c) => askCategory(rng, c, world, s))
        .filter((q) => q !== null);
    }
    if (questions.length === 0) {
      if (++barren >= MAX_BARREN_TRAJECTORIES) {
        throw new UserError(
          `rem: ${MAX_BARREN_TRAJECTORIES} trajectories in a row allowed no ${options.categories.join('/')} question; use more objects or frames`,
        );
      }
      continue;
    }
    barren = 0;
    for (const q of questions) {
      yield {
        initialState: movesLine(actionTexts),
        actionTexts,
        question: q.question,
        target: q.target,
        fingerprintExtra: `${worldJson}\u001f${q.question}`,
        splitKey,
        meta: {
          variant: options.variant,
          category: q.category,
          frames: actionTexts.length,
          objects: world.objects.length,
          duplicates,
          objectsSeen: s.seen.filter(Boolean).length,
          entities: q.entities,
          ...(q.options ? { options: q.options } : {}),
          ...(q.counts ? { counts: q.counts } : {}),
          world,
        },
      };
    }
  }
}
