import { existsSync } from 'node:fs';
import { extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CallerMap } from '../api/caller.ts';
import { ENV, RUNTIME_DEFAULTS } from '../core/resources.ts';
import { loadAgents } from './agents-module.ts';
import { localAwsEnv } from './aws-clients.ts';
import { type ConsoleServer, startConsoleServer } from './console-server.ts';
import { type Emulators, type Endpoints, startEmulators } from './emulators.ts';
import { DEFAULT_WAIT_TIME_S } from './event-source-mapping.ts';
import { type LocalStackConfig, removeLocalStackConfig, writeLocalStackConfig } from './local-config.ts';
import { provisionResources, type Resources } from './provision.ts';
import { type Supervisor, type SupervisorEvent, startSupervisor, type WorkerOutput } from './supervisor.ts';
import { AGENTS_MODULE_ENV, type MappingConfig, type ScheduleConfig } from './worker-protocol.ts';

/** `--timeout-s` default: the step function's timeout in the cloud stack. */
export const DEFAULT_FUNCTION_TIMEOUT_S = 60;
export const DEFAULT_WORKERS = 2;
export const DEFAULT_PREFIX = 'baton';
/** The folder (in the working directory) for local.json and the ledger; git-ignored. */
export const DEFAULT_STATE_DIR = '.baton';
/** EventBridge schedules fire at most once a minute; the sweeper then polls within its window. */
export const DEFAULT_SWEEP_EVERY_MS = 60_000;
/** The sweeper's default window (lib/aws/function-config.ts); its invocation timeout must exceed it. */
const SWEEPER_TIMEOUT_MARGIN_S = 10;

/** A handler: a module path (its `handler` export) or a module and an export name. */
export type FunctionRef = string | { readonly module: string; readonly export: string };

/** The Lambda handlers the local stack hosts. */
export interface LocalFunctions {
  /** Consumes the tickets queue. */
  readonly intake?: FunctionRef | undefined;
  /** Consumes the work queue. */
  readonly step?: FunctionRef | undefined;
  /** Runs on a schedule. */
  readonly sweeper?: FunctionRef | undefined;
}

interface ResolvedFunction {
  readonly module: string;
  readonly export: string;
  readonly functionName: string;
}

/** The production handler factories with the local hooks (lib/local/local-handlers), .ts or compiled .js. */
const LOCAL_HANDLERS = fileURLToPath(new URL(`./local-handlers${extname(import.meta.url)}`, import.meta.url));

export const DEFAULT_FUNCTIONS: LocalFunctions = {
  intake: { module: LOCAL_HANDLERS, export: 'intake' },
  step: { module: LOCAL_HANDLERS, export: 'step' },
  sweeper: { module: LOCAL_HANDLERS, export: 'sweeper' },
};

export interface LocalStackOptions {
  readonly workers?: number | undefined;
  /** Each queue-triggered invocation's deadline; visibility timeouts derive from it. */
  readonly functionTimeoutS?: number | undefined;
  readonly visibilityTimeoutS?: number | undefined;
  readonly maxReceiveCount?: number | undefined;
  /** Persist emulator state here; in memory when absent. */
  readonly dataDir?: string | undefined;
  readonly prefix?: string | undefined;
  /** Where local.json and ledger.jsonl go; `.baton` in the working directory by default. */
  readonly stateDir?: string | undefined;
  /** Override or drop (undefined) hosted functions; missing files are skipped with a warning. */
  readonly functions?: LocalFunctions | undefined;
  readonly sweepEveryMs?: number | undefined;
  /** ReceiveMessage long-poll wait of the local event-source mappings. */
  readonly waitTimeSeconds?: number | undefined;
  /** Extra environment for the handlers (ENV durations such as BATON_LEASE_TTL_MS, failpoints). */
  readonly handlerEnv?: Readonly<Record<string, string>> | undefined;
  /** Reuse running emulators (tests, or a stack started elsewhere) instead of starting them. */
  readonly emulators?: { readonly region: string; readonly endpoints: Endpoints } | undefined;
  readonly log?: ((line: string) => void) | undefined;
  readonly workerOutput?: WorkerOutput | undefined;
  readonly onEvent?: ((event: SupervisorEvent) => void) | undefined;
  /** Aborting it while the stack starts stops what was started and rejects. */
  readonly signal?: AbortSignal | undefined;
  /**
   * Serve the web console and the HTTP API (port 0: any free port; default: DEFAULT_CONSOLE_PORT
   * or a free one), to the developer with every role, or to the `callers` named, each with its
   * own tenants and roles.
   */
  readonly console?: { readonly port?: number | undefined; readonly callers?: CallerMap | undefined } | undefined;
}

