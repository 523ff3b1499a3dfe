// Boxes episodes: a scenario is an initial state and a sequence of valid operations; an episode shows the initial
// state, the first T operations and the cloze question "Box N contains" for one box, and all seven boxes of a
// scenario are asked in turn (the paper asks every box after every prefix). The split kinds of the paper's
// finetuning experiments are selected with `--split-kind`:
//   base            same form and nouns in train and test
//   numops          train episodes show at most 2 operations (asked for more, the train split draws 0-2, the
//                   paper's NumOps training set), test ones T (up to 12 in the paper)
//   vocab           train uses the rare nouns, test the common ones (the paper's direction, §5.1)
//   altforms        train uses the alternative phrasing and the rare nouns, test the base phrasing and the common
//                   nouns (the paper's demonstration/test mismatch, §4.2: the two share no word but "the" and "into")
//   altforms-numops altforms, and train episodes show at most 2 operations
//   ambiref         adjective + noun objects; the adjective is dropped when the noun is unique in the source box
//   movecontents    adds "Move the contents of Box N to Box M."
// In every kind the split is decided by the initial-state signature (objects per box), so that no signature occurs in
// both train and test. T = `--actions` is the number of operations shown (the paper: 0-12; up to 100 allowed for
// length sweeps); `--prefixes upto` draws the number uniformly from 0..T instead.
import { z } from 'zod';
import { parseOrFail, UserError } from '../../core/errors.ts';
import type { Rng } from '../../core/rng.ts';
import type { Candidate, SampleOptions } from '../env.ts';
import type { Split } from '../../core/episode.ts';
import { randomBaselineAccuracy } from './baseline.ts';
import { ADJECTIVES, COMMON_NOUNS, RARE_NOUNS } from './nouns.ts';
import { boxLabel, contentsAnswer, describeInitialState, describeOperation, questionText, type Forms } from './text.ts';
import {
  applyOperation,
  BOX_COUNT,
  objectName,
  sampleInitialState,
  sampleOperation,
  signature,
  type BoxObject,
  type BoxesState,
  type Operation,
} from './world.ts';

export const SPLIT_KINDS = [
  'base',
  'numops',
  'vocab',
  'altforms',
  'altforms-numops',
  'ambiref',
  'movecontents',
] as const;
export type SplitKind = (typeof SPLIT_KINDS)[number];

const MAX_BOXES_ACTIONS = 100;
/** NumOps: training episodes show at most this many operations. */
const NUMOPS_TRAIN_MAX = 2;
/** AmbiRef: nouns per scenario and adjectives per noun (so that several objects share a noun). */
const AMBIREF_NOUNS = 10;
const AMBIREF_ADJECTIVES_PER_NOUN = 4;

interface KindConfig {
  maxTrainOps?: number;
  forms: Record<Split, Forms>;
  vocabulary: Record<Split, 'common' | 'rare'>;
  ambiguous: boolean;
  moveContents: boolean;
}

const SAME = <T>(v: T): Record<Split, T> => ({ train: v, test: v });
const KINDS: Record<SplitKind, KindConfig> = {
  base: { forms: SAME('base'), vocabulary: SAME('common'), ambiguous: false, moveContents: false },
  numops: {
    maxTrainOps: NUMOPS_TRAIN_MAX,
    forms: SAME('base'),
    vocabulary: SAME('common'),
    ambiguous: false,
    moveContents: false,
  },
  vocab: { forms: SAME('base'), vocabulary: { train: 'rare', test: 'common' }, ambiguous: false, moveContents: false },
  altforms: {
    forms: { train: 'alt', test: 'base' },
    vocabulary: { train: 'rare', test: 'common' },
    ambiguous: false,
    moveContents: false,
  },
  'altforms-numops': {
    maxTrainOps: NUMOPS_TRAIN_MAX,
    forms: { train: 'alt', test: 'base' },
    vocabulary: { train: 'rare', test: 'common' },
    ambiguous: false,
    moveContents: false,
  },
  ambiref: { forms: SAME('base'), vocabulary: SAME('common'), ambiguous: true, moveContents: false },
  movecontents: { forms: SAME('base'), vocabulary: SAME('common'), ambiguous: false, moveContents: true },
};

/** Options reaching candidates() from CLI flags (camelCase, as yargs provides them). */
const BoxesOptionsSchema = z.object({
  'split-kind': z.enum(SPLIT_KINDS).default('base'),
  prefixes: z.enum(['exact', 'upto']).default('exact'),
});
interface BoxesOptions {
  splitKind: SplitKind;
  prefixes: 'exact' | 'upto';
}

interface BoxesScenario {
  initial: BoxesState;
  operations: Operation[];
  /** State after each prefix: states[k] = after k operations. */
  states: BoxesState[];
  sentences: string[];
  forms: Forms;
}

/** The extra options, validated; accepts kebab-case keys too, since commands may pass argv as is. */
function parseBoxesOptions(extra: Record<string, unknown>): BoxesOptions {
  const parsed = parseOrFail(
    BoxesOptionsSchema,
    { 'split-kind': extra.splitKind ?? extra['split-kind'], prefixes: extra.prefixes },
    'boxes: --',
  );
  return { splitKind: parsed['split-kind'], prefixes: parsed.prefixes };
}

