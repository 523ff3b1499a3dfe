// The REM egocentric renderer: a pinhole camera 1 m above a checkered floor, pitched 12° down, 60° horizontal field of
// view, square frames. Objects are convex solids drawn as flat-shaded faces (cuboid: its visible faces; cone: 16 side
// facets; sphere: a shaded disc), far to near (painter's order; objects never intersect, so this is exact for them),
// clipped at a near plane, so views are partial: objects are cut at the frame edges, hide each other, and leave and
// re-enter the view as the agent turns. Every painted pixel also records which object it shows (an id buffer), which
// gives per-frame visibility: an object is visible in a frame when it covers at least VISIBLE_FRACTION of the frame
// at the reference resolution REFERENCE_SIZE (decided here; the paper counted Blender pixel coverage).
import type { RawImage, Rgb } from '../../core/image.ts';
import {
  CONE_HEIGHT,
  CONE_RADIUS,
  CUBOID_HALF,
  CUBOID_HEIGHT,
  SPHERE_RADIUS,
  type Pose,
  type RemColor,
  type RemObject,
  type RemWorld,
} from './world.ts';

export const REM_PALETTE: Record<RemColor, Rgb> = {
  brown: [125, 80, 40],
  yellow: [240, 205, 30],
  red: [210, 35, 35],
  green: [40, 165, 60],
  blue: [40, 85, 225],
  purple: [135, 55, 190],
  black: [28, 28, 28],
  orange: [250, 135, 20],
};

const CAMERA_HEIGHT = 1.0;
const PITCH_DEGREES = -12;
const FOV_DEGREES = 60;
const NEAR = 0.05;
/** Visibility is measured at this size, whatever size the frame is shown at. */
export const REFERENCE_SIZE = 160;
/** Share of the frame an object must cover to count as seen (0.15%: 39 px at 160², 6 px at 64², 394 px at 512²). */
const VISIBLE_FRACTION = 0.0015;
export const VISIBLE_PIXELS = Math.ceil(VISIBLE_FRACTION * REFERENCE_SIZE * REFERENCE_SIZE);

const SKY_TOP: Rgb = [196, 214, 232];
const SKY_HORIZON: Rgb = [226, 232, 238];
const FLOOR_A: Rgb = [178, 174, 166];
const FLOOR_B: Rgb = [158, 154, 146];
/** Bounding sphere of every object shape (centre height, radius), for culling. */
const BOUND_CENTRE_Z = 0.45;
const BOUND_RADIUS = 0.8;
/** Direction towards the light (world), normalised below. */
const LIGHT = normalize([0.35, -0.55, 0.76]);

type Vec3 = [number, number, number];

function normalize(v: Vec3): Vec3 {
  const n = Math.hypot(v[0], v[1], v[2]);
  return [v[0] / n, v[1] / n, v[2] / n];
}
const dot = (a: Vec3, b: Vec3) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];

interface Camera {
  pos: Vec3;
  fwd: Vec3;
  right: Vec3;
  up: Vec3;
  /** Focal length in pixels. */
  f: number;
  size: number;
}

function camera(pose: Pose, size: number): Camera {
  const h = (pose.heading * Math.PI) / 180;
  const p = (PITCH_DEGREES * Math.PI) / 180;
  const fwd: Vec3 = [Math.cos(h) * Math.cos(p), Math.sin(h) * Math.cos(p), Math.sin(p)];
  const right: Vec3 = [Math.sin(h), -Math.cos(h), 0];
  const up: Vec3 = [
    right[1] * fwd[2] - right[2] * fwd[1],
    right[2] * fwd[0] - right[0] * fwd[2],
    right[0] * fwd[1] - right[1] * fwd[0],
  ];
  return {
    pos: [pose.x, pose.y, CAMERA_HEIGHT],
    fwd,
    right,
    up,
    f: size / 2 / Math.tan((FOV_DEGREES * Math.PI) / 360),
    size,
  };
}

