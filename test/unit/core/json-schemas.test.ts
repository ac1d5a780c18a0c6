import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { messageJsonSchemas } from '../../../lib/core/json-schemas.ts';

describe('published JSON Schemas', () => {
  it('match the zod contracts they are generated from (regenerate with `baton schemas --write schemas`)', () => {
    for (const [name, schema] of Object.entries(messageJsonSchemas())) {
      const committed = JSON.parse(
        readFileSync(new URL(`../../../schemas/${name}.schema.json`, import.meta.url), 'utf8'),
      );
      expect(committed, `schemas/${name}.schema.json is out of date`).toEqual(schema);
    }
  });

  it('describe the ticket fields a producer must send', () => {
    const ticket = messageJsonSchemas().ticket as {
      required: string[];
      properties: Record<string, unknown>;
      additionalProperties: boolean;
    };
    expect(ticket.required).toEqual(expect.arrayContaining(['ticketId', 'agent', 'input']));
    expect(ticket.properties).toHaveProperty('tenant');
    expect(ticket.additionalProperties).toBe(false);
  });
});
