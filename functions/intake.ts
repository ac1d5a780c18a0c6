import { agents } from '#agents';
import { loadConfig } from '../lib/aws/function-config.ts';
import { createIntakeHandler } from '../lib/aws/handlers.ts';
import { telemetryFor } from '../lib/aws/runtime-deps.ts';

// A composition root: imports the modules it uses, not lib/aws/index.ts (see step.ts).
const config = loadConfig(process.env);
export const handler = createIntakeHandler({ agents, config, telemetry: await telemetryFor(config) });