/** Camera-space coordinates (x right, y up, z forward). */
function toCamera(cam: Camera, p: Vec3): Vec3 {
  const d: Vec3 = [p[0] - cam.pos[0], p[1] - cam.pos[1], p[2] - cam.pos[2]];
  return [dot(d, cam.right), dot(d, cam.up), dot(d, cam.fwd)];
}

/** Per-object coverage of one frame: pixel count and the sum of pixel x (for the horizontal centroid). */
export interface Coverage {
  pixels: number;
  sumX: number;
}

export interface Frame {
  image: RawImage | null;
  coverage: Coverage[];
}

/** Render one frame; `withImage: false` fills only the id buffer (for visibility). */
export function renderFrame(world: RemWorld, pose: Pose, size: number, withImage = true): Frame {
  const cam = camera(pose, size);
  const data = withImage ? new Uint8Array(size * size * 3) : null;
  const ids = new Int16Array(size * size).fill(-1);
  if (data) drawBackground(cam, data);
  const order = world.objects
    .map((o, i) => ({ i, d: (o.x - pose.x) ** 2 + (o.y - pose.y) ** 2 }))
    .sort((a, b) => b.d - a.d);
  const painter = new Painter(cam, data, ids);
  for (const { i } of order) painter.object(world.objects[i], i);
  const coverage: Coverage[] = world.objects.map(() => ({ pixels: 0, sumX: 0 }));
  for (let k = 0; k < ids.length; k++) {
    const id = ids[k];
    if (id >= 0) {
      coverage[id].pixels++;
      coverage[id].sumX += k % size;
    }
  }
  return { image: data ? { width: size, height: size, channels: 3, data } : null, coverage };
}

function drawBackground(cam: Camera, data: Uint8Array): void {
  const { size, f, fwd, right, up, pos } = cam;
  for (let py = 0; py < size; py++) {
    const b = -(py + 0.5 - size / 2) / f;
    for (let px = 0; px < size; px++) {
      const a = (px + 0.5 - size / 2) / f;
      const dz = fwd[2] + a * right[2] + b * up[2];
      const k = (py * size + px) * 3;
      if (dz < -1e-6) {
        const t = -pos[2] / dz;
        const hx = pos[0] + t * (fwd[0] + a * right[0] + b * up[0]);
        const hy = pos[1] + t * (fwd[1] + a * right[1] + b * up[1]);
        const tile = (Math.floor(hx) + Math.floor(hy)) & 1 ? FLOOR_A : FLOOR_B;
        const haze = Math.min(1, t / 45);
        data[k] = tile[0] + (SKY_HORIZON[0] - tile[0]) * haze;
        data[k + 1] = tile[1] + (SKY_HORIZON[1] - tile[1]) * haze;
        data[k + 2] = tile[2] + (SKY_HORIZON[2] - tile[2]) * haze;
      } else {
        const s = Math.min(1, dz * 3);
        data[k] = SKY_HORIZON[0] + (SKY_TOP[0] - SKY_HORIZON[0]) * s;
        data[k + 1] = SKY_HORIZON[1] + (SKY_TOP[1] - SKY_HORIZON[1]) * s;
        data[k + 2] = SKY_HORIZON[2] + (SKY_TOP[2] - SKY_HORIZON[2]) * s;
      }
    }
  }
}

function shade(rgb: Rgb, normal: Vec3): Rgb {
  const s = 0.55 + 0.45 * Math.max(0, dot(normal, LIGHT));
  return [Math.round(rgb[0] * s), Math.round(rgb[1] * s), Math.round(rgb[2] * s)];
}

/** Fills convex polygons and discs into the colour and id buffers. */
class Painter {
  constructor(
    private cam: Camera,
    private data: Uint8Array | null,
    private ids: Int16Array,
  ) {}

