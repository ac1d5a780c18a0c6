import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Duration, Stack, Validations } from 'aws-cdk-lib';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { AccountRootPrincipal, Role } from 'aws-cdk-lib/aws-iam';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { beforeAll, describe, expect, it } from 'vitest';
import { BatonStack } from '../../infra/baton-stack.ts';
import { BatonRuntime } from '../../infra/constructs/baton-runtime.ts';
import { ENV, QUEUES, SESSION_TABLE, visibilityTimeoutSeconds } from '../../lib/core/resources.ts';
import { METRIC, METRICS_NAMESPACE } from '../../lib/telemetry/metric-names.ts';
import { FIXTURE_AGENT_NAME } from './fixtures/infra-agents.ts';
import { FIXTURE_AGENTS_ENTRY, type Synthesized, synthWithPolicyChecks } from './synth-baton.ts';

const TEAM_TOPIC_ARN = 'arn:aws:sns:eu-west-1:111122223333:team-alarms';
const SUPPORT_ROLE_ARN = 'arn:aws:iam::111122223333:role/Support';
const OPS_ROLE_ARN = 'arn:aws:iam::111122223333:role/Ops';
const APPROVERS_ROLE_ARN = 'arn:aws:iam::111122223333:role/Approvers';

/** esbuild bundles three functions in the hook; on a loaded machine that takes minutes. */
const SYNTH_TIMEOUT_MS = 300_000;

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;

let synthesized: Synthesized;
let baton: Stack;
let team: Stack;
let defaults: Template;
let custom: Template;

beforeAll(() => {
  // One synth for the whole file: the demo stack with its defaults and a team's stack with its own props.
  synthesized = synthWithPolicyChecks(
    (app) => {
      baton = new BatonStack(app, 'Baton');
      team = new Stack(app, 'TeamStack');
      const runtime = new BatonRuntime(team, 'Team', {
        agentsEntry: FIXTURE_AGENTS_ENTRY,
        functionTimeout: Duration.minutes(2),
        intakeTimeout: Duration.seconds(20),
        maxConcurrency: 4,
        batchSize: 5,
        retentionDays: 7,
        alarmTopic: Topic.fromTopicArn(team, 'Alarms', TEAM_TOPIC_ARN),
        apiTenants: {
          [SUPPORT_ROLE_ARN]: ['acme', 'globex'],
          [OPS_ROLE_ARN]: '*',
          [APPROVERS_ROLE_ARN]: { tenants: ['acme'], roles: ['read', 'approve'] },
        },
        producers: [],
      });
      // A tenant of its own: its producer, its results consumer and its reader, each scoped to it.
      const acme = (name: string) => new Role(team, name, { assumedBy: new AccountRootPrincipal() });
      runtime.grantSubmitTickets(acme('AcmeProducer'), { tenants: ['acme'] });
      runtime.grantReadResults(acme('AcmeConsumer'), { tenant: 'acme' });
      runtime.grantReadSessions(acme('AcmeReader'), { tenant: 'acme' });
      // Only the team's functions are bundled (the bundle test reads them): bundling is most of the time.
    },
    { bundleStacks: ['TeamStack'] },
  );
  defaults = synthesized.template(baton);
  custom = synthesized.template(team);
}, SYNTH_TIMEOUT_MS);

/** The logical id of the resource of `type` at construct path `path` (its ids joined, then an 8-hex hash). */
function logicalId(template: Template, type: string, path: string): string {
  const ids = Object.keys(template.findResources(type)).filter((id) => new RegExp(`^${path}[0-9A-F]{8}$`).test(id));
  expect(ids, `${type} ${path}`).toHaveLength(1);
  return ids[0]!;
}

function resource(template: Template, id: string) {
  return (template.toJSON().Resources as Resources)[id]!;
}

const FUNCTIONS = ['Intake', 'Step', 'Sweeper'] as const;
type FunctionName = (typeof FUNCTIONS)[number] | 'Api';

/** Every action each function's role may take, from its inline policies (its one managed policy is X-Ray's). */
function actionsOf(template: Template, prefix: string, fn: FunctionName): Set<string> {
  const roleId = logicalId(template, 'AWS::IAM::Role', `${prefix}${fn}Role`);
  const role = resource(template, roleId);
  expect(JSON.stringify(role.Properties.ManagedPolicyArns)).toMatch(
    /^\[\{"Fn::Join":\["",\["arn:",\{"Ref":"AWS::Partition"\},":iam::aws:policy\/AWSXRayDaemonWriteAccess"\]\]\}\]$/,
  );
  const actions = new Set<string>();
  for (const policy of Object.values(template.findResources('AWS::IAM::Policy'))) {
    const roles = policy.Properties.Roles as { Ref: string }[];
    if (!roles.some((r) => r.Ref === roleId)) continue;
    for (const statement of policy.Properties.PolicyDocument.Statement as { Action: string | string[] }[])
      for (const action of [statement.Action].flat()) actions.add(action);
  }
  return actions;
}

