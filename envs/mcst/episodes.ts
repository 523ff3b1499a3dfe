// MCST episodes (paper Algorithm 1): sample a level's parameters, a domain, names from one region, an initial state,
// a sequence of legal actions with a share of them negated, then one question. An episode's actions are the action
// sentences; the question and its answer are the episode's question and target.
//
// Options (from CLI flags): --level 1..5 (default: each scenario draws a level uniformly), --negation on|off|paired
// (off: the matched pair without its negated sentences; paired: both, one after the other, sharing meta.pairId),
// --mcst-domain NAME (default: any of the twelve), --question-type TYPE[,TYPE…] (default: all nine, Table 10 mix).
// The number of actions comes from the level's range (Table 3), not from --actions, which MCST ignores.
// Single-factor ablations (paper §4.4) override one parameter of the level: --negation-rate R (0-0.5, Table 18),
// --mcst-actions N or A-B (Table 22), --mcst-grid none|N (Table 20).
// The split is decided per scenario (splitKey = pairId), so both members of a matched pair fall in the same split.
import { z } from 'zod';
import { fingerprint } from '../../core/fingerprint.ts';
import { parseOrFail, UserError } from '../../core/errors.ts';
import type { Rng } from '../../core/rng.ts';
import type { Candidate, SampleOptions } from '../env.ts';
import type { Episode } from '../../core/episode.ts';
import { DOMAIN_KEYS, domainSpec, type DomainSpec } from './domains.ts';
import { LEVELS, levelSpec, negatedCount, type LevelSpec } from './levels.ts';
import { NAME_REGIONS, REGION_KEYS } from './names.ts';
import {
  ANSWER_KIND,
  chooseQuestion,
  isNegationSensitive,
  QUESTION_TYPES,
  type Question,
  type QuestionType,
} from './questions.ts';
import { describeInitialState, realiseAction } from './text.ts';
import {
  applyAction,
  DIRECTIONS,
  inventory,
  isLegal,
  sampleAction,
  type ActionBody,
  type McstState,
  type World,
} from './world.ts';

const INITIALLY_HELD_PROBABILITY = 0.25;

const listOf = <T extends string>(values: readonly T[], name: string) =>
  z.preprocess(
    (v) =>
      v === undefined ? undefined : Array.isArray(v) ? v.flatMap((x) => String(x).split(',')) : String(v).split(','),
    z
      .array(
        z.enum(['all', ...values] as [string, ...string[]], {
          message: `${name} must be one of all, ${values.join(', ')}`,
        }),
      )
      .optional(),
  );

const McstOptionsSchema = z.object({
  level: z.preprocess(
    (v) => (v === undefined || v === 'all' ? undefined : Number(v)),
    z.number({ message: 'must be a number from 1 to 5 or all' }).int().min(1).max(5).optional(),
  ),
  negation: z.enum(['on', 'off', 'paired']).default('on'),
  'mcst-domain': listOf(DOMAIN_KEYS, 'domain'),
  'question-type': listOf(QUESTION_TYPES, 'question type'),
  // Single-factor ablations (paper §4.4, Tables 18, 20, 22): override one parameter of the level.
  'negation-rate': z.preprocess(
    (v) => (v === undefined ? undefined : Number(v)),
    z.number({ message: 'must be a number from 0 to 0.5' }).min(0).max(0.5).optional(),
  ),
  'mcst-actions': z.preprocess(
    (v) => (v === undefined ? undefined : String(v)),
    z
      .string()
      .regex(/^\d+(?:-\d+)?$/, 'must be N or A-B')
      .transform((t) => t.split('-').map(Number) as [number] | [number, number])
      .transform((p): [number, number] => [p[0], p[1] ?? p[0]])
      .refine(([a, b]) => a >= 1 && a <= b && b <= 40, 'must lie within 1-40, low to high')
      .optional(),
  ),
  'mcst-grid': z.preprocess(
    (v) => (v === undefined ? undefined : v === 'none' ? 0 : Number(v)),
    z
      .number({ message: 'must be none or a side length from 3 to 15' })
      .int()
      .refine((n) => n === 0 || (n >= 3 && n <= 15), 'must be none or a side length from 3 to 15')
      .optional(),
  ),
});

