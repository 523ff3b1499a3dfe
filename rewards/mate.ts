// MATE reward: read the value of the last `{"answer": …}` in a completion and score exact match against the target,
// comparing numbers at the precision the prompt shows them (rotation and coordinates 2 decimals, size 3), names up
// to case and "Object 3"/"object_3" spelling, colours and shapes case-insensitively. Also reports the paper's
// out-of-scene error: a wrong answer that matches no object's value of the asked attribute in the scene (unparseable
// answers count as out of scene: they match nothing). "FINAL ANSWER: <value>", the built-in model's layout, is read
// the same way (the key pattern matches its "ANSWER:"). Pure: no I/O, no randomness.
import type { Score, ScoreInput } from '../core/score.ts';

const MATE_TARGET_ATTRIBUTES = ['name', 'rotation', 'size', 'coords', 'color', 'shape'] as const;
export type MateTargetAttribute = (typeof MATE_TARGET_ATTRIBUTES)[number];

const DECIMALS = { rotation: 2, coords: 2, size: 3 } as const;
const SIZE_VALUES = ['0.35', '0.351', '0.7', '0.701'];
const NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/i;

/** The raw answer text of the last `"answer": value` in the response (string unquoted, array as written). */
export function extractAnswer(response: string): string | null {
  const key = /["']?answer["']?\s*:\s*/gi;
  let last: RegExpExecArray | null = null;
  for (const m of response.matchAll(key)) last = m as RegExpExecArray;
  if (!last) return null;
  const rest = response.slice(last.index + last[0].length);
  const quoted = /^"((?:[^"\\]|\\.)*)"|^'([^']*)'/.exec(rest);
  if (quoted) {
    if (quoted[1] !== undefined) {
      try {
        return JSON.parse(`"${quoted[1]}"`) as string;
      } catch {
        return quoted[1];
      }
    }
    return quoted[2];
  }
  const array = /^\[[^\]]*\]/.exec(rest);
  if (array) return array[0];
  const bare = /^[^,}\n]+/.exec(rest);
  return bare ? bare[0].trim() : null;
}

/** Which attribute a target is, from meta when present, else from the target's form. */
export function targetAttributeOf(target: string, meta?: Record<string, unknown>): MateTargetAttribute {
  const fromMeta = meta?.targetAttribute;
  if (typeof fromMeta === 'string' && (MATE_TARGET_ATTRIBUTES as readonly string[]).includes(fromMeta))
    return fromMeta as MateTargetAttribute;
  const t = target.trim();
  if (/^object[_ ]\d+$/i.test(t)) return 'name';
  if (t.startsWith('[')) return 'coords';
  if (SIZE_VALUES.includes(t)) return 'size';
  if (NUMBER.test(t)) return 'rotation';
  if (['sphere', 'cube', 'cylinder', 'cone'].includes(t.toLowerCase())) return 'shape';
  return 'color';
}

function roundText(value: number, decimals: number): string {
  const f = 10 ** decimals;
  const r = Math.round(value * f) / f;
  return JSON.stringify(Object.is(r, -0) ? 0 : r);
}

/** Canonical form of an answer for an attribute, or null when it cannot be one (e.g. "big" for a size). */
export function canonicalAnswer(raw: string, attribute: MateTargetAttribute): string | null {
  const text = raw
    .trim()
    .replace(/^["'`]+|["'`.]+$/g, '')
    .trim();
  if (text === '') return null;
  switch (attribute) {
    case 'name': {
      const m = /^object[\s_-]*(\d+)$/i.exec(text);
      return m ? `Object_${Number(m[1])}` : null;
    }
    case 'rotation':
    case 'size': {
      const t = text.replace(/\s*(°|degrees?)$/i, '');
      return NUMBER.test(t) ? roundText(Number(t), DECIMALS[attribute]) : null;
    }
    case 'coords': {
      const inner = text.replace(/^[[(]\s*|\s*[\])]$/g, '');
      const parts = inner.split(/\s*,\s*|\s+/).filter((p) => p !== '');
      if (parts.length !== 3 || !parts.every((p) => NUMBER.test(p))) return null;
      return `[${parts.map((p) => roundText(Number(p), DECIMALS.coords)).join(', ')}]`;
    }
    case 'color':
    case 'shape':
      return text.toLowerCase();
  }
}

/** The canonical values of an attribute over the scene's objects (meta.scene), or null without a scene. */
function sceneValues(meta: Record<string, unknown> | undefined, attribute: MateTargetAttribute): Set<string> | null {
  const scene = meta?.scene;
  if (!Array.isArray(scene)) return null;
  const values = new Set<string>();
  for (const o of scene as Record<string, unknown>[]) {
    const v = o[attribute];
    const raw = Array.isArray(v) ? `[${v.join(', ')}]` : String(v);
    const c = canonicalAnswer(raw, attribute);
    if (c !== null) values.add(c);
  }
  return values;
}

export function scoreMate(input: ScoreInput): Score {
  const attribute = targetAttributeOf(input.target, input.meta);
  const target = canonicalAnswer(input.target, attribute) ?? input.target.trim();
  const raw = extractAnswer(input.response);
  const prediction = raw === null ? null : canonicalAnswer(raw, attribute);
  const exact = prediction !== null && prediction === target;
  const values = sceneValues(input.meta, attribute);
  const outOfScene = exact ? null : values === null ? null : prediction === null || !values.has(prediction);
  return { reward: exact ? 1 : 0, valid: prediction !== null, prediction, metrics: { exact, outOfScene } };
}
