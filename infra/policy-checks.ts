import { type App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';

/** cdk-nag's AWS Solutions and Serverless packs on the whole app; a finding fails the synth. */
export function addPolicyChecks(app: App): void {
  Validations.of(app).addPlugins(
    new AwsSolutionsChecks(app, { verbose: true }),
    new ServerlessChecks(app, { verbose: true }),
  );
}
