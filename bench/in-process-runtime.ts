import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDocumentClient } from '../lib/adapters/aws-clients.ts';
import { DynamoDbFairShare } from '../lib/adapters/dynamodb/dynamodb-fair-share.ts';
import { DynamoDbLiveText } from '../lib/adapters/dynamodb/dynamodb-live-text.ts';
import { DynamoDbSessionStore } from '../lib/adapters/dynamodb/dynamodb-session-store.ts';
import { MemoryResultPublisher, MemoryWorkQueue } from '../lib/adapters/memory/memory-queues.ts';
import { type AgentDefinition, agentRegistry } from '../lib/agent/define-agent.ts';
import type { SessionKey } from '../lib/core/ids.ts';
import { randomIds } from '../lib/core/ids.ts';
import type { JournalEntry } from '../lib/core/journal.ts';
import type { Result } from '../lib/core/messages.ts';
import type { TenantLimits } from '../lib/core/tenant-limits.ts';
import { LOCAL_CREDENTIALS } from '../lib/local/aws-clients.ts';
import { systemClock } from '../lib/ports/clock.ts';
import type { SessionStore } from '../lib/ports/session-store.ts';
import type { RuntimeDeps } from '../lib/runtime/deps.ts';
import { noFailpoints } from '../lib/runtime/failpoints.ts';
import { acceptTicket } from '../lib/runtime/intake.ts';
import { runKick } from '../lib/runtime/step-runner.ts';
import { sweep } from '../lib/runtime/sweeper.ts';
import { noopTelemetry } from '../lib/telemetry/telemetry.ts';
import { RequestMeter } from './request-meter.ts';

/** Telemetry that records nothing: the bench measures DynamoDB, not the logger. */
export const silentTelemetry = noopTelemetry;

export interface BenchDynamoDb {
  readonly region: string;
  readonly endpoint: string;
  readonly table: string;
}

/** A DynamoDB client on the bench's DynamoDB Local with a request meter installed. */
export function meteredClient(db: BenchDynamoDb): { client: DynamoDBClient; meter: RequestMeter } {
  const client = new DynamoDBClient({ region: db.region, endpoint: db.endpoint, credentials: LOCAL_CREDENTIALS });
  const meter = new RequestMeter();
  meter.install(client);
  return { client, meter };
}

/** Called after each journal append that the store accepted. */
export type AppendListener = (key: SessionKey, entry: JournalEntry) => void;

