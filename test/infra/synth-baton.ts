import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, type Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { CloudAssembly } from 'aws-cdk-lib/cx-api';
import { addPolicyChecks } from '../../infra/policy-checks.ts';

const CDK_JSON = new URL('../../cdk.json', import.meta.url);

/** A team's own agents module (not the repo's demo agents), for the construct's `agentsEntry`. */
export const FIXTURE_AGENTS_ENTRY = fileURLToPath(new URL('./fixtures/infra-agents.ts', import.meta.url));

/** The feature flags `cdk synth` runs with, so tests synthesise what the CLI does. */
export function cdkContext(): Record<string, unknown> {
  return (JSON.parse(readFileSync(CDK_JSON, 'utf8')) as { context: Record<string, unknown> }).context;
}

export interface PolicyReport {
  readonly pluginReports: readonly {
    readonly pluginName: string;
    readonly conclusion: string;
    readonly violations: readonly { readonly ruleName: string }[];
  }[];
}

export interface Synthesized {
  readonly app: App;
  readonly outdir: string;
  readonly assembly: CloudAssembly;
  /** The policy checks' report, as `cdk synth` writes it; undefined when no plugin wrote one. */
  readonly report: PolicyReport | undefined;
  template(stack: Stack): Template;
  /** The folder of a function's bundled code in the assembly. */
  assetDir(stack: Stack, functionLogicalId: string): string;
}

export interface SynthOptions {
  /** Stacks whose functions esbuild bundles (a few seconds each); all when undefined. */
  readonly bundleStacks?: readonly string[];
}

/**
 * Builds an app with the policy checks, lets `build` add stacks, and synthesises it once
 * (bundling the functions with esbuild, as `npm run synth` does).
 */
export function synthWithPolicyChecks(build: (app: App) => void, options: SynthOptions = {}): Synthesized {
  const outdir = mkdtempSync(join(tmpdir(), 'baton-infra-'));
  const bundling = options.bundleStacks ? { 'aws:cdk:bundling-stacks': options.bundleStacks } : {};
  const app = new App({ outdir, context: { ...cdkContext(), ...bundling } });
  build(app);
  addPolicyChecks(app);
  const assembly = app.synth();
  const reportFile = join(outdir, 'validation-report.json');
  const report = existsSync(reportFile) ? (JSON.parse(readFileSync(reportFile, 'utf8')) as PolicyReport) : undefined;
  return {
    app,
    outdir,
    assembly,
    report,
    template: (stack) => Template.fromJSON(assembly.getStackByName(stack.stackName).template),
    assetDir: (stack, functionLogicalId) => {
      const resource = assembly.getStackByName(stack.stackName).template.Resources[functionLogicalId];
      const key = String(resource.Properties.Code.S3Key);
      return join(outdir, `asset.${key.replace(/\.zip$/, '')}`);
    },
  };
}