/** The queue an event source mapping of the function reads. */
function queueOf(template: Template, functionId: string): string {
  const mappings = Object.values(template.findResources('AWS::Lambda::EventSourceMapping')).filter(
    (m) => m.Properties.FunctionName.Ref === functionId,
  );
  expect(mappings).toHaveLength(1);
  return mappings[0]!.Properties.EventSourceArn['Fn::GetAtt'][0] as string;
}

describe('BatonRuntime with its defaults (the Baton stack)', () => {
  it('creates the session table on demand with PITR, TTL, AWS-managed encryption and the shared indexes', () => {
    const { sweep, bySessionId, byTenant } = SESSION_TABLE.indexes;

    defaults.resourceCountIs('AWS::DynamoDB::Table', 1);
    defaults.hasResourceProperties('AWS::DynamoDB::Table', {
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [
        { AttributeName: SESSION_TABLE.partitionKey, KeyType: 'HASH' },
        { AttributeName: SESSION_TABLE.sortKey, KeyType: 'RANGE' },
      ],
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      TimeToLiveSpecification: { AttributeName: SESSION_TABLE.ttlAttribute, Enabled: true },
      SSESpecification: { SSEEnabled: true },
      GlobalSecondaryIndexes: [
        {
          IndexName: sweep.name,
          KeySchema: [
            { AttributeName: sweep.partitionKey, KeyType: 'HASH' },
            { AttributeName: sweep.sortKey, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: sweep.projection },
        },
        {
          IndexName: bySessionId.name,
          KeySchema: [{ AttributeName: bySessionId.partitionKey, KeyType: 'HASH' }],
          Projection: { ProjectionType: bySessionId.projection },
        },
        {
          IndexName: byTenant.name,
          KeySchema: [
            { AttributeName: byTenant.partitionKey, KeyType: 'HASH' },
            { AttributeName: byTenant.sortKey, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: byTenant.projection, NonKeyAttributes: [...byTenant.nonKeyAttributes] },
        },
      ],
    });
    const table = Object.values(defaults.findResources('AWS::DynamoDB::Table'))[0]!;
    expect(table.Properties.AttributeDefinitions).toEqual(
      expect.arrayContaining([
        { AttributeName: sweep.partitionKey, AttributeType: sweep.partitionKeyType },
        { AttributeName: sweep.sortKey, AttributeType: sweep.sortKeyType },
        { AttributeName: bySessionId.partitionKey, AttributeType: bySessionId.partitionKeyType },
        { AttributeName: byTenant.partitionKey, AttributeType: byTenant.partitionKeyType },
        { AttributeName: byTenant.sortKey, AttributeType: byTenant.sortKeyType },
      ]),
    );
  });

  it('encrypts every queue and denies requests without TLS', () => {
    const queues = Object.values(defaults.findResources('AWS::SQS::Queue'));
    const policies = Object.values(defaults.findResources('AWS::SQS::QueuePolicy'));

    expect(queues).toHaveLength(5);
    for (const queue of queues) expect(queue.Properties.SqsManagedSseEnabled).toBe(true);
    expect(policies).toHaveLength(5);
    for (const policy of policies)
      expect(policy.Properties.PolicyDocument.Statement).toContainEqual(
        expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
      );
  });

  it("derives each consumed queue's visibility timeout from its consumer's timeout", () => {
    for (const fn of ['Intake', 'Step'] as const) {
      const functionId = logicalId(defaults, 'AWS::Lambda::Function', `Runtime${fn}Function`);
      const timeout = resource(defaults, functionId).Properties.Timeout as number;
      const queue = resource(defaults, queueOf(defaults, functionId));

      expect(queue.Properties.VisibilityTimeout).toBe(visibilityTimeoutSeconds(timeout));
      expect(queue.Properties.VisibilityTimeout).toBeGreaterThanOrEqual(6 * timeout);
    }
  });

  it('moves a message to its DLQ after the shared maxReceiveCount', () => {
    const ticketsId = logicalId(defaults, 'AWS::SQS::Queue', 'RuntimeQueuesTickets');
    const tickets = resource(defaults, ticketsId).Properties;

    expect(tickets.RedrivePolicy).toEqual({
      deadLetterTargetArn: { 'Fn::GetAtt': [logicalId(defaults, 'AWS::SQS::Queue', 'RuntimeQueuesTicketsDlq'), 'Arn'] },
      maxReceiveCount: QUEUES.tickets.dlq.maxReceiveCount,
    });
  });

  it('keeps payloads in an encrypted, private, TLS-only bucket whose objects expire after the retention', () => {
    defaults.hasResourceProperties('AWS::S3::Bucket', {
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
      },
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      LifecycleConfiguration: {
        Rules: Match.arrayWith([Match.objectLike({ ExpirationInDays: 30 + 2, Status: 'Enabled' })]),
      },
    });
    defaults.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  it('runs every function on Node.js 24, ARM64, with active tracing, JSON logs and source maps', () => {
    const functions = Object.values(defaults.findResources('AWS::Lambda::Function'));

    expect(functions).toHaveLength(4);
    for (const fn of functions) {
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        TracingConfig: { Mode: 'Active' },
        LoggingConfig: { LogFormat: 'JSON' },
        Handler: 'index.handler',
      });
      expect(fn.Properties.Environment.Variables.NODE_OPTIONS).toContain('--enable-source-maps');
    }
  });

  it('passes the functions the environment variable names lib/core/resources.ts defines', () => {
    const env = (fn: string) => {
      const { Properties } = resource(defaults, logicalId(defaults, 'AWS::Lambda::Function', `Runtime${fn}Function`));
      return (Properties.Environment as { Variables: Record<string, unknown> }).Variables;
    };
    const everywhere = [ENV.table, ENV.workQueueUrl, ENV.resultsQueueUrl, ENV.functionTimeoutMs, ENV.leaseTtlMs];

    for (const fn of FUNCTIONS) for (const name of everywhere) expect(env(fn)).toHaveProperty(name);
    expect(env('Intake')).toHaveProperty(ENV.ticketsQueueUrl);
    expect(env('Step')).toHaveProperty(ENV.bucket);
    expect(env('Sweeper')).toHaveProperty(ENV.sweepIntervalMs, '5000');
    expect(env('Sweeper')).toHaveProperty(ENV.sweepWindowMs, '55000');
    expect(env('Sweeper')).not.toHaveProperty(ENV.bucket);
    // The budget check at cold start is about the leg, so every function is told the step timeout.
    expect(env('Intake')[ENV.functionTimeoutMs]).toBe(env('Step')[ENV.functionTimeoutMs]);
  });

  it('consumes the tickets and work queues with partial batch responses and a maximum concurrency', () => {
    const mappingOf = (fn: string) => {
      const functionId = logicalId(defaults, 'AWS::Lambda::Function', `Runtime${fn}Function`);
      const mappings = Object.values(defaults.findResources('AWS::Lambda::EventSourceMapping')).filter(
        (m) => m.Properties.FunctionName.Ref === functionId,
      );
      expect(mappings).toHaveLength(1);
      return mappings[0]!.Properties;
    };
    const partialBatches = {
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 10 },
    };

    defaults.resourceCountIs('AWS::Lambda::EventSourceMapping', 2);
    expect(mappingOf('Intake')).toMatchObject({ ...partialBatches, BatchSize: 10 });
    // One kick per step invocation by default: each leg has the invocation's deadline and memory to itself.
    expect(mappingOf('Step')).toMatchObject({ ...partialBatches, BatchSize: 1 });
  });

  it('starts the sweeper every minute and never retries a failed run', () => {
    const sweeperId = logicalId(defaults, 'AWS::Lambda::Function', 'RuntimeSweeperFunction');

    defaults.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [sweeperId, 'Arn'] },
          RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 },
        }),
      ],
    });
    // The sweeper polls for 55 s of each run, so its timeout must outlast that.
    expect(resource(defaults, sweeperId).Properties.Timeout).toBeGreaterThan(55);
  });

  it('grants each function only the actions its code uses, and no managed policy but X-Ray’s', () => {
    const logsAndTraces = ['logs:CreateLogStream', 'logs:PutLogEvents'];
    const consume = [
      'sqs:ChangeMessageVisibility',
      'sqs:DeleteMessage',
      'sqs:GetQueueAttributes',
      'sqs:GetQueueUrl',
      'sqs:ReceiveMessage',
    ];
    const payloads = ['s3:GetObject', 's3:PutObject', 's3:ListBucket'];
    const sorted = (actions: Iterable<string>) => [...actions].sort();

    expect(sorted(actionsOf(defaults, 'Runtime', 'Intake'))).toEqual(
      sorted([
        ...logsAndTraces,
        ...consume,
        ...payloads,
        'dynamodb:GetItem',
        'dynamodb:PutItem',
        'dynamodb:UpdateItem',
        'sqs:SendMessage',
      ]),
    );
    expect(sorted(actionsOf(defaults, 'Runtime', 'Step'))).toEqual(
      sorted([
        ...logsAndTraces,
        ...consume,
        ...payloads,
        'dynamodb:GetItem',
        'dynamodb:BatchGetItem',
        'dynamodb:PutItem',
        'dynamodb:UpdateItem',
        'dynamodb:Query',
        'sqs:SendMessage',
      ]),
    );
    expect(sorted(actionsOf(defaults, 'Runtime', 'Sweeper'))).toEqual(
      sorted([...logsAndTraces, 'dynamodb:Query', 'sqs:SendMessage']),
    );
    expect(sorted(actionsOf(defaults, 'Runtime', 'Api'))).toEqual(
      sorted([
        ...logsAndTraces,
        ...payloads,
        'dynamodb:GetItem',
        'dynamodb:BatchGetItem',
        'dynamodb:Query',
        'dynamodb:PutItem',
        'dynamodb:UpdateItem',
        'sqs:SendMessage',
      ]),
    );
  });

  it('serves the HTTP API behind a function URL with IAM auth, sending only to the tickets and work queues', () => {
    const apiId = logicalId(defaults, 'AWS::Lambda::Function', 'RuntimeApiFunction');
    const roleId = logicalId(defaults, 'AWS::IAM::Role', 'RuntimeApiRole');
    const tableId = logicalId(defaults, 'AWS::DynamoDB::Table', 'RuntimeSessions');
    const queue = (name: string) => ({ 'Fn::GetAtt': [logicalId(defaults, 'AWS::SQS::Queue', name), 'Arn'] });
    const index = (name: string) => ({ 'Fn::Join': ['', [{ 'Fn::GetAtt': [tableId, 'Arn'] }, `/index/${name}`]] });
    const { bySessionId, byTenant } = SESSION_TABLE.indexes;

    defaults.hasResourceProperties('AWS::Lambda::Url', {
      AuthType: 'AWS_IAM',
      TargetFunctionArn: { 'Fn::GetAtt': [apiId, 'Arn'] },
    });
    defaults.hasResourceProperties('AWS::IAM::Policy', {
      Roles: [{ Ref: roleId }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          { Action: 'dynamodb:Query', Effect: 'Allow', Resource: [index(bySessionId.name), index(byTenant.name)] },
          {
            Action: 'sqs:SendMessage',
            Effect: 'Allow',
            Resource: [queue('RuntimeQueuesTickets'), queue('RuntimeQueuesWork')],
          },
        ]),
      },
    });
    // With no tenant map nobody may invoke the URL, and the function knows no principal.
    defaults.resourceCountIs('AWS::Lambda::Permission', 1); // the sweeper's schedule
    expect(resource(defaults, apiId).Properties.Environment).toMatchObject({
      Variables: { [ENV.apiTenants]: '{}' },
    });
    expect(Object.keys(defaults.toJSON().Outputs as object)).toContain('ApiUrl');
  });

  it("limits the sweeper's table access to the sweep index and its sends to the work queue", () => {
    const roleId = logicalId(defaults, 'AWS::IAM::Role', 'RuntimeSweeperRole');
    const tableId = logicalId(defaults, 'AWS::DynamoDB::Table', 'RuntimeSessions');
    const workId = logicalId(defaults, 'AWS::SQS::Queue', 'RuntimeQueuesWork');

    defaults.hasResourceProperties('AWS::IAM::Policy', {
      Roles: [{ Ref: roleId }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          {
            Action: 'dynamodb:Query',
            Effect: 'Allow',
            Resource: {
              'Fn::Join': ['', [{ 'Fn::GetAtt': [tableId, 'Arn'] }, `/index/${SESSION_TABLE.indexes.sweep.name}`]],
            },
          },
          { Action: 'sqs:SendMessage', Effect: 'Allow', Resource: { 'Fn::GetAtt': [workId, 'Arn'] } },
        ]),
      },
    });
  });

  it('alarms on DLQ depth, stalled sessions, the step error rate, sweeper errors, the oldest message age, undelivered results and forged kicks', () => {
    const alarms = Object.values(defaults.findResources('AWS::CloudWatch::Alarm'));

    expect(alarms).toHaveLength(9);
    for (const metricName of ['ResultsUndelivered', 'ForgedKicksRefused'])
      defaults.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'Baton',
        MetricName: metricName,
        Dimensions: [{ Name: 'service', Value: 'Baton/Runtime' }],
        Statistic: 'Sum',
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
        AlarmDescription: Match.stringLikeRegexp('docs/DEPLOY.md'),
      });
    defaults.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'Baton',
      MetricName: 'StalledSessions',
      Dimensions: [{ Name: 'service', Value: 'Baton/Runtime' }],
      Statistic: 'Maximum',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 5,
      DatapointsToAlarm: 5,
      TreatMissingData: 'breaching',
    });
    for (const dlq of ['RuntimeQueuesTicketsDlq', 'RuntimeQueuesWorkDlq'])
      defaults.hasResourceProperties('AWS::CloudWatch::Alarm', {
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: [
          { Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(defaults, 'AWS::SQS::Queue', dlq), 'QueueName'] } },
        ],
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
      });
    defaults.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Metrics: Match.arrayWith([
        Match.objectLike({ Expression: 'IF(invocations > 0, 100 * errors / invocations, 0)' }),
      ]),
      Threshold: 5,
    });
    defaults.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateAgeOfOldestMessage',
      Threshold: visibilityTimeoutSeconds(5 * 60),
    });
    // Without a topic, no alarm has an action.
    for (const alarm of alarms) expect(alarm.Properties.AlarmActions).toBeUndefined();
    defaults.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
  });

  it('charts every metric the functions publish on the dashboard', () => {
    const [dashboard] = Object.values(defaults.findResources('AWS::CloudWatch::Dashboard'));
    const body = JSON.stringify(dashboard?.Properties.DashboardBody);

    // A metric with a fixed dimension set is charted by name; a per-tenant one by a search.
    const uncharted = Object.values(METRIC).filter(
      (name) =>
        !body.includes(`\\"${METRICS_NAMESPACE}\\",\\"${name}\\"`) &&
        !body.includes(`MetricName=\\\\\\"${name}\\\\\\"`),
    );

    expect(uncharted).toEqual([]);
  });

  it("outputs every name and URL the CLI's --stack option reads", () => {
    const outputs = Object.keys(defaults.toJSON().Outputs as object);

    expect(outputs).toEqual(
      expect.arrayContaining([
        'TableName',
        'BucketName',
        'TicketsQueueUrl',
        'WorkQueueUrl',
        'ResultsQueueUrl',
        'TicketsDlqUrl',
        'WorkDlqUrl',
      ]),
    );
  });

  it("passes cdk-nag's AWS Solutions and Serverless checks, every acknowledgement with its reason", () => {
    const violations = (synthesized.report?.pluginReports ?? []).flatMap((p) =>
      p.violations.map((v) => `${p.pluginName}: ${v.ruleName}`),
    );
    const acknowledgements = synthesized.app.node
      .findAll()
      .flatMap((c) => c.node.metadata.filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY))
      .flatMap((m) => Object.entries(m.data as Record<string, string>));

    expect(violations).toEqual([]);
    expect(acknowledgements.length).toBeGreaterThan(0);
    for (const [id, reason] of acknowledgements) expect(reason.length, id).toBeGreaterThan(40);
  });
});

