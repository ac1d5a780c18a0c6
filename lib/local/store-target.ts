import type { AgentRegistry } from '../agent/define-agent.ts';
import type { BatonClient } from '../client/baton-client.ts';
import { type StoreResources, storeBackedClient } from '../client/store-backed-client.ts';
import { LOCAL_CREDENTIALS } from './aws-clients.ts';
import { addAwsTraceHeaderShim } from './aws-trace-header-shim.ts';
import type { LocalStackConfig } from './local-config.ts';

/** Where a store-backed client connects: a deployed stack (default credentials) or the local stack's emulators. */
export interface StoreTarget extends StoreResources {
  readonly region: string;
  readonly endpoints?: { dynamodb?: string; sqs?: string; s3?: string } | undefined;
  /** Emulators: local credentials and the AWSTraceHeader shim. */
  readonly local: boolean;
}

/** The local stack as a target: its emulators' endpoints and the resources it provisioned. */
export function localTarget(config: LocalStackConfig): StoreTarget {
  const { resources } = config;
  return {
    region: config.region,
    endpoints: config.endpoints,
    local: true,
    table: resources.table,
    bucket: resources.bucket,
    ticketsQueueUrl: resources.queues.tickets.url,
    workQueueUrl: resources.queues.work.url,
  };
}

/**
 * The store-backed client for a target, with the emulators' credentials and trace-header shim
 * when local, admitting inputs against `agents` when given.
 */
export function clientForTarget(target: StoreTarget, agents?: AgentRegistry): ReturnType<typeof storeBackedClient> {
  return storeBackedClient({
    aws: {
      region: target.region,
      endpoints: target.endpoints,
      ...(target.local ? { credentials: LOCAL_CREDENTIALS } : {}),
    },
    resources: target,
    configureSqs: target.local ? addAwsTraceHeaderShim : undefined,
    agents,
  });
}

/** A client over the real adapters for the target, admitting inputs against `agents` when given. */
export function clientFor(target: StoreTarget, agents?: AgentRegistry): BatonClient {
  return clientForTarget(target, agents).client;
}
