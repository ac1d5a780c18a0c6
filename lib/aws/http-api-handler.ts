import type { LambdaFunctionURLEvent } from 'aws-lambda';
import * as z from 'zod';
import type { AgentRegistry } from '../agent/define-agent.ts';
import { createApiHandler } from '../api/api-handler.ts';
import { CallerMap, iamCallerResolver } from '../api/caller.ts';
import { storeBackedClient } from '../client/store-backed-client.ts';
import { ENV, RUNTIME_DEFAULTS } from '../core/resources.ts';
import { systemClock } from '../ports/clock.ts';
import { DEFAULT_SERVICE_NAME, SERVICE_NAME_ENV } from '../telemetry/metric-names.ts';
import { createPowertoolsTelemetry } from '../telemetry/powertools-telemetry.ts';

const Config = z.object({
  [ENV.table]: z.string().min(1),
  [ENV.ticketsQueueUrl]: z.string().url(),
  [ENV.workQueueUrl]: z.string().url(),
  [ENV.bucket]: z.string().min(1),
  [ENV.apiTenants]: z
    .string()
    .default('{}')
    .transform((text, context) => {
      try {
        return CallerMap.parse(JSON.parse(text));
      } catch (error) {
        context.addIssue({
          code: 'custom',
          message: `not a principal → tenants (and roles) map: ${(error as Error).message}`,
        });
        return z.NEVER;
      }
    }),
  [ENV.apiStreamsPerCaller]: z.coerce.number().int().min(1).default(RUNTIME_DEFAULTS.apiStreamsPerCaller),
  [SERVICE_NAME_ENV]: z.string().min(1).default(DEFAULT_SERVICE_NAME),
  AWS_REGION: z.string().default('us-east-1'),
});

/** What the API function is built with. */
export interface HttpApiHandlerOptions {
  /**
   * The deployment's agents: a submitted or sent input is admitted against its agent's schema
   * and limits before the API answers (lib/runtime/admission.ts). Without them it reads and
   * writes as before, and only the rules that need no agent are checked at the API.
   */
  readonly agents?: AgentRegistry | undefined;
}

/**
 * The HTTP API function behind a Lambda function URL (IAM auth): the same handler `baton dev`
 * serves. It reads the table and sends to the tickets and work queues; it loads the agents only
 * to admit inputs, and runs none of them.
 * Configuration comes from the environment the BatonRuntime construct sets.
 * @example export const handler = createHttpApiHandler({ agents });
 */
export function createHttpApiHandler(options: HttpApiHandlerOptions = {}, env: NodeJS.ProcessEnv = process.env) {
  const parsed = Config.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`Baton API configuration is invalid: ${problems}`);
  }
  const config = parsed.data;
  const telemetry = createPowertoolsTelemetry({ serviceName: config[SERVICE_NAME_ENV] });

  // Production adapters only: this module is what a Lambda bundle of baton/aws pulls in.
  const { client, store, streams } = storeBackedClient({
    aws: { region: config.AWS_REGION },
    resources: {
      table: config[ENV.table],
      bucket: config[ENV.bucket],
      ticketsQueueUrl: config[ENV.ticketsQueueUrl],
      workQueueUrl: config[ENV.workQueueUrl],
    },
    agents: options.agents,
  });

  const api = createApiHandler({
    // A function URL answers within the function's timeout: an events request waits up to 20 s,
    // holding one of its caller's stream slots (shared by every container) while it does.
    services: {
      client,
      store,
      clock: systemClock,
      eventsWaitMs: 20_000,
      eventsPollMs: 1_000,
      streams,
      streamsPerCaller: config[ENV.apiStreamsPerCaller],
    },
    resolveCaller: iamCallerResolver(config[ENV.apiTenants]),
    onError: (error, event) =>
      telemetry.logger.error('API request failed', {
        method: event.requestContext.http.method,
        path: event.rawPath,
        error: error instanceof Error ? error.stack : String(error),
      }),
  });

  return (event: LambdaFunctionURLEvent) => api(event);
}
