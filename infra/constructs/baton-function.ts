import { createRequire } from 'node:module';
import { join } from 'node:path';
import {
  AssetHashType,
  DockerImage,
  type Duration,
  type ILocalBundling,
  type RemovalPolicy,
  Validations,
} from 'aws-cdk-lib';
import { type IRole, ManagedPolicy, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import {
  ApplicationLogLevel,
  Architecture,
  type CfnFunction,
  Code,
  Function as LambdaFunction,
  LoggingFormat,
  Runtime,
  SystemLogLevel,
} from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type * as Esbuild from 'esbuild';
import { absentOptInPackages, BUNDLE_ENTRY_FILE, type FunctionBundleInput, functionBuildOptions } from './bundling.ts';

/** AWS's policy for writing traces: X-Ray's write actions support no resource-level permissions. */
const XRAY_WRITE_POLICY = 'AWSXRayDaemonWriteAccess';

export interface BatonFunctionProps {
  /** Absolute path of the handler file (it exports `handler`). */
  readonly entry: string;
  /** Absolute path of the module `#agents` maps to; undefined for a handler that imports its agents itself. */
  readonly agentsEntry: string | undefined;
  /**
   * True when bundling Baton's own TypeScript sources (a checkout): `baton` imports then resolve
   * to lib/ through the package's `baton-source` export condition, as they do under tsx and vitest.
   */
  readonly fromSource: boolean;
  /** The folder holding package.json and package-lock.json. */
  readonly projectRoot: string;
  readonly timeout: Duration;
  readonly memorySize: number;
  readonly environment: Record<string, string>;
  readonly logRetention: RetentionDays;
  readonly removalPolicy: RemovalPolicy;
  readonly description: string;
  /** Concurrent executions reserved for (and capping) the function; none by default. */
  readonly reservedConcurrentExecutions?: number | undefined;
}

/**
 * A Baton function with the house defaults: Node.js 24 on ARM64, X-Ray active, JSON logs into
 * its own log group, an ESM bundle split into chunks, with source maps, built by the local esbuild (no Docker),
 * and its own role that starts with nothing but writing its own logs.
 */
export class BatonFunction extends Construct {
  readonly function: LambdaFunction;
  readonly role: IRole;
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: BatonFunctionProps) {
    super(scope, id);
    this.logGroup = new LogGroup(this, 'Logs', {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    // An explicit role instead of AWSLambdaBasicExecutionRole: logs go to this one log group only.
    const role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: props.description,
    });
    this.logGroup.grantWrite(role);
    // X-Ray's actions take no resource, so the grant is the managed policy, acknowledged by name;
    // a `Resource::*` statement here would have to be acknowledged on the whole role and would hide
    // any later wildcard grant from the policy checks.
    role.addManagedPolicy(ManagedPolicy.fromAwsManagedPolicyName(XRAY_WRITE_POLICY));
    this.role = role;

    this.function = new LambdaFunction(this, 'Function', {
      code: bundledCode(props.projectRoot, {
        entry: props.entry,
        agentsEntry: props.agentsEntry,
        fromSource: props.fromSource,
        // Only opt-in packages the project has not installed: the function cannot opt in to them.
        // The AWS SDK is bundled: the deployed code runs the versions it was tested with.
        external: absentOptInPackages(props.projectRoot),
        sourcemap: true,
      }),
      handler: `${BUNDLE_ENTRY_FILE.replace(/\.mjs$/, '')}.handler`,
      description: props.description,
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize,
      timeout: props.timeout,
      ...(props.reservedConcurrentExecutions === undefined
        ? {}
        : { reservedConcurrentExecutions: props.reservedConcurrentExecutions }),
      role,
      logGroup: this.logGroup,
      loggingFormat: LoggingFormat.JSON,
      applicationLogLevelV2: ApplicationLogLevel.INFO,
      systemLogLevelV2: SystemLogLevel.WARN,
      environment: { ...props.environment, NODE_OPTIONS: '--enable-source-maps' },
    });

    // Active tracing set on the resource: the `tracing` prop would add an inline `Resource: *` X-Ray statement.
    (this.function.node.defaultChild as CfnFunction).tracingConfig = { mode: 'Active' };

    Validations.of(this.function).acknowledge({
      id: 'Serverless-LambdaDLQ',
      reason:
        'Baton functions are invoked by SQS event source mappings (failures go to the source queue and its DLQ) or by a schedule whose next tick supersedes a failed one; a function DLQ would never receive anything.',
    });
    Validations.of(role).acknowledge({
      id: `AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/${XRAY_WRITE_POLICY}]`,
      reason:
        'Active tracing needs X-Ray PutTraceSegments and PutTelemetryRecords, which support no resource-level permissions; the AWS-managed write policy grants only those and the sampling reads.',
    });
  }
}

/**
 * The function's code: bundled at synth time by the project's own esbuild (no Docker), with the
 * options `baton bench` measures (bundling.ts). CDK's NodejsFunction is not used because it
 * writes one file, and a function split into chunks parses only what it runs at a cold start.
 * The asset's hash is the bundle's, so a change that does not change the output deploys nothing.
 */
function bundledCode(projectRoot: string, input: FunctionBundleInput): Code {
  return Code.fromAsset(projectRoot, {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      // Never pulled: local bundling always answers (or throws saying what is missing).
      image: DockerImage.fromRegistry('baton-bundles-locally'),
      local: new EsbuildBundling(projectRoot, input),
    },
  });
}

/**
 * Bundles one function with the project's esbuild. A class with the function's input as fields,
 * not a bare `tryBundle`: CDK caches a bundling by its options as data, in which a function counts
 * for nothing, so without the input every function of an app would get the first one's bundle.
 */
class EsbuildBundling implements ILocalBundling {
  constructor(
    readonly projectRoot: string,
    readonly input: FunctionBundleInput,
  ) {}

  tryBundle(outputDir: string): boolean {
    const result = loadEsbuild(this.projectRoot).buildSync(functionBuildOptions(this.input, outputDir));
    if (result.errors.length > 0) throw new Error(`esbuild failed to bundle ${this.input.entry}`);
    return true;
  }
}

/** The project's esbuild (a dev dependency, as the README says), with an error that says so. */
function loadEsbuild(projectRoot: string): typeof Esbuild {
  try {
    return createRequire(join(projectRoot, 'package.json'))('esbuild') as typeof Esbuild;
  } catch (error) {
    throw new Error(
      `Baton bundles its functions with esbuild, which ${projectRoot} does not have: run \`npm install -D esbuild\` there (${String(error)})`,
    );
  }
}
