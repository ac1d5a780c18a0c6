import { fileURLToPath } from 'node:url';
import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import { type ITopic, Topic } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { BatonRuntime } from './constructs/baton-runtime.ts';

/** The demo agents this repository's stack hosts. */
export const DEMO_AGENTS_ENTRY = fileURLToPath(new URL('../examples/agents.ts', import.meta.url));

export interface BatonStackProps extends StackProps {
  /** An existing SNS topic for the alarms (context `alarmTopicArn`). */
  readonly alarmTopicArn?: string | undefined;
  /** A Bedrock model or inference profile id for the order agent (context `bedrockModelId`); the scripted model otherwise. */
  readonly bedrockModelId?: string | undefined;
}

/**
 * The project's own stack: Baton with the demo agents. Its outputs are what `baton … --stack NAME`
 * reads, so the CLI operates the deployed stack as it does the local one.
 */
export class BatonStack extends Stack {
  readonly runtime: BatonRuntime;

  constructor(scope: Construct, id: string, props: BatonStackProps = {}) {
    super(scope, id, props);
    const alarmTopic: ITopic | undefined = props.alarmTopicArn
      ? Topic.fromTopicArn(this, 'AlarmTopic', props.alarmTopicArn)
      : undefined;
    this.runtime = new BatonRuntime(this, 'Runtime', {
      agentsEntry: DEMO_AGENTS_ENTRY,
      ...(alarmTopic ? { alarmTopic } : {}),
      ...(props.bedrockModelId
        ? {
            agentEnvironment: { BATON_BEDROCK_MODEL_ID: props.bedrockModelId },
            bedrockModels: [props.bedrockModelId],
          }
        : {}),
    });

    const { runtime } = this;
    const output = (name: string, value: string, description: string) =>
      new CfnOutput(this, name, { value, description });
    output('TableName', runtime.table.tableName, 'The session table');
    output('BucketName', runtime.bucket.bucketName, 'The payload bucket (inputs and entries over ~350 KB)');
    output('TicketsQueueUrl', runtime.ticketsQueue.queueUrl, 'Producers send tickets here');
    output('TicketsQueueArn', runtime.ticketsQueue.queueArn, 'Grant producers sqs:SendMessage on this');
    output('WorkQueueUrl', runtime.workQueue.queueUrl, 'Kicks (internal)');
    output('WorkQueueArn', runtime.workQueue.queueArn, 'Kicks (internal)');
    output('ResultsQueueUrl', runtime.resultsQueue.queueUrl, 'Consumers read results here');
    output('ResultsQueueArn', runtime.resultsQueue.queueArn, 'Grant consumers sqs:ReceiveMessage on this');
    output('TicketsDlqUrl', runtime.ticketsDlq.queueUrl, 'Tickets intake could not accept');
    output('TicketsDlqArn', runtime.ticketsDlq.queueArn, 'Tickets intake could not accept');
    output('WorkDlqUrl', runtime.workDlq.queueUrl, 'Kicks the step function could not handle');
    output('WorkDlqArn', runtime.workDlq.queueArn, 'Kicks the step function could not handle');
    output('IntakeLogGroup', runtime.intakeFunction.logGroup.logGroupName, 'Logs Insights: the intake function');
    output('StepLogGroup', runtime.stepFunction.logGroup.logGroupName, 'Logs Insights: the step function');
    output('SweeperLogGroup', runtime.sweeperFunction.logGroup.logGroupName, 'Logs Insights: the sweeper');
    output('ApiUrl', runtime.apiUrl.url, 'The HTTP API (function URL, IAM auth; `baton --api URL`)');
    output('DashboardName', runtime.monitoring.dashboard.dashboardName, 'The CloudWatch dashboard');
  }
}
