// The nine MCST question types (paper §3.5, Table 10) and how one is chosen for a scenario. Each question comes with
// its answer, the answer read off the initial state, and the negation-blind answer (the answer if every negated action
// had been executed; null when executing them is impossible, e.g. an object taken twice).
//
// Rules (paper Appendix C.2), and our decisions where it is open:
// - Answer dependency: a question whose answer equals the one read off the initial state is rejected (so copying
//   S0 never scores), for every type but verification. A True/False claim would then always flip its S0 truth, a
//   shortcut, so verification instead requires the claimed object to be involved in some action, and draws the
//   answer (True/False) and its agreement with S0 each with probability 1/2.
// - No ambiguity: possession and location have one answer; comparison rejects ties; backward inference asks about an
//   entity's only pick-up of that object, and only when the pick-up sentence does not name the source place.
// - Types are drawn with the paper's Table 10 proportions among the types that have a valid question; direction and
//   position exist only on grid levels (3-5).
// - Negation sensitivity: in scenarios with negated actions, 80% of the time the question is drawn from those of the
//   chosen type whose negation-blind answer differs from the answer, when there are any (the paper asks for at
//   least 40% of questions to be sensitive; tests check it).
import type { Rng } from '../../core/rng.ts';
import { placePrep } from './text.ts';
import { beFor, type DomainSpec } from './domains.ts';
import { inventory, objectsAt, type McstState, type World, type ActionBody } from './world.ts';

export const QUESTION_TYPES = [
  'possession',
  'verification',
  'location',
  'count-entity',
  'count-location',
  'direction',
  'position',
  'comparison',
  'backward',
] as const;
export type QuestionType = (typeof QUESTION_TYPES)[number];

/** Paper Table 10 distribution (%). */
const QUESTION_WEIGHTS: Record<QuestionType, number> = {
  possession: 22.0,
  verification: 21.3,
  location: 18.6,
  'count-entity': 12.3,
  'count-location': 8.9,
  direction: 6.5,
  position: 4.7,
  comparison: 3.9,
  backward: 2.0,
};

export type AnswerKind = 'name' | 'boolean' | 'place' | 'number' | 'direction' | 'coordinates';
export const ANSWER_KIND: Record<QuestionType, AnswerKind> = {
  possession: 'name',
  verification: 'boolean',
  location: 'place',
  'count-entity': 'number',
  'count-location': 'number',
  direction: 'direction',
  position: 'coordinates',
  comparison: 'name',
  backward: 'place',
};

const NEGATION_SENSITIVE_SHARE = 0.8;

export interface Question {
  type: QuestionType;
  text: string;
  answer: string;
  initialAnswer: string | null;
  blindAnswer: string | null;
}

/** What the generator knows about a scenario when asking about it. */
export interface QuestionContext {
  domain: DomainSpec;
  world: World;
  actions: ReadonlyArray<{ body: ActionBody; negated: boolean; showsSource: boolean }>;
  /** states[i]: after the first i actions (negated ones not executed). */
  states: readonly McstState[];
  /** blind[i]: after the first i actions with negated ones executed too; null once that is impossible. */
  blind: ReadonlyArray<McstState | null>;
}

const holderOf = (s: McstState, o: string) => {
  const h = s.where[o];
  return 'entity' in h ? h.entity : 'no one';
};
const whereIs = (s: McstState, o: string) => {
  const h = s.where[o];
  return 'entity' in h ? h.entity : h.place;
};
const coords = (s: McstState, e: string) => `(${s.grid[e].x}, ${s.grid[e].y})`;

function objectsIn(a: ActionBody): string[] {
  return 'object' in a ? [a.object] : [];
}

