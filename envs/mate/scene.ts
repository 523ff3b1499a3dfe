// MATE scenes: 3-10 CLEVR-like objects with the paper's attributes (shape, colour, material, size, rotation, 3D
// coordinates, name Object_i), sampled so that no two objects overlap in the rendered image, and their JSON
// serialisation with chosen attributes left out. Numbers are rounded when sampled (coordinates and rotation to 2
// decimals, size to 3), so the JSON shows every number at the precision the reward compares it at.
import type { Rng } from '../../core/rng.ts';

export const MATE_SHAPES = ['sphere', 'cube', 'cylinder', 'cone'] as const;
export const MATE_COLORS = ['blue', 'green', 'red', 'gray', 'cyan', 'brown', 'yellow', 'purple'] as const;
const MATE_MATERIALS = ['metal', 'rubber'] as const;
/** Two visible sizes (CLEVR's small 0.35 and large 0.7), each with a textual twin so size can be a unique pointer. */
const MATE_SIZES = [0.35, 0.351, 0.7, 0.701] as const;

type MateShape = (typeof MATE_SHAPES)[number];
export type MateColor = (typeof MATE_COLORS)[number];
type MateMaterial = (typeof MATE_MATERIALS)[number];

export interface MateObject {
  name: string;
  shape: MateShape;
  color: MateColor;
  material: MateMaterial;
  size: number;
  /** Degrees in [0, 360), 2 decimals. */
  rotation: number;
  /** [x, y, z]: x, y on the floor in [-3, 3] (2 decimals); z = the visible size class (0.35 or 0.7), as in CLEVR. */
  coords: [number, number, number];
}

export interface MateScene {
  objects: MateObject[];
}

/** Attribute names as they appear in the JSON. */
const ATTRIBUTE_KEYS = {
  name: 'name',
  shape: 'shape',
  size: 'size',
  material: 'material',
  coords: '3d_coords',
  rotation: 'rotation',
  color: 'color',
} as const;
export type MateAttribute = keyof typeof ATTRIBUTE_KEYS;

/** Half of the floor's side in world units; objects stand on [-FLOOR, FLOOR]². */
export const FLOOR = 3;

/** The visible size class of a size value. */
export function sizeClass(size: number): 'small' | 'large' {
  return size < 0.5 ? 'small' : 'large';
}

/** Half-extent in world units of an object's drawn icon: the visible size. */
export function visibleHalfExtent(size: number): number {
  return sizeClass(size) === 'small' ? 0.35 : 0.7;
}

function round(value: number, decimals: number): number {
  const f = 10 ** decimals;
  return Math.round(value * f) / f;
}

/** World gap kept between objects' icons so each is its own connected blob in the image, even at 64 px. */
const GAP = 0.3;
const PLACEMENT_TRIES = 300;

/**
 * Sample a scene of `count` objects with non-overlapping icons. Icons are squares of side 2·halfExtent centred on
 * (x, y) in the renderer's orthographic view, so two objects are apart when their squares plus GAP do not intersect.
 */
export function sampleScene(rng: Rng, count: number): MateScene {
  for (;;) {
    const objects: MateObject[] = [];
    for (let i = 0; i < count; i++) {
      const size = rng.pick(MATE_SIZES);
      const half = visibleHalfExtent(size);
      let placed: [number, number] | null = null;
      for (let t = 0; t < PLACEMENT_TRIES && !placed; t++) {
        const x = round(-FLOOR + rng.next() * 2 * FLOOR, 2);
        const y = round(-FLOOR + rng.next() * 2 * FLOOR, 2);
        const clear = objects.every((o) => {
          const h = visibleHalfExtent(o.size);
          return Math.abs(o.coords[0] - x) >= half + h + GAP || Math.abs(o.coords[1] - y) >= half + h + GAP;
        });
        if (clear) placed = [x, y];
      }
      if (!placed) break;
      let rotation = round(rng.next() * 360, 2);
      if (rotation >= 360) rotation = 0;
      objects.push({
        name: `Object_${i}`,
        shape: rng.pick(MATE_SHAPES),
        color: rng.pick(MATE_COLORS),
        material: rng.pick(MATE_MATERIALS),
        size,
        rotation,
        coords: [placed[0], placed[1], visibleHalfExtent(size)],
      });
    }
    const rotations = new Set(objects.map((o) => o.rotation));
    if (objects.length === count && rotations.size === count) return { objects };
  }
}

/** A number as JSON shows it (shortest round-trip form). */
function formatNumber(value: number): string {
  return JSON.stringify(value);
}

function formatCoords(coords: readonly number[]): string {
  return `[${coords.map(formatNumber).join(', ')}]`;
}

/** The value of an attribute as text, exactly as in the JSON (strings unquoted). */
export function attributeText(object: MateObject, attribute: MateAttribute): string {
  switch (attribute) {
    case 'coords':
      return formatCoords(object.coords);
    case 'size':
    case 'rotation':
      return formatNumber(object[attribute]);
    default:
      return object[attribute];
  }
}

/** JSON in the paper's style ({"key": value, ...} with spaces), leaving out the given attributes. */
export function sceneJson(scene: MateScene, omit: readonly MateAttribute[]): string {
  const order: MateAttribute[] = ['name', 'shape', 'size', 'material', 'coords', 'rotation', 'color'];
  const keep = order.filter((a) => !omit.includes(a));
  const objects = scene.objects.map((o) => {
    const fields = keep.map((a) => {
      const value = a === 'coords' || a === 'size' || a === 'rotation' ? attributeText(o, a) : JSON.stringify(o[a]);
      return `${JSON.stringify(ATTRIBUTE_KEYS[a])}: ${value}`;
    });
    return `{${fields.join(', ')}}`;
  });
  return `{"objects": [${objects.join(', ')}]}`;
}
