import * as z from 'zod';
import { describeIssues } from './messages.ts';
import { ANY_TENANT, NAME_PATTERN } from './resources.ts';

export { ANY_TENANT };

/**
 * Which tenants each producer may submit tickets for, keyed by what SQS reports as a record's
 * `SenderId`: an IAM user's or role's unique id (`AIDA…`, `AROA…`; an assumed role's SenderId is
 * `AROA…:session`, matched by the part before the colon) or an account id (its root).
 */
export type ProducerMap = ReadonlyMap<string, readonly string[]>;

const ProducersJson = z.record(
  z.string().min(1),
  z.array(z.string().regex(NAME_PATTERN, 'tenant must be a tenant name').or(z.literal(ANY_TENANT))).min(1),
);

/** Parses the producers map from its JSON form (the BATON_PRODUCERS variable); a bad one throws, naming it. */
export function parseProducers(json: string): ProducerMap {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (error) {
    throw new Error(`producers map is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = ProducersJson.safeParse(raw);
  if (!parsed.success) throw new Error(`producers map is invalid: ${describeIssues(parsed.error)}`);
  return new Map(Object.entries(parsed.data));
}

/**
 * Why `senderId` may not submit a ticket for `tenant`, or undefined when it may. Without a
 * producers map every sender may use every tenant (one trust domain).
 */
export function tenantRefusal(producers: ProducerMap | undefined, senderId: string | undefined, tenant: string) {
  if (producers === undefined) return undefined;
  if (!senderId) return 'ticket has no sender id; this deployment maps producers to tenants';
  const principal = senderId.split(':')[0] ?? senderId;
  const allowed = producers.get(senderId) ?? producers.get(principal);
  if (allowed === undefined) return `sender ${senderId} is not a mapped producer`;
  if (allowed.includes(ANY_TENANT) || allowed.includes(tenant)) return undefined;
  return `sender ${senderId} may not submit tickets for tenant "${tenant}"`;
}
