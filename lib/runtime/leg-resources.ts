import type { LegScope } from '../agent/define-tool.ts';
import { errorMessage } from '../core/errors.ts';

interface Held {
  readonly value: Promise<unknown>;
  readonly close: (value: never) => Promise<void>;
}

/**
 * What tools opened during one leg (an MCP connection, a client), closed before the leg hands
 * off: nothing a leg opens outlives it, so a continuation in another invocation starts clean.
 */
export class LegResources implements LegScope {
  readonly #held = new Map<string, Held>();
  readonly #onCloseError: (key: string, error: unknown) => void;

  constructor(onCloseError: (key: string, message: string) => void) {
    this.#onCloseError = (key, error) => onCloseError(key, errorMessage(error));
  }

  use<T>(key: string, open: () => Promise<T>, close: (value: T) => Promise<void>): Promise<T> {
    const held = this.#held.get(key);
    if (held) return held.value as Promise<T>;
    const value = open();
    this.#held.set(key, { value, close: close as (value: never) => Promise<void> });
    // A failed open is not kept: the next call in this leg tries again.
    value.catch(() => {
      if (this.#held.get(key)?.value === value) this.#held.delete(key);
    });
    return value;
  }

  /** Closes everything opened so far; a close that fails is reported, never thrown. */
  async closeAll(): Promise<void> {
    const held = [...this.#held.entries()];
    this.#held.clear();
    await Promise.all(
      held.map(async ([key, { value, close }]) => {
        try {
          await close((await value) as never);
        } catch (error) {
          this.#onCloseError(key, error);
        }
      }),
    );
  }
}
