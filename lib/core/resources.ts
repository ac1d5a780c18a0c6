/**
 * The one definition of Baton's AWS resources. The CDK stack (infra/) and the embedded local
 * stack (lib/local) both build from it, so local and cloud cannot drift. Pure data: it imports
 * nothing, which is why infra/ may import it without pulling in the runtime.
 */

/** The session table: one table, pk/sk strings, TTL on `ttl`. */
export const SESSION_TABLE = {
  partitionKey: 'pk',
  sortKey: 'sk',
  ttlAttribute: 'ttl',
  indexes: {
    /**
     * Sparse: only sessions that hold a lease or have pending work carry `sweepShard`/`sweepAt`.
     * Keys only: the sweeper needs just the pk, and the index is written on every renew.
     */
    sweep: {
      name: 'sweep',
      partitionKey: 'sweepShard',
      partitionKeyType: 'S',
      sortKey: 'sweepAt',
      sortKeyType: 'N',
      projection: 'KEYS_ONLY',
    },
    /** Session records only (the META item carries `sid`): the CLI finds a session by its id, then reads it. */
    bySessionId: { name: 'bySessionId', partitionKey: 'sid', partitionKeyType: 'S', projection: 'KEYS_ONLY' },
    /**
     * Session records only (only META items carry `tenant`), newest first: the API's and the
     * console's paginated list. It projects just what a list row shows; none of it changes on a
     * renewal, so the index is written when a leg starts or ends, not on every heartbeat.
     */
    byTenant: {
      name: 'byTenant',
      partitionKey: 'tenant',
      partitionKeyType: 'S',
      sortKey: 'createdAt',
      sortKeyType: 'N',
      projection: 'INCLUDE',
      nonKeyAttributes: ['sid', 'agent', 'ticketId', 'state', 'legs', 'recovered', 'tokens', 'cancelRequested'],
    },
  },
} as const;

export interface QueueDefinition {
  /** Logical name; the physical name gets a prefix (the stack or the local stack). */
  readonly name: string;
  readonly dlq?: { readonly name: string; readonly maxReceiveCount: number };
  /** True for queues a Lambda function consumes: visibility timeout derives from its timeout. */
  readonly consumed: boolean;
}

export const QUEUES = {
  tickets: { name: 'tickets', dlq: { name: 'tickets-dlq', maxReceiveCount: 5 }, consumed: true },
  work: { name: 'work', dlq: { name: 'work-dlq', maxReceiveCount: 5 }, consumed: true },
  results: { name: 'results', consumed: false },
} as const satisfies Record<string, QueueDefinition>;

/** DLQs keep failures for the longest SQS allows, so an operator has time to look. */
export const DLQ_RETENTION_SECONDS = 14 * 24 * 3600;

/**
 * AWS's guidance for SQS event sources: visibility timeout at least 6× the function timeout,
 * so a batch retried by Lambda's poller is not redelivered while still in flight.
 */
export const VISIBILITY_TIMEOUT_FACTOR = 6;

export const visibilityTimeoutSeconds = (functionTimeoutSeconds: number): number =>
  Math.ceil(functionTimeoutSeconds * VISIBILITY_TIMEOUT_FACTOR);

/**
 * Names (tenant, agent) may not contain the key separator, so keys cannot alias each other.
 * Here rather than in ids.ts because the infra checks tenant names in `producers` at synth.
 */
export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/**
 * A tenant's name: a name, but not one of the payload bucket's own top-level prefixes. A
 * session's payloads live under `{tenant}/`, beside `tickets/` and `results/`: a tenant called
 * `results` would have its payloads among every tenant's results, and a grant scoped to it read them.
 */