  object(o: RemObject, id: number): void {
    if (!this.inView(o)) return;
    const color = REM_PALETTE[o.color];
    if (o.shape === 'sphere') {
      this.sphere([o.x, o.y, SPHERE_RADIUS], color, id);
      return;
    }
    const faces: { points: Vec3[]; normal: Vec3 }[] = [];
    if (o.shape === 'cuboid') {
      const yaw = (o.yaw * Math.PI) / 180;
      const ax: Vec3 = [Math.cos(yaw), Math.sin(yaw), 0];
      const ay: Vec3 = [-Math.sin(yaw), Math.cos(yaw), 0];
      const corner = (sx: number, sy: number, z: number): Vec3 => [
        o.x + CUBOID_HALF * (sx * ax[0] + sy * ay[0]),
        o.y + CUBOID_HALF * (sx * ax[1] + sy * ay[1]),
        z,
      ];
      const ring = [
        [1, 1],
        [-1, 1],
        [-1, -1],
        [1, -1],
      ] as const;
      for (let k = 0; k < 4; k++) {
        const [sx0, sy0] = ring[k];
        const [sx1, sy1] = ring[(k + 1) % 4];
        const mx = (sx0 + sx1) / 2;
        const my = (sy0 + sy1) / 2;
        faces.push({
          points: [
            corner(sx0, sy0, 0),
            corner(sx1, sy1, 0),
            corner(sx1, sy1, CUBOID_HEIGHT),
            corner(sx0, sy0, CUBOID_HEIGHT),
          ],
          normal: [mx * ax[0] + my * ay[0], mx * ax[1] + my * ay[1], 0],
        });
      }
      faces.push({ points: ring.map(([sx, sy]) => corner(sx, sy, CUBOID_HEIGHT)), normal: [0, 0, 1] });
    } else {
      const n = 16;
      const apex: Vec3 = [o.x, o.y, CONE_HEIGHT];
      const slope = CONE_RADIUS / CONE_HEIGHT;
      for (let k = 0; k < n; k++) {
        const a0 = (2 * Math.PI * k) / n;
        const a1 = (2 * Math.PI * (k + 1)) / n;
        const am = (a0 + a1) / 2;
        faces.push({
          points: [
            apex,
            [o.x + CONE_RADIUS * Math.cos(a0), o.y + CONE_RADIUS * Math.sin(a0), 0],
            [o.x + CONE_RADIUS * Math.cos(a1), o.y + CONE_RADIUS * Math.sin(a1), 0],
          ],
          normal: normalize([Math.cos(am), Math.sin(am), slope]),
        });
      }
    }
    for (const face of faces) {
      const centre = face.points.reduce<Vec3>(
        (s, p) => [
          s[0] + p[0] / face.points.length,
          s[1] + p[1] / face.points.length,
          s[2] + p[2] / face.points.length,
        ],
        [0, 0, 0],
      );
      const toCam: Vec3 = [this.cam.pos[0] - centre[0], this.cam.pos[1] - centre[1], this.cam.pos[2] - centre[2]];
      if (dot(face.normal, toCam) <= 0) continue; // back face
      this.polygon(
        face.points.map((p) => toCamera(this.cam, p)),
        shade(color, face.normal),
        id,
      );
    }
  }

  /** False when the object's bounding sphere lies wholly behind the camera or beyond the left or right frame edge. */
  private inView(o: RemObject): boolean {
    const c = toCamera(this.cam, [o.x, o.y, BOUND_CENTRE_Z]);
    if (c[2] < -BOUND_RADIUS) return false;
    const half = (FOV_DEGREES * Math.PI) / 360;
    const side = Math.abs(c[0]) * Math.cos(half) - c[2] * Math.sin(half);
    return side <= BOUND_RADIUS;
  }

