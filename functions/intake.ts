import { agents } from '#agents';
import { createIntakeHandler, loadConfig, telemetryFor } from '../lib/aws/index.ts';

const config = loadConfig(process.env);
export const handler = createIntakeHandler({ agents, config, telemetry: await telemetryFor(config) });
