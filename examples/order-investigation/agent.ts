import {
  asText,
  type ChatMessage,
  defineAgent,
  defineTool,
  type ModelClient,
  type ScriptReply,
  scriptedModel,
  toolResults,
} from '@baton-run/baton';
import * as z from 'zod';
import { ledgerPath } from '../simulated/ledger.ts';
import { issueRefund, lookupOrder, reconcileRefund, scoreFraud, trackShipment } from '../simulated/services.ts';

/** The ticket input: an order and what the customer says went wrong. */
export const OrderTicket = z.object({ orderId: z.string().min(1).max(64), complaint: z.string().min(1).max(4_000) });

/** The structured verdict that lands on the results queue. */
export const Verdict = z.object({
  orderId: z.string(),
  verdict: z.enum(['refund', 'no-action', 'escalate']),
  reason: z.string(),
  refundId: z.string().optional(),
});
export type Verdict = z.infer<typeof Verdict>;

const lookupOrderTool = defineTool({
  name: 'lookupOrder',
  description: 'Reads an order from the order database.',
  input: z.object({ orderId: z.string() }),
  effect: 'pure',
  maxDurationMs: 3_000,
  run: ({ orderId }, ctx) => lookupOrder(orderId, ctx),
});

const trackShipmentTool = defineTool({
  name: 'trackShipment',
  description: "Asks the shipping carrier's API where the order's parcel is.",
  input: z.object({ orderId: z.string() }),
  effect: 'pure',
  maxDurationMs: 4_000,
  run: ({ orderId }, ctx) => trackShipment(orderId, ctx),
});

const checkFraudTool = defineTool({
  name: 'checkFraud',
  description: 'Scores the customer with the fraud service (0 = safe, 1 = fraud).',
  input: z.object({ customerId: z.string() }),
  effect: 'pure',
  maxDurationMs: 3_000,
  run: ({ customerId }, ctx) => scoreFraud(customerId, ctx),
});

const issueRefundTool = defineTool({
  name: 'issueRefund',
  description: 'Refunds the order. Once-only: never repeated for the same call.',
  input: z.object({ orderId: z.string(), amountCents: z.number().int().positive() }),
  effect: 'once',
  // A once-only call starts only when the lease, just renewed, outlives it plus 1 s of clock skew.
  // 1 s (the simulated refund takes at most 0.6 s) leaves a second of slack for the renew's round
  // trip under the demo's 3 s lease TTL, even on a busy laptop.
  maxDurationMs: 1_000,
  run: ({ orderId, amountCents }, ctx) => issueRefund(orderId, amountCents, ctx),
  reconcile: async (idempotencyKey) => {
    // The simulated service keeps its state in the ledger; without one nobody can tell.
    if (!ledgerPath()) return { verdict: 'unknown' };
    const sessionId = idempotencyKey.split(':')[2] ?? '';
    const found = reconcileRefund(idempotencyKey, sessionId);
    return found.done ? { verdict: 'done', output: { refundId: found.refundId } } : { verdict: 'notDone' };
  },
});

const INSTRUCTIONS = `You investigate customer complaints about orders.
Look the order up and track its shipment, check the customer for fraud, then decide:
refund a lost parcel for a low-risk customer, escalate a high-risk one, otherwise take no action.
Answer with a JSON verdict { orderId, verdict, reason, refundId? }.`;

const call = (id: string, name: string, input: unknown) => ({ id, name, input });

/** The scripted investigator: the same decisions a model would make, deterministically. */
export function investigate(messages: readonly ChatMessage[]): ScriptReply {
  const first = messages[0]?.content[0];
  const ticket = OrderTicket.parse(JSON.parse(first?.type === 'text' ? first.text : '{}'));
  const results = toolResults(messages);
  const output = <T>(id: string) => results.get(id)?.output as T | undefined;
  if (!results.has('order') || !results.has('shipment')) {
    return {
      text: 'Looking up the order and its shipment.',
      toolCalls: [
        call('order', 'lookupOrder', { orderId: ticket.orderId }),
        call('shipment', 'trackShipment', { orderId: ticket.orderId }),
      ],
    };
  }
  const order = output<{ customerId: string; totalCents: number }>('order');
  const shipment = output<{ status: string }>('shipment');
  if (!order || !shipment)
    return {
      final: JSON.stringify({
        orderId: ticket.orderId,
        verdict: 'escalate',
        reason: 'order or shipment lookup failed',
      } satisfies Verdict),
    };
  if (!results.has('fraud')) return { toolCalls: [call('fraud', 'checkFraud', { customerId: order.customerId })] };
  const risk = output<{ risk: number }>('fraud')?.risk ?? 1;
  if (shipment.status !== 'lost-in-transit') {
    return {
      final: JSON.stringify({
        orderId: ticket.orderId,
        verdict: 'no-action',
        reason: `parcel is ${shipment.status}`,
      } satisfies Verdict),
    };
  }
  if (risk > 0.8)
    return {
      final: JSON.stringify({
        orderId: ticket.orderId,
        verdict: 'escalate',
        reason: `lost parcel but fraud risk ${risk}`,
      } satisfies Verdict),
    };
  if (!results.has('refund'))
    return {
      text: 'Refunding the lost order.',
      toolCalls: [call('refund', 'issueRefund', { orderId: ticket.orderId, amountCents: order.totalCents })],
    };
  const refund = results.get('refund');
  return {
    final: JSON.stringify({
      orderId: ticket.orderId,
      verdict: refund?.ok ? 'refund' : 'escalate',
      reason: refund?.ok ? 'parcel lost in transit; customer low risk' : `refund refused: ${asText(refund?.output)}`,
      ...(refund?.ok ? { refundId: (refund.output as { refundId: string }).refundId } : {}),
    } satisfies Verdict),
  };
}

/** The scripted model by default; Bedrock when a model id is configured (see README). */
export function orderInvestigator(
  model: ModelClient = scriptedModel({ id: 'scripted-investigator', latencyMs: 200, script: investigate }),
) {
  return defineAgent({
    name: 'order-investigator',
    instructions: INSTRUCTIONS,
    model,
    input: OrderTicket,
    output: Verdict,
    tools: [lookupOrderTool, trackShipmentTool, checkFraudTool, issueRefundTool],
    limits: { maxSteps: 20 },
    // The simulated services fail 5% of calls transiently; five attempts make a lost turn rare.
    retry: { attempts: 5, initialDelayMs: 500 },
  });
}
