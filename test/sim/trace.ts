/**
 * What a run did, step by step: who ran which call, and which fault it met. Kept as a hash of
 * every event (two runs of one seed must agree) and the last events in full (a failing seed
 * prints them). The time is virtual, counted from the run's start.
 */
export class Trace {
  #hash = 0x811c9dc5;
  #events = 0;
  readonly #tail: string[] = [];
  readonly #all: string[] | undefined;

  constructor(
    private readonly now: () => number,
    private readonly start: number,
    options: { keep?: number; everything?: boolean } = {},
  ) {
    this.keep = options.keep ?? 40;
    this.#all = options.everything ? [] : undefined;
  }

  readonly keep: number;

  event(actor: string, op: string, detail?: string): void {
    const line = `#${this.#events} t+${this.now() - this.start}ms ${actor} ${op}${detail ? ` [${detail}]` : ''}`;
    this.#events++;
    // FNV-1a over the line: order and content both count.
    for (let i = 0; i < line.length; i++) this.#hash = Math.imul(this.#hash ^ line.charCodeAt(i), 0x01000193) >>> 0;
    this.#tail.push(line);
    if (this.#tail.length > this.keep) this.#tail.shift();
    this.#all?.push(line);
  }

  get events(): number {
    return this.#events;
  }

  /** Equal for two runs that did the same things in the same order. */
  get hash(): string {
    return this.#hash.toString(16).padStart(8, '0');
  }

  get tail(): readonly string[] {
    return this.#tail;
  }

  get all(): readonly string[] | undefined {
    return this.#all;
  }
}
