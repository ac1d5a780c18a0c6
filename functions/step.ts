import { agents } from '#agents';
import { createStepHandler } from '../lib/aws/index.ts';

export const handler = createStepHandler({ agents });
