import * as z from 'zod';
import { RUNTIME_DEFAULTS as D, ENV, NAME_PATTERN } from '../core/resources.ts';
import { type ProducerMap, parseProducers } from '../core/tenancy.ts';
import { parseTenantLimits, type TenantLimits } from '../core/tenant-limits.ts';
import { DEFAULT_SERVICE_NAME, SERVICE_NAME_ENV } from '../telemetry/metric-names.ts';

/** The functions' configuration, parsed once per cold start. A bad value fails loudly, naming it. */
const Config = z.object({
  [ENV.table]: z.string().min(1),
  [ENV.workQueueUrl]: z.string().url(),
  [ENV.resultsQueueUrl]: z.string().url(),
  [ENV.ticketsQueueUrl]: z.string().url().optional(),
  [ENV.bucket]: z.string().min(1).optional(),
  [ENV.functionTimeoutMs]: z.coerce.number().int().positive().optional(),
  [ENV.leaseTtlMs]: z.coerce.number().int().positive().default(D.leaseTtlMs),
  [ENV.reserveMs]: z.coerce.number().int().nonnegative().default(D.reserveMs),
  [ENV.sweepIntervalMs]: z.coerce.number().int().positive().default(D.sweepIntervalMs),
  [ENV.sweepWindowMs]: z.coerce.number().int().positive().default(D.sweepWindowMs),
  [ENV.retentionDays]: z.coerce.number().int().positive().default(D.retentionDays),
  [ENV.producers]: z.string().min(1).optional(),
  [ENV.tenantLimits]: z.string().min(1).optional(),
  [ENV.tenantResultsQueueUrls]: z
    .string()
    .default('{}')
    .transform((text, context) => {
      try {
        return z.record(z.string().regex(NAME_PATTERN), z.string().url()).parse(JSON.parse(text));
      } catch (error) {
        context.addIssue({ code: 'custom', message: `not a tenant → queue URL map: ${(error as Error).message}` });
        return z.NEVER;
      }
    }),
  [ENV.tracing]: z.enum(['xray', 'otel']).default('xray'),
  [SERVICE_NAME_ENV]: z.string().min(1).default(DEFAULT_SERVICE_NAME),
  AWS_REGION: z.string().default('us-east-1'),
});

export interface FunctionConfig {
  readonly table: string;
  readonly workQueueUrl: string;
  /** The shared results queue: every tenant's results but those with a queue of their own. */
  readonly resultsQueueUrl: string;
  /** Tenants with results of their own: tenant → its results queue's URL. */
  readonly tenantResultsQueueUrls?: Readonly<Record<string, string>> | undefined;
  readonly ticketsQueueUrl?: string | undefined;
  readonly bucket?: string | undefined;
  /** The function's configured timeout, for the definition-time budget check. */
  readonly functionTimeoutMs?: number | undefined;
  readonly leaseTtlMs: number;
  readonly reserveMs: number;
  readonly sweepIntervalMs: number;
  readonly sweepWindowMs: number;
  readonly retentionDays: number;
  /** Which tenants each ticket sender may use; undefined when the deployment maps none. */
  readonly producers?: ProducerMap | undefined;
  /** Fair sharing: each tenant's concurrency and model-call rate; undefined: no tenant is limited. */
  readonly tenantLimits?: TenantLimits | undefined;
  /** Which tracer: X-Ray through Powertools, or OpenTelemetry over OTLP. */
  readonly tracing: 'xray' | 'otel';
  /** The `service` of its logs and the metrics' `service` dimension: one per stack, so stacks never mix. */
  readonly serviceName: string;
  readonly region: string;
}

/** Parses the functions' environment; throws naming each bad value. */
export function loadConfig(env: NodeJS.ProcessEnv): FunctionConfig {
  const parsed = Config.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`Baton function configuration is invalid: ${problems}`);
  }
  const c = parsed.data;
  return {
    table: c[ENV.table],
    workQueueUrl: c[ENV.workQueueUrl],
    resultsQueueUrl: c[ENV.resultsQueueUrl],
    tenantResultsQueueUrls: c[ENV.tenantResultsQueueUrls],
    ticketsQueueUrl: c[ENV.ticketsQueueUrl],
    bucket: c[ENV.bucket],
    functionTimeoutMs: c[ENV.functionTimeoutMs],
    leaseTtlMs: c[ENV.leaseTtlMs],
    reserveMs: c[ENV.reserveMs],
    sweepIntervalMs: c[ENV.sweepIntervalMs],
    sweepWindowMs: c[ENV.sweepWindowMs],
    retentionDays: c[ENV.retentionDays],
    producers: producersOf(c[ENV.producers]),
    tenantLimits: tenantLimitsOf(c[ENV.tenantLimits]),
    tracing: c[ENV.tracing],
    serviceName: c[SERVICE_NAME_ENV],
    region: c.AWS_REGION,
  };
}

function producersOf(json: string | undefined): ProducerMap | undefined {
  if (json === undefined) return undefined;
  try {
    return parseProducers(json);
  } catch (error) {
    throw new Error(`Baton function configuration is invalid: ${ENV.producers}: ${(error as Error).message}`);
  }
}

function tenantLimitsOf(json: string | undefined): TenantLimits | undefined {
  return json === undefined
    ? undefined
    : parseTenantLimits(json, `Baton function configuration is invalid: ${ENV.tenantLimits}`);
}
