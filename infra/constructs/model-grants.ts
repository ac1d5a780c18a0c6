import { Stack, Validations } from 'aws-cdk-lib';
import { type IRole, PolicyStatement } from 'aws-cdk-lib/aws-iam';

/** Cross-region inference profile ids start with a geography: us., eu., apac., global. … */
const INFERENCE_PROFILE_ID = /^(us|eu|apac|us-gov|global|jp|au|ca)\./;

/** A Bedrock model id as the Converse API takes it: provider.model-name[:version], optionally with a geography prefix. */
const MODEL_ID = /^[a-z0-9-]+(\.[A-Za-z0-9._:-]+)+$/;

/**
 * `bedrock:InvokeModel` (which Converse and ConverseStream use) on one model: the foundation
 * model in the stack's region, or, for a cross-region inference profile, the profile and the
 * model it routes to in any region of its geography.
 */
export function grantModelInvoke(role: IRole, modelId: string): void {
  if (!MODEL_ID.test(modelId))
    throw new Error(
      `BatonRuntime: '${modelId}' is not a Bedrock model or inference profile id (e.g. anthropic.claude-… or us.anthropic.claude-…)`,
    );
  const { partition, region, account } = Stack.of(role);
  const actions = ['bedrock:InvokeModel'];
  if (!INFERENCE_PROFILE_ID.test(modelId)) {
    role.addToPrincipalPolicy(
      new PolicyStatement({ actions, resources: [`arn:${partition}:bedrock:${region}::foundation-model/${modelId}`] }),
    );
    return;
  }
  const baseModelId = modelId.replace(INFERENCE_PROFILE_ID, '');
  role.addToPrincipalPolicy(
    new PolicyStatement({
      actions,
      resources: [
        `arn:${partition}:bedrock:${region}:${account}:inference-profile/${modelId}`,
        `arn:${partition}:bedrock:*::foundation-model/${baseModelId}`,
      ],
    }),
  );
  Validations.of(role).acknowledge({
    id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/${baseModelId}]`,
    reason:
      'A cross-region inference profile routes to the model in any region of its geography; the profile ARN limits which.',
  });
}