describe("BatonRuntime with a team's props", () => {
  it('derives the visibility timeouts from the timeouts it is given', () => {
    const tickets = resource(custom, logicalId(custom, 'AWS::SQS::Queue', 'TeamQueuesTickets'));
    const work = resource(custom, logicalId(custom, 'AWS::SQS::Queue', 'TeamQueuesWork'));

    expect(tickets.Properties.VisibilityTimeout).toBe(6 * 20);
    expect(work.Properties.VisibilityTimeout).toBe(6 * 120);
  });

  it('applies its concurrency, batch size and retention', () => {
    const mappings = Object.values(custom.findResources('AWS::Lambda::EventSourceMapping'));

    for (const mapping of mappings)
      expect(mapping.Properties).toMatchObject({ ScalingConfig: { MaximumConcurrency: 4 } });
    expect(mappings.map((m) => m.Properties.BatchSize).sort()).toEqual([10, 5]);
    custom.hasResourceProperties('AWS::S3::Bucket', {
      LifecycleConfiguration: { Rules: Match.arrayWith([Match.objectLike({ ExpirationInDays: 7 + 2 })]) },
    });
  });

  it("lets exactly the team's mapped principals invoke the API URL, and tells the function their tenants", () => {
    const apiId = logicalId(custom, 'AWS::Lambda::Function', 'TeamApiFunction');
    const invokers = Object.values(custom.findResources('AWS::Lambda::Permission'))
      .filter((p) => p.Properties.Action === 'lambda:InvokeFunctionUrl')
      .map((p) => p.Properties);

    expect(invokers.map((p) => p.Principal).sort()).toEqual([APPROVERS_ROLE_ARN, OPS_ROLE_ARN, SUPPORT_ROLE_ARN]);
    for (const p of invokers) expect(p).toMatchObject({ FunctionUrlAuthType: 'AWS_IAM' });
    const variables = resource(custom, apiId).Properties.Environment as { Variables: Record<string, string> };
    expect(JSON.parse(variables.Variables[ENV.apiTenants]!)).toEqual({
      [SUPPORT_ROLE_ARN]: ['acme', 'globex'],
      [OPS_ROLE_ARN]: '*',
      [APPROVERS_ROLE_ARN]: { tenants: ['acme'], roles: ['read', 'approve'] },
    });
  });

  it("publishes every alarm and its recovery to the team's topic", () => {
    const alarms = Object.values(custom.findResources('AWS::CloudWatch::Alarm'));

    expect(alarms).toHaveLength(9);
    for (const alarm of alarms) {
      expect(alarm.Properties.AlarmActions).toEqual([TEAM_TOPIC_ARN]);
      expect(alarm.Properties.OKActions).toEqual([TEAM_TOPIC_ARN]);
    }
  });

  it("bundles the team's agents as #agents in place of the demo agents, into an ESM bundle split into chunks that load", () => {
    const stepId = logicalId(custom, 'AWS::Lambda::Function', 'TeamStepFunction');
    const dir = synthesized.assetDir(team, stepId);
    const bundle = bundleText(dir);

    expect(bundle).toContain(FIXTURE_AGENT_NAME);
    expect(bundle).not.toContain('order-investigator');
    // The API admits inputs against the same agents (their schemas), so it bundles them too.
    const api = bundleText(synthesized.assetDir(team, logicalId(custom, 'AWS::Lambda::Function', 'TeamApiFunction')));
    expect(api).toContain(FIXTURE_AGENT_NAME);
    // Each function its own bundle (a bundling cache keyed on too little gives every one the first's).
    const dirs = ['Intake', 'Step', 'Sweeper', 'Api'].map((fn) =>
      synthesized.assetDir(team, logicalId(custom, 'AWS::Lambda::Function', `Team${fn}Function`)),
    );
    expect(new Set(dirs).size).toBe(4);
    expect(api).not.toEqual(bundle);
    // node:http and node:https come through CommonJS: their ESM facades load undici at cold start.
    expect(bundle).not.toMatch(/from\s*"(node:)?https?"/);
    const loaded = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        // The handler, then every chunk it may load on demand (the S3 and Bedrock SDKs, tracers): each resolves its imports.
        `const m = await import('./index.mjs'); for (const c of ${JSON.stringify(chunksOf(dir))}) await import('./' + c); console.log(typeof m.handler);`,
      ],
      {
        cwd: dir,
        encoding: 'utf8',
        env: {
          PATH: process.env.PATH,
          AWS_REGION: 'eu-west-1',
          [ENV.table]: 'sessions',
          [ENV.workQueueUrl]: 'http://127.0.0.1:1/000000000000/work',
          [ENV.resultsQueueUrl]: 'http://127.0.0.1:1/000000000000/results',
          [ENV.functionTimeoutMs]: '120000',
          POWERTOOLS_METRICS_DISABLED: 'true',
        },
      },
    );
    expect(loaded.stderr).toBe('');
    expect(loaded.stdout.trim()).toBe('function');
  });
});

/** The chunks of a function's bundle, relative to its folder. */
const chunksOf = (dir: string): string[] =>
  readdirSync(join(dir, 'chunks'))
    .filter((name) => name.endsWith('.mjs'))
    .map((name) => `chunks/${name}`);

/** Every file of a function's bundle (the handler and its chunks), as one text. */
const bundleText = (dir: string): string =>
  ['index.mjs', ...chunksOf(dir)].map((file) => readFileSync(join(dir, file), 'utf8')).join('\n');
