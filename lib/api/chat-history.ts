import type { SessionEvent } from '../client/baton-client.ts';
import { answerMessageId, type ChatMessageMetadata, TurnStreamMapper, type UiChunk } from './ui-message-stream.ts';

/** A message as `useChat` holds it (the AI SDK's UIMessage): what a page starts from on a reload. */
export interface ChatMessage {
  readonly id: string;
  readonly role: 'user' | 'assistant';
  readonly parts: ChatPart[];
  readonly metadata?: ChatMessageMetadata | undefined;
}

export type ChatPart =
  | { type: 'step-start' }
  | { type: 'text'; text: string; state: 'streaming' | 'done' }
  | {
      type: 'dynamic-tool';
      toolName: string;
      toolCallId: string;
      state: 'input-available' | 'output-available' | 'output-error';
      input: unknown;
      output?: unknown;
      errorText?: string;
    };

/** The text of a turn's input as the user wrote it: `{ text }` as sent, anything else as JSON. */
export function inputText(input: unknown): string {
  if (typeof input === 'string') return input;
  const text = typeof input === 'object' && input !== null ? (input as { text?: unknown }).text : undefined;
  return typeof text === 'string' ? text : JSON.stringify(input);
}

/** Folds UI message stream chunks into a message's parts, as useChat does with a stream it reads. */
export function foldChunks(chunks: readonly UiChunk[]): ChatPart[] {
  const parts: ChatPart[] = [];
  const texts = new Map<string, Extract<ChatPart, { type: 'text' }>>();
  const tool = (id: string) =>
    parts.find(
      (p): p is Extract<ChatPart, { type: 'dynamic-tool' }> => p.type === 'dynamic-tool' && p.toolCallId === id,
    );
  for (const chunk of chunks) {
    switch (chunk.type) {
      case 'start-step':
        parts.push({ type: 'step-start' });
        break;
      case 'text-start': {
        const part: Extract<ChatPart, { type: 'text' }> = { type: 'text', text: '', state: 'streaming' };
        texts.set(chunk.id, part);
        parts.push(part);
        break;
      }
      case 'text-delta': {
        const part = texts.get(chunk.id);
        if (part) part.text += chunk.delta;
        break;
      }
      case 'text-end': {
        const part = texts.get(chunk.id);
        if (part) part.state = 'done';
        break;
      }
      case 'tool-input-available':
        parts.push({
          type: 'dynamic-tool',
          toolName: chunk.toolName,
          toolCallId: chunk.toolCallId,
          state: 'input-available',
          input: chunk.input,
        });
        break;
      case 'tool-output-available': {
        const part = tool(chunk.toolCallId);
        if (part) Object.assign(part, { state: 'output-available', output: chunk.output });
        break;
      }
      case 'tool-output-error': {
        const part = tool(chunk.toolCallId);
        if (part) Object.assign(part, { state: 'output-error', errorText: chunk.errorText });
        break;
      }
      default:
        break;
    }
  }
  return parts;
}

/**
 * A conversation's messages from its journal: each turn's input as the user's message and, for
 * a turn that has ended, its answer (the same parts its stream gave). The running turn's answer
 * is left out: the page's reconnect replays it from its start, live.
 */
export function conversationMessages(sessionId: string, events: readonly SessionEvent[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  const turns = new Map<string, { mapper: TurnStreamMapper; chunks: UiChunk[] }>();
  for (const event of events) {
    const { turnId } = event;
    if (turnId === undefined) continue;
    if (event.kind === 'input' && !turns.has(turnId)) {
      const input =
        typeof event.data === 'object' && event.data !== null ? (event.data as { input?: unknown }).input : undefined;
      messages.push({ id: turnId, role: 'user', parts: [{ type: 'text', text: inputText(input), state: 'done' }] });
      turns.set(turnId, { mapper: new TurnStreamMapper({ sessionId, turnId }), chunks: [] });
      continue;
    }
    const turn = turns.get(turnId);
    if (turn === undefined) continue;
    turn.chunks.push(...turn.mapper.map(event));
    if (event.kind === 'outcome') {
      const status = (event.data as { status?: unknown } | null)?.status;
      messages.push({
        id: answerMessageId(turnId),
        role: 'assistant',
        parts: foldChunks(turn.chunks),
        metadata: { sessionId, turnId, ...(typeof status === 'string' ? { outcome: status } : {}) },
      });
    }
  }
  return messages;
}
