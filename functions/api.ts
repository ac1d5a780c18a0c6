import { agents } from '#agents';
import { createHttpApiHandler } from '../lib/aws/index.ts';

export const handler = createHttpApiHandler({ agents });
