import { type Emulators, startEmulators } from '../lib/local/emulators.ts';
import { provisionResources } from '../lib/local/provision.ts';
import type { BenchDynamoDb } from './in-process-runtime.ts';

export interface BenchDatabase extends BenchDynamoDb {
  readonly emulators: Pick<Emulators, 'region' | 'endpoints'>;
  stop(): Promise<void>;
}

/**
 * DynamoDB Local (and fauxqs) started for the bench, with the session table provisioned from
 * the shared resource definition under its own prefix. AWS_ENDPOINT_URL_DYNAMODB points it at
 * a DynamoDB that is already running instead.
 */
export async function startBenchDatabase(prefix = `bench${Date.now().toString(36)}`): Promise<BenchDatabase> {
  const emulators = await startEmulators();
  try {
    const resources = await provisionResources(emulators.endpoints, {
      prefix,
      functionTimeoutS: 10,
      region: emulators.region,
    });
    return {
      region: emulators.region,
      endpoint: emulators.endpoints.dynamodb,
      table: resources.table,
      emulators,
      stop: () => emulators.stop(),
    };
  } catch (error) {
    await emulators.stop();
    throw error;
  }
}