function objectPool(rng: Rng, config: KindConfig, split: Split): BoxObject[] {
  const nouns = config.vocabulary[split] === 'rare' ? RARE_NOUNS : COMMON_NOUNS;
  if (!config.ambiguous) return nouns.map((noun) => ({ noun }));
  return rng
    .sample(nouns, AMBIREF_NOUNS)
    .flatMap((noun) => rng.sample(ADJECTIVES, AMBIREF_ADJECTIVES_PER_NOUN).map((adjective) => ({ noun, adjective })));
}

/** A scenario with `length` operations (fewer only if the world runs out of valid operations, which cannot happen). */
function sampleScenario(rng: Rng, config: KindConfig, split: Split, length: number): BoxesScenario {
  const forms = config.forms[split];
  const pool = objectPool(rng, config, split);
  const initial = sampleInitialState(rng, pool);
  const operations: Operation[] = [];
  const states: BoxesState[] = [initial];
  const sentences: string[] = [];
  for (let i = 0; i < length; i++) {
    const state = states[states.length - 1];
    const op = sampleOperation(rng, state, pool, config.moveContents);
    if (op === null) break;
    sentences.push(describeOperation(op, state, forms));
    operations.push(op);
    states.push(applyOperation(state, op).state);
  }
  return { initial, operations, states, sentences, forms };
}

/** Objects named in the clauses that mention `box`: its initial clause and the operations naming it. */
function clauseObjects(scenario: BoxesScenario, box: number, prefix: number): string[] {
  const names = new Set(scenario.initial[box].map(objectName));
  for (const op of scenario.operations.slice(0, prefix)) {
    if (op.kind === 'move' && (op.from === box || op.to === box)) names.add(objectName(op.object));
    if (op.kind === 'remove' && op.from === box) op.objects.forEach((o) => names.add(objectName(o)));
    if (op.kind === 'put' && op.to === box) op.objects.forEach((o) => names.add(objectName(o)));
  }
  return [...names].sort();
}

function affects(op: Operation, box: number): boolean {
  const touched = op.kind === 'remove' ? [op.from] : op.kind === 'put' ? [op.to] : [op.from, op.to];
  return touched.includes(box);
}

/** The candidate asking about `box` after the first `prefix` operations. */
function boxCandidate(scenario: BoxesScenario, box: number, prefix: number, kind: SplitKind): Candidate {
  const initialBox = scenario.initial[box];
  const finalBox = scenario.states[prefix][box];
  const target = contentsAnswer(finalBox);
  const clause = clauseObjects(scenario, box, prefix);
  const question = questionText(box, scenario.forms);
  return {
    initialState: describeInitialState(scenario.initial, scenario.forms),
    actionTexts: scenario.sentences.slice(0, prefix),
    question,
    target,
    fingerprintExtra: question,
    splitKey: signature(scenario.initial),
    meta: {
      splitKind: kind,
      forms: scenario.forms,
      box,
      boxLabel: boxLabel(box, scenario.forms),
      signature: signature(scenario.initial),
      numOps: prefix,
      opsAffectingBox: scenario.operations.slice(0, prefix).filter((op) => affects(op, box)).length,
      changed: target !== contentsAnswer(initialBox),
      initialContents: contentsAnswer(initialBox),
      clauseObjects: clause,
      baselineAccuracy: randomBaselineAccuracy(finalBox.map(objectName), clause),
      ambiguousReferences: KINDS[kind].ambiguous,
    },
  };
}

export function* boxesCandidates(rng: Rng, options: SampleOptions): Generator<Candidate> {
  const { splitKind, prefixes } = parseBoxesOptions(options.extra);
  const config = KINDS[splitKind];
  const maxOps = options.actions;
  if (!Number.isInteger(maxOps) || maxOps < 0 || maxOps > MAX_BOXES_ACTIONS) {
    throw new UserError(
      `boxes: --actions must be an integer from 0 to ${MAX_BOXES_ACTIONS} (operations shown), got ${maxOps}`,
    );
  }
  const split = options.split;
  if (
    split === undefined &&
    (config.forms.train !== config.forms.test ||
      config.vocabulary.train !== config.vocabulary.test ||
      config.maxTrainOps !== undefined)
  ) {
    throw new Error(`boxes: split kind ${splitKind} needs options.split (train and test episodes differ in form)`);
  }
  const effectiveSplit: Split = split ?? 'train';
  // NumOps: the train split never shows more than 2 operations. Asked for more (a length sweep's few-shot examples,
  // or a train run at the test length), it gives the paper's NumOps training set instead: 0-2 operations, uniformly.
  const capped = effectiveSplit === 'train' && config.maxTrainOps !== undefined && maxOps > config.maxTrainOps;
  const upto = prefixes === 'upto' || capped;
  const longest = capped ? config.maxTrainOps! : maxOps;
  for (;;) {
    const prefix = upto ? rng.range(0, longest) : longest;
    const scenario = sampleScenario(rng, config, effectiveSplit, prefix);
    for (const box of rng.shuffle(Array.from({ length: BOX_COUNT }, (_, i) => i))) {
      yield boxCandidate(scenario, box, prefix, splitKind);
    }
  }
}