  private sphere(centre: Vec3, color: Rgb, id: number): void {
    const c = toCamera(this.cam, centre);
    if (c[2] < SPHERE_RADIUS + NEAR) return;
    const { f, size } = this.cam;
    const u = size / 2 + (f * c[0]) / c[2];
    const v = size / 2 - (f * c[1]) / c[2];
    const r = (f * SPHERE_RADIUS) / Math.sqrt(c[2] * c[2] - SPHERE_RADIUS * SPHERE_RADIUS);
    const y0 = Math.max(0, Math.floor(v - r));
    const y1 = Math.min(size - 1, Math.ceil(v + r));
    const x0 = Math.max(0, Math.floor(u - r));
    const x1 = Math.min(size - 1, Math.ceil(u + r));
    const lightCam: Vec3 = [dot(LIGHT, this.cam.right), dot(LIGHT, this.cam.up), dot(LIGHT, this.cam.fwd)];
    for (let py = y0; py <= y1; py++) {
      for (let px = x0; px <= x1; px++) {
        const dx = (px + 0.5 - u) / r;
        const dy = (py + 0.5 - v) / r;
        const d2 = dx * dx + dy * dy;
        if (d2 > 1) continue;
        // Normal of the visible hemisphere in camera space (dx, -dy, -nz), turned to world space for the light.
        const nz = Math.sqrt(1 - d2);
        const light = dx * lightCam[0] - dy * lightCam[1] - nz * lightCam[2];
        const s = 0.55 + 0.45 * Math.max(0, light);
        const k = py * size + px;
        this.ids[k] = id;
        if (this.data) {
          this.data[k * 3] = color[0] * s;
          this.data[k * 3 + 1] = color[1] * s;
          this.data[k * 3 + 2] = color[2] * s;
        }
      }
    }
  }

  /** Clip a camera-space polygon at the near plane, project it and fill it (pixel centres inside). */
  private polygon(points: Vec3[], rgb: Rgb, id: number): void {
    const clipped: Vec3[] = [];
    for (let k = 0; k < points.length; k++) {
      const a = points[k];
      const b = points[(k + 1) % points.length];
      const ina = a[2] >= NEAR;
      const inb = b[2] >= NEAR;
      if (ina) clipped.push(a);
      if (ina !== inb) {
        const t = (NEAR - a[2]) / (b[2] - a[2]);
        clipped.push([a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]), NEAR]);
      }
    }
    if (clipped.length < 3) return;
    const { f, size } = this.cam;
    const xs = clipped.map((p) => size / 2 + (f * p[0]) / p[2]);
    const ys = clipped.map((p) => size / 2 - (f * p[1]) / p[2]);
    let minY = Infinity;
    let maxY = -Infinity;
    for (const y of ys) {
      minY = Math.min(minY, y);
      maxY = Math.max(maxY, y);
    }
    const top = Math.max(0, Math.ceil(minY - 0.5));
    const bottom = Math.min(size - 1, Math.floor(maxY - 0.5));
    for (let py = top; py <= bottom; py++) {
      const yc = py + 0.5;
      let left = Infinity;
      let right = -Infinity;
      for (let k = 0; k < xs.length; k++) {
        const j = (k + 1) % xs.length;
        const ya = ys[k];
        const yb = ys[j];
        if ((ya <= yc && yb >= yc) || (yb <= yc && ya >= yc)) {
          const x = ya === yb ? Math.min(xs[k], xs[j]) : xs[k] + ((yc - ya) / (yb - ya)) * (xs[j] - xs[k]);
          const x2 = ya === yb ? Math.max(xs[k], xs[j]) : x;
          left = Math.min(left, x);
          right = Math.max(right, x2);
        }
      }
      const x0 = Math.max(0, Math.ceil(left - 0.5));
      const x1 = Math.min(size - 1, Math.floor(right - 0.5));
      for (let px = x0; px <= x1; px++) this.put(px, py, rgb, id);
    }
  }

  private put(px: number, py: number, rgb: Rgb, id: number): void {
    const k = py * this.cam.size + px;
    this.ids[k] = id;
    if (this.data) {
      this.data[k * 3] = rgb[0];
      this.data[k * 3 + 1] = rgb[1];
      this.data[k * 3 + 2] = rgb[2];
    }
  }
}

/** Per-frame visibility at the reference size: coverage of every object in every frame. */
export function frameCoverage(world: RemWorld, poses: readonly Pose[]): Coverage[][] {
  return poses.map((pose) => renderFrame(world, pose, REFERENCE_SIZE, false).coverage);
}
