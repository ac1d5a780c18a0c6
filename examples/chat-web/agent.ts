import { agentRegistry, type ChatMessage, defineAgent, scriptedModel } from '@baton-run/baton';
import * as z from 'zod';

/** A chat turn's input: what the user typed (the chat routes send `{ text }`). */
export const ChatTurn = z.object({ text: z.string().min(1).max(4_000) });

/** The user's turns so far: their number and the latest one's text (each turn's input is journaled as its JSON). */
function latestTurn(messages: readonly ChatMessage[]): { n: number; text: string } {
  let n = 0;
  let text = '';
  for (const message of messages) {
    if (message.role !== 'user') continue;
    for (const content of message.content) {
      if (content.type !== 'text') continue;
      const parsed = ChatTurn.safeParse(safeJson(content.text));
      if (!parsed.success) continue;
      n++;
      text = parsed.data.text;
    }
  }
  return { n, text };
}

const safeJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

/** The answer to turn `n`: deterministic, long enough to take seconds at the model's pace, and marked at its end. */
export const chatAnswer = (n: number, text: string): string =>
  `Answer ${n} to "${text}": ${Array.from({ length: 24 }, (_, i) => `thought-${i + 1}`).join(' ')} (end of answer ${n})`;

/**
 * The browser chat example's agent: a conversation with a simulated model that streams its
 * answer a few characters at a time, ~5 s an answer, so a page shows it arriving — and a reload
 * mid-answer is a real one. Swap `model` for a real one (examples/bedrock-model.ts) and nothing
 * else changes.
 */
export const chatWeb = defineAgent({
  name: 'chat-web',
  instructions: 'Answer the user, thinking aloud.',
  conversation: true,
  input: ChatTurn,
  model: scriptedModel({
    maxDurationMs: 20_000,
    stream: { chunkChars: 6, chunkDelayMs: 100 },
    script: (messages) => {
      const { n, text } = latestTurn(messages);
      return { final: chatAnswer(n, text) };
    },
  }),
});

/** `baton dev --agents examples/chat-web/agent.ts` hosts it. */
export const agents = agentRegistry([chatWeb]);
