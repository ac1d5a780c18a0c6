import type { SessionKey } from '../../core/ids.ts';
import type { LiveTextChunk, LiveTextStore } from '../../ports/live-text.ts';

interface Stored {
  readonly chunk: LiveTextChunk;
  readonly expiresAt: number;
}

/** The in-memory twin of the live text store (unit tests, the in-process runtime); passes the same contract. */
export class MemoryLiveText implements LiveTextStore {
  /** By session and seq, then by chunk index. */
  readonly #responses = new Map<string, Map<number, Stored>>();
  /** Chunks written so far, for tests that count the cost. */
  writes = 0;

  async put(session: SessionKey, chunk: LiveTextChunk, expiresAt: number): Promise<void> {
    this.writes++;
    const key = responseKey(session, chunk.seq);
    const chunks = this.#responses.get(key) ?? new Map<number, Stored>();
    chunks.set(chunk.index, { chunk: { ...chunk }, expiresAt });
    this.#responses.set(key, chunks);
  }

  async read(
    session: SessionKey,
    seq: number,
    options: { readonly after?: number | undefined; readonly now: number },
  ): Promise<LiveTextChunk[]> {
    const after = options.after ?? -1;
    return [...(this.#responses.get(responseKey(session, seq))?.values() ?? [])]
      .filter(({ chunk, expiresAt }) => chunk.index > after && expiresAt > options.now)
      .map(({ chunk }) => ({ ...chunk }))
      .sort((a, b) => a.index - b.index);
  }
}

const responseKey = (session: SessionKey, seq: number) =>
  JSON.stringify([session.tenant, session.agent, session.id, seq]);
