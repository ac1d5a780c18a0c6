import { App } from 'aws-cdk-lib';
import { BatonStack } from './baton-stack.ts';
import { addPolicyChecks } from './policy-checks.ts';

const app = new App();
const account = process.env.CDK_DEFAULT_ACCOUNT;
const region = process.env.CDK_DEFAULT_REGION;
const context = (key: string): string | undefined => app.node.tryGetContext(key) ?? undefined;

new BatonStack(app, context('stackName') ?? 'Baton', {
  description: 'Baton: a durable runtime for long-running LLM agents (SQS, DynamoDB, Lambda)',
  // Without credentials (offline synth) the stack is environment-agnostic.
  ...(account && region ? { env: { account, region } } : {}),
  alarmTopicArn: context('alarmTopicArn'),
  bedrockModelId: context('bedrockModelId'),
});
addPolicyChecks(app);
