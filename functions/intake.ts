import { agents } from '#agents';
import { createIntakeHandler } from '../lib/aws/index.ts';

export const handler = createIntakeHandler({ agents });
