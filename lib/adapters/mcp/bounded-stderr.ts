/**
 * A stdio MCP server's stderr on its way to the function's logs, bounded: a server is code the
 * agent's author may not control, and its stderr would otherwise go to CloudWatch unread and
 * unmetered (a line of megabytes, or a loop printing, costs log ingestion and can hide the
 * runtime's own lines).
 */

/** How much of a server's stderr reaches the logs. */
export interface StderrLimits {
  /** Bytes kept of one line; the rest of it is counted, not kept. */
  readonly lineBytes: number;
  /** Bytes that may pass at once (a startup banner, a stack trace). */
  readonly burstBytes: number;
  /** Bytes per second that pass after the burst; lines beyond are dropped and counted. */
  readonly bytesPerSecond: number;
}

/** 2 KiB a line, 32 KiB at once, then 2 KiB/s: a stack trace passes whole, a loop that prints does not flood. */
export const MCP_STDERR_LIMITS: StderrLimits = { lineBytes: 2_048, burstBytes: 32_768, bytesPerSecond: 2_048 };

const NEWLINE = 0x0a;
/** Control characters other than tab: a server's line cannot forge or erase the lines around it. */
const CONTROL = /(?!\t)\p{Cc}/gu;

/**
 * Splits a byte stream into lines and passes each to `emit` within the limits: a long line is cut
 * (with how much was cut), lines over the rate are dropped, and the count of what was dropped is
 * emitted before the next line that passes, or at the end. It never holds more than one line.
 */
export class BoundedStderr {
  readonly #limits: StderrLimits;
  readonly #emit: (line: string) => void;
  readonly #now: () => number;
  #kept: Buffer[] = [];
  #keptBytes = 0;
  #cutBytes = 0;
  #tokens: number;
  #refilledAt: number;
  #droppedLines = 0;
  #droppedBytes = 0;

  constructor(emit: (line: string) => void, limits: Partial<StderrLimits> = {}, now: () => number = Date.now) {
    this.#limits = { ...MCP_STDERR_LIMITS, ...limits };
    for (const [name, value] of Object.entries(this.#limits))
      if (!Number.isInteger(value) || value < 1)
        throw new RangeError(`stderr limit ${name} must be a positive integer`);
    this.#emit = emit;
    this.#now = now;
    this.#tokens = this.#limits.burstBytes;
    this.#refilledAt = now();
  }

  write(chunk: Uint8Array): void {
    let start = 0;
    for (let newline = chunk.indexOf(NEWLINE); newline !== -1; newline = chunk.indexOf(NEWLINE, start)) {
      this.#keep(chunk.subarray(start, newline));
      this.#endLine();
      start = newline + 1;
    }
    this.#keep(chunk.subarray(start));
  }

  /** The stream ended: the last line without a newline, and the count of anything dropped. */
  end(): void {
    if (this.#keptBytes > 0 || this.#cutBytes > 0) this.#endLine();
    this.#reportDropped();
  }

  #keep(bytes: Uint8Array): void {
    const room = Math.max(0, this.#limits.lineBytes - this.#keptBytes);
    if (room > 0 && bytes.length > 0) {
      const kept = bytes.subarray(0, room);
      this.#kept.push(Buffer.from(kept));
      this.#keptBytes += kept.length;
    }
    this.#cutBytes += Math.max(0, bytes.length - room);
  }

  #endLine(): void {
    const text = Buffer.concat(this.#kept).toString('utf8').replace(/\r$/, '').replace(CONTROL, '?');
    const total = this.#keptBytes + this.#cutBytes;
    const cut = this.#cutBytes;
    this.#kept = [];
    this.#keptBytes = 0;
    this.#cutBytes = 0;
    // Every line costs at least a byte, so a stream of empty lines is metered too.
    const cost = Math.max(1, total - cut);
    if (!this.#take(cost)) {
      this.#droppedLines++;
      this.#droppedBytes += total + 1;
      return;
    }
    this.#reportDropped();
    this.#emit(cut > 0 ? `${text} … (${cut} more bytes of this line not logged)` : text);
  }

  #take(cost: number): boolean {
    const now = this.#now();
    const { burstBytes, bytesPerSecond } = this.#limits;
    this.#tokens = Math.min(burstBytes, this.#tokens + ((now - this.#refilledAt) * bytesPerSecond) / 1_000);
    this.#refilledAt = now;
    if (this.#tokens < cost) return false;
    this.#tokens -= cost;
    return true;
  }

  #reportDropped(): void {
    if (this.#droppedLines === 0) return;
    const { burstBytes, bytesPerSecond } = this.#limits;
    this.#emit(
      `(${this.#droppedLines} lines, ${this.#droppedBytes} bytes of stderr not logged: over ${bytesPerSecond} bytes/s after ${burstBytes} bytes)`,
    );
    this.#droppedLines = 0;
    this.#droppedBytes = 0;
  }
}
