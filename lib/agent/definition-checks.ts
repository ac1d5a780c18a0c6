import { InvalidInputError } from '../core/errors.ts';

/*
 * Checks of an agent or tool definition's shape. Node runs a `.ts` agents module by stripping its
 * types, so a typo the compiler would catch (`modle:`, `effect: 'onse'`) reaches the runtime
 * unless the definition itself refuses it: these checks name the option, and the closest known
 * one, at module load — not as a crash deep in the first leg, nor as a once-only tool silently
 * run without its watermark.
 */

/** Refuses an option `known` does not list, naming it and the known option it is closest to. */
export function assertKnownOptions(where: string, options: object, known: readonly string[]): void {
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    const near = closest(key, known);
    throw new InvalidInputError(
      `${where}: unknown option "${key}"${near ? ` (did you mean "${near}"?)` : ''}; the options are ${known.join(', ')}`,
    );
  }
}

/** Refuses a value that is not one of `allowed`, naming the closest allowed one. */
export function assertOneOf(where: string, value: unknown, allowed: readonly string[]): void {
  if (typeof value === 'string' && allowed.includes(value)) return;
  const near = typeof value === 'string' ? closest(value, allowed) : undefined;
  throw new InvalidInputError(
    `${where} must be one of ${allowed.map((a) => `'${a}'`).join(', ')}, got ${JSON.stringify(value)}${near ? ` (did you mean '${near}'?)` : ''}`,
  );
}

/** True for a zod schema (or anything that parses as one): what `input` and `output` must be. */
export const isSchema = (value: unknown): boolean =>
  typeof value === 'object' && value !== null && typeof (value as { safeParse?: unknown }).safeParse === 'function';

/** The candidate within two edits of `word` (case aside), if one is. */
function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of candidates) {
    const distance = editDistance(word.toLowerCase(), name.toLowerCase());
    if (distance <= 2 && (best === undefined || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

/** Levenshtein distance, one row at a time (option names are short). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      row.push(Math.min((previous[j] as number) + 1, (row[j - 1] as number) + 1, substitution));
    }
    previous = row;
  }
  return previous[b.length] as number;
}
