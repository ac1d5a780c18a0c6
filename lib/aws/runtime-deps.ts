import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDocumentClient, createSqsClient } from '../adapters/aws-clients.ts';
import { DynamoDbFairShare } from '../adapters/dynamodb/dynamodb-fair-share.ts';
import { DynamoDbLiveText } from '../adapters/dynamodb/dynamodb-live-text.ts';
import { DynamoDbSessionStore } from '../adapters/dynamodb/dynamodb-session-store.ts';
import { S3BlobStore } from '../adapters/s3/s3-blob-store.ts';
import { loadS3Client } from '../adapters/s3/s3-sdk.ts';
import { SqsResultPublisher, SqsWorkQueue } from '../adapters/sqs/sqs-queues.ts';
import { TenantResults } from '../adapters/tenant-results.ts';
import { type AgentRegistry, assertFitsBudget, undeployedDelegates } from '../agent/define-agent.ts';
import { type IdSource, randomIds } from '../core/ids.ts';
import { type Clock, systemClock } from '../ports/clock.ts';
import type { RuntimeDeps } from '../runtime/deps.ts';
import { type FailpointHook, noFailpoints } from '../runtime/failpoints.ts';
import { createPowertoolsTelemetry, type PowertoolsTelemetry } from '../telemetry/powertools-telemetry.ts';
import type { FunctionConfig } from './function-config.ts';

/**
 * The AWS clients the runtime's adapters use, handed to `instrumentClients` before first use.
 * The S3 client is not among them: it is built at the first payload offload (s3-sdk.ts).
 */
export interface RuntimeClients {
  readonly documents: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
}

/**
 * What a caller may replace in the runtime's dependencies. Production passes only `agents`;
 * the local stack and tests pass the rest (SDK middleware, failpoints) — production code has no
 * switch that turns them on.
 */
export interface RuntimeDepsOverrides {
  /** The agents this deployment hosts. */
  readonly agents: AgentRegistry;
  readonly telemetry?: PowertoolsTelemetry | undefined;
  readonly failpoint?: FailpointHook | undefined;
  readonly clock?: Clock | undefined;
  readonly ids?: IdSource | undefined;
  readonly random?: (() => number) | undefined;
  /** Adds SDK middleware (fault injection, an emulator shim) to the clients before any call. */
  readonly instrumentClients?: ((clients: RuntimeClients, config: FunctionConfig) => void) | undefined;
  /** The journal format the worker writes and reads up to (RuntimeConfig.journalFormat): a rolling-deploy test plays an older build with it. */
  readonly journalFormat?: number | undefined;
}

/** The runtime's dependencies with the telemetry the handler middleware needs. */
export interface FunctionRuntime {
  readonly config: FunctionConfig;
  readonly deps: RuntimeDeps;
  readonly telemetry: PowertoolsTelemetry;
}

/**
 * Builds the runtime's dependencies for a function from its config: the DynamoDB journal, the
 * SQS queues, the S3 payload store (when a bucket is configured) and Powertools telemetry, each
 * replaceable through `overrides`. Call once per cold start, at module scope, so warm
 * invocations reuse the clients. A step that can never fit the deployed durations throws here.
 * @example const { deps } = createRuntimeDeps(loadConfig(process.env), { agents });
 */
export function createRuntimeDeps(config: FunctionConfig, overrides: RuntimeDepsOverrides): FunctionRuntime {
  const { agents } = overrides;
  if (config.functionTimeoutMs !== undefined) {
    for (const agent of agents.values())
      assertFitsBudget(agent, {
        functionTimeoutMs: config.functionTimeoutMs,
        reserveMs: config.reserveMs,
        leaseTtlMs: config.leaseTtlMs,
      });
  }
  const telemetry = overrides.telemetry ?? createPowertoolsTelemetry({ serviceName: config.serviceName });
  // Said at cold start, where an operator reads it, rather than first as a task tool's error mid-turn.
  for (const { agent, delegate } of undeployedDelegates(agents))
    telemetry.logger.warn(
      'an agent delegates to an agent this function does not host: its start_task of it will fail',
      {
        agent,
        delegate,
      },
    );
  const aws = { region: config.region };
  const sqs = createSqsClient(aws);
  const documents = createDocumentClient(aws);
  overrides.instrumentClients?.({ documents, sqs }, config);
  const blobs = config.bucket ? new S3BlobStore({ client: () => loadS3Client(aws), bucket: config.bucket }) : undefined;

  const deps: RuntimeDeps = {
    store: new DynamoDbSessionStore({ client: documents, table: config.table, blobs }),
    workQueue: new SqsWorkQueue({ client: sqs, queueUrl: config.workQueueUrl }),
    results: new TenantResults(
      new SqsResultPublisher({ client: sqs, queueUrl: config.resultsQueueUrl }),
      new Map(
        Object.entries(config.tenantResultsQueueUrls ?? {}).map(([tenant, queueUrl]) => [
          tenant,
          new SqsResultPublisher({ client: sqs, queueUrl }),
        ]),
      ),
    ),
    blobs,
    // Written to only by agents whose model streams: for the others it costs nothing.
    live: new DynamoDbLiveText({ client: documents, table: config.table }),
    // Read and written only for tenants with limits: the others pay nothing for it.
    fairShare: new DynamoDbFairShare({ client: documents, table: config.table }),
    clock: overrides.clock ?? systemClock,
    agents,
    telemetry,
    failpoint: overrides.failpoint ?? noFailpoints,
    config: {
      leaseTtlMs: config.leaseTtlMs,
      reserveMs: config.reserveMs,
      retentionDays: config.retentionDays,
      sweepGraceMs: config.leaseTtlMs,
      producers: config.producers,
      ...(overrides.journalFormat === undefined ? {} : { journalFormat: overrides.journalFormat }),
      tenantLimits: config.tenantLimits,
    },
    random: overrides.random ?? Math.random,
    ids: overrides.ids ?? randomIds,
  };
  return { config, deps, telemetry };
}

/**
 * The telemetry a function's config asks for: X-Ray through Powertools, or OpenTelemetry over
 * OTLP when `BATON_TRACING=otel` (its SDK is imported only then, keeping X-Ray cold starts lean).
 * @example export const handler = createStepHandler({ agents, telemetry: await telemetryFor(loadConfig(process.env)) });
 */
export async function telemetryFor(config: FunctionConfig): Promise<PowertoolsTelemetry> {
  const { serviceName } = config;
  if (config.tracing !== 'otel') {
    const telemetry = createPowertoolsTelemetry({ serviceName });
    // When X-Ray traces, every invocation uses it: load it during init rather than in the first one.
    await telemetry.powertools.xray.load();
    return telemetry;
  }
  const { withOtelTracing } = await import('../telemetry/otel-telemetry.ts');
  return withOtelTracing(createPowertoolsTelemetry({ serviceName, tracingEnabled: false }));
}
