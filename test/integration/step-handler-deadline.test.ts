import type { SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { z } from 'zod';
import { createDocumentClient } from '../../lib/adapters/aws-clients.ts';
import { DynamoDbSessionStore } from '../../lib/adapters/dynamodb/dynamodb-session-store.ts';
import { agentRegistry, defineAgent } from '../../lib/agent/define-agent.ts';
import { defineTool } from '../../lib/agent/define-tool.ts';
import { scriptedModel, toolResults } from '../../lib/agent/scripted-model.ts';
import type { FunctionConfig } from '../../lib/aws/function-config.ts';
import { createIntakeHandler, createStepHandler } from '../../lib/aws/handlers.ts';
import { DEFAULT_TENANT, deriveSessionId } from '../../lib/core/ids.ts';
import { LOCAL_CREDENTIALS } from '../../lib/local/aws-clients.ts';
import { createLambdaContext } from '../../lib/local/lambda-context.ts';
import { provisionResources } from '../../lib/local/provision.ts';
import { toSqsRecord } from '../../lib/local/sqs-event-record.ts';
import { waitFor } from '../fixtures/wait-for.ts';

const { region, endpoints } = inject('baton');

/** A tool that ignores its abort signal and returns only when the test lets it. */
let release: () => void = () => {};
const released = new Promise<void>((resolve) => {
  release = resolve;
});
let called = false;
const stuck = defineAgent({
  name: 'stuck',
  instructions: 'Call the tool once, then answer.',
  model: scriptedModel({
    id: 'scripted-stuck',
    maxDurationMs: 300,
    script: (messages) =>
      toolResults(messages).has('c1')
        ? { final: 'done' }
        : { toolCalls: [{ id: 'c1', name: 'ignoresSignal', input: {} }] },
  }),
  tools: [
    defineTool({
      name: 'ignoresSignal',
      description: 'Runs past its abort signal.',
      input: z.object({}),
      effect: 'pure',
      maxDurationMs: 500,
      run: async () => {
        called = true;
        await released;
        return {};
      },
    }),
  ],
});

const event = (body: string, queueArn: string): SQSEvent => ({
  Records: [toSqsRecord({ MessageId: crypto.randomUUID(), ReceiptHandle: 'r', Body: body }, { queueArn, region })],
});
const context = (timeoutS: number) => createLambdaContext({ functionName: 'step', region, timeoutS });

describe('the step handler at its invocation deadline', () => {
  let config: FunctionConfig;
  let workQueueArn: string;
  let ticketsQueueArn: string;

  beforeAll(async () => {
    const resources = await provisionResources(endpoints, {
      prefix: `deadline${process.pid}`,
      functionTimeoutS: 8,
      region,
    });
    workQueueArn = resources.queues.work.arn;
    ticketsQueueArn = resources.queues.tickets.arn;
    // The handlers build their own SDK clients, as on Lambda: point them at the emulators.
    vi.stubEnv('AWS_ENDPOINT_URL_DYNAMODB', endpoints.dynamodb);
    vi.stubEnv('AWS_ENDPOINT_URL_SQS', endpoints.sqs);
    vi.stubEnv('AWS_ENDPOINT_URL_S3', endpoints.s3);
    vi.stubEnv('AWS_ACCESS_KEY_ID', LOCAL_CREDENTIALS.accessKeyId);
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', LOCAL_CREDENTIALS.secretAccessKey);
    vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'SILENT');
    config = {
      table: resources.table,
      workQueueUrl: resources.queues.work.url,
      resultsQueueUrl: resources.queues.results.url,
      leaseTtlMs: 3_000,
      reserveMs: 200,
      sweepIntervalMs: 1_000,
      sweepWindowMs: 1_000,
      retentionDays: 1,
      tracing: 'xray',
      serviceName: 'baton-deadline-test',
      region,
    };
  });
  afterAll(() => {
    release();
    vi.unstubAllEnvs();
  });

  it('does not end the invocation while a leg still runs (its heartbeat would hold the lease after it)', async () => {
    // Arrange: a ticket accepted, and its first kick.
    const agents = agentRegistry([stuck]);
    const ticketId = `deadline-${process.pid}`;
    const key = { tenant: DEFAULT_TENANT, agent: 'stuck', id: deriveSessionId(DEFAULT_TENANT, 'stuck', ticketId) };
    const intake = createIntakeHandler({ agents, config });
    const ticket = JSON.stringify({ v: 1, ticketId, agent: 'stuck', input: {} });
    expect(await intake(event(ticket, ticketsQueueArn), context(10))).toEqual({ batchItemFailures: [] });
    const step = createStepHandler({ agents, config });
    const kick = JSON.stringify({ v: 1, session: key, reason: 'first', turnId: ticketId });
    const invocationContext = context(8);

    // Act: the tool runs past the deadline; the test lets it return only after the deadline.
    const invocation = step(event(kick, workQueueArn), invocationContext).then(
      (value: unknown) => ({ ended: 'returned', value }),
      (error: unknown) => ({ ended: 'threw', error: String(error) }),
    );
    await waitFor(() => called, { what: 'the tool to be called' });
    await waitFor(() => Date.now() > invocationContext.deadlineMs + 200, { what: 'the deadline to pass' });
    release();
    const ended = await invocation;

    // Assert: the handler returned only once the leg had ended (at Lambda's own timeout the
    // environment, leg included, would have been reset), and the leg released its lease.
    expect(ended).toEqual({ ended: 'returned', value: { batchItemFailures: [] } });
    const store = new DynamoDbSessionStore({
      client: createDocumentClient({ region, endpoints, credentials: LOCAL_CREDENTIALS }),
      table: config.table,
    });
    const record = await store.getSession(key);
    expect(record?.owner, 'no lease left held').toBeUndefined();
  });
});
