// Wording of the boxes domain: the initial-state description, the operation sentences, the cloze question and the
// canonical answer, in the paper's base phrasing ("Box 1 contains the car", "Move the car from Box 1 to Box 3.") and
// in its alternative phrasing for AltForms ("The car is in Container B", "Pick up the car in Container B and place it
// into Container D."). Empty boxes: "Box 6 is empty." in the base form, "nothing is in Container G" in the alternative
// one (the paper shows no empty container; this keeps the alternative form free of base-form words).
// AmbiRef: an object is named without its adjective when it is the only one of its noun in the box it is taken from.
import { objectName, type BoxObject, type BoxesState, type Operation } from './world.ts';

export type Forms = 'base' | 'alt';

/** "Box 3" or "Container D". */
export function boxLabel(box: number, forms: Forms): string {
  return forms === 'base' ? `Box ${box}` : `Container ${String.fromCharCode(65 + box)}`;
}

/** "the car and the bell", or "nothing" for no objects: the canonical answer (objects sorted by name). */
export function contentsAnswer(objects: readonly BoxObject[]): string {
  if (objects.length === 0) return 'nothing';
  return objects
    .map(objectName)
    .sort()
    .map((n) => `the ${n}`)
    .join(' and ');
}

function theList(names: readonly string[]): string {
  return names.map((n) => `the ${n}`).join(' and ');
}

function capitalise(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** How an object is referred to when taken from `box` (adjective dropped when its noun is unique there). */
function referTo(object: BoxObject, box: readonly BoxObject[]): string {
  if (!object.adjective) return object.noun;
  const sameNoun = box.filter((o) => o.noun === object.noun).length;
  return sameNoun === 1 ? object.noun : objectName(object);
}

export function describeInitialState(state: BoxesState, forms: Forms): string {
  if (forms === 'base') {
    const clauses = state.map((box, i) =>
      box.length === 0
        ? `${boxLabel(i, forms)} is empty`
        : `${boxLabel(i, forms)} contains ${theList(box.map(objectName))}`,
    );
    return `${clauses.join(', ')}.`;
  }
  const clauses = state.map((box, i) => {
    if (box.length === 0) return `nothing is in ${boxLabel(i, forms)}`;
    return `${theList(box.map(objectName))} ${box.length === 1 ? 'is' : 'are'} in ${boxLabel(i, forms)}`;
  });
  return `${capitalise(clauses.join(', '))}.`;
}

/** The sentence for `op`, applied to `state` (needed for AmbiRef references). */
export function describeOperation(op: Operation, state: BoxesState, forms: Forms): string {
  switch (op.kind) {
    case 'move': {
      const ref = referTo(op.object, state[op.from]);
      return forms === 'base'
        ? `Move the ${ref} from ${boxLabel(op.from, forms)} to ${boxLabel(op.to, forms)}.`
        : `Pick up the ${ref} in ${boxLabel(op.from, forms)} and place it into ${boxLabel(op.to, forms)}.`;
    }
    case 'remove': {
      const refs = theList(op.objects.map((o) => referTo(o, state[op.from])));
      return forms === 'base'
        ? `Remove ${refs} from ${boxLabel(op.from, forms)}.`
        : `Take ${refs} out of ${boxLabel(op.from, forms)}.`;
    }
    case 'put': {
      const names = theList(op.objects.map(objectName));
      return forms === 'base'
        ? `Put ${names} into ${boxLabel(op.to, forms)}.`
        : `Place ${names} inside ${boxLabel(op.to, forms)}.`;
    }
    case 'move-contents':
      if (forms !== 'base') throw new Error('boxes: move-contents has no alternative phrasing');
      return `Move the contents of ${boxLabel(op.from, forms)} to ${boxLabel(op.to, forms)}.`;
  }
}

/** The cloze question: "Box 3 contains" / "Container D contains". */
export function questionText(box: number, forms: Forms): string {
  return `${boxLabel(box, forms)} contains`;
}
