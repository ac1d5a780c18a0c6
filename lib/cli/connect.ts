import { readLocalStackConfig } from '../local/local-config.ts';
import type { StoreTarget } from '../local/store-target.ts';

/** Where the resources live: the local stack's local.json or a deployed stack's outputs. */
export interface Target extends StoreTarget {
  readonly resultsQueueUrl: string;
  /** The local stack's agents module (absent: the repository's examples); a deployed stack's are not at hand. */
  readonly agentsModule?: string | undefined;
  /** The local stack's HTTP API with the developer's token, when `baton dev` serves one to every caller. */
  readonly localApi?: { readonly url: string; readonly token: string } | undefined;
}

export interface ConnectOptions {
  /** The HTTP API's address: the commands then need no table or queue access. */
  readonly api?: string | undefined;
  readonly stack?: string | undefined;
  readonly region?: string | undefined;
  readonly stateDir?: string | undefined;
}

/** Resolves the target: `--stack NAME` reads CloudFormation outputs, otherwise `.baton/local.json`. */
export async function resolveTarget(options: ConnectOptions): Promise<Target> {
  if (options.stack) return stackTarget(options.stack, options.region ?? process.env.AWS_REGION ?? 'us-east-1');
  const local = readLocalStackConfig(options.stateDir);
  if (!local)
    throw new Error(
      'no local stack found (.baton/local.json): start one with `baton dev`, or pass --stack NAME for a deployed stack',
    );
  if (!isAlive(local.supervisorPid))
    throw new Error(
      `the local stack of ${options.stateDir ?? '.baton'}/local.json is not running (its baton dev, pid ${local.supervisorPid}, has exited): start it again with \`baton dev\``,
    );
  return {
    region: local.region,
    endpoints: local.endpoints,
    local: true,
    table: local.resources.table,
    bucket: local.resources.bucket,
    ticketsQueueUrl: local.resources.queues.tickets.url,
    workQueueUrl: local.resources.queues.work.url,
    resultsQueueUrl: local.resources.queues.results.url,
    agentsModule: local.agents,
    ...(local.api === undefined || local.token === undefined
      ? {}
      : { localApi: { url: local.api, token: local.token } }),
  };
}

/** The variable that gives the CLI a token for `--api` (a mapped caller's, from local.json's `callers`). */
export const TOKEN_ENV = 'BATON_TOKEN';

/**
 * The token to send to `api`: BATON_TOKEN when set, else the developer's token from local.json
 * when `api` is that stack's API. Never sent anywhere else: a token is for the stack that made it.
 */
export function apiToken(
  api: string,
  options: Pick<ConnectOptions, 'stateDir'>,
  env = process.env,
): string | undefined {
  if (env[TOKEN_ENV]) return env[TOKEN_ENV];
  const local = readLocalStackConfig(options.stateDir);
  if (local?.api === undefined || local.token === undefined) return undefined;
  return new URL(local.api).origin === new URL(api).origin ? local.token : undefined;
}

/** Is the process alive? (EPERM: it is, but not ours.) */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function stackTarget(stackName: string, region: string): Promise<Target> {
  // Loaded here: a command on the local stack does not pay for the CloudFormation client.
  const { CloudFormationClient, DescribeStacksCommand } = await import('@aws-sdk/client-cloudformation');
  const cloudFormation = new CloudFormationClient({ region });
  const { Stacks } = await cloudFormation.send(new DescribeStacksCommand({ StackName: stackName }));
  const outputs = new Map((Stacks?.[0]?.Outputs ?? []).map((o) => [o.OutputKey, o.OutputValue]));
  const need = (key: string): string => {
    const value = outputs.get(key);
    if (!value) throw new Error(`stack ${stackName} has no output ${key}: is it a Baton stack?`);
    return value;
  };
  return {
    region,
    local: false,
    table: need('TableName'),
    bucket: need('BucketName'),
    ticketsQueueUrl: need('TicketsQueueUrl'),
    workQueueUrl: need('WorkQueueUrl'),
    resultsQueueUrl: need('ResultsQueueUrl'),
  };
}
