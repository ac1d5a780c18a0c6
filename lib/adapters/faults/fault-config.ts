import * as z from 'zod';

/** The environment variable that turns fault injection on for a function process (JSON, see FaultConfig). */
export const FAULTS_ENV = 'BATON_FAULTS';

/** Every kind of fault the seam injects; the chaos runner counts each. */
export const FaultKind = {
  /** A DynamoDB request refused with ProvisionedThroughputExceededException or ThrottlingException. */
  dynamoThrottle: 'dynamoThrottle',
  /** A DynamoDB request refused with a 500 before it reached the table. */
  dynamo5xx: 'dynamo5xx',
  /** A DynamoDB write that committed, whose response is then replaced by a 500: the SDK retries it. */
  commitThenFail: 'commitThenFail',
  /** An SQS send refused with a 500 before it reached the queue. */
  sqsSendFail: 'sqsSendFail',
  /** Extra latency added to a request. */
  latency: 'latency',
  /** A kick sent to the work queue a second time. */
  duplicateKicks: 'duplicateKicks',
} as const;
export type FaultKind = (typeof FaultKind)[keyof typeof FaultKind];

const rate = z.number().min(0).max(1);

/** What to inject, and how often. Rates are probabilities per request (per attempt: SDK retries meet faults too). */
export const FaultConfig = z
  .object({
    dynamoThrottle: rate.default(0),
    dynamo5xx: rate.default(0),
    commitThenFail: rate.default(0),
    sqsSendFail: rate.default(0),
    /** Each request waits a random 0..latencyMs first. */
    latencyMs: z.number().int().nonnegative().default(0),
    /** Every kick the runtime sends is sent twice. */
    duplicateKicks: z.boolean().default(false),
    /** The duplicate is delayed by a random 0..duplicateDelayMaxS, so it also arrives out of order. */
    duplicateDelayMaxS: z.number().int().min(0).max(900).default(2),
    /** Where each process appends what it injected (one file per process); counted in memory only when absent. */
    countsDir: z.string().min(1).optional(),
  })
  .strict();
export type FaultConfig = z.infer<typeof FaultConfig>;

/** The fault kinds a configuration turns on. */
export function enabledFaultKinds(config: FaultConfig): FaultKind[] {
  const kinds: FaultKind[] = [];
  if (config.dynamoThrottle > 0) kinds.push(FaultKind.dynamoThrottle);
  if (config.dynamo5xx > 0) kinds.push(FaultKind.dynamo5xx);
  if (config.commitThenFail > 0) kinds.push(FaultKind.commitThenFail);
  if (config.sqsSendFail > 0) kinds.push(FaultKind.sqsSendFail);
  if (config.latencyMs > 0) kinds.push(FaultKind.latency);
  if (config.duplicateKicks) kinds.push(FaultKind.duplicateKicks);
  return kinds;
}

/**
 * Parses a fault specification: JSON (`{"dynamoThrottle":0.05,"duplicateKicks":true}`) or the
 * short form `dynamoThrottle=0.05,duplicateKicks` that `--faults` accepts. Names the bad field.
 * @example parseFaultSpec('dynamoThrottle=0.05,commitThenFail=0.02,duplicateKicks')
 */
export function parseFaultSpec(spec: string): FaultConfig {
  const text = spec.trim();
  let raw: unknown;
  if (text.startsWith('{')) {
    try {
      raw = JSON.parse(text);
    } catch (error) {
      throw new Error(`fault specification is not valid JSON: ${error instanceof Error ? error.message : error}`);
    }
  } else {
    raw = Object.fromEntries(
      text
        .split(',')
        .map((part) => part.trim())
        .filter((part) => part.length > 0)
        .map((part) => {
          const [name, value] = part.split('=', 2) as [string, string | undefined];
          if (value === undefined) return [name, true];
          if (value === 'true' || value === 'false') return [name, value === 'true'];
          const number = Number(value);
          return [name, Number.isFinite(number) && value.trim() !== '' ? number : value];
        }),
    );
  }
  const parsed = FaultConfig.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
      .join('; ');
    throw new Error(`fault specification is invalid: ${problems}`);
  }
  return parsed.data;
}
