// Test helper: an independent reader of MCST episodes. It parses the initial state, the action sentences and the
// question back from the episode's TEXT, classifies each sentence by its shape (not by the generator's verb lists),
// checks that every action — negated ones included — is legal where it occurs, re-simulates (skipping negated
// actions, and separately executing them for the negation-blind reading) and answers the question. It shares no code
// with the generator.
import type { Episode } from '../../core/episode.ts';

type Where = { entity: string } | { place: string };
interface State {
  where: Map<string, Where>;
  grid: Map<string, { x: number; y: number; facing: string }>;
}
type Act =
  | { kind: 'pick'; e: string; o: string; from: string | null }
  | { kind: 'place'; e: string; o: string; to: string }
  | { kind: 'give'; e: string; o: string; to: string }
  | { kind: 'move'; e: string; dir: string; n: number }
  | { kind: 'forward'; e: string; n: number }
  | { kind: 'turn'; e: string; side: string };

export interface Parsed {
  entities: string[];
  places: string[];
  objects: string[];
  capacity: number;
  gridSize: number;
  initial: State;
  actions: Array<{ act: Act; negated: boolean; text: string }>;
}

const COMPASS = ['north', 'east', 'south', 'west'];
const DELTA: Record<string, [number, number]> = { north: [0, 1], east: [1, 0], south: [0, -1], west: [-1, 0] };
const NEGATION = /^(does not|doesn't|does NOT|did not|refuses to) /;

const theList = (text: string) => text.split(/, | and /).map((x) => x.replace(/^the /, ''));

export function parseEpisode(e: Episode): Parsed {
  const sentences = e.initialState.split(/(?<=\.) (?=[A-Z])/);
  const first = /^(.+) are (?:in|at) (?:the )?[a-z ]+\.$/.exec(sentences[0]);
  if (!first) throw new Error(`unreadable opening: ${sentences[0]}`);
  const entities = first[1].split(/, | and /);
  const places: string[] = [];
  const objects: string[] = [];
  const initial: State = { where: new Map(), grid: new Map() };
  let capacity = 0;
  let gridSize = 0;
  for (const s of sentences.slice(1)) {
    let m: RegExpExecArray | null;
    if ((m = /^(\w+) is at \((\d+), (\d+)\) facing (\w+)\.$/.exec(s))) {
      initial.grid.set(m[1], { x: Number(m[2]), y: Number(m[3]), facing: m[4] });
    } else if ((m = /^Nothing is (?:on|in|at|by|under) the (.+)\.$/.exec(s))) {
      places.push(m[1]);
    } else if ((m = /^(.+) (?:is|are) (?:on|in|at|by|under) the (.+)\.$/.exec(s))) {
      places.push(m[2]);
      for (const o of theList(m[1].replace(/^The /, 'the '))) {
        objects.push(o);
        initial.where.set(o, { place: m[2] });
      }
    } else if ((m = /^(\w+) has (nothing|.+)\.$/.exec(s))) {
      if (m[2] !== 'nothing')
        for (const o of theList(m[2])) {
          objects.push(o);
          initial.where.set(o, { entity: m[1] });
        }
    } else if ((m = /^Each person can carry at most (\d+) objects\.$/.exec(s))) {
      capacity = Number(m[1]);
    } else if (
      (m =
        /^Everyone stands on a (\d+) by \1 grid: x runs from 1 \(west\) to \1 \(east\) and y from 1 \(south\) to \1 \(north\)\.$/.exec(
          s,
        ))
    ) {
      gridSize = Number(m[1]);
    } else {
      throw new Error(`unreadable sentence: ${s}`);
    }
  }
  const byLength = (xs: string[]) => xs.slice().sort((a, b) => b.length - a.length);
  const findObject = (rest: string) => {
    const o = byLength(objects).find((x) => rest.includes(` the ${x} `) || rest.includes(` the ${x}.`));
    if (!o) throw new Error(`no object in: ${rest}`);
    return o;
  };
  const actions = e.actions.map(({ text }) => {
    const m = /^(\w+) (.+)$/.exec(text)!;
    const actor = m[1];
    if (!entities.includes(actor)) throw new Error(`unknown actor: ${text}`);
    const negated = NEGATION.test(m[2]);
    const rest = ` ${m[2].replace(NEGATION, '')}`;
    let x: RegExpExecArray | null;
    let act: Act;
    if ((x = / turns? (left|right)\.$/.exec(rest))) act = { kind: 'turn', e: actor, side: x[1] };
    else if ((x = / (\d+) steps? forward\.$/.exec(rest))) act = { kind: 'forward', e: actor, n: Number(x[1]) };
    else if ((x = / (\d+) steps? (north|east|south|west)\.$/.exec(rest)))
      act = { kind: 'move', e: actor, dir: x[2], n: Number(x[1]) };
    else if ((x = / to (\w+)\.$/.exec(rest)) && entities.includes(x[1]))
      act = { kind: 'give', e: actor, o: findObject(rest), to: x[1] };
    else {
      const place = byLength(places).find((p) => rest.endsWith(` the ${p}.`));
      if (place) {
        const prep = new RegExp(` (\\w+) the ${place.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&')}\\.$`).exec(rest)![1];
        act =
          prep === 'from'
            ? { kind: 'pick', e: actor, o: findObject(rest), from: place }
            : { kind: 'place', e: actor, o: findObject(rest), to: place };
      } else {
        act = { kind: 'pick', e: actor, o: findObject(rest), from: null };
      }
    }
    return { act, negated, text };
  });
  return { entities, places, objects, capacity, gridSize, initial, actions };
}

function clone(s: State): State {
  return { where: new Map(s.where), grid: new Map([...s.grid].map(([k, v]) => [k, { ...v }])) };
}

const held = (s: State, e: string) => [...s.where].filter(([, w]) => 'entity' in w && w.entity === e).map(([o]) => o);
const at = (s: State, p: string) => [...s.where].filter(([, w]) => 'place' in w && w.place === p).map(([o]) => o);

/** Apply `act` to a copy of `s`, or return null if it is not legal there. */
function step(p: Parsed, s: State, act: Act): State | null {
  const n = clone(s);
  const inside = (x: number, y: number) => x >= 1 && y >= 1 && x <= p.gridSize && y <= p.gridSize;
  const w = 'o' in act ? s.where.get(act.o) : undefined;
  switch (act.kind) {
    case 'pick':
      if (!w || !('place' in w) || (act.from !== null && w.place !== act.from) || held(s, act.e).length >= p.capacity)
        return null;
      n.where.set(act.o, { entity: act.e });
      return n;
    case 'place':
      if (!w || !('entity' in w) || w.entity !== act.e) return null;
      n.where.set(act.o, { place: act.to });
      return n;
    case 'give':
      if (!w || !('entity' in w) || w.entity !== act.e || act.to === act.e || held(s, act.to).length >= p.capacity)
        return null;
      n.where.set(act.o, { entity: act.to });
      return n;
    case 'move':
    case 'forward': {
      const g = s.grid.get(act.e);
      if (!g) return null;
      const [dx, dy] = DELTA[act.kind === 'move' ? act.dir : g.facing];
      const [x, y] = [g.x + dx * act.n, g.y + dy * act.n];
      if (!inside(x, y)) return null;
      n.grid.set(act.e, { ...g, x, y });
      return n;
    }
    case 'turn': {
      const g = s.grid.get(act.e);
      if (!g) return null;
      const i = COMPASS.indexOf(g.facing);
      n.grid.set(act.e, { ...g, facing: COMPASS[(i + (act.side === 'right' ? 1 : 3)) % 4] });
      return n;
    }
  }
}

export interface Simulation {
  parsed: Parsed;
  /** states[i]: after i actions, negated ones skipped. */
  states: State[];
  /** blind[i]: with negated actions executed too; null once impossible. */
  blind: Array<State | null>;
}

/** Re-simulate; throws if any action (negated or not) is illegal where it occurs. */
export function simulate(e: Episode): Simulation {
  const parsed = parseEpisode(e);
  const states = [parsed.initial];
  const blind: Array<State | null> = [parsed.initial];
  for (const { act, negated, text } of parsed.actions) {
    const s = states[states.length - 1];
    const next = step(parsed, s, act);
    if (next === null) throw new Error(`illegal action (negated: ${negated}): ${text}`);
    states.push(negated ? s : next);
    const b = blind[blind.length - 1];
    blind.push(b === null ? null : step(parsed, b, act));
  }
  return { parsed, states, blind };
}

/** The answer to the episode's question in state index `k` (default: the end), read from the parsed text. */
export function answer(
  sim: Simulation,
  question: string,
  which: 'final' | 'initial' | 'blind' = 'final',
): string | null {
  const { parsed } = sim;
  const s =
    which === 'initial'
      ? sim.states[0]
      : which === 'blind'
        ? sim.blind[sim.blind.length - 1]
        : sim.states[sim.states.length - 1];
  if (s === null) return null;
  const whereName = (o: string) => {
    const w = s.where.get(o)!;
    return 'entity' in w ? w.entity : w.place;
  };
  let m: RegExpExecArray | null;
  if ((m = /^Who has the (.+) now\?$/.exec(question))) {
    const w = s.where.get(m[1])!;
    return 'entity' in w ? w.entity : 'no one';
  }
  if ((m = /^Where (?:is|are) the (.+) now\?$/.exec(question))) return whereName(m[1]);
  if ((m = /^True or False: The (.+) (?:is|are) (?:on|in|at|by|under) the (.+)\.$/.exec(question)))
    return whereName(m[1]) === m[2] ? 'True' : 'False';
  if ((m = /^True or False: (\w+) has the (.+)\.$/.exec(question))) return whereName(m[2]) === m[1] ? 'True' : 'False';
  if ((m = /^How many objects does (\w+) have now\?$/.exec(question))) return String(held(s, m[1]).length);
  if ((m = /^How many objects are (?:on|in|at|by|under) the (.+) now\?$/.exec(question)))
    return String(at(s, m[1]).length);
  if ((m = /^Which direction is (\w+) facing now\?$/.exec(question))) return s.grid.get(m[1])!.facing;
  if ((m = /^What are (\w+)'s coordinates now\?$/.exec(question)))
    return `(${s.grid.get(m[1])!.x}, ${s.grid.get(m[1])!.y})`;
  if ((m = /^Who has more objects now, (\w+) or (\w+)\?$/.exec(question))) {
    const [a, b] = [held(s, m[1]).length, held(s, m[2]).length];
    return a === b ? 'tie' : a > b ? m[1] : m[2];
  }
  if ((m = /^Where (?:was|were) the (.+) before (\w+) picked (?:it|them) up\?$/.exec(question))) {
    const [o, e] = [m[1], m[2]];
    const picks = parsed.actions
      .map((a, i) => ({ ...a, i }))
      .filter((a) => a.act.kind === 'pick' && a.act.e === e && a.act.o === o);
    if (picks.length !== 1 || picks[0].negated)
      throw new Error(`backward question without a unique executed pick: ${question}`);
    if (which === 'initial') return whereName(o);
    const before = which === 'blind' ? sim.blind[picks[0].i] : sim.states[picks[0].i];
    if (before === null) return null;
    const w = before.where.get(o)!;
    return 'entity' in w ? w.entity : w.place;
  }
  throw new Error(`unreadable question: ${question}`);
}