interface McstOptions {
  level: number | undefined;
  negation: 'on' | 'off' | 'paired';
  domains: string[];
  /** Level parameters overridden for an ablation. */
  overrides: { negationRate?: number; actions?: [number, number]; gridSize?: number };
  questionTypes: QuestionType[];
}

function parseMcstOptions(extra: Record<string, unknown>): McstOptions {
  const parsed = parseOrFail(
    McstOptionsSchema,
    {
      level: extra.level,
      negation: extra.negation,
      'mcst-domain': extra.mcstDomain ?? extra['mcst-domain'],
      'question-type': extra.questionType ?? extra['question-type'],
      'negation-rate': extra.negationRate ?? extra['negation-rate'],
      'mcst-actions': extra.mcstActions ?? extra['mcst-actions'],
      'mcst-grid': extra.mcstGrid ?? extra['mcst-grid'],
    },
    'mcst: --',
  );
  const domains = parsed['mcst-domain'];
  const types = parsed['question-type'];
  return {
    level: parsed.level,
    negation: parsed.negation,
    domains: !domains || domains.includes('all') ? [...DOMAIN_KEYS] : domains,
    questionTypes: !types || types.includes('all') ? [...QUESTION_TYPES] : (types as QuestionType[]),
    overrides: {
      ...(parsed['negation-rate'] !== undefined ? { negationRate: parsed['negation-rate'] } : {}),
      ...(parsed['mcst-actions'] !== undefined ? { actions: parsed['mcst-actions'] } : {}),
      ...(parsed['mcst-grid'] !== undefined ? { gridSize: parsed['mcst-grid'] } : {}),
    },
  };
}

interface ScenarioAction {
  body: ActionBody;
  negated: boolean;
  text: string;
  showsSource: boolean;
}

interface Scenario {
  level: LevelSpec;
  domain: DomainSpec;
  region: string;
  world: World;
  initialText: string;
  actions: ScenarioAction[];
  states: McstState[];
  blind: Array<McstState | null>;
}

function sampleWorld(
  rng: Rng,
  level: LevelSpec,
  domain: DomainSpec,
  region: string,
): { world: World; initial: McstState } {
  const entities = rng.sample(NAME_REGIONS[region], rng.range(...level.entities));
  const objects = rng.sample(domain.objects, rng.range(...level.objects));
  const places = rng
    .sample(domain.places, Math.min(domain.places.length, Math.max(3, entities.length)))
    .map((p) => p.name);
  const world: World = { entities, objects, places, capacity: rng.pick([2, 3]), gridSize: level.gridSize };
  const initial: McstState = { where: {}, grid: {} };
  for (const object of objects) {
    const free = entities.filter((e) => inventory(initial, e).length < world.capacity);
    initial.where[object] =
      free.length > 0 && rng.bool(INITIALLY_HELD_PROBABILITY)
        ? { entity: rng.pick(free) }
        : { place: rng.pick(places) };
  }
  for (const entity of entities) {
    if (level.gridSize > 0)
      initial.grid[entity] = {
        x: rng.range(1, level.gridSize),
        y: rng.range(1, level.gridSize),
        facing: rng.pick(DIRECTIONS),
      };
  }
  return { world, initial };
}

function sampleScenario(rng: Rng, level: LevelSpec, domain: DomainSpec, region: string): Scenario {
  const { world, initial } = sampleWorld(rng, level, domain, region);
  const count = rng.range(...level.actions);
  const negatedAt = new Set(rng.sample([...Array(count).keys()], negatedCount(level, count)));
  const actions: ScenarioAction[] = [];
  const states = [initial];
  const blind: Array<McstState | null> = [initial];
  for (let i = 0; i < count; i++) {
    const state = states[i];
    const body = sampleAction(rng, world, state, blind[i]);
    if (body === null)
      throw new Error('mcst: no legal action (cannot happen: placing or picking up is always possible)');
    const negated = negatedAt.has(i);
    const { text, showsSource } = realiseAction(rng, domain, body, negated);
    actions.push({ body, negated, text, showsSource });
    states.push(negated ? state : applyAction(state, body));
    const b = blind[i];
    blind.push(b !== null && isLegal(world, b, body) ? applyAction(b, body) : null);
  }
  return {
    level,
    domain,
    region,
    world,
    initialText: describeInitialState(domain, world, initial),
    actions,
    states,
    blind,
  };
}

