/** What a worker process hosts: queue-triggered handlers and scheduled ones. Passed as JSON in WORKER_CONFIG_ENV. */
export interface WorkerConfig {
  readonly region: string;
  /** ReceiveMessage long-poll wait; Lambda uses 20 s, tests use less so stop is quick. */
  readonly waitTimeSeconds?: number | undefined;
  readonly mappings: readonly MappingConfig[];
  readonly schedules?: readonly ScheduleConfig[] | undefined;
}

export interface MappingConfig {
  readonly queueUrl: string;
  readonly queueArn: string;
  /** Absolute path (or file URL) of the module that exports the handler. */
  readonly module: string;
  /** Export name; `handler` by default. */
  readonly export?: string | undefined;
  /** Name in logs and in the Lambda context; the module's file name by default. */
  readonly functionName?: string | undefined;
  readonly batchSize?: number | undefined;
  readonly timeoutS: number;
}

export interface ScheduleConfig {
  readonly module: string;
  readonly export?: string | undefined;
  readonly functionName?: string | undefined;
  readonly everyMs: number;
  readonly timeoutS: number;
}

/** The environment variable that carries a worker's WorkerConfig as JSON. */
export const WORKER_CONFIG_ENV = 'BATON_WORKER_CONFIG';

/** Messages a worker sends its supervisor over the IPC channel. */
export type WorkerMessage =
  | { readonly type: 'ready' }
  | {
      readonly type: 'invocation-start';
      readonly requestId: string;
      readonly functionName: string;
      /** Epoch ms after which Lambda would have killed the invocation. */
      readonly deadlineMs: number;
    }
  | { readonly type: 'invocation-end'; readonly requestId: string };

export const isWorkerMessage = (value: unknown): value is WorkerMessage =>
  typeof value === 'object' &&
  value !== null &&
  ['ready', 'invocation-start', 'invocation-end'].includes((value as { type?: string }).type ?? '');

/** Names the module (path or file URL) whose `agents` export the local functions host (lib/local/local-handlers.ts). */
export const AGENTS_MODULE_ENV = 'BATON_AGENTS_MODULE';
