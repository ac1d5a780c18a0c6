import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AccountRootPrincipal, type CfnRole, Role } from 'aws-cdk-lib/aws-iam';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { BatonRuntime } from '../../infra/constructs/baton-runtime.ts';
import { SESSION_TABLE } from '../../lib/core/resources.ts';
import { METRIC } from '../../lib/telemetry/metric-names.ts';
import { FIXTURE_AGENTS_ENTRY } from './synth-baton.ts';

// Grants are policy statements: bundling is skipped, so the one synth costs no esbuild run.
const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };

type Statement = { Action: string | string[]; Resource: unknown };
interface Properties {
  readonly Roles: { Ref: string }[];
  readonly PolicyDocument: { Statement: Statement[] };
  readonly Environment: { Variables: Record<string, string> };
  readonly Namespace?: string;
  readonly MetricName: string;
  readonly Dimensions: { Name: string; Value: string }[];
}
type Resources = Record<string, { Type: string; Properties: Properties }>;

const PRINCIPALS = [
  'Producer',
  'Consumer',
  'Reader',
  'Operator',
  'Caller',
  'Approver',
  'Outsider',
  'AcmeProducer',
  'MappedProducer',
  'AcmeConsumer',
  'AcmeReader',
] as const;

let stack: Stack;
let baton: BatonRuntime;
let resources: Resources;
const roles = {} as Record<(typeof PRINCIPALS)[number], Role>;

beforeAll(() => {
  stack = new Stack(new App({ context: NO_BUNDLING }), 'Grants');
  for (const name of PRINCIPALS) roles[name] = new Role(stack, name, { assumedBy: new AccountRootPrincipal() });
  baton = new BatonRuntime(stack, 'Baton', {
    agentsEntry: FIXTURE_AGENTS_ENTRY,
    bedrockModels: ['anthropic.claude-3-haiku-20240307-v1:0', 'us.anthropic.claude-sonnet-4-20250514-v1:0'],
    producers: [{ sender: roles.MappedProducer.roleId, tenants: ['globex'] }],
  });
  baton.grantSubmitTickets(roles.Producer);
  baton.grantSubmitTickets(roles.AcmeProducer, { tenants: ['acme'] });
  baton.grantSubmitTickets(roles.MappedProducer);
  baton.grantReadResults(roles.Consumer);
  baton.grantReadResults(roles.AcmeConsumer, { tenant: 'acme' });
  baton.grantReadSessions(roles.Reader);
  baton.grantReadSessions(roles.AcmeReader, { tenant: 'acme' });
  baton.grantOperate(roles.Operator);
  baton.grantInvokeApi(roles.Caller, ['acme']);
  baton.grantInvokeApi(roles.Approver, ['acme'], ['read', 'approve']);
  resources = Template.fromStack(stack).toJSON().Resources as Resources;
}, 180_000);

const idOf = (construct: { node: { defaultChild?: unknown } }): string =>
  stack.getLogicalId(construct.node.defaultChild as CfnRole);

/** Every statement of a role's inline policies, by action, with the resources each names (as JSON). */
function grantsOf(role: Role): Map<string, string[]> {
  const roleId = idOf(role);
  const grants = new Map<string, string[]>();
  for (const resource of Object.values(resources)) {
    if (resource.Type !== 'AWS::IAM::Policy') continue;
    if (!resource.Properties.Roles.some((r) => r.Ref === roleId)) continue;
    for (const statement of resource.Properties.PolicyDocument.Statement)
      for (const action of [statement.Action].flat())
        grants.set(action, [
          ...(grants.get(action) ?? []),
          ...[statement.Resource].flat().map((r) => JSON.stringify(r)),
        ]);
  }
  return grants;
}

const arnOf = (construct: { node: { defaultChild?: unknown } }) =>
  JSON.stringify({ 'Fn::GetAtt': [idOf(construct), 'Arn'] });
const tableArn = () => arnOf(baton.table);
const WRITES = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'];

