import { agents } from '#agents';
import { createHttpApiHandler } from '../lib/aws/http-api-handler.ts';

export const handler = createHttpApiHandler({ agents });
