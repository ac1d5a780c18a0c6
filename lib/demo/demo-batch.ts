/** One ticket of the demo's batch. */
export interface DemoTicket {
  /** Short label shown in the progress view (T01, T02…). */
  readonly label: string;
  readonly ticketId: string;
  readonly agent: 'order-investigator' | 'long-haul' | 'dispatcher';
  readonly input: unknown;
}

const COMPLAINTS = [
  'My parcel never arrived and tracking has not moved for a week.',
  'The order shows delivered but nothing was at my door.',
  'It is two weeks late, where is it?',
  'Tracking says lost in transit. I want my money back.',
  'Package arrived damaged, please check what happened.',
] as const;

/** Every LONG_HAUL_EVERY-th ticket is a long-haul job: long enough to need several legs. */
const LONG_HAUL_EVERY = 4;
/** 24 chunks of ~0.5 s each: about 13 s of work, past a 10 s function timeout. */
export const DEMO_LONG_HAUL_INPUT = { steps: 24, payloadBytes: 2_048, stepMs: 500 } as const;

/** The third ticket fans out: a dispatcher hands three tasks to three agents in the background. */
const FAN_OUT_AT = 3;

/** The fan-out's three tasks, one per agent the dispatcher may start. */
export function demoFanOut(orderId: string) {
  return {
    tasks: [
      {
        agent: 'order-investigator',
        input: { orderId, complaint: 'Ordered twice by mistake, please check.' },
        description: 'investigate',
      },
      { agent: 'long-haul', input: { steps: 6, payloadBytes: 256, stepMs: 300 }, description: 'fetch' },
      { agent: 'support-desk', input: { text: 'hello from the dispatcher' }, description: 'greet' },
    ],
  };
}

/**
 * The demo's tickets: mostly order investigations, with a long-haul job every fourth ticket and a
 * fan-out of three background tasks as the third.
 * Ticket ids carry `runId`, so a run never converges on the sessions of an earlier one.
 * @example demoBatch(12, 'demo-lx3k9')
 */
export function demoBatch(count: number, runId: string): DemoTicket[] {
  return Array.from({ length: count }, (_, i) => {
    const label = `T${String(i + 1).padStart(2, '0')}`;
    const ticketId = `${runId}-${label}`;
    if (i + 1 === FAN_OUT_AT) return { label, ticketId, agent: 'dispatcher', input: demoFanOut(`ORD-${1001 + i}`) };
    if ((i + 1) % LONG_HAUL_EVERY === 0) {
      return { label, ticketId, agent: 'long-haul', input: DEMO_LONG_HAUL_INPUT };
    }
    return {
      label,
      ticketId,
      agent: 'order-investigator',
      input: { orderId: `ORD-${1001 + i}`, complaint: COMPLAINTS[i % COMPLAINTS.length] },
    };
  });
}
