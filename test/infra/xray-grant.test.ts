import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { describe, expect, it } from 'vitest';
import { BatonRuntime } from '../../infra/constructs/baton-runtime.ts';
import { addPolicyChecks } from '../../infra/policy-checks.ts';
import { cdkContext, FIXTURE_AGENTS_ENTRY } from './synth-baton.ts';

// The policy checks look at the roles only: bundling is skipped, so each synth costs no esbuild run.
const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };

function build(addGrant?: (baton: BatonRuntime) => void) {
  const app = new App({
    outdir: mkdtempSync(join(tmpdir(), 'baton-xray-')),
    context: { ...cdkContext(), ...NO_BUNDLING },
  });
  const stack = new Stack(app, 'XRay');
  const baton = new BatonRuntime(stack, 'Baton', { agentsEntry: FIXTURE_AGENTS_ENTRY });
  addGrant?.(baton);
  addPolicyChecks(app);
  return { synthesize: () => app.synth(), stack };
}

describe('the X-Ray grant of the Baton functions', () => {
  it('is the AWS-managed X-Ray write policy, with no wildcard statement of its own', () => {
    const { synthesize, stack } = build();
    const template = Template.fromJSON(synthesize().getStackByName(stack.stackName).template);

    const roles = Object.values(template.findResources('AWS::IAM::Role'));
    const functionRoles = roles.filter((r) => JSON.stringify(r.Properties.AssumeRolePolicyDocument).includes('lambda'));
    expect(functionRoles.length).toBeGreaterThanOrEqual(3);
    for (const role of functionRoles)
      expect(JSON.stringify(role.Properties.ManagedPolicyArns)).toContain(':iam::aws:policy/AWSXRayDaemonWriteAccess');
    const statements = Object.values(template.findResources('AWS::IAM::Policy')).flatMap(
      (p) => p.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[],
    );
    expect(statements.filter((s) => [s.Action].flat().some((a) => a.startsWith('xray:')))).toEqual([]);
  });

  it('does not hide a later wildcard grant on a function role from the policy checks', () => {
    const { synthesize } = build((baton) =>
      baton.stepFunction.role.addToPrincipalPolicy(
        new PolicyStatement({ actions: ['s3:GetObject'], resources: ['*'] }),
      ),
    );

    expect(synthesize).toThrow(/AwsSolutions-IAM5\[Resource::\*\]/);
  });
});
