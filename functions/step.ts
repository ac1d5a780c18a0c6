import { agents } from '#agents';
import { loadConfig } from '../lib/aws/function-config.ts';
import { createStepHandler } from '../lib/aws/handlers.ts';
import { telemetryFor } from '../lib/aws/runtime-deps.ts';

// A composition root: imports the modules it uses, not lib/aws/index.ts, whose API handler
// (and its routes and client) this function would otherwise load at every cold start.
const config = loadConfig(process.env);
export const handler = createStepHandler({ agents, config, telemetry: await telemetryFor(config) });
