import { createSweeperHandler } from '../lib/aws/index.ts';

export const handler = createSweeperHandler();
