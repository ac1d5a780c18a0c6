import { App, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AccountRootPrincipal, type CfnRole, Role } from 'aws-cdk-lib/aws-iam';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { describe, expect, it } from 'vitest';
import { BatonRuntime, type BatonRuntimeProps } from '../../infra/constructs/baton-runtime.ts';
import { parseProducers } from '../../lib/core/tenancy.ts';
import { FIXTURE_AGENTS_ENTRY } from './synth-baton.ts';

// Settings are checked before anything is built; bundling is skipped so an accepted one costs no esbuild run.
const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };

/** A team's agents unless the props bring their own handlers (which import theirs). */
const withAgents = (props: BatonRuntimeProps): BatonRuntimeProps =>
  props.handlers ? props : { agentsEntry: FIXTURE_AGENTS_ENTRY, ...props };

const build = (props: BatonRuntimeProps) => () =>
  new BatonRuntime(new Stack(new App({ context: NO_BUNDLING }), 'Settings'), 'Baton', withAgents(props));

describe('BatonRuntime settings checked at synth time', () => {
  it('refuses a lease TTL shorter than three renewals of one second', () => {
    expect(build({ leaseTtl: Duration.millis(2_999) })).toThrow(/leaseTtl must be at least 3 × 1 second/);
  });

  it('accepts a lease TTL of exactly three renewals', () => {
    expect(build({ leaseTtl: Duration.seconds(3) })).not.toThrow();
  });

  it("refuses a team's handler file that does not exist, naming it", () => {
    const handlers = {
      intake: 'functions/intake.ts',
      step: 'src/no-such-step.ts',
      sweeper: 'functions/sweeper.ts',
      api: 'functions/api.ts',
    };
    expect(build({ handlers })).toThrow(/handlers\.step: .*src\/no-such-step\.ts does not exist/);
    expect(build({ handlers: { ...handlers, step: 'functions/step.ts' } })).not.toThrow();
  });

  it('refuses a budget reserve longer than the function timeout', () => {
    expect(build({ functionTimeout: Duration.seconds(10), budgetReserve: Duration.seconds(11) })).toThrow(
      /budgetReserve must be shorter than functionTimeout/,
    );
  });

  it('refuses a function timeout over Lambda’s 15 minutes', () => {
    expect(build({ functionTimeout: Duration.minutes(16) })).toThrow(/functionTimeout exceeds/);
  });

  it('refuses a sweep interval as long as the sweeper’s one-minute window', () => {
    expect(build({ sweepInterval: Duration.minutes(1) })).toThrow(/sweepInterval must be shorter/);
  });

  it('refuses an API tenant map whose key is not an IAM principal ARN or whose tenants are not names', () => {
    expect(build({ apiTenants: { 'support-team': ['acme'] } })).toThrow(/apiTenants: 'support-team' is not an IAM/);
    expect(build({ apiTenants: { 'arn:aws:iam::111122223333:role/Support': [] } })).toThrow(/must be '\*' or/);
    expect(build({ apiTenants: { 'arn:aws:iam::111122223333:role/Support': ['a#b'] } })).toThrow(/must be '\*' or/);
  });

  it('refuses an API reservation that would leave intake and step less than they may run at once, or Lambda its floor', () => {
    expect(build({ accountConcurrency: 110 })).toThrow(
      /apiReservedConcurrency \(20\) leaves 90 of accountConcurrency \(110\) unreserved; .* Lambda keeps at least 100: reserve at most 10/,
    );
    expect(build({ maxConcurrency: 500, apiReservedConcurrency: 20 })).toThrow(
      /intake and step need 1002 at once \(maxConcurrency 500 each, and the sweeper\)/,
    );
    expect(build({ maxConcurrency: 400, apiReservedConcurrency: 198 })).not.toThrow();
    expect(build({ maxConcurrency: 400, apiReservedConcurrency: 199 })).toThrow(/reserve at most 198/);
  });

  it('refuses a stream bound that lets one caller fill the API, and counts that are not positive integers', () => {
    expect(build({ apiReservedConcurrency: 4, apiStreamsPerCaller: 4 })).toThrow(
      /apiStreamsPerCaller \(4\) must be below apiReservedConcurrency \(4\): one caller's streams would fill the API/,
    );
    expect(build({ apiReservedConcurrency: 0 })).toThrow(/apiReservedConcurrency must be a positive integer, got 0/);
    expect(build({ apiStreamsPerCaller: 1.5 })).toThrow(/apiStreamsPerCaller must be a positive integer/);
  });

  it('reserves the API’s concurrency (capping it) and tells it the stream bound; intake and step reserve none', () => {
    const functions = (props: BatonRuntimeProps) => {
      const stack = new Stack(new App({ context: NO_BUNDLING }), 'Concurrency');
      const baton = new BatonRuntime(stack, 'Baton', withAgents(props));
      const template = Template.fromStack(stack).toJSON().Resources as Record<string, { Properties: CfnProps }>;
      const of = (fn: { function: { node: { defaultChild?: unknown } } }) =>
        template[stack.getLogicalId(fn.function.node.defaultChild as CfnFunction)]!.Properties;
      return { api: of(baton.apiFunction), intake: of(baton.intakeFunction), step: of(baton.stepFunction) };
    };
    type CfnProps = { ReservedConcurrentExecutions?: number; Environment: { Variables: Record<string, unknown> } };

    const defaults = functions({});
    expect(defaults.api.ReservedConcurrentExecutions).toBe(20);
    expect(defaults.api.Environment.Variables.BATON_API_STREAMS_PER_CALLER).toBe('4');
    expect(defaults.intake.ReservedConcurrentExecutions).toBeUndefined();
    expect(defaults.step.ReservedConcurrentExecutions).toBeUndefined();

    const tuned = functions({ apiReservedConcurrency: 50, apiStreamsPerCaller: 2 });
    expect(tuned.api.ReservedConcurrentExecutions).toBe(50);
    expect(tuned.api.Environment.Variables.BATON_API_STREAMS_PER_CALLER).toBe('2');
  });

  it('refuses a concurrency the SQS event source cannot take', () => {
    expect(build({ maxConcurrency: 1 })).toThrow(/maxConcurrency must be an integer from 2 to 1000/);
  });
});

