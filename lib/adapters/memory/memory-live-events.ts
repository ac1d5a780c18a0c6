import type { SessionKey } from '../../core/ids.ts';
import type { LiveEvent, LiveEvents } from '../../ports/live-events.ts';

type Listener = (event: LiveEvent) => void;

/** Live events inside one process: followers subscribe by session and see what is published from then on. */
export class MemoryLiveEvents implements LiveEvents {
  readonly #listeners = new Map<string, Set<Listener>>();

  publish(session: SessionKey, event: LiveEvent): void {
    for (const listener of this.#listeners.get(idOf(session)) ?? []) {
      try {
        listener(event);
      } catch {
        // A follower's failure is its own: the step goes on.
      }
    }
  }

  /** Follows one session; returns the unsubscribe. */
  subscribe(session: SessionKey, listener: Listener): () => void {
    const id = idOf(session);
    const listeners = this.#listeners.get(id) ?? new Set();
    listeners.add(listener);
    this.#listeners.set(id, listeners);
    return () => listeners.delete(listener);
  }
}

const idOf = (session: SessionKey) => `${session.tenant}/${session.agent}/${session.id}`;
