import { createSweeperHandler, loadConfig, telemetryFor } from '../lib/aws/index.ts';

const config = loadConfig(process.env);
export const handler = createSweeperHandler({ config, telemetry: await telemetryFor(config) });