/** The candidate for a scenario and its question, with its negated sentences (if `withNegation`) or without. */
function scenarioCandidate(scenario: Scenario, question: Question, withNegation: boolean): Candidate {
  const all = scenario.actions;
  const shown = withNegation ? all : all.filter((a) => !a.negated);
  const pairId = fingerprint('mcst-pair', scenario.initialText, all.map((a) => a.text).join('\n'), question.text);
  const negatedIndices = shown.flatMap((a, i) => (a.negated ? [i] : []));
  return {
    initialState: scenario.initialText,
    actionTexts: shown.map((a) => a.text),
    question: question.text,
    target: question.answer,
    fingerprintExtra: question.text,
    splitKey: pairId,
    meta: {
      level: scenario.level.level,
      domain: scenario.domain.key,
      nameRegion: scenario.region,
      questionType: question.type,
      answerKind: ANSWER_KIND[question.type],
      negation: negatedIndices.length > 0,
      negatedIndices,
      numActions: shown.length,
      gridSize: scenario.world.gridSize,
      negationRate: scenario.level.negationRate,
      initialAnswer: question.initialAnswer,
      negationBlindAnswer: negatedIndices.length > 0 ? question.blindAnswer : null,
      negationSensitive: negatedIndices.length > 0 && isNegationSensitive(question),
      pairId,
      pairRole: all.some((a) => a.negated) ? (withNegation ? 'with-negation' : 'without-negation') : 'no-negation',
      entities: scenario.world.entities,
      places: scenario.world.places,
      objects: scenario.world.objects,
    },
  };
}

/** The matched pair of an episode with negation: the same scenario and question with its negated sentences removed. */
export function withoutNegations(episode: Episode): Episode {
  const negated = new Set(Array.isArray(episode.meta.negatedIndices) ? (episode.meta.negatedIndices as number[]) : []);
  if (negated.size === 0) return episode;
  const actions = episode.actions.filter((_, i) => !negated.has(i));
  return {
    ...episode,
    id: `${episode.id}-noneg`,
    actions,
    meta: {
      ...episode.meta,
      negation: false,
      negatedIndices: [],
      numActions: actions.length,
      negationBlindAnswer: null,
      negationSensitive: false,
      pairRole: 'without-negation',
    },
  };
}

/** Consecutive scenarios without a valid question of the requested types before we call the request impossible. */
const MAX_FRUITLESS_SCENARIOS = 500;
const GRID_ONLY: readonly QuestionType[] = ['direction', 'position'];

export function* mcstCandidates(rng: Rng, options: SampleOptions): Generator<Candidate> {
  const opts = parseMcstOptions(options.extra);
  const gridOnly = opts.questionTypes.every((t) => GRID_ONLY.includes(t));
  if (
    gridOnly &&
    (opts.overrides.gridSize === 0 ||
      (opts.overrides.gridSize === undefined && opts.level !== undefined && levelSpec(opts.level).gridSize === 0))
  ) {
    throw new UserError(
      `mcst: --question-type ${opts.questionTypes.join(',')} needs a grid, which only levels 3-5 have (or --mcst-grid N)`,
    );
  }
  let fruitless = 0;
  for (;;) {
    const level = { ...(opts.level !== undefined ? levelSpec(opts.level) : rng.pick(LEVELS)), ...opts.overrides };
    const scenario = sampleScenario(rng, level, domainSpec(rng.pick(opts.domains)), rng.pick(REGION_KEYS));
    const question = chooseQuestion(
      rng,
      {
        domain: scenario.domain,
        world: scenario.world,
        actions: scenario.actions,
        states: scenario.states,
        blind: scenario.blind,
      },
      opts.questionTypes,
    );
    if (question === null) {
      // e.g. only grid questions asked while levels are mixed: draw again, but not forever.
      if (++fruitless > MAX_FRUITLESS_SCENARIOS)
        throw new UserError(
          `mcst: no valid ${opts.questionTypes.join('/')} question in ${MAX_FRUITLESS_SCENARIOS} scenarios`,
        );
      continue;
    }
    fruitless = 0;
    const hasNegation = scenario.actions.some((a) => a.negated);
    if (opts.negation !== 'off') yield scenarioCandidate(scenario, question, true);
    if (opts.negation === 'off' || (opts.negation === 'paired' && hasNegation))
      yield scenarioCandidate(scenario, question, false);
  }
}
