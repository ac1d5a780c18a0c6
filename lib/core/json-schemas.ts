import * as z from 'zod';
import { Kick, Result, Ticket } from './messages.ts';

/**
 * The message contracts as JSON Schema, so producers and consumers in other languages validate
 * against the same definitions. `schemas/*.schema.json` are generated from here (`baton schemas
 * --write schemas`); a test keeps them in step.
 */
export function messageJsonSchemas(): Record<'ticket' | 'kick' | 'result', Record<string, unknown>> {
  const schema = (type: z.ZodType, title: string, io: 'input' | 'output') => ({
    ...(z.toJSONSchema(type, { io, unrepresentable: 'any' }) as Record<string, unknown>),
    $id: `urn:baton:${title.toLowerCase()}:v1`,
    title: `Baton ${title} v1`,
  });
  return {
    // Producers write tickets, so the ticket schema is the input side (v defaults to 1).
    ticket: schema(Ticket, 'Ticket', 'input'),
    kick: schema(Kick, 'Kick', 'output'),
    result: schema(Result, 'Result', 'output'),
  };
}
