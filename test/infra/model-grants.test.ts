import { App, Stack, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AccountRootPrincipal, Role } from 'aws-cdk-lib/aws-iam';
import { describe, expect, it } from 'vitest';
import { grantModelInvoke, grantTokenCount, INFERENCE_PROFILE_REGIONS } from '../../infra/constructs/model-grants.ts';
import { synthWithPolicyChecks } from './synth-baton.ts';

interface Statement {
  readonly Action: string | string[];
  readonly Resource: string | string[];
  readonly Condition?: Record<string, Record<string, unknown>>;
}

/** The statements a role gets for one model id, in a stack deployed to `region`. */
function statementsFor(
  modelId: string,
  region = 'us-east-1',
  regions?: readonly string[],
  grant: (role: Role) => void = (role) => grantModelInvoke(role, modelId, regions === undefined ? {} : { regions }),
): Statement[] {
  const stack = new Stack(new App(), 'Models', { env: { account: '123456789012', region } });
  const role = new Role(stack, 'Step', { assumedBy: new AccountRootPrincipal() });
  grant(role);
  const policies = Template.fromStack(stack).findResources('AWS::IAM::Policy');
  const statements = Object.values(policies).flatMap(
    (p) => (p as { Properties: { PolicyDocument: { Statement: unknown[] } } }).Properties.PolicyDocument.Statement,
  );
  return statements.map((s) => withPartition(s) as Statement);
}

/** The template with the partition's `Fn::Join` read as `aws`, so ARNs compare as text. */
function withPartition(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withPartition);
  if (value === null || typeof value !== 'object') return value;
  const join = (value as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join'];
  if (join !== undefined) return join[1].map((part) => (typeof part === 'string' ? part : 'aws')).join(join[0]);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withPartition(v)]));
}

const modelStatements = (statements: Statement[]) =>
  statements.filter((s) => [s.Resource].flat().some((r) => r.includes(':foundation-model/')));
const regionsOf = (statement: Statement) => [statement.Resource].flat().map((arn) => arn.split(':')[3]);

const SONNET = 'anthropic.claude-sonnet-4-20250514-v1:0';