export interface LocalStack {
  readonly config: LocalStackConfig;
  readonly supervisor: Supervisor;
  readonly resources: Resources;
  /** Stops the workers, then the emulators this call started; removes local.json. Nothing else. */
  stop(): Promise<void>;
}

/**
 * Starts the embedded local AWS stack: emulators (unless AWS_ENDPOINT_URL* or `emulators` say
 * otherwise), the resources, and worker processes hosting intake, step and the sweeper.
 * @example const stack = await startLocalStack({ workers: 2 }); ...; await stack.stop();
 */
export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  const log = options.log ?? ((line: string) => console.error(`[baton] ${line}`));
  const functionTimeoutS = options.functionTimeoutS ?? DEFAULT_FUNCTION_TIMEOUT_S;
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  const stateDir = resolve(options.stateDir ?? DEFAULT_STATE_DIR);
  const ledger = join(stateDir, 'ledger.jsonl');

  const emulators: Pick<Emulators, 'region' | 'endpoints'> & { stop?: () => Promise<void> } =
    options.emulators ?? (await startEmulators({ dataDir: options.dataDir }));
  if (options.signal?.aborted) {
    await emulators.stop?.();
    throw abortError();
  }
  let supervisor: Supervisor | undefined;
  let consoleServer: ConsoleServer | undefined;
  const stopAll = async () => {
    await consoleServer?.stop();
    await supervisor?.stop();
    await emulators.stop?.();
  };

  try {
    const resources = await provisionResources(emulators.endpoints, {
      prefix,
      functionTimeoutS,
      region: emulators.region,
      visibilityTimeoutS: options.visibilityTimeoutS,
      maxReceiveCount: options.maxReceiveCount,
    });
    if (options.console !== undefined) {
      // The API admits inputs against the agents the workers host: the same module, loaded here too.
      const agents = await loadAgents(options.handlerEnv?.[AGENTS_MODULE_ENV]);
      consoleServer = await startConsoleServer({
        agents,
        target: {
          region: emulators.region,
          endpoints: emulators.endpoints,
          local: true,
          table: resources.table,
          bucket: resources.bucket,
          ticketsQueueUrl: resources.queues.tickets.url,
          workQueueUrl: resources.queues.work.url,
        },
        port: options.console.port,
        callers: options.console.callers,
        log,
      });
    }
    const functions = hostedFunctions(options.functions, log);
    const mappings: MappingConfig[] = [];
    if (functions.intake !== undefined) {
      const { url, arn } = resources.queues.tickets;
      mappings.push({ queueUrl: url, queueArn: arn, ...functions.intake, timeoutS: functionTimeoutS });
    }
    if (functions.step !== undefined) {
      const { url, arn } = resources.queues.work;
      mappings.push({ queueUrl: url, queueArn: arn, ...functions.step, timeoutS: functionTimeoutS });
    }
    const schedules: ScheduleConfig[] = [];
    if (functions.sweeper !== undefined) {
      const windowMs = Number(options.handlerEnv?.[ENV.sweepWindowMs] ?? RUNTIME_DEFAULTS.sweepWindowMs);
      schedules.push({
        ...functions.sweeper,
        everyMs: options.sweepEveryMs ?? DEFAULT_SWEEP_EVERY_MS,
        timeoutS: Math.ceil(windowMs / 1000) + SWEEPER_TIMEOUT_MARGIN_S,
      });
    }

    const env: Record<string, string> = {
      ...localAwsEnv(emulators.endpoints, emulators.region),
      [ENV.table]: resources.table,
      [ENV.ticketsQueueUrl]: resources.queues.tickets.url,
      [ENV.workQueueUrl]: resources.queues.work.url,
      [ENV.resultsQueueUrl]: resources.queues.results.url,
      [ENV.bucket]: resources.bucket,
      [ENV.functionTimeoutMs]: String(functionTimeoutS * 1000),
      BATON_LEDGER: ledger,
      // Tells adapters they talk to emulators (e.g. to apply the AWSTraceHeader shim).
      BATON_LOCAL: '1',
      ...options.handlerEnv,
    };

    let config: LocalStackConfig = {
      version: 1,
      region: emulators.region,
      endpoints: emulators.endpoints,
      prefix,
      resources,
      functionTimeoutS,
      supervisorPid: process.pid,
      workers: [],
      functions: {
        ...(functions.intake === undefined ? {} : { intake: functions.intake.module }),
        ...(functions.step === undefined ? {} : { step: functions.step.module }),
        ...(functions.sweeper === undefined ? {} : { sweeper: functions.sweeper.module }),
      },
      ledger,
      ...(options.handlerEnv?.[AGENTS_MODULE_ENV] ? { agents: options.handlerEnv[AGENTS_MODULE_ENV] } : {}),
      ...(consoleServer === undefined
        ? {}
        : {
            console: consoleServer.url,
            api: consoleServer.apiUrl,
            ...(consoleServer.token === undefined ? {} : { token: consoleServer.token }),
            ...(consoleServer.callers === undefined ? {} : { callers: consoleServer.callers }),
          }),
      startedAt: new Date().toISOString(),
    };
    const publish = () => {
      if (supervisor === undefined) return;
      config = { ...config, workers: supervisor.workers().map(({ slot, pid }) => ({ slot, pid })) };
      writeLocalStackConfig(stateDir, config);
    };

    supervisor = startSupervisor({
      workers: options.workers ?? DEFAULT_WORKERS,
      config: {
        region: emulators.region,
        waitTimeSeconds: options.waitTimeSeconds ?? DEFAULT_WAIT_TIME_S,
        mappings,
        schedules,
      },
      env,
      log,
      workerOutput: options.workerOutput,
      onEvent: (event) => {
        if (event.type === 'worker-started') publish();
        options.onEvent?.(event);
      },
    });
    publish();
    await untilAborted(supervisor.ready(), options.signal);
    const running = supervisor;
    return {
      get config() {
        return config;
      },
      supervisor: running,
      resources,
      async stop() {
        await stopAll();
        removeLocalStackConfig(stateDir, process.pid);
      },
    };
  } catch (error) {
    await stopAll();
    removeLocalStackConfig(stateDir, process.pid);
    throw error;
  }
}

function hostedFunctions(
  requested: LocalFunctions | undefined,
  log: (line: string) => void,
): Partial<Record<keyof LocalFunctions, ResolvedFunction>> {
  const chosen = requested ?? DEFAULT_FUNCTIONS;
  const present: Partial<Record<keyof LocalFunctions, ResolvedFunction>> = {};
  for (const name of ['intake', 'step', 'sweeper'] as const) {
    const ref = chosen[name];
    if (ref === undefined) continue;
    const { module, export: exportName } = typeof ref === 'string' ? { module: ref, export: 'handler' } : ref;
    if (existsSync(module)) present[name] = { module: resolve(module), export: exportName, functionName: name };
    else log(`warning: ${module} does not exist; the local stack runs without the ${name} function`);
  }
  return present;
}

const abortError = () => new DOMException('the local stack start was aborted', 'AbortError');

async function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) {
    promise.catch(() => {}); // settles after the caller has moved on; nobody needs its outcome
    throw abortError();
  }
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(abortError());
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    if (onAbort !== undefined) signal.removeEventListener('abort', onAbort);
  }
}
