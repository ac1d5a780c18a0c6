import { agents as deployedAgents } from '#agents';
import { createDocumentClient, createS3Client, createSqsClient } from '../lib/adapters/aws-clients.ts';
import { DynamoDbSessionStore } from '../lib/adapters/dynamodb/dynamodb-session-store.ts';
import { installFaultsFromEnv } from '../lib/adapters/faults/install-faults.ts';
import { S3BlobStore } from '../lib/adapters/s3/s3-blob-store.ts';
import { SqsResultPublisher, SqsWorkQueue } from '../lib/adapters/sqs/sqs-queues.ts';
import { type AgentRegistry, assertFitsBudget } from '../lib/agent/define-agent.ts';
import { randomIds } from '../lib/core/ids.ts';
import { addAwsTraceHeaderShim } from '../lib/local/aws-trace-header-shim.ts';
import { systemClock } from '../lib/ports/clock.ts';
import type { RuntimeDeps } from '../lib/runtime/deps.ts';
import { fileFailpoints, noFailpoints } from '../lib/runtime/failpoints.ts';
import { withOtelTracing } from '../lib/telemetry/otel-telemetry.ts';
import { createPowertoolsTelemetry } from '../lib/telemetry/powertools-telemetry.ts';
import { loadConfig } from './config.ts';

/**
 * The composition root shared by the functions: config parsed once, clients built at module
 * scope so warm invocations reuse them.
 */
export const config = loadConfig(process.env);

// Tests host their own agents in worker processes through this module path; deployments never set it.
const agentsModule = process.env.BATON_AGENTS_MODULE;
const agents: AgentRegistry = agentsModule
  ? ((await import(agentsModule)) as { agents: AgentRegistry }).agents
  : deployedAgents;

// OpenTelemetry replaces X-Ray when configured; its SDK is imported only then.
export const telemetry =
  config.tracing === 'otel'
    ? await withOtelTracing(createPowertoolsTelemetry({ tracingEnabled: false }))
    : createPowertoolsTelemetry();

const aws = { region: config.region };
const sqs = createSqsClient(aws);
// fauxqs drops the AWSTraceHeader system attribute; locally it travels as a message attribute.
if (process.env.BATON_LOCAL === '1') addAwsTraceHeaderShim(sqs);
const s3 = config.bucket ? createS3Client(aws) : undefined;
const blobs = s3 && config.bucket ? new S3BlobStore({ client: s3, bucket: config.bucket }) : undefined;
const documents = createDocumentClient(aws);
// Chaos testing only: with BATON_FAULTS unset nothing is installed.
installFaultsFromEnv({ dynamodb: documents, sqs, workQueueUrl: config.workQueueUrl }, process.env);

// A step that can never fit the deployed durations fails the cold start, naming it.
if (config.functionTimeoutMs !== undefined) {
  for (const agent of agents.values())
    assertFitsBudget(agent, {
      functionTimeoutMs: config.functionTimeoutMs,
      reserveMs: config.reserveMs,
      leaseTtlMs: config.leaseTtlMs,
    });
}

export const deps: RuntimeDeps = {
  store: new DynamoDbSessionStore({ client: documents, table: config.table, blobs }),
  workQueue: new SqsWorkQueue({ client: sqs, queueUrl: config.workQueueUrl }),
  results: new SqsResultPublisher({ client: sqs, queueUrl: config.resultsQueueUrl }),
  blobs,
  clock: systemClock,
  agents,
  telemetry,
  failpoint: config.failpointsFile ? fileFailpoints(config.failpointsFile) : noFailpoints,
  config: {
    leaseTtlMs: config.leaseTtlMs,
    reserveMs: config.reserveMs,
    retentionDays: config.retentionDays,
    sweepGraceMs: config.leaseTtlMs,
    producers: config.producers,
  },
  random: Math.random,
  ids: randomIds,
};
