import { versionOf } from '../agent/agent-versions.ts';
import type { AgentDefinition, AgentRegistry } from '../agent/define-agent.ts';
import type { IdSource } from '../core/ids.ts';
import { JOURNAL_FORMAT_VERSION } from '../core/journal.ts';
import { RUNTIME_DEFAULTS } from '../core/resources.ts';
import type { ProducerMap } from '../core/tenancy.ts';
import type { TenantLimits } from '../core/tenant-limits.ts';
import type { BlobStore } from '../ports/blob-store.ts';
import type { Clock } from '../ports/clock.ts';
import type { FairShareStore } from '../ports/fair-share.ts';
import type { LiveTextStore } from '../ports/live-text.ts';
import type { ResultPublisher, TicketQueue, WorkQueue } from '../ports/queues.ts';
import type { SessionStore } from '../ports/session-store.ts';
import type { Telemetry, TelemetryLogger } from '../telemetry/telemetry.ts';
import { itemTtlAfter, recordTtlAfter, retentionSeconds } from './expiry.ts';
import type { FailpointHook } from './failpoints.ts';
import type { LiveTextPolicy } from './live-text-writer.ts';

/** The logger the runtime writes through: lib/telemetry's, under the name the leg modules use. */
export type RuntimeLogger = TelemetryLogger;

/** Tunables, every one a duration or count that tests shorten. */
export interface RuntimeConfig {
  readonly leaseTtlMs: number;
  readonly reserveMs: number;
  /** Finished sessions expire after this many days (DynamoDB TTL). */
  readonly retentionDays: number;
  /** How long after an event the sweeper looks, if no kick made progress first. */
  readonly sweepGraceMs: number;
  /**
   * The oldest the session record a leg holds may be at a step boundary before the inbox step
   * reads it again (RUNTIME_DEFAULTS.inboxLookMs when absent; 0 reads at every boundary).
   */
  readonly inboxLookMs?: number | undefined;
  /** Turns that may wait behind a conversation's active turn; one more is refused (default 9). */
  readonly maxPendingInputs?: number | undefined;
  /** Tenants each producer may submit for (intake); every producer may use every tenant when absent. */
  readonly producers?: ProducerMap | undefined;
  /** How streamed model text is coalesced into live text writes (DEFAULT_LIVE_TEXT_POLICY when absent). */
  readonly liveText?: LiveTextPolicy | undefined;
  /**
   * The journal format this worker writes and the newest it reads (JOURNAL_FORMAT_VERSION when
   * absent). Below 2 it behaves as a build from before agent versions: a rolling-deploy test
   * runs an older worker beside a newer one this way.
   */
  readonly journalFormat?: number | undefined;
  /**
   * Fair sharing between tenants (lib/core/tenant-limits.ts): per tenant (or `*`), how many of its
   * sessions run at once and how fast its model calls go. Absent, or a tenant without an entry:
   * no limit. Applied only with a `fairShare` store.
   */
  readonly tenantLimits?: TenantLimits | undefined;
}

/** The journal format a worker writes and reads up to. */
export const journalFormatOf = (config: RuntimeConfig): number => config.journalFormat ?? JOURNAL_FORMAT_VERSION;

export const DEFAULT_RUNTIME_CONFIG: RuntimeConfig = {
  leaseTtlMs: RUNTIME_DEFAULTS.leaseTtlMs,
  reserveMs: RUNTIME_DEFAULTS.reserveMs,
  retentionDays: RUNTIME_DEFAULTS.retentionDays,
  sweepGraceMs: RUNTIME_DEFAULTS.leaseTtlMs,
};

/** Everything the runtime talks to, injected (Temporal's WorkerDeps pattern). */
export interface RuntimeDeps {
  readonly store: SessionStore;
  readonly workQueue: WorkQueue;
  readonly results: ResultPublisher;
  readonly tickets?: TicketQueue | undefined;
  readonly blobs?: BlobStore | undefined;
  /** Where tenant slots and model-call buckets live (every worker shares them); none: tenant limits are off. */
  readonly fairShare?: FairShareStore | undefined;
  /** Where a streaming model's partial text goes for live followers (never journaled); none: no live text. */
  readonly live?: LiveTextStore | undefined;
  readonly clock: Clock;
  readonly agents: AgentRegistry;
  readonly telemetry: Telemetry;
  readonly failpoint: FailpointHook;
  readonly config: RuntimeConfig;
  /** In [0, 1): jitter for retry backoff. */
  readonly random: () => number;
  /** Owner and write ids. */
  readonly ids: IdSource;
}

/** The session record's expiry (epoch s) for a write at `now`. */
export const ttlSeconds = (config: RuntimeConfig, now: number): number =>
  recordTtlAfter(retentionSeconds(config.retentionDays), now);

/** An item's expiry (epoch s) for a write at `now`: it outlives the record (lib/runtime/expiry.ts). */
export const itemTtlSeconds = (config: RuntimeConfig, now: number): number =>
  itemTtlAfter(retentionSeconds(config.retentionDays), now);

/** A new session record's expiry, and the retention its items are written under (NewSession). */
export const newSessionExpiry = (config: RuntimeConfig, now: number) => ({
  ttlSeconds: ttlSeconds(config, now),
  retentionS: retentionSeconds(config.retentionDays),
});

/**
 * What a new session records of the build that creates it: the agent version it starts on (the
 * newest deployed) and the journal format. A format 1 build (one from before versions) records neither.
 */
export function newSessionVersions(config: RuntimeConfig, agent: AgentDefinition) {
  const journalFormat = journalFormatOf(config);
  return journalFormat < 2 ? {} : { agentVersion: versionOf(agent), journalFormat };
}
