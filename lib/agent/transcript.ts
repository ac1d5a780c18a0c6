import type { JournalEntry, JournalEntryOf } from '../core/journal.ts';
import type { AssistantContent, ChatMessage, UserContent } from '../ports/model-client.ts';

/**
 * Builds the model's transcript from the journal. Roles come from the entry kind alone, never
 * from stored text, so a tampered payload cannot speak as the system or the assistant. After a
 * compaction it starts with the latest compaction's summary and goes on from the first entry it
 * did not replace (a compaction never splits a call from its result, so nothing kept answers a
 * call that was replaced).
 */
export function buildTranscript(entries: readonly JournalEntry[]): ChatMessage[] {
  return new TranscriptBuilder().extend(entries);
}

/**
 * The transcript of a journal that only grows (a leg's), built once and extended by the entries
 * appended since: a model step costs the entries since the last step, not the whole journal
 * again. A new compaction starts it afresh from its summary. Messages already built are never
 * changed (the last one is replaced when content joins it), so a caller may keep what it got.
 */
export class TranscriptBuilder {
  #messages: ChatMessage[] = [];
  /** Entries of the journal taken in so far. */
  #taken = 0;
  /** Calls asked for and not yet answered: a turn that ended early (superseded, cancelled, failed)
   * leaves some, and models refuse a transcript with a call that has no result. */
  readonly #unanswered = new Set<string>();
  /** Once-only calls reconciled as unknown (parked): they may have run, so "not run" would be a lie. */
  readonly #maybeRan = new Set<string>();

  /** The transcript of `entries`, which hold every entry taken before and may have more after them. */
  extend(entries: readonly JournalEntry[]): ChatMessage[] {
    const fresh = entries.slice(this.#taken);
    if (entries.length < this.#taken || fresh.some((e) => e.kind === 'compaction')) this.#restart(entries);
    else for (const entry of fresh) this.#take(entry);
    this.#taken = entries.length;
    return [...this.#messages];
  }

  #restart(entries: readonly JournalEntry[]): void {
    const compaction = latestCompaction(entries);
    this.#messages = compaction
      ? [{ role: 'user', content: [{ type: 'text', text: summaryText(compaction.data.summary) }] }]
      : [];
    this.#unanswered.clear();
    this.#maybeRan.clear();
    const from = compaction?.data.throughSeq ?? 0;
    for (const entry of entries) if (entry.seq > from) this.#take(entry);
  }

  #pushUser(content: UserContent): void {
    const messages = this.#messages;
    const last = messages.at(-1);
    if (last?.role === 'user') messages[messages.length - 1] = { role: 'user', content: [...last.content, content] };
    else messages.push({ role: 'user', content: [content] });
  }

  #pushAssistant(content: AssistantContent[]): void {
    const messages = this.#messages;
    const last = messages.at(-1);
    if (last?.role === 'assistant')
      messages[messages.length - 1] = { role: 'assistant', content: [...last.content, ...content] };
    else messages.push({ role: 'assistant', content });
  }

  #take(entry: JournalEntry): void {
    const unanswered = this.#unanswered;
    const maybeRan = this.#maybeRan;
    switch (entry.kind) {
      case 'input':
        for (const toolCallId of unanswered)
          this.#pushUser({
            type: 'toolResult',
            toolCallId,
            ok: false,
            output: { error: maybeRan.has(toolCallId) ? UNKNOWN_IF_RAN : UNANSWERED },
          });
        unanswered.clear();
        maybeRan.clear();
        this.#pushUser({ type: 'text', text: asText(entry.data.input) });
        break;
      case 'message':
        this.#pushUser({ type: 'text', text: entry.data.text });
        break;
      case 'model': {
        const content: AssistantContent[] = [];
        if (entry.data.text) content.push({ type: 'text', text: entry.data.text });
        for (const call of entry.data.toolCalls) {
          content.push({ type: 'toolUse', toolCallId: call.id, name: call.name, input: call.input });
          unanswered.add(call.id);
        }
        if (content.length > 0) this.#pushAssistant(content);
        break;
      }
      case 'tool':
        unanswered.delete(entry.data.callId);
        this.#pushUser({
          type: 'toolResult',
          toolCallId: entry.data.callId,
          ok: entry.data.ok,
          output: entry.data.ok ? entry.data.output : { error: entry.data.error },
        });
        break;
      case 'reconciled':
        if (entry.data.verdict === 'unknown') maybeRan.add(entry.data.callId);
        else maybeRan.delete(entry.data.callId);
        if (entry.data.verdict === 'done') unanswered.delete(entry.data.callId);
        if (entry.data.verdict === 'done')
          this.#pushUser({ type: 'toolResult', toolCallId: entry.data.callId, ok: true, output: entry.data.output });
        break;
      default:
        break;
    }
  }
}

/** The latest compaction entry of a journal, if any. */
export function latestCompaction(entries: readonly JournalEntry[]): JournalEntryOf<'compaction'> | undefined {
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i] as JournalEntry;
    if (entry.kind === 'compaction') return entry;
  }
  return undefined;
}

/** How the model is told that a summary stands for the earlier conversation. */
export const summaryText = (summary: string): string =>
  `[Summary of the earlier conversation, condensed to fit the context window]\n${summary}`;

/** The result a call gets in the transcript when its turn ended before it ran. */
export const UNANSWERED = 'not run: its turn ended before this call ran';
/** The result a once-only call gets when its turn ended while nobody knew whether it ran. */
export const UNKNOWN_IF_RAN = 'unknown: this call may have run; its turn ended before anyone could tell';

export const asText = (input: unknown): string => (typeof input === 'string' ? input : JSON.stringify(input));
