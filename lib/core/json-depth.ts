/**
 * How deeply a message's JSON may nest. Deeper values overflow the stack of every recursive
 * walker downstream (serialisation, hashing, validation); no agent input needs this many levels.
 */
export const MAX_JSON_DEPTH = 64;

/** Whether a parsed JSON value nests deeper than `limit` levels, measured without recursion. */
export function exceedsJsonDepth(value: unknown, limit: number = MAX_JSON_DEPTH): boolean {
  const pending: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (next.value === null || typeof next.value !== 'object') continue;
    const depth = next.depth + 1;
    if (depth > limit) return true;
    for (const child of Object.values(next.value)) pending.push({ value: child, depth });
  }
  return false;
}

/** A string that survives every store and hash as itself: no lone surrogates, no control characters. */
export function isCleanText(text: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  return text.isWellFormed() && !/[\u0000-\u001f\u007f-\u009f]/.test(text);
}
