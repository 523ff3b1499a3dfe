// Seeded random numbers. Everything random in metrl takes an Rng so that the same seed gives the same episodes,
// samples and curves. The generator is sfc32 (small, fast, passes PractRand to 2^40+); its four-word state can be
// saved and restored, which training checkpoints use to resume bit-for-bit.

export type RngState = [number, number, number, number];

/** 32-bit FNV-1a hash of a string; used to turn seeds and labels into generator state. */
function hashString(text: string, seed = 0x811c9dc5): number {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  /** Seed from any number or string; extra labels derive independent streams (`new Rng(seed, 'test', 'chess')`). */
  constructor(seed: number | string, ...labels: (string | number)[]) {
    const key = [String(seed), ...labels.map(String)].join('\u0000');
    this.a = hashString(key, 0x9e3779b9);
    this.b = hashString(key, 0x243f6a88);
    this.c = hashString(key, 0xb7e15162);
    this.d = 1;
    for (let i = 0; i < 15; i++) this.nextUint32(); // warm up: decorrelate nearby seeds
  }

  static fromState(state: RngState): Rng {
    const rng = new Rng(0);
    [rng.a, rng.b, rng.c, rng.d] = state;
    return rng;
  }

  state(): RngState {
    return [this.a, this.b, this.c, this.d];
  }

  nextUint32(): number {
    this.a >>>= 0;
    this.b >>>= 0;
    this.c >>>= 0;
    this.d >>>= 0;
    const t = (this.a + this.b) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.d = (this.d + 1) | 0;
    const out = (t + this.d) | 0;
    this.c = (this.c + out) | 0;
    return out >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.nextUint32() / 4294967296;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    if (!(n > 0)) throw new RangeError(`Rng.int needs n > 0, got ${n}`);
    return Math.floor(this.next() * n);
  }

  /** Uniform integer in [lo, hi] (both inclusive). */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  bool(p = 0.5): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('Rng.pick from an empty list');
    return items[this.int(items.length)];
  }

  /** A shuffled copy (Fisher-Yates). */
  shuffle<T>(items: readonly T[]): T[] {
    const out = items.slice();
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  }

  /** k distinct items, in random order. */
  sample<T>(items: readonly T[], k: number): T[] {
    return this.shuffle(items).slice(0, k);
  }

  /** Standard normal (Box-Muller). */
  normal(): number {
    const u = 1 - this.next();
    const v = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  /** Index drawn with probability proportional to weights. */
  weighted(weights: readonly number[]): number {
    const total = weights.reduce((s, w) => s + w, 0);
    let x = this.next() * total;
    for (let i = 0; i < weights.length; i++) {
      x -= weights[i];
      if (x < 0) return i;
    }
    return weights.length - 1;
  }
}
