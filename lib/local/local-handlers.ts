/**
 * The three functions as the local stack hosts them: the production handler factories with the
 * local-only hooks passed as overrides — the emulator's trace-header shim, and, when the stack
 * or a test asks through the worker's environment, other agents (BATON_AGENTS_MODULE), fault
 * injection (BATON_FAULTS) and failpoints (BATON_FAILPOINTS_FILE). Lambda bundles never import
 * this module.
 */
import { installFaultsFromEnv } from '../adapters/faults/install-faults.ts';
import type { FunctionConfig } from '../aws/function-config.ts';
import { createIntakeHandler, createStepHandler, createSweeperHandler, type HandlerOptions } from '../aws/handlers.ts';
import type { RuntimeClients } from '../aws/runtime-deps.ts';
import { FAILPOINTS_FILE_ENV, fileFailpoints } from '../runtime/failpoints.ts';
import { loadAgents } from './agents-module.ts';
import { addAwsTraceHeaderShim } from './aws-trace-header-shim.ts';
import { AGENTS_MODULE_ENV } from './worker-protocol.ts';

function instrumentLocalClients(clients: RuntimeClients, config: FunctionConfig): void {
  // fauxqs drops the AWSTraceHeader system attribute; locally it travels as a message attribute.
  addAwsTraceHeaderShim(clients.sqs);
  installFaultsFromEnv(
    { dynamodb: clients.documents, sqs: clients.sqs, workQueueUrl: config.workQueueUrl },
    process.env,
  );
}

async function localOptions(): Promise<HandlerOptions> {
  const failpointsFile = process.env[FAILPOINTS_FILE_ENV];
  return {
    agents: await loadAgents(process.env[AGENTS_MODULE_ENV]),
    instrumentClients: instrumentLocalClients,
    ...(failpointsFile ? { failpoint: fileFailpoints(failpointsFile) } : {}),
  };
}

// Built while the worker loads (before any invocation's deadline runs), as Lambda's init phase does.
const options = await localOptions();

export const intake = createIntakeHandler(options);
export const step = createStepHandler(options);
export const sweeper = createSweeperHandler(options);
