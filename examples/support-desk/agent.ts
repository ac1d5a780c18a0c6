import {
  type ChatMessage,
  defineAgent,
  defineTool,
  type ScriptReply,
  scriptedModel,
  systemClock,
  toolResults,
  waitTool,
} from '@baton-run/baton';
import * as z from 'zod';
import { ledgerPath } from '../simulated/ledger.ts';
import { issueRefund, lookupOrder, reconcileRefund } from '../simulated/services.ts';

/** A turn's input: what the customer says. */
export const SupportTurn = z.object({ text: z.string().min(1).max(4_000) });

/** Where the current turn starts in the transcript, its number, its text and what was told since. */
function currentTurn(messages: readonly ChatMessage[]) {
  let n = 0;
  let text = '';
  let notes: string[] = [];
  for (const message of messages) {
    if (message.role !== 'user') continue;
    for (const content of message.content) {
      if (content.type !== 'text') continue;
      const input = parseTurnInput(content.text);
      if (input !== undefined) {
        n++;
        text = input;
        notes = [];
      } else notes.push(content.text);
    }
  }
  return { n, text, notes };
}

/** A turn input is journaled as its JSON; an injected message as plain text. */
function parseTurnInput(text: string): string | undefined {
  try {
    const parsed = SupportTurn.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data.text : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The scripted support agent, deterministic from the transcript:
 * - `refund O-<n>`: looks the order up, then asks for approval of the once-only refund;
 * - `work <k>`: k tool calls, then `done <k>` with any notes injected meanwhile;
 * - `work until told`: tool calls until a message is injected (at most 500), then `done <k>; notes: …`;
 * - `remind me in <s> s`: parks on a durable timer (the built-in `wait` tool), then `reminder`;
 * - anything else: `turn <N>: <text>`.
 */
export function supportScript(messages: readonly ChatMessage[]): ScriptReply {
  const { n, text, notes } = currentTurn(messages);
  const results = toolResults(messages);
  const id = (name: string) => `t${n}-${name}`;
  const refund = /^refund (O-\d+)$/i.exec(text.trim());
  if (refund) {
    const orderId = refund[1]!;
    const order = results.get(id('order'));
    if (!order) return { toolCalls: [{ id: id('order'), name: 'lookupOrder', input: { orderId } }] };
    const totalCents = (order.output as { totalCents?: number } | undefined)?.totalCents ?? 100;
    const issued = results.get(id('refund'));
    if (!issued)
      return { toolCalls: [{ id: id('refund'), name: 'issueRefund', input: { orderId, amountCents: totalCents } }] };
    if (!issued.ok) return { final: `refund for ${orderId} not issued: ${(issued.output as { error: string }).error}` };
    return { final: `refund ${(issued.output as { refundId: string }).refundId} issued for ${orderId}` };
  }
  const remind = /^remind me in (\d+(?:\.\d+)?) ?s$/i.exec(text.trim());
  if (remind) {
    if (!results.has(id('wait')))
      return { toolCalls: [{ id: id('wait'), name: 'wait', input: { seconds: Number(remind[1]) } }] };
    return { final: 'reminder' };
  }
  if (/^work until told$/i.test(text.trim())) {
    let k = 0;
    while (results.has(id(`w${k + 1}`))) k++;
    if (notes.length === 0 && k < 500)
      return { toolCalls: [{ id: id(`w${k + 1}`), name: 'work', input: { step: k + 1 } }] };
    return { final: `done ${k}${notes.length ? `; notes: ${notes.join('; ')}` : ''}` };
  }
  const work = /^work (\d+)$/i.exec(text.trim());
  if (work) {
    const k = Number(work[1]);
    for (let i = 1; i <= k; i++)
      if (!results.has(id(`w${i}`))) return { toolCalls: [{ id: id(`w${i}`), name: 'work', input: { step: i } }] };
    return { final: `done ${k}${notes.length ? `; notes: ${notes.join('; ')}` : ''}` };
  }
  return { final: `turn ${n}: ${text}` };
}

/** The support-desk conversation agent, with its tools' simulated latency scaled by `workMs`. */
export function supportDesk(options: { workMs?: number } = {}) {
  const workMs = options.workMs ?? 500;
  return defineAgent({
    name: 'support-desk',
    instructions: 'You are a support desk. Look orders up, refund with approval, and answer briefly.',
    conversation: true,
    input: SupportTurn,
    model: scriptedModel({ id: 'scripted-support-desk', maxDurationMs: 2_000, script: supportScript }),
    tools: [
      waitTool(),
      defineTool({
        name: 'lookupOrder',
        description: 'Reads an order from the order database.',
        input: z.object({ orderId: z.string() }),
        effect: 'pure',
        maxDurationMs: 3_000,
        run: ({ orderId }, ctx) => lookupOrder(orderId, ctx, { latencyScale: 0, failureRate: 0 }),
      }),
      defineTool({
        name: 'issueRefund',
        description: 'Refunds the order. Once-only, and a human approves each refund.',
        input: z.object({ orderId: z.string(), amountCents: z.number().int().positive() }),
        effect: 'once',
        requiresApproval: true,
        maxDurationMs: 1_000,
        run: ({ orderId, amountCents }, ctx) =>
          issueRefund(orderId, amountCents, ctx, { latencyScale: 0, failureRate: 0 }),
        reconcile: async (idempotencyKey) => {
          if (!ledgerPath()) return { verdict: 'unknown' };
          const found = reconcileRefund(idempotencyKey, idempotencyKey.split(':')[2] ?? '');
          return found.done ? { verdict: 'done', output: { refundId: found.refundId } } : { verdict: 'notDone' };
        },
      }),
      defineTool({
        name: 'work',
        description: 'One step of a longer piece of work.',
        input: z.object({ step: z.number().int().positive() }),
        effect: 'pure',
        maxDurationMs: workMs + 1_000,
        run: async ({ step }, ctx) => {
          await systemClock.sleep(workMs, ctx.signal);
          return { step };
        },
      }),
    ],
  });
}
