import type { FollowEvent, SessionEvent } from '../client/baton-client.ts';

/**
 * A turn as the AI SDK's UI message stream (what `useChat` reads): the chunks this module writes
 * are the protocol's own (`start`, `text-delta`, `tool-input-available`, `finish` …), typed here
 * so the library carries no runtime dependency on the `ai` package.
 */
export type UiChunk =
  | { type: 'start'; messageId: string; messageMetadata: ChatMessageMetadata }
  | { type: 'start-step' }
  | { type: 'finish-step' }
  | { type: 'text-start'; id: string }
  | { type: 'text-delta'; id: string; delta: string }
  | { type: 'text-end'; id: string }
  | { type: 'tool-input-available'; toolCallId: string; toolName: string; input: unknown; dynamic: true }
  | { type: 'tool-output-available'; toolCallId: string; output: unknown; dynamic: true }
  | { type: 'tool-output-error'; toolCallId: string; errorText: string; dynamic: true }
  | { type: 'message-metadata'; messageMetadata: ChatMessageMetadata }
  | { type: 'error'; errorText: string }
  | { type: 'abort'; reason?: string }
  | { type: 'finish'; finishReason: 'stop' | 'error' | 'other'; messageMetadata: ChatMessageMetadata };

/**
 * What an answer's metadata says: the session and turn it is, and (while it streams) the
 * position a reconnect continues from — the journal cursor, `.chunk` inside a streaming response.
 */
export interface ChatMessageMetadata {
  readonly sessionId: string;
  readonly turnId: string;
  readonly cursor?: string | undefined;
  readonly outcome?: string | undefined;
  /** The turn was stopped (its outcome `cancelled`); the conversation goes on. */
  readonly stopped?: boolean | undefined;
}

/** The id of a turn's answer message: a replay of the same turn replaces it rather than adding one. */
export const answerMessageId = (turnId: string): string => `answer-${turnId}`;

/** The SSE framing of the UI message stream: one JSON chunk per `data:` line, `[DONE]` at the end. */
export const uiChunkLine = (chunk: UiChunk): string => `data: ${JSON.stringify(chunk)}\n\n`;
export const UI_STREAM_DONE = 'data: [DONE]\n\n';
/** The header `useChat`'s transport reads to know the body is a UI message stream. */
export const UI_MESSAGE_STREAM_HEADERS: Readonly<Record<string, string>> = {
  'x-vercel-ai-ui-message-stream': 'v1',
  'x-accel-buffering': 'no',
};

/** A journal entry's data, read defensively: stored state is untrusted input. */
const field = (data: unknown, name: string): unknown =>
  typeof data === 'object' && data !== null ? (data as Record<string, unknown>)[name] : undefined;
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/**
 * Maps one turn's events (journal entries and live model text, as the events stream carries
 * them) to UI message stream chunks. Stateful across one response: it remembers which text part
 * is open and how much of a streaming response the client has, so the model entry that follows
 * live text adds only what the live chunks had not. One mapper per response; a response that
 * starts mid-turn (a reconnect) starts fresh parts, which the client appends.
 */
export class TurnStreamMapper {
  #started = false;
  #inStep = false;
  /** The response streaming now: its seq, its text part's id and the text sent of it. */
  #open: { seq: number; id: string; sent: string } | undefined;
  #finished = false;
  /** Parts of this response get ids of their own: a reconnect's parts never clash with the first's. */
  readonly #partPrefix: string;
  /** A reconnect's start: text of the response at `seq` the client had before this response. */
  #seenBefore: { seq: number; text: string } | undefined;

  constructor(
    private readonly ids: { readonly sessionId: string; readonly turnId: string },
    options: { readonly partPrefix?: string } = {},
  ) {
    this.#partPrefix = options.partPrefix ?? 'text';
  }

  /** True once the turn's outcome was mapped: the stream has said all it will. */
  get finished(): boolean {
    return this.#finished;
  }

  /**
   * Starts a continuation inside a streaming response: the client already has `text` of the
   * response at `seq`, so only what follows it is sent (live, and when its entry comes).
   */
  continueAfter(seq: number, text: string): void {
    this.#seenBefore = { seq, text };
  }

