import { agentRegistry, defineSchedule } from '@baton-run/baton';
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

/**
 * Recurring tickets: `baton dev` fires them on the local stack, `baton schedules` lists them, and
 * a stack passes them to `BatonRuntime({ schedules })` for EventBridge Scheduler.
 */
export const schedules = [
  defineSchedule({
    name: 'nightly-long-haul',
    description: 'A nightly 20-step run of the long-haul agent.',
    agent: longHaul,
    input: { steps: 20 },
    cron: '0 3 * * ? *',
  }),
];