describe('BatonRuntime grant helpers', () => {
  it('lets a producer send tickets and offload a large input under tickets/, and nothing else', () => {
    const grants = grantsOf(roles.Producer);

    expect(grants.get('sqs:SendMessage')).toEqual([arnOf(baton.ticketsQueue)]);
    expect(grants.get('s3:PutObject')?.join()).toContain('/tickets/*');
    expect([...grants.keys()].filter((action) => action.startsWith('dynamodb:'))).toEqual([]);
    expect(grants.has('s3:GetObject')).toBe(false);
  });

  it('lets a producer of some tenants offload inputs under their ticket prefixes only, and maps it to them', () => {
    const granted = grantsOf(roles.AcmeProducer).get('s3:PutObject')?.join() ?? '';
    const mapped = grantsOf(roles.MappedProducer).get('s3:PutObject')?.join() ?? '';
    const intake = resources[stack.getLogicalId(baton.intakeFunction.function.node.defaultChild as CfnFunction)]!;
    const producers = JSON.stringify(intake.Properties.Environment.Variables.BATON_PRODUCERS);

    expect(granted).toContain('/tickets/acme/*');
    expect(granted).not.toContain('/tickets/*');
    // A producer the `producers` prop maps to globex writes under globex's prefix, with no `tenants` of its own.
    expect(mapped).toContain('/tickets/globex/*');
    expect(mapped).not.toContain('/tickets/*');
    expect(producers).toContain(JSON.stringify({ 'Fn::GetAtt': [idOf(roles.AcmeProducer), 'RoleId'] }));
    expect(producers).toContain('[\\"acme\\"]');
  });

  it('gives a tenant results of its own: a queue only its consumer reads, its answers only, and routes its results there', () => {
    const grants = grantsOf(roles.AcmeConsumer);
    const acmeQueue = baton.resultsQueueFor('acme');
    const step = resources[stack.getLogicalId(baton.stepFunction.function.node.defaultChild as CfnFunction)]!;
    const routes = JSON.stringify(step.Properties.Environment.Variables.BATON_TENANT_RESULTS_QUEUE_URLS);

    for (const action of ['sqs:ReceiveMessage', 'sqs:DeleteMessage'])
      expect(grants.get(action), action).toEqual([arnOf(acmeQueue)]);
    expect(grants.get('s3:GetObject')?.join()).toContain('/results/acme/*');
    expect(grants.get('s3:GetObject')?.join()).not.toMatch(/Arn"\]},"\/\*"/);
    expect(grantsOf(roles.Consumer).get('sqs:ReceiveMessage')).toEqual([arnOf(baton.resultsQueue)]);
    expect(grantsOf(roles.Consumer).get('sqs:ReceiveMessage')).not.toContain(arnOf(acmeQueue));
    expect(routes).toContain('acme');
    expect(routes).toContain(JSON.stringify({ Ref: idOf(acmeQueue) }).slice(1, -1));
    for (const fn of [baton.stepFunction, baton.intakeFunction])
      expect(grantsOf(fn.role as Role).get('sqs:SendMessage')).toContain(arnOf(acmeQueue));
  });

  it('scopes a tenant reader’s payload reads, and its listing, to that tenant’s prefix', () => {
    const reader = grantsOf(roles.AcmeReader);
    const listing = Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy' && r.Properties.Roles.some((x) => x.Ref === idOf(roles.AcmeReader)))
      .flatMap((r) => r.Properties.PolicyDocument.Statement)
      .find((statement) => statement.Action === 's3:ListBucket') as { Condition?: unknown } | undefined;

    expect(reader.get('s3:GetObject')?.join()).toContain('/acme/*');
    expect(listing?.Condition).toEqual({ StringLike: { 's3:prefix': ['acme/*'] } });
    expect(grantsOf(roles.Consumer).get('s3:GetObject')?.join()).toContain('/results/*');
  });

  it('refuses a tenant named like a payload prefix of its own, which would read every tenant’s', () => {
    expect(() => baton.resultsQueueFor('results')).toThrow(/not be "tickets" or "results"/);
    expect(() => baton.grantReadSessions(roles.Outsider, { tenant: 'tickets' })).toThrow(/not be "tickets"/);
    expect(() => baton.grantSubmitTickets(roles.Outsider, { tenants: ['a/b'] })).toThrow(/must match/);
  });

  it('lets a consumer receive and delete results and read offloaded answers, but not send work', () => {
    const grants = grantsOf(roles.Consumer);

    for (const action of ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility'])
      expect(grants.get(action), action).toEqual([arnOf(baton.resultsQueue)]);
    expect(grants.has('s3:GetObject')).toBe(true);
    expect(grants.has('sqs:SendMessage')).toBe(false);
  });

  it('lets a reader query sessions by id and by tenant, with no write', () => {
    const grants = grantsOf(roles.Reader);
    const { bySessionId, byTenant } = SESSION_TABLE.indexes;

    expect(grants.get('dynamodb:GetItem')).toEqual([tableArn()]);
    // A session's tasks are read in batches.
    expect(grants.get('dynamodb:BatchGetItem')).toEqual([tableArn()]);
    const queried = grants.get('dynamodb:Query')?.join() ?? '';
    expect(queried).toContain(`/index/${bySessionId.name}`);
    expect(queried).toContain(`/index/${byTenant.name}`);
    expect(WRITES.filter((action) => grants.has(action))).toEqual([]);
    expect(grants.has('sqs:SendMessage')).toBe(false);
  });

  it('gives an operator what the CLI does against the stack: its outputs, reads, submits, cancels and kicks', () => {
    const grants = grantsOf(roles.Operator);

    expect(grants.get('cloudformation:DescribeStacks')).toEqual([JSON.stringify({ Ref: 'AWS::StackId' })]);
    expect(grants.get('dynamodb:UpdateItem')).toEqual([tableArn()]);
    expect(grants.get('sqs:SendMessage')).toEqual(
      expect.arrayContaining([arnOf(baton.ticketsQueue), arnOf(baton.workQueue)]),
    );
    expect(grants.has('sqs:ReceiveMessage')).toBe(true);
    expect(grants.has('dynamodb:DeleteItem')).toBe(false);
  });

  it('lets a caller invoke the API URL and maps its role to its tenants in the API’s configuration', () => {
    const api = resources[stack.getLogicalId(baton.apiFunction.function.node.defaultChild as CfnFunction)]!;
    // The map is JSON joined around the role's ARN, resolved at deploy time: put a name in its place.
    const joined = api.Properties.Environment.Variables.BATON_API_TENANTS as unknown as {
      'Fn::Join': [string, unknown[]];
    };
    const callerArn = JSON.stringify({ 'Fn::GetAtt': [idOf(roles.Caller), 'Arn'] });
    const text = joined['Fn::Join'][1]
      .map((part) => (typeof part === 'string' ? part : JSON.stringify(part) === callerArn ? 'CALLER' : '?'))
      .join('');

    expect(grantsOf(roles.Caller).get('lambda:InvokeFunctionUrl')).toBeDefined();
    expect(JSON.parse(text)).toMatchObject({ CALLER: { tenants: ['acme'], roles: '*' } });
    expect(grantsOf(roles.Outsider).size).toBe(0);
  });

  it('gives an API caller the roles it is granted, next to its tenants, and never the roles that run agents', () => {
    const api = resources[stack.getLogicalId(baton.apiFunction.function.node.defaultChild as CfnFunction)]!;
    const joined = api.Properties.Environment.Variables.BATON_API_TENANTS as unknown as {
      'Fn::Join': [string, unknown[]];
    };
    const approverArn = JSON.stringify({ 'Fn::GetAtt': [idOf(roles.Approver), 'Arn'] });
    const text = joined['Fn::Join'][1]
      .map((part) => (typeof part === 'string' ? part : JSON.stringify(part) === approverArn ? 'APPROVER' : 'OTHER'))
      .join('');

    expect(JSON.parse(text).APPROVER).toEqual({ tenants: ['acme'], roles: ['read', 'approve'] });
    expect(() => baton.grantInvokeApi(baton.stepFunction.role as Role, '*', ['approve'])).toThrow(
      /runs the agents and may not call the API: an agent never decides its own approval/,
    );
    expect(() => baton.grantInvokeApi(baton.intakeFunction.role as Role, ['acme'])).toThrow(/runs the agents/);
    expect(() => baton.grantInvokeApi(roles.Outsider, ['acme'], ['admin' as never])).toThrow(
      /the roles of .* must be '\*' or a non-empty list of submit, converse, approve, operate, read/,
    );
  });

  it('lets the step function invoke the named models: a foundation model in the region, a profile and its model', () => {
    const grants = grantsOf(baton.stepFunction.role as Role);
    const invoked = grants.get('bedrock:InvokeModel')?.join() ?? '';

    expect(invoked).toContain('foundation-model/anthropic.claude-3-haiku-20240307-v1:0');
    expect(invoked).toContain('inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0');
    expect(invoked).toContain('::foundation-model/anthropic.claude-sonnet-4-20250514-v1:0');
    // The profile's model in its geography's regions only (test/infra/model-grants.test.ts), never every region.
    expect(invoked).not.toContain(':bedrock:*::');
    expect(grantsOf(baton.intakeFunction.role as Role).has('bedrock:InvokeModel')).toBe(false);
  });

  it('refuses a model id that is not one, and an API role with no tenants', () => {
    expect(() => baton.grantModelInvoke('arn:aws:bedrock:us-east-1::foundation-model/x')).toThrow(
      /is not a Bedrock model or inference profile id/,
    );
    expect(() => baton.grantInvokeApi(roles.Outsider, [])).toThrow(/must be '\*' or a non-empty list of tenant names/);
  });
});

describe('BatonRuntime service name', () => {
  /** The service each function publishes under, and the one each alarm on a Baton metric watches. */
  function servicesOf(template: Template) {
    const all = template.toJSON().Resources as Resources;
    const published = new Set<string>();
    const watched = new Set<string>();
    for (const resource of Object.values(all)) {
      if (resource.Type === 'AWS::Lambda::Function')
        published.add(String(resource.Properties.Environment.Variables.POWERTOOLS_SERVICE_NAME));
      if (resource.Type === 'AWS::CloudWatch::Alarm' && resource.Properties.Namespace === 'Baton') {
        expect(Object.values(METRIC)).toContain(resource.Properties.MetricName);
        for (const d of resource.Properties.Dimensions) if (d.Name === 'service') watched.add(d.Value);
      }
    }
    return { published: [...published], watched: [...watched] };
  }

  it('differs between two stacks in one account, and each stack’s alarms watch its own', () => {
    const app = new App({ context: NO_BUNDLING });
    const stacks = ['Orders', 'Support'].map((name) => {
      const stack = new Stack(app, name);
      new BatonRuntime(stack, 'Baton', { agentsEntry: FIXTURE_AGENTS_ENTRY });
      return stack;
    });
    const [orders, support] = stacks.map((stack) => servicesOf(Template.fromStack(stack)));

    expect(orders).toEqual({ published: ['Orders/Baton'], watched: ['Orders/Baton'] });
    expect(support).toEqual({ published: ['Support/Baton'], watched: ['Support/Baton'] });
  }, 180_000);

  it('takes a team’s own name', () => {
    const stack = new Stack(new App({ context: NO_BUNDLING }), 'Named');
    new BatonRuntime(stack, 'Baton', { agentsEntry: FIXTURE_AGENTS_ENTRY, serviceName: 'orders-prod' });

    expect(servicesOf(Template.fromStack(stack))).toEqual({ published: ['orders-prod'], watched: ['orders-prod'] });
  }, 180_000);
});

describe('BatonRuntime agents', () => {
  const build = (props: ConstructorParameters<typeof BatonRuntime>[2]) => () =>
    new BatonRuntime(new Stack(new App({ context: NO_BUNDLING }), 'Agents'), 'Baton', props);

  it('has no default agents: without a module or handlers, synth stops and says what to pass', () => {
    expect(build({})).toThrow(
      /pass agentsEntry \(your module exporting `agents`\), or handlers that import your agents/,
    );
  });

  it('names an agents module that does not exist', () => {
    expect(build({ agentsEntry: 'src/no-such-agents.ts' })).toThrow(
      /agentsEntry: .*src\/no-such-agents\.ts does not exist/,
    );
  });
});