describe('the Bedrock grant of a model', () => {
  it('allows a foundation model in the stack’s region only', () => {
    const statements = statementsFor(SONNET, 'eu-west-1');
    expect(statements).toEqual([
      expect.objectContaining({
        Action: 'bedrock:InvokeModel',
        Resource: `arn:aws:bedrock:eu-west-1::foundation-model/${SONNET}`,
      }),
    ]);
  });

  it('allows a geography’s profile, and its model only in that geography and only through the profile', () => {
    const profileArn = `arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.${SONNET}`;
    const statements = statementsFor(`eu.${SONNET}`, 'eu-west-1');

    expect(statements).toContainEqual(expect.objectContaining({ Action: 'bedrock:InvokeModel', Resource: profileArn }));
    const [model, ...more] = modelStatements(statements);
    expect(more).toEqual([]);
    // Before: arn:aws:bedrock:*::foundation-model/… — the model in every region, callable directly.
    expect(regionsOf(model!)).not.toContain('*');
    expect(regionsOf(model!).sort()).toEqual([...INFERENCE_PROFILE_REGIONS.eu!].sort());
    expect(regionsOf(model!)).not.toContain('us-east-1');
    expect(model!.Condition).toEqual({ StringEquals: { 'bedrock:InferenceProfileArn': profileArn } });
  });

  it('maps each geography prefix to its own regions', () => {
    for (const [geography, region] of [
      ['us', 'us-west-2'],
      ['apac', 'ap-southeast-1'],
      ['jp', 'ap-northeast-1'],
      ['au', 'ap-southeast-2'],
    ] as const) {
      const [model] = modelStatements(statementsFor(`${geography}.${SONNET}`, region));
      expect(regionsOf(model!).sort(), geography).toEqual([...INFERENCE_PROFILE_REGIONS[geography]!].sort());
    }
  });

  it('takes a profile’s own regions when they differ from its geography’s list', () => {
    const [model] = modelStatements(statementsFor(`us.${SONNET}`, 'us-east-1', ['us-east-1', 'us-east-2']));
    expect(regionsOf(model!)).toEqual(['us-east-1', 'us-east-2']);
  });

  it('grants a global profile as Bedrock documents: the model in the source region, and the region-less model through the profile', () => {
    const profileArn = `arn:aws:bedrock:us-east-1:123456789012:inference-profile/global.${SONNET}`;
    const models = modelStatements(statementsFor(`global.${SONNET}`, 'us-east-1'));

    expect(models).toEqual([
      expect.objectContaining({
        Resource: `arn:aws:bedrock:us-east-1::foundation-model/${SONNET}`,
        Condition: {
          StringEquals: { 'aws:RequestedRegion': 'us-east-1', 'bedrock:InferenceProfileArn': profileArn },
        },
      }),
      expect.objectContaining({
        Resource: `arn:aws:bedrock:::foundation-model/${SONNET}`,
        Condition: {
          StringEquals: { 'aws:RequestedRegion': 'unspecified', 'bedrock:InferenceProfileArn': profileArn },
        },
      }),
    ]);
  });

  it('refuses a geography’s profile from a region outside it, regions for a foundation model, and a region that is not one', () => {
    expect(() => statementsFor(`eu.${SONNET}`, 'us-east-1')).toThrow(
      /routes within eu-central-1, .*; the stack's region us-east-1 is not one of them/,
    );
    expect(() => statementsFor(SONNET, 'us-east-1', ['us-east-1'])).toThrow(/regions apply to inference profiles only/);
    expect(() => statementsFor(`global.${SONNET}`, 'us-east-1', ['us-east-1'])).toThrow(/takes no regions/);
    expect(() => statementsFor(`us.${SONNET}`, 'us-east-1', ['us-east-1', '*'])).toThrow(
      /'\*' \(regions of us\..*\) is not an AWS region name/,
    );
  });
});

describe('the Bedrock grant of a token count', () => {
  it("allows CountTokens on the profile's foundation model in the stack's region only", () => {
    const statements = statementsFor(`eu.${SONNET}`, 'eu-west-1', undefined, (role) =>
      grantTokenCount(role, `eu.${SONNET}`),
    );
    expect(statements).toEqual([
      expect.objectContaining({
        Action: 'bedrock:CountTokens',
        Resource: `arn:aws:bedrock:eu-west-1::foundation-model/${SONNET}`,
      }),
    ]);
  });
});

describe('the Bedrock grants under the policy checks', () => {
  it('need no acknowledgement: no statement names a wildcard region', () => {
    const synthesized = synthWithPolicyChecks(
      (app) => {
        const stack = new Stack(app, 'ModelChecks', { env: { account: '123456789012', region: 'eu-west-1' } });
        const role = new Role(stack, 'Step', { assumedBy: new AccountRootPrincipal() });
        grantModelInvoke(role, `eu.${SONNET}`);
        grantModelInvoke(role, `global.${SONNET}`);
        grantModelInvoke(role, SONNET);
        grantTokenCount(role, `global.${SONNET}`);
      },
      { bundleStacks: [] },
    );
    const violations = (synthesized.report?.pluginReports ?? []).flatMap((p) =>
      p.violations.map((v) => `${p.pluginName}: ${v.ruleName}`),
    );
    const acknowledged = synthesized.app.node
      .findAll()
      .flatMap((c) => c.node.metadata.filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY));
    expect(synthesized.report).toBeDefined();
    expect(violations).toEqual([]);
    // Before, the profile's model in every region (bedrock:*) needed an acknowledged IAM5 finding.
    expect(acknowledged).toEqual([]);
  });
});
