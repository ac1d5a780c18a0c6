import { z } from 'zod';
import { dispatcher } from '../../examples/dispatcher/agent.ts';
import { LongHaulInput, longHaul } from '../../examples/long-haul/agent.ts';
import { investigate, OrderTicket, Verdict } from '../../examples/order-investigation/agent.ts';
import { SupportTurn, supportScript } from '../../examples/support-desk/agent.ts';
import { type AgentDefinition, defineAgent } from '../../lib/agent/define-agent.ts';
import { defineTool } from '../../lib/agent/define-tool.ts';
import { scriptedModel } from '../../lib/agent/scripted-model.ts';
import { waitTool } from '../../lib/agent/timer.ts';
import type { ChatMessage } from '../../lib/ports/model-client.ts';
import type { SimClock } from './clock.ts';
import { type Downstream, unit } from './services.ts';

/**
 * The examples' agents, with their scripts as the examples write them, rebuilt on the
 * simulator's downstream services and clock: the examples' tools sleep on the system clock and
 * append to a ledger file, which would make a run neither deterministic nor checkable.
 */

/** A model call takes this long on the simulated clock (the heartbeat has something to renew through). */
const MODEL_LATENCY_MS = 200;

/** The orders the simulated services know: three in four were lost in transit (a refund follows, mostly). */
export const orderFacts = (orderId: string) => {
  const r = unit(orderId);
  const n = Number(/\d+/.exec(orderId)?.[0] ?? 0);
  return {
    order: { orderId, customerId: `C-${Math.floor(r * 9000 + 1000)}`, totalCents: Math.floor(r * 40_000) + 1_000 },
    shipment: { orderId, status: n % 4 !== 1 ? 'lost-in-transit' : n % 3 === 0 ? 'delivered' : 'delayed' },
    risk: n % 5 === 0 ? 0.9 : 0.1,
  };
};

const lookupOrderTool = (services: Downstream) =>
  defineTool({
    name: 'lookupOrder',
    description: 'Reads an order from the order database.',
    input: z.object({ orderId: z.string() }),
    effect: 'pure',
    maxDurationMs: 3_000,
    run: ({ orderId }, ctx) => services.read('order-db', ctx, 300, () => orderFacts(orderId).order),
  });

const refundTool = (services: Downstream, approval: { requiresApproval?: boolean; approvalTimeoutMs?: number }) =>
  defineTool({
    name: 'issueRefund',
    description: 'Refunds the order. Once-only.',
    input: z.object({ orderId: z.string(), amountCents: z.number().int().positive() }),
    effect: 'once',
    maxDurationMs: 1_000,
    ...approval,
    run: (input, ctx) => services.refund('issueRefund', input, ctx),
    reconcile: (key, _input, signal) => services.reconcile(key, signal),
  });

/** The support-desk conversation (examples/support-desk), its refunds approved by a human. */
function supportDesk(services: Downstream, clock: SimClock): AgentDefinition {
  return defineAgent({
    name: 'support-desk',
    instructions: 'You are a support desk. Look orders up, refund with approval, and answer briefly.',
    conversation: true,
    input: SupportTurn,
    model: scriptedModel({
      id: 'scripted-support-desk',
      maxDurationMs: 2_000,
      latencyMs: MODEL_LATENCY_MS,
      clock,
      script: supportScript,
    }),
    tools: [
      waitTool(),
      lookupOrderTool(services),
      // An approval left undecided is denied by default after two minutes (the example waits for
      // ever), so time jumps exercise the approval timeout too.
      refundTool(services, { requiresApproval: true, approvalTimeoutMs: 120_000 }),
      defineTool({
        name: 'work',
        description: 'One step of a longer piece of work.',
        input: z.object({ step: z.number().int().positive() }),
        effect: 'pure',
        maxDurationMs: 1_500,
        run: async ({ step }, ctx) => {
          await clock.sleep(500, ctx.signal);
          return { step };
        },
      }),
    ],
  });
}

