import { StepError } from '../core/errors.ts';
import { EntryData } from '../core/journal.ts';
import { describeIssues } from '../core/messages.ts';
import type { ModelResponse } from '../ports/model-client.ts';

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object';

/** What a model may leave out or null: its text, and a tool call's arguments (the tool's schema then judges them). */
function withDefaults(response: unknown, seq: number): unknown {
  if (!isObject(response)) return response;
  const { text, toolCalls, ...rest } = response;
  return {
    ...rest,
    ...(text === null || text === undefined ? {} : { text }),
    toolCalls: Array.isArray(toolCalls)
      ? withDistinctIds(
          toolCalls.map((call: unknown) => (isObject(call) ? { ...call, input: asJournaled(call.input) } : call)),
          seq,
        )
      : toolCalls,
  };
}

/** A value JSON cannot carry (a BigInt, a cycle): refused by the check, naming the call. */
class NotJson {
  constructor(readonly reason: string) {}
}

/**
 * A call's arguments as the journal gives them back: the tool's schema, the approval rule and the
 * digest judge the same input on the leg that got the response and on any leg that reads it back
 * (a field set to undefined is absent on both, a NaN null). Arguments left out are null.
 */
function asJournaled(input: unknown): unknown {
  if (input === undefined) return null;
  try {
    const text = JSON.stringify(input);
    return text === undefined ? null : JSON.parse(text);
  } catch (error) {
    return new NotJson(error instanceof Error ? error.message : String(error));
  }
}

/** A call id the model left out (an adapter may pass it on as ''). A non-string id is left for the check to refuse. */
const missingId = (id: unknown): boolean => id === undefined || id === null || id === '';

/**
 * Gives every tool call an id no other call of the response has. A call's idempotency key, its
 * result and any decision on it are found by its id within its model entry: two calls with one id
 * would both run on one key, or one be refused as a repeat of the other. A missing id is derived
 * from the entry's seq and the call's index; a repeated one gets a suffix (`id_2`, `id_3`, …).
 * Both stay within the ids providers accept back (`[a-zA-Z0-9_-]`, Bedrock's pattern).
 */
function withDistinctIds(calls: readonly unknown[], seq: number): unknown[] {
  const taken = new Set(calls.flatMap((c) => (isObject(c) && typeof c.id === 'string' ? [c.id] : [])));
  const seen = new Set<string>();
  return calls.map((call, index) => {
    if (!isObject(call)) return call;
    if (typeof call.id === 'string' && call.id !== '' && !seen.has(call.id)) {
      seen.add(call.id);
      return call;
    }
    if (!missingId(call.id) && typeof call.id !== 'string') return call;
    const base = missingId(call.id) ? `call_${seq}_${index}` : (call.id as string);
    let id = base;
    for (let n = 2; taken.has(id); n++) id = `${base}_${n}`;
    taken.add(id);
    seen.add(id);
    return { ...call, id };
  });
}

/**
 * A model's response, checked before it is journaled as the entry at `seq`: a model client is the
 * agent author's code, and an entry that cannot be read back would leave the session unreadable
 * for good. A response that is not a valid one fails the turn with a reason naming the model and
 * what is wrong.
 */
export function checkedModelResponse(modelId: string, response: unknown, seq: number): ModelResponse {
  const checked = withDefaults(response, seq);
  const notJson = isObject(checked) && Array.isArray(checked.toolCalls) ? unjournalable(checked.toolCalls) : undefined;
  if (notJson) throw new StepError(`model ${modelId} returned an invalid response: ${notJson}`, { retryable: false });
  const parsed = EntryData.model.safeParse(checked);
  if (!parsed.success)
    throw new StepError(`model ${modelId} returned an invalid response: ${describeIssues(parsed.error)}`, {
      retryable: false,
    });
  return parsed.data;
}

/** The first call whose arguments JSON cannot carry, as `toolCalls.N.input: not JSON: why`. */
function unjournalable(calls: readonly unknown[]): string | undefined {
  const index = calls.findIndex((call) => isObject(call) && call.input instanceof NotJson);
  if (index < 0) return undefined;
  return `toolCalls.${index}.input: not JSON: ${(calls[index] as { input: NotJson }).input.reason}`;
}
