// Test helper: an independent reader of boxes episodes. It parses the initial-state description, the operation
// sentences and the question back from the episode's TEXT (base and alternative phrasings, AmbiRef references,
// Move-contents) and re-simulates them, checking every operation is valid (object present, capacity 3, a Put object
// not already in a box). It shares no code with the generator.
import type { Episode } from '../../core/episode.ts';

export interface Resimulated {
  initial: string[][];
  final: string[][];
  box: number;
  answer: string[];
  opsAffectingBox: number;
}

const LETTERS = 'ABCDEFG';
const boxIndex = (label: string): number => (/^\d$/.test(label) ? Number(label) : LETTERS.indexOf(label));

function splitThe(list: string): string[] {
  return list.split(' and ').map((item) => {
    if (!item.startsWith('the ')) throw new Error(`object without "the": ${item}`);
    return item.slice(4);
  });
}

export function parseInitial(text: string): string[][] {
  const boxes: string[][] = Array.from({ length: 7 }, () => []);
  const seen = new Set<number>();
  if (text.startsWith('Box ')) {
    const body = text.replace(/\.$/, '');
    for (const clause of body.split(/, (?=Box \d)/)) {
      const m = /^Box (\d) (?:contains (.+)|is empty)$/.exec(clause);
      if (!m) throw new Error(`unreadable clause: ${clause}`);
      const i = Number(m[1]);
      seen.add(i);
      boxes[i] = m[2] ? splitThe(m[2]) : [];
    }
  } else {
    const body = text.charAt(0).toLowerCase() + text.slice(1).replace(/\.$/, '');
    for (const clause of body.split(/, (?=the |nothing )/)) {
      const m = /^(.+) (?:is|are) in Container ([A-G])$/.exec(clause);
      if (!m) throw new Error(`unreadable clause: ${clause}`);
      const i = boxIndex(m[2]);
      seen.add(i);
      boxes[i] = m[1] === 'nothing' ? [] : splitThe(m[1]);
    }
  }
  if (seen.size !== 7) throw new Error(`initial state names ${seen.size} boxes`);
  return boxes;
}

/** Resolve a reference ("guitar" or "blue guitar") to the unique object of the box it denotes. */
function resolve(box: string[], ref: string): string {
  if (box.includes(ref)) return ref;
  const matches = box.filter((o) => o.endsWith(` ${ref}`));
  if (matches.length !== 1)
    throw new Error(`reference "${ref}" matches ${matches.length} objects in [${box.join(', ')}]`);
  return matches[0];
}

export function resimulate(episode: Episode): Resimulated {
  const initial = parseInitial(episode.initialState);
  const state = initial.map((b) => b.slice());
  const q = /^(?:Box (\d)|Container ([A-G])) contains$/.exec(episode.question ?? '');
  if (!q) throw new Error(`unreadable question: ${episode.question}`);
  const box = boxIndex(q[1] ?? q[2]);
  let affecting = 0;
  const take = (from: number, refs: string[]) => {
    const objects = refs.map((r) => resolve(state[from], r));
    if (new Set(objects).size !== objects.length) throw new Error('same object taken twice');
    state[from] = state[from].filter((o) => !objects.includes(o));
    return objects;
  };
  const put = (to: number, objects: string[]) => {
    state[to].push(...objects);
    if (state[to].length > 3) throw new Error(`box ${to} over capacity`);
  };
  for (const { text } of episode.actions) {
    let m: RegExpExecArray | null;
    let touched: number[];
    if ((m = /^Move the contents of Box (\d) to Box (\d)\.$/.exec(text))) {
      const [from, to] = [Number(m[1]), Number(m[2])];
      if (from === to || state[from].length === 0) throw new Error(`invalid: ${text}`);
      put(to, take(from, state[from].slice()));
      touched = [from, to];
    } else if (
      (m =
        /^Move the (.+) from Box (\d) to Box (\d)\.$/.exec(text) ??
        /^Pick up the (.+) in Container ([A-G]) and place it into Container ([A-G])\.$/.exec(text))
    ) {
      const [from, to] = [boxIndex(m[2]), boxIndex(m[3])];
      if (from === to) throw new Error(`invalid: ${text}`);
      put(to, take(from, [m[1]]));
      touched = [from, to];
    } else if (
      (m = /^Remove (.+) from Box (\d)\.$/.exec(text) ?? /^Take (.+) out of Container ([A-G])\.$/.exec(text))
    ) {
      const from = boxIndex(m[2]);
      take(from, splitThe(m[1]));
      touched = [from];
    } else if ((m = /^Put (.+) into Box (\d)\.$/.exec(text) ?? /^Place (.+) inside Container ([A-G])\.$/.exec(text))) {
      const to = boxIndex(m[2]);
      const objects = splitThe(m[1]);
      if (objects.some((o) => state.flat().includes(o))) throw new Error(`put of an object already in a box: ${text}`);
      put(to, objects);
      touched = [to];
    } else {
      throw new Error(`unreadable operation: ${text}`);
    }
    if (touched.includes(box)) affecting++;
  }
  return { initial, final: state, box, answer: state[box].slice().sort(), opsAffectingBox: affecting };
}

/** The target's objects: "the a and the b" → [a, b]; "nothing" → []. */
export function targetObjects(target: string): string[] {
  return target === 'nothing' ? [] : splitThe(target).sort();
}