describe('BatonRuntime agentEnvironment', () => {
  it('refuses a variable that would override one Baton reserves, naming it', () => {
    expect(build({ agentEnvironment: { MODEL_ID: 'm', BATON_TABLE: 'someone-elses-table' } })).toThrow(
      /agentEnvironment may not set BATON_TABLE: reserved for Baton's own configuration/,
    );
    expect(build({ agentEnvironment: { BATON_FAILPOINTS_FILE: '/x' } })).toThrow(/BATON_FAILPOINTS_FILE/);
  });

  it('refuses the names the runtime relies on: the service name the alarms watch, SDK endpoints, NODE_OPTIONS', () => {
    expect(build({ agentEnvironment: { POWERTOOLS_SERVICE_NAME: 'quiet' } })).toThrow(
      /agentEnvironment may not set POWERTOOLS_SERVICE_NAME: POWERTOOLS_\* variables are Powertools settings/,
    );
    expect(build({ agentEnvironment: { AWS_ENDPOINT_URL_DYNAMODB: 'https://attacker.example' } })).toThrow(
      /AWS_ENDPOINT_URL_DYNAMODB: AWS_\* variables/,
    );
    expect(build({ agentEnvironment: { aws_endpoint_url: 'https://attacker.example' } })).toThrow(/aws_endpoint_url/);
    expect(build({ agentEnvironment: { NODE_OPTIONS: '--require /tmp/x.js' } })).toThrow(/NODE_OPTIONS/);
  });

  it('accepts the agents’ own variables, the tracer and agent-facing Baton names (the demo stack’s Bedrock model)', () => {
    expect(build({ agentEnvironment: { MODEL_ID: 'm' } })).not.toThrow();
    expect(build({ agentEnvironment: { BATON_TRACING: 'otel', BATON_BEDROCK_MODEL_ID: 'm' } })).not.toThrow();
  });
});

