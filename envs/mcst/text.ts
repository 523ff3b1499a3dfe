// MCST wording: the initial-state description, action sentences with lexical variants (paper Table 9, plus each
// domain's own verbs) and negation variants ("does not", "doesn't", "does NOT", "did not", "refuses to"), and the
// question sentences. Every sentence names its entity, object and place in full, so the text alone determines the
// state (tests re-simulate episodes from it). A pick-up sentence states its source place only half of the time; the
// other half is what makes backward-inference questions ("Where was the pen before Emma picked it up?") non-trivial.
import type { Rng } from '../../core/rng.ts';
import { beFor, type DomainSpec, type Verb } from './domains.ts';
import { inventory, objectsAt, type ActionBody, type McstState, type World } from './world.ts';

const NEGATIONS = ['does not', "doesn't", 'does NOT', 'did not', 'refuses to'] as const;

const GENERIC: Record<'pick' | 'place' | 'give' | 'move' | 'turn', readonly Verb[]> = {
  pick: [
    ['picks up', 'pick up'],
    ['grabs', 'grab'],
    ['takes', 'take'],
    ['retrieves', 'retrieve'],
    ['gets', 'get'],
  ],
  place: [
    ['places', 'place'],
    ['puts', 'put'],
    ['sets down', 'set down'],
    ['leaves', 'leave'],
  ],
  give: [
    ['gives', 'give'],
    ['hands', 'hand'],
    ['passes', 'pass'],
  ],
  move: [
    ['moves', 'move'],
    ['walks', 'walk'],
    ['goes', 'go'],
    ['heads', 'head'],
  ],
  turn: [['turns', 'turn']],
};

function verbsFor(domain: DomainSpec, kind: ActionBody['kind']): readonly Verb[] {
  const group = kind === 'forward' ? 'move' : kind;
  const extra = group === 'pick' || group === 'place' || group === 'give' ? domain.verbs[group] : [];
  const all = [...GENERIC[group], ...extra];
  return all.filter((v, i) => all.findIndex((w) => w[0] === v[0]) === i);
}

function listWithAnd(items: readonly string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

const the = (items: readonly string[]) => listWithAnd(items.map((o) => `the ${o}`));
const steps = (n: number) => `${n} step${n === 1 ? '' : 's'}`;

export function placePrep(domain: DomainSpec, place: string): string {
  return domain.places.find((p) => p.name === place)?.prep ?? 'at';
}

export interface Realisation {
  text: string;
  /** For pick-ups: whether the sentence names the source place. */
  showsSource: boolean;
}

/** One sentence for `action`, negated or not, with a random verb variant. */
export function realiseAction(rng: Rng, domain: DomainSpec, action: ActionBody, negated: boolean): Realisation {
  const [third, base] = rng.pick(verbsFor(domain, action.kind));
  const verb = negated ? `${rng.pick(NEGATIONS)} ${base}` : third;
  const e = action.entity;
  switch (action.kind) {
    case 'pick': {
      const showsSource = rng.bool(0.5);
      return {
        text: `${e} ${verb} the ${action.object}${showsSource ? ` from the ${action.from}` : ''}.`,
        showsSource,
      };
    }
    case 'place':
      return {
        text: `${e} ${verb} the ${action.object} ${placePrep(domain, action.to)} the ${action.to}.`,
        showsSource: false,
      };
    case 'give':
      return { text: `${e} ${verb} the ${action.object} to ${action.to}.`, showsSource: false };
    case 'move':
      return { text: `${e} ${verb} ${steps(action.steps)} ${action.direction}.`, showsSource: false };
    case 'forward':
      return { text: `${e} ${verb} ${steps(action.steps)} forward.`, showsSource: false };
    case 'turn':
      return { text: `${e} ${verb} ${action.side}.`, showsSource: false };
  }
}

/** The initial state: who is there, what is where, who holds what, the carrying limit and (levels 3-5) the grid. */
export function describeInitialState(domain: DomainSpec, world: World, state: McstState): string {
  const sentences = [`${listWithAnd(world.entities)} are ${domain.setting}.`];
  for (const place of world.places) {
    const here = objectsAt(state, place).sort();
    const prep = placePrep(domain, place);
    sentences.push(
      here.length === 0
        ? `Nothing is ${prep} the ${place}.`
        : `${cap(the(here))} ${here.length === 1 ? beFor(here[0]) : 'are'} ${prep} the ${place}.`,
    );
  }
  for (const entity of world.entities) {
    const held = inventory(state, entity).sort();
    sentences.push(`${entity} has ${held.length === 0 ? 'nothing' : the(held)}.`);
  }
  sentences.push(`Each person can carry at most ${world.capacity} objects.`);
  if (world.gridSize > 0) {
    const n = world.gridSize;
    sentences.push(
      `Everyone stands on a ${n} by ${n} grid: x runs from 1 (west) to ${n} (east) and y from 1 (south) to ${n} (north).`,
    );
    for (const entity of world.entities) {
      const g = state.grid[entity];
      sentences.push(`${entity} is at (${g.x}, ${g.y}) facing ${g.facing}.`);
    }
  }
  return sentences.join(' ');
}

function cap(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
