/**
 * The three functions as the local stack hosts them: the production handler factories with the
 * local-only hooks passed as overrides — the emulator's trace-header shim, and, when the stack
 * or a test asks through the worker's environment, other agents (BATON_AGENTS_MODULE), fault
 * injection (BATON_FAULTS) and failpoints (BATON_FAILPOINTS_FILE). Lambda bundles never import
 * this module.
 */
import { pathToFileURL } from 'node:url';
import { installFaultsFromEnv } from '../adapters/faults/install-faults.ts';
import type { AgentRegistry } from '../agent/define-agent.ts';
import type { FunctionConfig } from '../aws/function-config.ts';
import { createIntakeHandler, createStepHandler, createSweeperHandler, type HandlerOptions } from '../aws/handlers.ts';
import type { RuntimeClients } from '../aws/runtime-deps.ts';
import { FAILPOINTS_FILE_ENV, fileFailpoints } from '../runtime/failpoints.ts';
import { EXAMPLE_AGENTS_URL } from './agents-module.ts';
import { addAwsTraceHeaderShim } from './aws-trace-header-shim.ts';
import { AGENTS_MODULE_ENV } from './worker-protocol.ts';

async function loadAgents(env: NodeJS.ProcessEnv): Promise<AgentRegistry> {
  const module = env[AGENTS_MODULE_ENV];
  if (module === undefined || module === '') {
    // The repository's example agents; an installed package has none and says so.
    try {
      return ((await import(EXAMPLE_AGENTS_URL.href)) as { agents: AgentRegistry }).agents;
    } catch {
      throw new Error(`no agents to host: set ${AGENTS_MODULE_ENV} (baton dev --agents ./path/agents.ts)`);
    }
  }
  const url = module.startsWith('file:') ? module : pathToFileURL(module).href;
  const loaded = (await import(url)) as { agents?: unknown };
  if (!(loaded.agents instanceof Map)) throw new Error(`${module} has no 'agents' export (an agentRegistry([...]))`);
  return loaded.agents as AgentRegistry;
}

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
    agents: await loadAgents(process.env),
    instrumentClients: instrumentLocalClients,
    ...(failpointsFile ? { failpoint: fileFailpoints(failpointsFile) } : {}),
  };
}

// Built while the worker loads (before any invocation's deadline runs), as Lambda's init phase does.
const options = await localOptions();

export const intake = createIntakeHandler(options);
export const step = createStepHandler(options);
export const sweeper = createSweeperHandler(options);
