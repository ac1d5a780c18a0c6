import { z } from 'zod';
import { ENV } from '../lib/core/resources.ts';
import { type ProducerMap, parseProducers } from '../lib/core/tenancy.ts';

/** The functions' configuration, parsed once per cold start. A bad value fails loudly, naming it. */
const Config = z.object({
  [ENV.table]: z.string().min(1),
  [ENV.workQueueUrl]: z.string().url(),
  [ENV.resultsQueueUrl]: z.string().url(),
  [ENV.ticketsQueueUrl]: z.string().url().optional(),
  [ENV.bucket]: z.string().min(1).optional(),
  [ENV.functionTimeoutMs]: z.coerce.number().int().positive().optional(),
  [ENV.leaseTtlMs]: z.coerce.number().int().positive().default(30_000),
  [ENV.reserveMs]: z.coerce.number().int().nonnegative().default(5_000),
  [ENV.sweepIntervalMs]: z.coerce.number().int().positive().default(5_000),
  [ENV.sweepWindowMs]: z.coerce.number().int().positive().default(55_000),
  [ENV.retentionDays]: z.coerce.number().int().positive().default(30),
  [ENV.producers]: z.string().min(1).optional(),
  [ENV.tracing]: z.enum(['xray', 'otel']).default('xray'),
  BATON_FAILPOINTS_FILE: z.string().optional(),
  AWS_REGION: z.string().default('us-east-1'),
});

export interface FunctionConfig {
  readonly table: string;
  readonly workQueueUrl: string;
  readonly resultsQueueUrl: string;
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
  /** Which tracer: X-Ray through Powertools, or OpenTelemetry over OTLP. */
  readonly tracing: 'xray' | 'otel';
  readonly failpointsFile?: string | undefined;
  readonly region: string;
}

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
    ticketsQueueUrl: c[ENV.ticketsQueueUrl],
    bucket: c[ENV.bucket],
    functionTimeoutMs: c[ENV.functionTimeoutMs],
    leaseTtlMs: c[ENV.leaseTtlMs],
    reserveMs: c[ENV.reserveMs],
    sweepIntervalMs: c[ENV.sweepIntervalMs],
    sweepWindowMs: c[ENV.sweepWindowMs],
    retentionDays: c[ENV.retentionDays],
    producers: producersOf(c[ENV.producers]),
    tracing: c[ENV.tracing],
    failpointsFile: c.BATON_FAILPOINTS_FILE,
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