  /** The `start` chunk (once): the answer's id and its session and turn. */
  start(): UiChunk[] {
    if (this.#started) return [];
    this.#started = true;
    return [{ type: 'start', messageId: answerMessageId(this.ids.turnId), messageMetadata: { ...this.ids } }];
  }

  /** The chunks for one event; events of other turns map to nothing. */
  map(event: FollowEvent): UiChunk[] {
    if (this.#finished || event.turnId !== this.ids.turnId) return [];
    const out = this.start();
    if (event.kind === 'model-text') {
      out.push(...this.#liveText(event.seq, event.text));
      return out;
    }
    switch (event.kind) {
      case 'model':
        out.push(...this.#model(event));
        break;
      case 'tool':
        out.push(...this.#toolResult(event));
        break;
      case 'outcome':
        out.push(...this.#outcome(event));
        break;
      default:
        // Inputs, leg markers, intents, retried errors, messages: bookkeeping the chat does not show.
        break;
    }
    return out;
  }

  /**
   * The chunk that ends a response before the turn has (a long poll's round, a bound reached):
   * the open text part closes and the metadata says where a reconnect continues.
   */
  pause(cursor: string): UiChunk[] {
    if (this.#finished) return [];
    const out = this.start();
    out.push(...this.#closeText(), ...this.#closeStep());
    out.push({ type: 'message-metadata', messageMetadata: { ...this.ids, cursor } });
    return out;
  }

  #openStep(): UiChunk[] {
    if (this.#inStep) return [];
    this.#inStep = true;
    return [{ type: 'start-step' }];
  }

  #closeStep(): UiChunk[] {
    if (!this.#inStep) return [];
    this.#inStep = false;
    return [{ type: 'finish-step' }];
  }

  #closeText(): UiChunk[] {
    if (this.#open === undefined) return [];
    const { id } = this.#open;
    this.#open = undefined;
    return [{ type: 'text-end', id }];
  }

  /** Partial text of the response that will be journaled at `seq`. */
  #liveText(seq: number, delta: string): UiChunk[] {
    const out: UiChunk[] = [];
    if (this.#open !== undefined && this.#open.seq !== seq) out.push(...this.#closeText(), ...this.#closeStep());
    out.push(...this.#openStep());
    if (this.#open === undefined) {
      const before = this.#seenBefore?.seq === seq ? this.#seenBefore.text : '';
      this.#open = { seq, id: `${this.#partPrefix}-${seq}`, sent: before };
      out.push({ type: 'text-start', id: this.#open.id });
    }
    if (delta !== '') {
      this.#open.sent += delta;
      out.push({ type: 'text-delta', id: this.#open.id, delta });
    }
    return out;
  }

  /** A whole model response: the text the live chunks had not carried, then the calls it asks for. */
  #model(event: SessionEvent): UiChunk[] {
    const whole = text(field(event.data, 'text')) ?? '';
    const out: UiChunk[] = [];
    const before =
      this.#seenBefore?.seq === event.seq ? { seq: event.seq, id: '', sent: this.#seenBefore.text } : undefined;
    const open = this.#open?.seq === event.seq ? this.#open : undefined;
    if (open === undefined) out.push(...this.#closeText(), ...this.#closeStep());
    out.push(...this.#openStep());
    if (open !== undefined && whole.startsWith(open.sent)) {
      const rest = whole.slice(open.sent.length);
      if (rest !== '') out.push({ type: 'text-delta', id: open.id, delta: rest });
      out.push(...this.#closeText());
    } else if (open === undefined && before !== undefined && whole.startsWith(before.sent)) {
      const rest = whole.slice(before.sent.length);
      const id = `${this.#partPrefix}-${event.seq}`;
      if (rest !== '')
        out.push({ type: 'text-start', id }, { type: 'text-delta', id, delta: rest }, { type: 'text-end', id });
    } else {
      // No live text (a provider that does not stream), or live text of an attempt that was not
      // the one journaled (a worker died mid-response): the journaled text is the answer.
      out.push(...this.#closeText());
      if (whole !== '') {
        const id = `${this.#partPrefix}-${event.seq}${open === undefined ? '' : '-whole'}`;
        out.push({ type: 'text-start', id }, { type: 'text-delta', id, delta: whole }, { type: 'text-end', id });
      }
    }
    const calls = field(event.data, 'toolCalls');
    const asked = Array.isArray(calls) ? calls : [];
    for (const call of asked) {
      const toolCallId = text(field(call, 'id'));
      const toolName = text(field(call, 'name'));
      if (toolCallId === undefined || toolName === undefined) continue;
      out.push({ type: 'tool-input-available', toolCallId, toolName, input: field(call, 'input'), dynamic: true });
    }
    // A step is a model call and the tools it asked for: it ends here when it asked for none.
    if (asked.length === 0) out.push(...this.#closeStep());
    return out;
  }

  #toolResult(event: SessionEvent): UiChunk[] {
    const toolCallId = text(field(event.data, 'callId'));
    if (toolCallId === undefined) return [];
    if (field(event.data, 'ok') === true)
      return [
        { type: 'tool-output-available', toolCallId, output: field(event.data, 'output') ?? null, dynamic: true },
      ];
    const errorText = text(field(event.data, 'error')) ?? 'the tool failed';
    return [{ type: 'tool-output-error', toolCallId, errorText, dynamic: true }];
  }

  /**
   * The turn's end: `finish` for a completed turn; a failed one says why first (`error`, which
   * useChat shows as the chat's error); a stopped one (a stop of this turn alone) a `finish` whose
   * metadata says `stopped`; a cancelled one (the conversation cancelled) an `abort`.
   */
  #outcome(event: SessionEvent): UiChunk[] {
    this.#finished = true;
    const status = text(field(event.data, 'status')) ?? 'failed';
    const out = [...this.#closeText(), ...this.#closeStep()];
    const metadata = { ...this.ids, outcome: status };
    if (status === 'completed') out.push({ type: 'finish', finishReason: 'stop', messageMetadata: metadata });
    // A turn stopped alone finishes as a stopped answer does; the conversation goes on.
    else if (status === 'cancelled' && field(event.data, 'stopped') === true)
      out.push({ type: 'finish', finishReason: 'other', messageMetadata: { ...metadata, stopped: true } });
    else if (status === 'cancelled') out.push({ type: 'abort', reason: 'the turn was cancelled' });
    else if (status === 'superseded') out.push({ type: 'finish', finishReason: 'other', messageMetadata: metadata });
    else {
      const why = text(field(event.data, 'error'));
      out.push({ type: 'error', errorText: `the turn ${status}${why === undefined ? '' : `: ${why}`}` });
    }
    return out;
  }
}
