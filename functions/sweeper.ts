import { loadConfig } from '../lib/aws/function-config.ts';
import { createSweeperHandler } from '../lib/aws/handlers.ts';
import { telemetryFor } from '../lib/aws/runtime-deps.ts';

// A composition root: imports the modules it uses, not lib/aws/index.ts (see step.ts).
const config = loadConfig(process.env);
export const handler = createSweeperHandler({ config, telemetry: await telemetryFor(config) });
