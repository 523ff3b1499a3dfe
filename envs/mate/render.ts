// The MATE scene renderer: a square image of the floor seen from above, each object drawn at its (x, y) position as
// a flat front-view icon (sphere: disc, cube: square, cylinder: narrow upright body with a lighter elliptic top,
// cone: triangle), in one of eight solid colours, at one of two visible sizes. Metal objects carry a white specular
// highlight; rubber is matte. The projection is orthographic, so the two sizes look the same everywhere, and scenes
// are sampled so that icons never overlap (envs/mate/scene.ts): nothing hides anything. Rotation is not drawn (in MATE
// it is a text-only attribute). Pixels are exact (no anti-aliasing), which makes images decodable from pixels.
import type { RawImage, Rgb } from '../../core/image.ts';
import { visibleHalfExtent, FLOOR, type MateColor, type MateObject, type MateScene } from './scene.ts';

/** CLEVR's colour values. */
export const MATE_PALETTE: Record<MateColor, Rgb> = {
  gray: [87, 87, 87],
  red: [173, 35, 35],
  blue: [42, 75, 215],
  green: [29, 105, 20],
  brown: [129, 74, 25],
  purple: [129, 38, 192],
  cyan: [41, 208, 208],
  yellow: [255, 238, 51],
};
export const BACKGROUND: Rgb = [222, 222, 214];
const HIGHLIGHT: Rgb = [255, 255, 255];

/** World half-width covered by the image: the floor plus room for the largest icon. */
const VIEW_HALF = FLOOR + 0.75;

/** Pixel position (x right, y down, fractional) of a world floor point in an image of side `size`. */
export function worldToImage(x: number, y: number, size: number): [number, number] {
  return [((x + VIEW_HALF) / (2 * VIEW_HALF)) * size, ((VIEW_HALF - y) / (2 * VIEW_HALF)) * size];
}

/** Icon side in pixels of an object of the given size value. */
function iconSide(size: number, imageSize: number): number {
  return ((2 * visibleHalfExtent(size)) / (2 * VIEW_HALF)) * imageSize;
}

/** A white image: the txt2txt control, which shows no scene. */
export function blankImage(size: number): RawImage {
  const data = new Uint8Array(size * size * 3).fill(255);
  return { width: size, height: size, channels: 3, data };
}

/** Empty floors by size, copied into each new image (a block copy is much faster than filling pixel by pixel). */
const floors = new Map<number, Uint8Array>();

function emptyFloor(size: number): Uint8Array {
  let floor = floors.get(size);
  if (!floor) {
    floor = new Uint8Array(size * size * 3);
    for (let i = 0; i < floor.length; i += 3) {
      floor[i] = BACKGROUND[0];
      floor[i + 1] = BACKGROUND[1];
      floor[i + 2] = BACKGROUND[2];
    }
    if (floors.size > 8) floors.clear();
    floors.set(size, floor);
  }
  return floor;
}

export function renderScene(scene: MateScene, size: number): RawImage {
  const data = emptyFloor(size).slice();
  const image: RawImage = { width: size, height: size, channels: 3, data };
  for (const object of scene.objects) drawObject(image, object);
  return image;
}

function setPixel(image: RawImage, x: number, y: number, rgb: Rgb): void {
  if (x < 0 || y < 0 || x >= image.width || y >= image.height) return;
  const i = (y * image.width + x) * 3;
  image.data[i] = rgb[0];
  image.data[i + 1] = rgb[1];
  image.data[i + 2] = rgb[2];
}

function tint(rgb: Rgb, amount: number): Rgb {
  return [0, 1, 2].map((c) => Math.round(rgb[c] + (255 - rgb[c]) * amount)) as unknown as Rgb;
}

/**
 * Draw one icon in its pixel box. Each shape is an inside-test on the pixel centre in box coordinates u, v ∈ [0, 1]
 * (u right, v down); the highlight of metal is a second inside-test drawn over the body.
 */
function drawObject(image: RawImage, object: MateObject): void {
  const [cx, cy] = worldToImage(object.coords[0], object.coords[1], image.width);
  const side = Math.max(3, Math.round(iconSide(object.size, image.width)));
  const x0 = Math.round(cx - side / 2);
  const y0 = Math.round(cy - side / 2);
  const color = MATE_PALETTE[object.color];
  const top = tint(color, 0.4);
  const metal = object.material === 'metal';
  // Highlight widths are at least one pixel so that metal stays visible at 64 px.
  const stripe = Math.max(1 / side, 0.12);
  for (let py = 0; py < side; py++) {
    const v = (py + 0.5) / side;
    for (let px = 0; px < side; px++) {
      const u = (px + 0.5) / side;
      let rgb: Rgb | null = null;
      switch (object.shape) {
        case 'sphere': {
          if ((u - 0.5) ** 2 + (v - 0.5) ** 2 <= 0.25) rgb = color;
          if (rgb && metal && (u - 0.36) ** 2 + (v - 0.36) ** 2 <= Math.max(0.012, (1 / side) ** 2)) rgb = HIGHLIGHT;
          break;
        }
        case 'cube': {
          rgb = color;
          if (metal && u >= 0.22 && u < 0.22 + stripe && v >= 0.12 && v < 0.88) rgb = HIGHLIGHT;
          break;
        }
        case 'cylinder': {
          // Body 0.7 wide; elliptic caps of half-height 0.1 at top and bottom.
          const du = (u - 0.5) / 0.35;
          if (Math.abs(du) <= 1) {
            const cap = 0.1 * Math.sqrt(1 - du * du);
            if (v >= 0.1 - cap && v <= 0.9 + cap) rgb = v <= 0.1 + cap ? top : color;
            if (rgb === color && metal && u >= 0.3 && u < 0.3 + stripe && v > 0.25 && v < 0.85) rgb = HIGHLIGHT;
          }
          break;
        }
        case 'cone': {
          // Apex at the top centre, base the full width at the bottom.
          if (Math.abs(u - 0.5) <= v / 2) rgb = color;
          if (
            rgb &&
            metal &&
            u >= 0.4 &&
            u < 0.4 + stripe &&
            v > 0.45 &&
            v < 0.9 &&
            Math.abs(u + stripe - 0.5) <= v / 2
          )
            rgb = HIGHLIGHT;
          break;
        }
      }
      if (rgb) setPixel(image, x0 + px, y0 + py, rgb);
    }
  }
}
