import type { TestProject } from 'vitest/node';
import { type Endpoints, startEmulators } from '../lib/local/emulators.ts';
import { provisionResources, type Resources } from '../lib/local/provision.ts';

/** What every test file gets from `inject('baton')`: the running emulators and the suite's resources. */
export interface BatonTestContext {
  readonly region: string;
  readonly endpoints: Endpoints;
  /** Provisioned once per run with prefix `test`; tests that need fresh queues provision their own prefix. */
  readonly resources: Resources;
}

declare module 'vitest' {
  export interface ProvidedContext {
    baton: BatonTestContext;
  }
}

/** Suite-wide function timeout: short, so derived visibility timeouts stay short too. */
const TEST_FUNCTION_TIMEOUT_S = 5;

/** Boots DynamoDB Local and fauxqs once per `vitest run`, provisions the suite's resources and stops all at the end. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const emulators = await startEmulators();
  try {
    const resources = await provisionResources(emulators.endpoints, {
      prefix: 'test',
      functionTimeoutS: TEST_FUNCTION_TIMEOUT_S,
      region: emulators.region,
    });
    project.provide('baton', { region: emulators.region, endpoints: emulators.endpoints, resources });
  } catch (error) {
    await emulators.stop();
    throw error;
  }
  return () => emulators.stop();
}
