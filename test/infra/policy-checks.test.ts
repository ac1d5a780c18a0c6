import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { addPolicyChecks } from '../../infra/policy-checks.ts';

/** What cdk-nag v3 writes into the cloud assembly (through CDK's policy validation). */
interface ValidationReport {
  readonly pluginReports: { pluginName: string; violations: { ruleName: string }[] }[];
}

// The Baton stack's clean report is asserted in baton-runtime.test.ts; a clean report only means
// something if the same checks do report a careless resource, which is what this proves.
describe('the cdk-nag policy checks', () => {
  it('refuse the synth of a queue without a DLQ or a TLS-only policy, both packs reporting it', () => {
    const outdir = mkdtempSync(join(tmpdir(), 'baton-nag-'));
    const app = new App({ outdir });
    new Queue(new Stack(app, 'Careless'), 'Queue');
    addPolicyChecks(app);

    expect(() => app.synth()).toThrow(/AwsSolutions-SQS3/);
    const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as ValidationReport;
    const violations = report.pluginReports.flatMap((p) => p.violations.map((v) => `${p.pluginName}: ${v.ruleName}`));

    expect(violations).toEqual(
      expect.arrayContaining([
        'AwsSolutions: AwsSolutions-SQS3',
        'AwsSolutions: AwsSolutions-SQS4',
        'Serverless: Serverless-SQSRedrivePolicy',
      ]),
    );
  });
});
