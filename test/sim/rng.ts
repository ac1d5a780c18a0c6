/**
 * The simulator's only source of chance: a seeded sfc32 generator. Every choice of a run (who
 * runs next, which fault, which input) draws from one of these, so a seed replays exactly.
 */
export class Rng {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  constructor(seed: number) {
    // splitmix32 spreads a small seed over the four words; sfc32 then needs a few rounds to mix.
    let s = seed >>> 0;
    const next = () => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.#a = next();
    this.#b = next();
    this.#c = next();
    this.#d = next();
    for (let i = 0; i < 12; i++) this.float();
  }

  /** In [0, 1). */
  float(): number {
    const t = (((this.#a + this.#b) >>> 0) + this.#d) >>> 0;
    this.#d = (this.#d + 1) >>> 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) >>> 0;
    this.#c = ((this.#c << 21) | (this.#c >>> 11)) >>> 0;
    this.#c = (this.#c + t) >>> 0;
    return t / 4294967296;
  }

  /** An integer in [min, max], both included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.float() * (max - min + 1));
  }

  chance(p: number): boolean {
    return p > 0 && this.float() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from nothing');
    return items[Math.floor(this.float() * items.length)] as T;
  }

  /** One of the options, each as likely as its weight (weights ≤ 0 never). */
  weighted<T>(options: readonly (readonly [T, number])[]): T {
    const total = options.reduce((sum, [, w]) => sum + Math.max(0, w), 0);
    if (total <= 0) throw new RangeError('weighted pick from nothing');
    let at = this.float() * total;
    for (const [value, weight] of options) {
      if (weight <= 0) continue;
      at -= weight;
      if (at < 0) return value;
    }
    return options.findLast(([, w]) => w > 0)![0];
  }

  /** A new generator for a separate concern, so adding draws to one does not shift the other. */
  fork(): Rng {
    return new Rng(Math.floor(this.float() * 4294967296));
  }
}
