import { agentRegistry } from '../lib/agent/define-agent.ts';
import { bedrockModelFromEnv } from './bedrock-model.ts';
import { dispatcher } from './dispatcher/agent.ts';
import { longHaul } from './long-haul/agent.ts';
import { orderInvestigator } from './order-investigation/agent.ts';
import { researcher } from './researcher/agent.ts';
import { supportDesk } from './support-desk/agent.ts';

/**
 * The agents this deployment hosts. The functions import this module as `#agents` (package.json
 * "imports"; the CDK construct points it at a team's own file).
 */
export const agents = agentRegistry([
  orderInvestigator(bedrockModelFromEnv()),
  longHaul,
  researcher(),
  supportDesk(),
  dispatcher(),
]);
