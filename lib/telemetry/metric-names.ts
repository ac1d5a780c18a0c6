/**
 * The one list of what Baton's functions publish to CloudWatch: the runtime emits only these
 * names (the metrics interface takes a `MetricName`), and the CDK dashboard and alarms chart the
 * same. Pure data (it imports only the core vocabulary), so infra/ reads it without pulling in
 * the runtime.
 */
import { OutcomeStatus } from '../core/vocabulary.ts';

/** The EMF namespace every Baton function publishes under. */
export const METRICS_NAMESPACE = 'Baton';

/**
 * The `service` dimension when a function's configuration names none (the local stack, tests).
 * A deployed stack sets its own (BatonRuntime's `serviceName`), so two stacks never mix metrics.
 */
export const DEFAULT_SERVICE_NAME = 'baton';

/** The environment variable a function reads its service name from (Powertools' own). */
export const SERVICE_NAME_ENV = 'POWERTOOLS_SERVICE_NAME';

/** Metric names. */
export const METRIC = {
  steps: 'Steps',
  stepDuration: 'StepDuration',
  legs: 'Legs',
  yields: 'Yields',
  recoveries: 'Recoveries',
  leaseConflicts: 'LeaseConflicts',
  duplicateKicksDropped: 'DuplicateKicksDropped',
  bytesJournaled: 'BytesJournaled',
  inputTokens: 'InputTokens',
  outputTokens: 'OutputTokens',
  /** Transcripts condensed to fit the context window (their tokens count in InputTokens/OutputTokens). */
  compactions: 'Compactions',
  /** Counted with the dimension `status` (one of OUTCOME_STATUSES). */
  outcomes: 'Outcomes',
  stalledSessions: 'StalledSessions',
  /** Conversation messages journaled into a running turn. */
  messagesDelivered: 'MessagesDelivered',
  /** Durable timers (a parked tool, an approval deadline) that came due and woke their session. */
  timersWoken: 'TimersWoken',
  /** Chunks of streamed model text written for live followers (never journaled), and the writes that failed. */
  liveTextWrites: 'LiveTextWrites',
  liveTextWriteFailures: 'LiveTextWriteFailures',
  /** Continuations refused for lacking their holder's hand-off nonce (forged or tampered with). */
  forgedKicksRefused: 'ForgedKicksRefused',
  /** Results given up after the publish retries: the turn keeps its outcome, the consumer never hears. */
  resultsUndelivered: 'ResultsUndelivered',
  /** Kicks left to a newer worker: the journal holds an entry in a format newer than this build reads (a rolling deploy). */
  newerJournalFormat: 'NewerJournalFormat',
  /** Legs that found their tenant at its concurrency limit and put their session in its line (fair sharing). */
  tenantSlotWaits: 'TenantSlotWaits',
  /** Model calls held back by their tenant's rate limit (each wait for a token counts once). */
  modelCallsThrottled: 'ModelCallsThrottled',
  /**
   * A tenant's model usage, with the dimension `tenant` (beside `service`): tokens and, where the
   * agent's price table names the model, US dollars. The dashboard charts them by tenant.
   */
  tenantInputTokens: 'TenantInputTokens',
  tenantOutputTokens: 'TenantOutputTokens',
  tenantCostUsd: 'TenantCostUsd',
} as const;

/** The metrics published per tenant (dimension `tenant`), which the dashboard finds by search. */
export const TENANT_METRICS: readonly MetricName[] = [
  METRIC.tenantInputTokens,
  METRIC.tenantOutputTokens,
  METRIC.tenantCostUsd,
];
export type MetricName = (typeof METRIC)[keyof typeof METRIC];

/** Values of the `status` dimension on `Outcomes`. */
export const OUTCOME_STATUSES: readonly OutcomeStatus[] = Object.values(OutcomeStatus);