/** Every valid question of the given types (verification claims are all listed; choice balances them later). */
function questionCandidates(ctx: QuestionContext, types: readonly QuestionType[]): Question[] {
  const { world, domain } = ctx;
  const s0 = ctx.states[0];
  const final = ctx.states[ctx.states.length - 1];
  const blind = ctx.blind[ctx.blind.length - 1];
  const out: Question[] = [];
  const add = (type: QuestionType, text: string, answerOf: (s: McstState) => string) => {
    const answer = answerOf(final);
    const initialAnswer = answerOf(s0);
    if (type !== 'verification' && answer === initialAnswer) return;
    out.push({ type, text, answer, initialAnswer, blindAnswer: blind ? answerOf(blind) : null });
  };
  const want = new Set(types);
  const grid = world.gridSize > 0;
  for (const o of world.objects) {
    if (want.has('possession')) add('possession', `Who has the ${o} now?`, (s) => holderOf(s, o));
    if (want.has('location') && 'place' in final.where[o])
      add('location', `Where ${beFor(o)} the ${o} now?`, (s) => whereIs(s, o));
  }
  if (want.has('verification')) {
    for (const o of world.objects) {
      const involved = ctx.actions.filter((a) => objectsIn(a.body).includes(o)).map((a) => a.body);
      if (involved.length === 0) continue;
      const places = new Set<string>();
      const people = new Set<string>();
      const start = s0.where[o];
      if ('place' in start) places.add(start.place);
      else people.add(start.entity);
      for (const a of involved) {
        people.add(a.entity);
        if (a.kind === 'pick') places.add(a.from);
        if (a.kind === 'place') places.add(a.to);
        if (a.kind === 'give') people.add(a.to);
      }
      for (const place of places) {
        add('verification', `True or False: The ${o} ${beFor(o)} ${placePrep(domain, place)} the ${place}.`, (s) =>
          truth(whereIs(s, o) === place),
        );
      }
      for (const person of people)
        add('verification', `True or False: ${person} has the ${o}.`, (s) => truth(holderOf(s, o) === person));
    }
  }
  for (const e of world.entities) {
    if (want.has('count-entity'))
      add('count-entity', `How many objects does ${e} have now?`, (s) => String(inventory(s, e).length));
    if (grid && want.has('direction')) add('direction', `Which direction is ${e} facing now?`, (s) => s.grid[e].facing);
    if (grid && want.has('position')) add('position', `What are ${e}'s coordinates now?`, (s) => coords(s, e));
  }
  if (want.has('count-location')) {
    for (const p of world.places) {
      add('count-location', `How many objects are ${placePrep(domain, p)} the ${p} now?`, (s) =>
        String(objectsAt(s, p).length),
      );
    }
  }
  if (want.has('comparison')) {
    for (let i = 0; i < world.entities.length; i++) {
      for (let j = i + 1; j < world.entities.length; j++) {
        const [a, b] = [world.entities[i], world.entities[j]];
        if (inventory(final, a).length === inventory(final, b).length) continue; // no ties
        const winner = (s: McstState) => {
          const [x, y] = [inventory(s, a).length, inventory(s, b).length];
          return x === y ? 'tie' : x > y ? a : b;
        };
        // Name order alternates with the pair so the winner is not always named first.
        const [first, second] = (i + j) % 2 === 0 ? [a, b] : [b, a];
        add('comparison', `Who has more objects now, ${first} or ${second}?`, winner);
      }
    }
  }
  if (want.has('backward')) {
    ctx.actions.forEach((act, index) => {
      const a = act.body;
      if (a.kind !== 'pick' || act.negated || act.showsSource) return;
      const picks = ctx.actions.filter(
        (x) => x.body.kind === 'pick' && x.body.entity === a.entity && x.body.object === a.object,
      );
      if (picks.length !== 1) return;
      const answer = a.from;
      const startHolder = s0.where[a.object];
      const initialAnswer = 'place' in startHolder ? startHolder.place : startHolder.entity;
      if (answer === initialAnswer) return;
      const blindBefore = ctx.blind[index];
      out.push({
        type: 'backward',
        text:
          beFor(a.object) === 'is'
            ? `Where was the ${a.object} before ${a.entity} picked it up?`
            : `Where were the ${a.object} before ${a.entity} picked them up?`,
        answer,
        initialAnswer,
        blindAnswer: blindBefore ? whereIs(blindBefore, a.object) : null,
      });
    });
  }
  return out;
}

function truth(value: boolean): string {
  return value ? 'True' : 'False';
}

export function isNegationSensitive(q: Question): boolean {
  return q.blindAnswer !== null && q.blindAnswer !== q.answer;
}

/** Pick one question (see the header for the rules), or null when none of the allowed types has a valid one. */
export function chooseQuestion(rng: Rng, ctx: QuestionContext, types: readonly QuestionType[]): Question | null {
  const pool = questionCandidates(ctx, types);
  if (pool.length === 0) return null;
  // The type first, with the paper's proportions, so that negation sensitivity does not skew the type mix.
  const available = QUESTION_TYPES.filter((t) => pool.some((q) => q.type === t));
  const type = available[rng.weighted(available.map((t) => QUESTION_WEIGHTS[t]))];
  let ofType = pool.filter((q) => q.type === type);
  const hasNegation = ctx.actions.some((a) => a.negated);
  if (hasNegation && rng.bool(NEGATION_SENSITIVE_SHARE)) {
    const sensitive = ofType.filter(isNegationSensitive);
    if (sensitive.length > 0) ofType = sensitive;
  }
  if (type === 'verification') {
    const wantTrue = rng.bool() ? 'True' : 'False';
    const wantAgree = rng.bool();
    const byTruth = ofType.filter((q) => q.answer === wantTrue);
    const byBoth = byTruth.filter((q) => (q.answer === q.initialAnswer) === wantAgree);
    ofType = byBoth.length > 0 ? byBoth : byTruth.length > 0 ? byTruth : ofType;
  }
  return rng.pick(ofType);
}