export const TENANT_PATTERN = /^(?!(?:tickets|results)$)[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** A producer's tenant list entry meaning every tenant. */
export const ANY_TENANT = '*';

/**
 * What a caller of the HTTP API may do, beside which tenants it sees (lib/core/roles.ts says which
 * operation needs which). Here because the construct checks the roles it is given at synth.
 */
export const API_ROLES = ['submit', 'converse', 'approve', 'operate', 'read'] as const;

/**
 * The runtime's tunables when a deployment sets none, defined once: the CDK construct's props,
 * the functions' configuration parser, the runtime's config and the local stack default to these.
 */
export const RUNTIME_DEFAULTS = {
  /**
   * A crashed leg's session is recovered about this long (plus a sweep interval) after its last
   * renewal; a lease taken while the sweeper had nothing to watch, by its next run at the latest.
   */
  leaseTtlMs: 30_000,
  /** Kept back at the end of each leg to checkpoint and hand off. */
  reserveMs: 5_000,
  /**
   * The oldest the session record a leg holds may be at a step boundary before the inbox step
   * reads it again: an event reaches a running turn within this (or the step in flight, if
   * longer), and steps faster than it share one read instead of paying one each.
   */
  inboxLookMs: 100,
  /** Days a finished session's items are kept. */
  retentionDays: 30,
  /** How often the sweeper polls for expired leases within its window. */
  sweepIntervalMs: 5_000,
  /**
   * How long one scheduled sweeper run polls while something is leased, pending or due within it
   * (the schedule fires every minute); a run that finds nothing returns after one poll.
   */
  sweepWindowMs: 55_000,
  /** The step function's timeout: the length of one leg. */
  functionTimeoutMs: 300_000,
  /** The intake function's timeout (a few writes per ticket). */
  intakeTimeoutMs: 30_000,
  /**
   * Event streams (long polls) one API caller may hold open at once: a console tab and a CLI
   * follow or two. Each holds an API invocation for up to a poll, so the bound is what keeps one
   * caller from taking the API's reserved concurrency.
   */
  apiStreamsPerCaller: 4,
  /**
   * Concurrent invocations reserved for (and capping) the API function: long polls can never
   * take the concurrency intake and the step function draw from the account's unreserved pool.
   */
  apiReservedConcurrency: 20,
} as const;

/** Environment variable names the functions read (set by CDK in the cloud, by `baton dev` locally). */
export const ENV = {
  table: 'BATON_TABLE',
  ticketsQueueUrl: 'BATON_TICKETS_QUEUE_URL',
  workQueueUrl: 'BATON_WORK_QUEUE_URL',
  resultsQueueUrl: 'BATON_RESULTS_QUEUE_URL',
  bucket: 'BATON_BUCKET',
  functionTimeoutMs: 'BATON_FUNCTION_TIMEOUT_MS',
  leaseTtlMs: 'BATON_LEASE_TTL_MS',
  reserveMs: 'BATON_RESERVE_MS',
  sweepIntervalMs: 'BATON_SWEEP_INTERVAL_MS',
  sweepWindowMs: 'BATON_SWEEP_WINDOW_MS',
  retentionDays: 'BATON_RETENTION_DAYS',
  maxRecoveries: 'BATON_MAX_RECOVERIES',
  /** The API function's callers: JSON, IAM principal ARN → tenant names or "*", or { tenants, roles }. */
  apiTenants: 'BATON_API_TENANTS',
  /** JSON: sender id → tenants it may submit for (lib/core/tenancy.ts); unset, any sender any tenant. */
  producers: 'BATON_PRODUCERS',
  /** JSON: tenant → the URL of its own results queue; other tenants' results go to BATON_RESULTS_QUEUE_URL. */
  tenantResultsQueueUrls: 'BATON_TENANT_RESULTS_QUEUE_URLS',
  /** Event streams one API caller may hold open at once (RUNTIME_DEFAULTS.apiStreamsPerCaller). */
  apiStreamsPerCaller: 'BATON_API_STREAMS_PER_CALLER',
  /** `xray` (default) or `otel`: which tracer the functions use. */
  tracing: 'BATON_TRACING',
  /** JSON: tenant (or `*`) → { maxRunning, modelCallsPerMinute, modelCallsPerMinuteByModel, burst } (lib/core/tenant-limits.ts). */
  tenantLimits: 'BATON_TENANT_LIMITS',
} as const;