/** A store that reports every accepted append (to cut the meter's totals per step). */
function observedStore(store: SessionStore, onAppend: AppendListener | undefined): SessionStore {
  if (!onAppend) return store;
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'append') {
        return async (key: SessionKey, entry: JournalEntry, ttl?: number) => {
          await target.append(key, entry, ttl);
          onAppend(key, entry);
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** How soon the sweeper looks at a session that yielded or was accepted, if no kick made progress. */
const SWEEP_GRACE_MS = 1_000;
const IDLE_POLL_MS = 20;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** A session stuck this long with nothing pending and nothing due is a bench failure, not a wait. */
const STUCK_AFTER_MS = 30_000;

export interface InProcessRuntimeOptions {
  readonly db: BenchDynamoDb;
  readonly agents: readonly AgentDefinition[];
  /** Each leg's simulated function timeout: a leg yields to a continuation near it. */
  readonly functionTimeoutMs: number;
  readonly reserveMs?: number | undefined;
  readonly leaseTtlMs?: number | undefined;
  /** How soon the sweeper looks at a session accepted or handed off (default 1 s; deployed, the lease TTL). */
  readonly sweepGraceMs?: number | undefined;
  readonly onAppend?: AppendListener | undefined;
  /** Wraps the store the runtime uses (to count what one session writes). */
  readonly wrapStore?: ((store: SessionStore) => SessionStore) | undefined;
  /** Fair sharing: tenant limits, with the fair-share items in the bench's table. */
  readonly tenantLimits?: TenantLimits | undefined;
  /** Legs that run at once at most, as a function's reserved concurrency bounds them (default: every kick at once). */
  readonly maxConcurrency?: number | undefined;
}

/**
 * The real runtime (intake, step runner, DynamoDB session store) in this process, with the
 * queues in memory: the bench drives legs itself so that DynamoDB is the only thing measured.
 */
export class InProcessRuntime {
  readonly meter: RequestMeter;
  readonly deps: RuntimeDeps;
  readonly work = new MemoryWorkQueue();
  readonly results = new MemoryResultPublisher();
  readonly #timeoutMs: number;
  readonly #maxConcurrency: number;
  /** Kicks received and not yet run (only with maxConcurrency): first in, first run. */
  readonly #backlog: ReturnType<MemoryWorkQueue['receive']> = [];

  constructor(options: InProcessRuntimeOptions) {
    const { client, meter } = meteredClient(options.db);
    this.meter = meter;
    this.#timeoutMs = options.functionTimeoutMs;
    this.#maxConcurrency = options.maxConcurrency ?? Number.POSITIVE_INFINITY;
    const documents = createDocumentClient({ region: options.db.region }, client);
    const store = new DynamoDbSessionStore({ client: documents, table: options.db.table });
    const leaseTtlMs = options.leaseTtlMs ?? 30_000;
    this.deps = {
      store: (options.wrapStore ?? ((s) => s))(observedStore(store, options.onAppend)),
      workQueue: this.work,
      results: this.results,
      // As deployed: the live text store is wired, and a model that does not stream never writes to it.
      live: new DynamoDbLiveText({ client: documents, table: options.db.table }),
      fairShare: options.tenantLimits && new DynamoDbFairShare({ client: documents, table: options.db.table }),
      clock: systemClock,
      agents: agentRegistry(options.agents),
      telemetry: silentTelemetry,
      failpoint: noFailpoints,
      config: {
        leaseTtlMs,
        reserveMs: options.reserveMs ?? 500,
        retentionDays: 1,
        sweepGraceMs: options.sweepGraceMs ?? SWEEP_GRACE_MS,
        tenantLimits: options.tenantLimits,
      },
      random: Math.random,
      ids: randomIds,
    };
  }

  /** Accepts a ticket through the real intake (turn, session record, first kick). */
  async submit(agent: string, input: unknown, ticketId: string = randomUUID(), tenant?: string): Promise<SessionKey> {
    const ticket = { v: 1, ticketId, agent, input, ...(tenant === undefined ? {} : { tenant }) };
    const accepted = await acceptTicket(JSON.stringify(ticket), undefined, this.deps);
    return accepted.key;
  }

  /**
   * Runs kicks as they come (each in a fresh simulated invocation) until every session submitted
   * so far has published a result. Concurrency is the number of sessions in flight. When nothing
   * is pending, the real sweeper runs one pass, as its schedule would (a dropped kick is its job).
   */
  async drain(expectedResults: number): Promise<Result[]> {
    const inFlight = new Set<Promise<void>>();
    let idleSince: number | undefined;
    while (this.results.sent.length < expectedResults) {
      this.#backlog.push(...this.work.receive());
      const kicks = this.#backlog.splice(0, Math.max(0, this.#maxConcurrency - inFlight.size));
      for (const message of kicks) {
        const deadline = Date.now() + this.#timeoutMs;
        const run = runKick(
          message.body,
          { requestId: randomUUID(), remainingMs: () => deadline - Date.now() },
          this.deps,
        )
          .then(() => undefined)
          .finally(() => inFlight.delete(run));
        inFlight.add(run);
      }
      if (kicks.length > 0 || inFlight.size > 0) idleSince = undefined;
      if (kicks.length === 0) {
        // Received again within a poll even while legs run, as Lambda's event-source mapping
        // does: waiting for a leg to end held a kick (a release, a cancel) behind legs of up
        // to the function's timeout.
        if (inFlight.size > 0) await Promise.race([...inFlight, pause(IDLE_POLL_MS)]);
        else if (this.work.pendingCount > 0 || this.#backlog.length > 0)
          await new Promise((resolve) => setTimeout(resolve, IDLE_POLL_MS));
        else {
          idleSince ??= Date.now();
          if (Date.now() - idleSince > STUCK_AFTER_MS) {
            throw new Error(
              `nothing pending or due for ${STUCK_AFTER_MS} ms and ${expectedResults - this.results.sent.length} result(s) missing`,
            );
          }
          const swept = await sweep(
            { windowMs: 0, intervalMs: 1, stalledAfterMs: STUCK_AFTER_MS, remainingMs: () => STUCK_AFTER_MS },
            this.deps,
          );
          if (swept.kicked === 0) await new Promise((resolve) => setTimeout(resolve, IDLE_POLL_MS * 5));
        }
      }
    }
    await Promise.all(inFlight);
    return this.results.bodies;
  }
}