/** The order investigator (examples/order-investigation): lookups, then a once-only refund without approval. */
function orderInvestigator(services: Downstream, clock: SimClock): AgentDefinition {
  return defineAgent({
    name: 'order-investigator',
    instructions: 'Investigate the complaint and decide.',
    model: scriptedModel({ id: 'scripted-investigator', latencyMs: MODEL_LATENCY_MS, clock, script: investigate }),
    input: OrderTicket,
    output: Verdict,
    tools: [
      lookupOrderTool(services),
      defineTool({
        name: 'trackShipment',
        description: "Asks the carrier's API where the parcel is.",
        input: z.object({ orderId: z.string() }),
        effect: 'pure',
        maxDurationMs: 4_000,
        run: ({ orderId }, ctx) => services.read('carrier-api', ctx, 800, () => orderFacts(orderId).shipment),
      }),
      defineTool({
        name: 'checkFraud',
        description: 'Scores the customer with the fraud service.',
        input: z.object({ customerId: z.string() }),
        effect: 'pure',
        maxDurationMs: 3_000,
        run: ({ customerId }, ctx) =>
          services.read('fraud-service', ctx, 500, () => ({
            customerId,
            risk: unit(`fraud:${customerId}`) < 0.2 ? 0.9 : 0.1,
          })),
      }),
      refundTool(services, {}),
    ],
    limits: { maxSteps: 20 },
    retry: { attempts: 5, initialDelayMs: 500 },
  });
}

/** The long-haul job (examples/long-haul): its own script, its chunks fetched on the simulated clock. */
function longHaulJob(clock: SimClock): AgentDefinition {
  return defineAgent({
    name: 'long-haul',
    instructions: longHaul.instructions,
    input: LongHaulInput,
    model: longHaul.model,
    tools: [
      defineTool({
        name: 'fetchChunk',
        description: 'Returns chunk n of a long job.',
        input: z.object({ n: z.number().int(), bytes: z.number().int(), ms: z.number().int() }),
        effect: 'pure',
        maxDurationMs: 2_000,
        run: async ({ n, bytes, ms }, ctx) => {
          if (ms > 0) await clock.sleep(ms, ctx.signal);
          return { n, data: 'x'.repeat(bytes) };
        },
      }),
    ],
    limits: { maxSteps: 200 },
  });
}

/** A payment turn: `pay <a> then <b>` pays a, then b, each approved by a human. */
export const PayTurn = z.object({ text: z.string().min(1).max(200) });

/**
 * A desk whose model reuses one tool-call id for every payment of a turn, as real models
 * sometimes do: the runtime must still ask for each payment's approval (DESIGN invariant 12:
 * identities come from the journal, never from model-chosen ids alone).
 */
function payDesk(services: Downstream, clock: SimClock): AgentDefinition {
  const script = (messages: readonly ChatMessage[]) => {
    let amounts: number[] = [];
    let paid = 0;
    for (const message of messages)
      for (const content of message.content) {
        if (message.role === 'user' && content.type === 'text') {
          const turn = /^pay (\d+) then (\d+)$/.exec(parseText(content.text) ?? '');
          if (turn) {
            amounts = [Number(turn[1]), Number(turn[2])];
            paid = 0;
          }
        } else if (content.type === 'toolResult' && content.toolCallId === 'pay') paid++;
      }
    const next = amounts[paid];
    if (next === undefined) return { final: amounts.length ? `paid ${amounts.join(' and ')}` : 'nothing to pay' };
    return { toolCalls: [{ id: 'pay', name: 'issueRefund', input: { orderId: `P-${paid + 1}`, amountCents: next } }] };
  };
  return defineAgent({
    name: 'pay-desk',
    instructions: 'Pay what you are told, each payment approved by a human.',
    conversation: true,
    input: PayTurn,
    model: scriptedModel({ id: 'scripted-pay-desk', maxDurationMs: 2_000, latencyMs: MODEL_LATENCY_MS, clock, script }),
    tools: [refundTool(services, { requiresApproval: true })],
  });
}

const parseText = (text: string): string | undefined => {
  try {
    const parsed = PayTurn.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data.text : undefined;
  } catch {
    return undefined;
  }
};

/** Every agent of the simulated deployment. */
export function simAgents(services: Downstream, clock: SimClock): AgentDefinition[] {
  return [
    supportDesk(services, clock),
    orderInvestigator(services, clock),
    longHaulJob(clock),
    // The example's dispatcher as it is (its model has no latency and no tools of its own); a
    // shorter wait for its tasks than the example's two minutes keeps runs short.
    dispatcher({ taskWaitTimeoutMs: 30_000 }),
    payDesk(services, clock),
  ];
}
