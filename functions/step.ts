import { agents } from '#agents';
import { createStepHandler, loadConfig, telemetryFor } from '../lib/aws/index.ts';

const config = loadConfig(process.env);
export const handler = createStepHandler({ agents, config, telemetry: await telemetryFor(config) });
