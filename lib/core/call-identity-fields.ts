import * as z from 'zod';

/** The identity fields as stored (entries and inbox items of older versions lack them). */
export const callIdentityFields = {
  modelSeq: z.number().int().positive().optional(),
  tool: z.string().min(1).optional(),
  digest: z.string().min(1).optional(),
};
