import { dirname, join } from 'node:path';
import { FAULTS_ENV, type FaultConfig, parseFaultSpec } from './fault-config.ts';
import { FaultCounter } from './fault-counter.ts';
import { addDynamoDbFaults, addSqsFaults } from './fault-middleware.ts';

type StackOwner = Parameters<typeof addDynamoDbFaults>[0];

export interface FaultTargets {
  /** The DynamoDB client (or the document client over it: they share one stack). */
  readonly dynamodb: StackOwner;
  readonly sqs: StackOwner;
  /** The work queue: with `duplicateKicks`, every kick sent there is sent twice. */
  readonly workQueueUrl: string;
}

export interface InstalledFaults {
  readonly config: FaultConfig;
  readonly counter: FaultCounter;
}

/**
 * Installs the fault-injection middleware when `BATON_FAULTS` is set, and nothing at all when it
 * is not (no cost when off). Counts go to `countsDir`, or to `faults/` beside the ledger.
 * @example installFaultsFromEnv({ dynamodb: documents, sqs, workQueueUrl }, process.env)
 */
export function installFaultsFromEnv(targets: FaultTargets, env: NodeJS.ProcessEnv): InstalledFaults | undefined {
  const spec = env[FAULTS_ENV];
  if (spec === undefined || spec.trim() === '') return undefined;
  const config = parseFaultSpec(spec);
  const ledger = env.BATON_LEDGER;
  const countsDir = config.countsDir ?? (ledger ? join(dirname(ledger), 'faults') : undefined);
  const counter = new FaultCounter(countsDir);
  addDynamoDbFaults(targets.dynamodb, config, { counter });
  addSqsFaults(targets.sqs, config, { counter }, { duplicateQueueUrls: [targets.workQueueUrl] });
  return { config, counter };
}
