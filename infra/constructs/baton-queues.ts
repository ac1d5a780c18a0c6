import { Duration, type RemovalPolicy, Validations } from 'aws-cdk-lib';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import {
  DLQ_RETENTION_SECONDS,
  QUEUES,
  type QueueDefinition,
  visibilityTimeoutSeconds,
} from '../../lib/core/resources.ts';

export interface BatonQueuesProps {
  /** Timeout of the function consuming each consumed queue: its visibility timeout derives from it. */
  readonly consumerTimeouts: { readonly tickets: Duration; readonly work: Duration };
  readonly removalPolicy: RemovalPolicy;
}

/**
 * Baton's queues from the shared definition (lib/core/resources.ts): tickets and work, each with
 * its DLQ, and results. SQS-managed encryption, TLS only; a consumed queue's visibility timeout
 * is derived from its consumer's timeout, never typed twice.
 */
export class BatonQueues extends Construct {
  readonly tickets: Queue;
  readonly ticketsDlq: Queue;
  readonly work: Queue;
  readonly workDlq: Queue;
  readonly results: Queue;
  readonly #common: { encryption: QueueEncryption; enforceSSL: boolean; removalPolicy: RemovalPolicy };

  constructor(scope: Construct, id: string, props: BatonQueuesProps) {
    super(scope, id);
    const common = {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      removalPolicy: props.removalPolicy,
    } as const;
    this.#common = common;
    const withDlq = (definition: Required<QueueDefinition>, consumerTimeout: Duration) => {
      const dlq = new Queue(this, pascal(definition.dlq.name), {
        ...common,
        retentionPeriod: Duration.seconds(DLQ_RETENTION_SECONDS),
      });
      const queue = new Queue(this, pascal(definition.name), {
        ...common,
        visibilityTimeout: Duration.seconds(visibilityTimeoutSeconds(consumerTimeout.toSeconds())),
        deadLetterQueue: { queue: dlq, maxReceiveCount: definition.dlq.maxReceiveCount },
      });
      Validations.of(dlq).acknowledge({
        id: 'Serverless-SQSRedrivePolicy',
        reason: `This queue is the dead-letter queue of the ${definition.name} queue; an operator redrives it back there (docs/DEPLOY.md, "DLQ redrive").`,
      });
      return { queue, dlq };
    };
    ({ queue: this.tickets, dlq: this.ticketsDlq } = withDlq(QUEUES.tickets, props.consumerTimeouts.tickets));
    ({ queue: this.work, dlq: this.workDlq } = withDlq(QUEUES.work, props.consumerTimeouts.work));
    this.results = this.#resultsQueue(pascal(QUEUES.results.name));
  }

  /** A queue of one tenant's results, beside the shared one and like it. */
  tenantResults(tenant: string): Queue {
    return this.#resultsQueue(`${pascal(QUEUES.results.name)}-${tenant}`);
  }

  #resultsQueue(id: string): Queue {
    const queue = new Queue(this, id, this.#common);
    const reason =
      "A results queue is consumed by the team's own consumer, outside this stack; results are published at least once and carry a result id to dedupe on. Its redrive policy belongs to that consumer.";
    Validations.of(queue).acknowledge(
      { id: 'AwsSolutions-SQS3', reason },
      { id: 'Serverless-SQSRedrivePolicy', reason },
    );
    return queue;
  }
}

function pascal(name: string): string {
  return name.replace(/(^|-)([a-z])/g, (_m, _dash, letter: string) => letter.toUpperCase());
}
