import { Stack, Token } from 'aws-cdk-lib';
import { type IRole, PolicyStatement } from 'aws-cdk-lib/aws-iam';

/**
 * The destination regions of each geography's system-defined (cross-region) inference profiles,
 * as Bedrock's "Supported Regions and models for inference profiles" lists them (and the CDK's
 * bedrock-alpha `CrossRegionInferenceProfileRegion`). A profile of one model may route to fewer of
 * them; the grant allows the model only in these, and only through the profile. `global.` is not
 * here: it routes to every commercial region and is granted as Bedrock documents (see below).
 * A profile whose regions grew can be granted with its own list (`grantModelInvoke(id, { regions })`).
 */
export const INFERENCE_PROFILE_REGIONS: Readonly<Record<string, readonly string[]>> = {
  us: ['us-east-1', 'us-east-2', 'us-west-1', 'us-west-2'],
  'us-gov': ['us-gov-east-1', 'us-gov-west-1'],
  ca: ['ca-central-1', 'ca-west-1'],
  eu: ['eu-central-1', 'eu-central-2', 'eu-north-1', 'eu-south-1', 'eu-south-2', 'eu-west-1', 'eu-west-2', 'eu-west-3'],
  apac: [
    'ap-east-2',
    'ap-northeast-1',
    'ap-northeast-2',
    'ap-northeast-3',
    'ap-south-1',
    'ap-south-2',
    'ap-southeast-1',
    'ap-southeast-2',
    'ap-southeast-3',
    'ap-southeast-4',
    'ap-southeast-5',
    'ap-southeast-7',
    'me-central-1',
  ],
  jp: ['ap-northeast-1', 'ap-northeast-3'],
  au: ['ap-southeast-2', 'ap-southeast-4'],
};

/** The prefix of a global inference profile, which routes to any commercial region. */
const GLOBAL_PREFIX = 'global';

/** Cross-region inference profile ids start with a geography: us., eu., apac., global. … */
const INFERENCE_PROFILE_ID = new RegExp(
  `^(${[...Object.keys(INFERENCE_PROFILE_REGIONS), GLOBAL_PREFIX].map((g) => g.replace('-', '\\-')).join('|')})\\.`,
);

/** A Bedrock model id as the Converse API takes it: provider.model-name[:version], optionally with a geography prefix. */
const MODEL_ID = /^[a-z0-9-]+(\.[A-Za-z0-9._:-]+)+$/;

const REGION = /^[a-z]{2}(-[a-z]+)+-\d$/;

/** What a grant of an inference profile may be told. */
export interface ModelGrantOptions {
  /**
   * The regions the profile routes to, when they differ from its geography's list
   * (`INFERENCE_PROFILE_REGIONS`); refused for a foundation model or a `global.` profile.
   */
  readonly regions?: readonly string[] | undefined;
}

/**
 * `bedrock:InvokeModel` (which Converse and ConverseStream use) on one model: the foundation
 * model in the stack's region; or, for a cross-region inference profile, the profile in the
 * stack's region and the model it routes to in the profile's regions only, and only when the
 * call names the profile (`bedrock:InferenceProfileArn`), so the role cannot call the model
 * directly in any of them.
 */
export function grantModelInvoke(role: IRole, modelId: string, options: ModelGrantOptions = {}): void {
  if (!MODEL_ID.test(modelId))
    throw new Error(
      `BatonRuntime: '${modelId}' is not a Bedrock model or inference profile id (e.g. anthropic.claude-… or us.anthropic.claude-…)`,
    );
  const { partition, region, account } = Stack.of(role);
  const actions = ['bedrock:InvokeModel'];
  const geography = INFERENCE_PROFILE_ID.exec(modelId)?.[1];
  if (geography === undefined) {
    if (options.regions !== undefined)
      throw new Error(
        `BatonRuntime: '${modelId}' is a foundation model, invoked in the stack's region: regions apply to inference profiles only`,
      );
    role.addToPrincipalPolicy(
      new PolicyStatement({ actions, resources: [`arn:${partition}:bedrock:${region}::foundation-model/${modelId}`] }),
    );
    return;
  }
  const baseModelId = modelId.slice(geography.length + 1);
  const profileArn = `arn:${partition}:bedrock:${region}:${account}:inference-profile/${modelId}`;
  const modelIn = (r: string) => `arn:${partition}:bedrock:${r}::foundation-model/${baseModelId}`;
  const viaProfile = { 'bedrock:InferenceProfileArn': profileArn };
  role.addToPrincipalPolicy(new PolicyStatement({ actions, resources: [profileArn] }));

  if (geography === GLOBAL_PREFIX) {
    if (options.regions !== undefined)
      throw new Error(
        `BatonRuntime: '${modelId}' is a global profile, which routes to any commercial region: it takes no regions`,
      );
    // Bedrock's documented grant for a global profile: the model in the source region, and the
    // region-less model ARN, which a global routing requests as region "unspecified".
    role.addToPrincipalPolicy(
      new PolicyStatement({
        actions,
        resources: [modelIn(region)],
        conditions: { StringEquals: { 'aws:RequestedRegion': region, ...viaProfile } },
      }),
    );
    role.addToPrincipalPolicy(
      new PolicyStatement({
        actions,
        resources: [modelIn('')],
        conditions: { StringEquals: { 'aws:RequestedRegion': 'unspecified', ...viaProfile } },
      }),
    );
    return;
  }

  const regions = options.regions ?? INFERENCE_PROFILE_REGIONS[geography] ?? [];
  for (const r of regions)
    if (!REGION.test(r)) throw new Error(`BatonRuntime: '${r}' (regions of ${modelId}) is not an AWS region name`);
  if (regions.length === 0) throw new Error(`BatonRuntime: ${modelId}: regions must name at least one region`);
  // A geography's profile exists only in its own regions: from anywhere else the call would fail.
  if (!Token.isUnresolved(region) && !regions.includes(region))
    throw new Error(
      `BatonRuntime: ${modelId} routes within ${regions.join(', ')}; the stack's region ${region} is not one of them (use the profile of this region's geography)`,
    );
  role.addToPrincipalPolicy(
    new PolicyStatement({
      actions,
      resources: [...new Set(regions)].sort().map(modelIn),
      conditions: { StringEquals: viaProfile },
    }),
  );
}

/**
 * `bedrock:CountTokens` on the model behind `modelId`, in the stack's region: the step function
 * asks for a request's size before a call that may pass its agent's compaction threshold.
 * CountTokens takes the foundation model (a profile's is counted alike) and runs no inference.
 */
export function grantTokenCount(role: IRole, modelId: string): void {
  const { partition, region } = Stack.of(role);
  const geography = INFERENCE_PROFILE_ID.exec(modelId)?.[1];
  const baseModelId = geography === undefined ? modelId : modelId.slice(geography.length + 1);
  role.addToPrincipalPolicy(
    new PolicyStatement({
      actions: ['bedrock:CountTokens'],
      resources: [`arn:${partition}:bedrock:${region}::foundation-model/${baseModelId}`],
    }),
  );
}