// Template.fromStack synthesises the stack: on a loaded machine the first one takes a while.
describe('BatonRuntime producers', { timeout: 180_000 }, () => {
  const intakeEnvironment = (props: BatonRuntimeProps) => {
    const stack = new Stack(new App({ context: NO_BUNDLING }), 'Producers');
    const baton = new BatonRuntime(stack, 'Baton', withAgents(props));
    const template = Template.fromStack(stack);
    const intake = stack.getLogicalId(baton.intakeFunction.function.node.defaultChild as CfnFunction);
    const step = stack.getLogicalId(baton.stepFunction.function.node.defaultChild as CfnFunction);
    const variables = (id: string) =>
      (template.toJSON().Resources[id].Properties.Environment.Variables ?? {}) as Record<string, unknown>;
    return { intake: variables(intake), step: variables(step), baton, stack };
  };

  it('passes the map of senders to tenants to intake, as JSON it parses, with the API’s role for every tenant', () => {
    const { intake, step, baton, stack } = intakeEnvironment({
      producers: [
        { sender: 'AROAACMEPRODUCER', tenants: ['acme'] },
        { sender: '111122223333', tenants: ['default', 'globex'] },
      ],
    });
    // The API role's unique id is resolved at deploy time: stand a name in for it.
    const apiRole = stack.getLogicalId(baton.apiFunction.role.node.defaultChild as CfnRole);
    const [, parts] = (intake.BATON_PRODUCERS as { 'Fn::Join': [string, unknown[]] })['Fn::Join'];
    const tokens = parts.filter((part) => typeof part !== 'string');
    const json = parts.map((part) => (typeof part === 'string' ? part : 'API_ROLE')).join('');

    expect(tokens).toEqual([{ 'Fn::GetAtt': [apiRole, 'RoleId'] }]);
    expect(parseProducers(json)).toEqual(
      new Map([
        ['AROAACMEPRODUCER', ['acme']],
        ['111122223333', ['default', 'globex']],
        ['API_ROLE', ['*']],
      ]),
    );
    expect(step.BATON_PRODUCERS).toBeUndefined();
  });

  it('takes a role of the same app as a sender, by its unique id', () => {
    const stack = new Stack(new App({ context: NO_BUNDLING }), 'Roles');
    const producer = new Role(stack, 'Producer', { assumedBy: new AccountRootPrincipal() });
    const baton = new BatonRuntime(stack, 'Baton', {
      agentsEntry: FIXTURE_AGENTS_ENTRY,
      producers: [{ sender: producer.roleId, tenants: ['acme'] }],
    });
    const intake = stack.getLogicalId(baton.intakeFunction.function.node.defaultChild as CfnFunction);
    const value = Template.fromStack(stack).toJSON().Resources[intake].Properties.Environment.Variables.BATON_PRODUCERS;

    expect(JSON.stringify(value)).toContain(
      `{"Fn::GetAtt":["${stack.getLogicalId(producer.node.defaultChild as CfnRole)}","RoleId"]}`,
    );
  });

  it('refuses a tenant name that is not one, and a producer with no tenants', () => {
    expect(build({ producers: [{ sender: 'AROAX', tenants: ['acme#x'] }] })).toThrow(
      /producers: tenant "acme#x" of sender AROAX must match/,
    );
    expect(build({ producers: [{ sender: 'AROAX', tenants: [] }] })).toThrow(/producers: sender AROAX has no tenants/);
    // In the JSON map the last entry would silently win.
    expect(
      build({
        producers: [
          { sender: 'AROAX', tenants: ['acme'] },
          { sender: 'AROAX', tenants: ['globex'] },
        ],
      }),
    ).toThrow(/producers: sender AROAX is listed twice/);
  });

  it('maps no producers by default: any sender may use any tenant', () => {
    expect(intakeEnvironment({}).intake.BATON_PRODUCERS).toBeUndefined();
  });
});

describe('BatonRuntime tenantLimits', () => {
  const stepEnvironment = (props: BatonRuntimeProps) => {
    const stack = new Stack(new App({ context: NO_BUNDLING }), 'Limits');
    const baton = new BatonRuntime(stack, 'Baton', withAgents(props));
    const template = Template.fromStack(stack).toJSON().Resources as Record<
      string,
      { Properties: { Environment: { Variables: Record<string, unknown> } } }
    >;
    const of = (fn: { function: { node: { defaultChild?: unknown } } }) =>
      template[stack.getLogicalId(fn.function.node.defaultChild as CfnFunction)]!.Properties.Environment.Variables;
    return { step: of(baton.stepFunction), intake: of(baton.intakeFunction) };
  };

  it('passes the limits to the step function, which runs the legs, and to no other', () => {
    const tenantLimits = { acme: { maxRunning: 10, modelCallsPerMinute: 120 }, '*': { maxRunning: 50 } };
    const env = stepEnvironment({ tenantLimits });
    expect(JSON.parse(String(env.step.BATON_TENANT_LIMITS))).toEqual(tenantLimits);
    expect(env.intake.BATON_TENANT_LIMITS).toBeUndefined();
    expect(stepEnvironment({}).step.BATON_TENANT_LIMITS).toBeUndefined();
  });

  it('refuses a limit that is not a positive number, or a tenant that is not one, naming it', () => {
    expect(build({ tenantLimits: { acme: { maxRunning: 0 } } })).toThrow(
      /tenantLimits: acme\.maxRunning must be a positive integer, got 0/,
    );
    expect(build({ tenantLimits: { acme: { modelCallsPerMinuteByModel: { m: -1 } } } })).toThrow(
      /tenantLimits: acme\.modelCallsPerMinuteByModel\.m must be a positive number, got -1/,
    );
    expect(build({ tenantLimits: { 'acme#x': { maxRunning: 1 } } })).toThrow(
      /tenantLimits: tenant "acme#x" must match/,
    );
  });
});
