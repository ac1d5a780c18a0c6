import { type ChildProcess, spawn } from 'node:child_process';
import { extname } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { workerEnvironment } from './worker-env.ts';
import { isWorkerMessage, WORKER_CONFIG_ENV, type WorkerConfig, type WorkerMessage } from './worker-protocol.ts';

/** Lambda's kill is not instant either; a little slack keeps a handler that returns on time alive. */
export const DEFAULT_DEADLINE_GRACE_MS = 500;
/** How long a stopping worker may take before SIGKILL. */
const STOP_TIMEOUT_MS = 5_000;
/** A worker that dies sooner than this after starting is crash-looping: back off before restarting it. */
const CRASH_LOOP_WINDOW_MS = 2_000;
const MAX_RESTART_DELAY_MS = 5_000;
const FIRST_RESTART_DELAY_MS = 250;
/** ready() gives up on a slot whose worker dies this many times in a row before loading its handlers. */
const MAX_FAILED_STARTS = 3;
/** Loading the handlers through tsx takes a second or two; a cold CI box can take much longer. */
const DEFAULT_READY_TIMEOUT_MS = 60_000;

export interface SupervisorOptions {
  /** Number of worker processes; each hosts every mapping. */
  readonly workers: number;
  /** Handlers to host. Schedules run in worker slot 0 only, so a schedule fires once per tick. */
  readonly config: WorkerConfig;
  /**
   * The workers' settings (resource names, endpoints, local credentials), added to the few
   * variables they keep from this process's environment (lib/local/worker-env.ts).
   */
  readonly env?: Readonly<Record<string, string>> | undefined;
  readonly cwd?: string | undefined;
  readonly deadlineGraceMs?: number | undefined;
  /** Supervisor log lines (restarts, deadline kills); stderr by default. */
  readonly log?: ((line: string) => void) | undefined;
  /** Worker stdout/stderr: shared with this process by default, dropped, or handed line by line to a function. */
  readonly workerOutput?: WorkerOutput | undefined;
  readonly onEvent?: ((event: SupervisorEvent) => void) | undefined;
}

/** Where the workers' stdout and stderr go (their log lines): 'inherit', 'ignore', or each line to a function. */
export type WorkerOutput = 'inherit' | 'ignore' | ((line: string) => void);

export type SupervisorEvent =
  | { readonly type: 'worker-started'; readonly slot: number; readonly pid: number }
  | { readonly type: 'worker-ready'; readonly slot: number; readonly pid: number }
  | {
      readonly type: 'worker-exited';
      readonly slot: number;
      readonly pid: number;
      readonly code: number | null;
      readonly signal: NodeJS.Signals | null;
    }
  | {
      readonly type: 'deadline-kill';
      readonly slot: number;
      readonly pid: number;
      readonly requestId: string;
      readonly functionName: string;
    };

/** One worker slot as chaos tooling sees it. */
export interface WorkerInfo {
  readonly slot: number;
  readonly pid: number;
  /** Times this slot's process was replaced. */
  readonly restarts: number;
  /** Its handlers are loaded and its mappings polling (the worker said so over IPC). */
  readonly ready: boolean;
  /** When this process was spawned (epoch ms). */
  readonly startedAtMs: number;
  /** When it reported ready (epoch ms); absent while it starts. */
  readonly readyAtMs?: number | undefined;
  /** Invocations this process has finished (a fresh process has served none). */
  readonly served: number;
}

export interface Supervisor {
  /** The live worker processes, one per slot. */
  workers(): WorkerInfo[];
  /** Resolves when every slot's process has loaded its handlers; rejects after `timeoutMs` or repeated failed starts. */
  ready(timeoutMs?: number): Promise<void>;
  /**
   * Replaces every worker with a fresh process, which loads the handlers and the agents module
   * again (`baton dev --watch`): each is stopped as Lambda retires an old version's sandbox (SIGTERM,
   * in-flight invocations given their grace) and started again at once. The sessions are durable,
   * so nothing is lost: work in flight comes back after its visibility timeout.
   */
  reload(): void;
  /** Stops every worker this supervisor started (SIGTERM, then SIGKILL) and restarts none. */
  stop(): Promise<void>;
}

interface Slot {
  readonly index: number;
  child: ChildProcess;
  pid: number;
  restarts: number;
  ready: boolean;
  startedAtMs: number;
  readyAtMs: number | undefined;
  served: number;
  crashes: number;
  /** Consecutive exits before the worker said it was ready (its handlers failed to load). */
  failedStarts: number;
  /** Stopped by reload(): its exit is a replacement, not a crash. */
  reloading: boolean;
  readonly deadlines: Map<string, NodeJS.Timeout>;
  readyWaiters: Array<{ resolve: () => void; reject: (error: Error) => void }>;
}

const WORKER_PATH = fileURLToPath(new URL(`./worker${extname(import.meta.url)}`, import.meta.url));

/**
 * Starts worker processes hosting the local Lambda handlers, restarts any that dies (kill -9
 * included), and kills one whose invocation overruns its deadline, as Lambda would.
 * @example const supervisor = startSupervisor({ workers: 2, config, env }); await supervisor.ready();
 */
export function startSupervisor(options: SupervisorOptions): Supervisor {
  const log = options.log ?? ((line: string) => console.error(`[baton] ${line}`));
  const graceMs = options.deadlineGraceMs ?? DEFAULT_DEADLINE_GRACE_MS;
  const emit = (event: SupervisorEvent) => options.onEvent?.(event);
  const loaderArgs = typeScriptLoaderArgs();
  let stopping = false;

  const configFor = (index: number): WorkerConfig =>
    index === 0 ? options.config : { ...options.config, schedules: [] };

  const output = typeof options.workerOutput === 'function' ? 'pipe' : (options.workerOutput ?? 'inherit');
  const spawnWorker = (index: number): ChildProcess => {
    const child = spawn(process.execPath, [...loaderArgs, WORKER_PATH], {
      cwd: options.cwd,
      env: {
        ...workerEnvironment(process.env, options.env ?? {}),
        [WORKER_CONFIG_ENV]: JSON.stringify(configFor(index)),
      },
      // Own process group: Ctrl-C reaches the supervisor only, which then stops the workers itself.
      detached: true,
      stdio: ['ignore', output, output, 'ipc'],
    });
    if (typeof options.workerOutput === 'function') {
      const onLine = options.workerOutput;
      for (const stream of [child.stdout, child.stderr])
        if (stream) createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY }).on('line', onLine);
    }
    return child;
  };

  const attach = (slot: Slot) => {
    const { child } = slot;
    const pid = child.pid ?? -1;
    emit({ type: 'worker-started', slot: slot.index, pid });
    child.on('message', (message: unknown) => {
      if (isWorkerMessage(message)) onMessage(slot, child, message);
    });
    child.on('error', (error) => log(`worker ${slot.index}: ${error.message}`));
    child.once('exit', (code, signal) => {
      if (slot.child !== child) return;
      for (const timer of slot.deadlines.values()) clearTimeout(timer);
      slot.deadlines.clear();
      const wasReady = slot.ready;
      slot.ready = false;
      slot.readyAtMs = undefined;
      emit({ type: 'worker-exited', slot: slot.index, pid, code, signal });
      if (stopping) return;
      if (slot.reloading) {
        slot.reloading = false;
        slot.crashes = 0;
        slot.failedStarts = 0;
        restart(slot);
        log(`worker ${slot.index} reloaded (pid ${pid} → ${slot.pid})`);
        return;
      }
      slot.failedStarts = wasReady ? 0 : slot.failedStarts + 1;
      if (slot.failedStarts === MAX_FAILED_STARTS) {
        const error = new Error(
          `worker ${slot.index} failed to start ${MAX_FAILED_STARTS} times in a row (its log lines above say why)`,
        );
        for (const waiter of slot.readyWaiters.splice(0)) waiter.reject(error);
      }
      const livedMs = Date.now() - slot.startedAtMs;
      slot.crashes = livedMs < CRASH_LOOP_WINDOW_MS ? slot.crashes + 1 : 0;
      const delayMs =
        slot.crashes === 0 ? 0 : Math.min(FIRST_RESTART_DELAY_MS * 2 ** (slot.crashes - 1), MAX_RESTART_DELAY_MS);
      log(
        `worker ${slot.index} (pid ${pid}) exited (${signal ?? `code ${code}`}); restarting` +
          (delayMs > 0 ? ` in ${delayMs} ms` : ''),
      );
      setTimeout(() => {
        if (stopping) return;
        restart(slot);
      }, delayMs);
    });
  };

  const onMessage = (slot: Slot, child: ChildProcess, message: WorkerMessage) => {
    if (slot.child !== child) return;
    switch (message.type) {
      case 'ready': {
        slot.ready = true;
        slot.readyAtMs = Date.now();
        emit({ type: 'worker-ready', slot: slot.index, pid: slot.pid });
        slot.failedStarts = 0;
        for (const waiter of slot.readyWaiters.splice(0)) waiter.resolve();
        return;
      }
      case 'invocation-start': {
        const timer = setTimeout(
          () => {
            slot.deadlines.delete(message.requestId);
            if (slot.child !== child || child.exitCode !== null || child.signalCode !== null) return;
            log(
              `worker ${slot.index} (pid ${slot.pid}): ${message.functionName} invocation ${message.requestId} ` +
                'passed its deadline; killing the worker as Lambda would (its messages return after their visibility timeout)',
            );
            emit({
              type: 'deadline-kill',
              slot: slot.index,
              pid: slot.pid,
              requestId: message.requestId,
              functionName: message.functionName,
            });
            child.kill('SIGKILL');
          },
          Math.max(0, message.deadlineMs + graceMs - Date.now()),
        );
        slot.deadlines.set(message.requestId, timer);
        return;
      }
      case 'invocation-end': {
        clearTimeout(slot.deadlines.get(message.requestId));
        slot.deadlines.delete(message.requestId);
        slot.served += 1;
        return;
      }
    }
  };

  const restart = (slot: Slot) => {
    slot.child = spawnWorker(slot.index);
    slot.pid = slot.child.pid ?? -1;
    slot.restarts += 1;
    slot.startedAtMs = Date.now();
    slot.served = 0;
    attach(slot);
  };

  const slots: Slot[] = Array.from({ length: options.workers }, (_, index) => {
    const child = spawnWorker(index);
    const slot: Slot = {
      index,
      child,
      pid: child.pid ?? -1,
      restarts: 0,
      ready: false,
      startedAtMs: Date.now(),
      readyAtMs: undefined,
      served: 0,
      crashes: 0,
      failedStarts: 0,
      reloading: false,
      deadlines: new Map(),
      readyWaiters: [],
    };
    attach(slot);
    return slot;
  });

  // If this process ends without stop() (an uncaught error), take the workers with it.
  const killAllOnExit = () => {
    for (const slot of slots) slot.child.kill('SIGKILL');
  };
  process.once('exit', killAllOnExit);

  return {
    workers: () =>
      slots.map((slot) => ({
        slot: slot.index,
        pid: slot.pid,
        restarts: slot.restarts,
        ready: slot.ready,
        startedAtMs: slot.startedAtMs,
        readyAtMs: slot.readyAtMs,
        served: slot.served,
      })),
    ready: async (timeoutMs = DEFAULT_READY_TIMEOUT_MS) => {
      const allReady = Promise.all(
        slots.map((slot) => {
          if (slot.ready) return undefined;
          if (slot.failedStarts >= MAX_FAILED_STARTS) {
            return Promise.reject(new Error(`worker ${slot.index} keeps failing to start (its log lines say why)`));
          }
          return new Promise<void>((resolve, reject) => slot.readyWaiters.push({ resolve, reject }));
        }),
      );
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`workers not ready after ${timeoutMs} ms (see their log lines above)`)),
          timeoutMs,
        );
      });
      try {
        await Promise.race([allReady, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    reload() {
      if (stopping) return;
      for (const slot of slots) {
        if (slot.reloading || slot.child.exitCode !== null || slot.child.signalCode !== null) continue;
        slot.reloading = true;
        void stopChild(slot.child);
      }
    },
    async stop() {
      if (stopping) return;
      stopping = true;
      process.off('exit', killAllOnExit);
      await Promise.all(slots.map((slot) => stopChild(slot.child)));
      for (const slot of slots) {
        for (const timer of slot.deadlines.values()) clearTimeout(timer);
        for (const waiter of slot.readyWaiters.splice(0)) waiter.reject(new Error('the supervisor was stopped'));
      }
    },
  };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

/**
 * In the repository the workers load TypeScript through tsx, and `baton` imports (the examples')
 * resolve to the sources; an installed package runs its compiled JavaScript, and Node 24 strips
 * the types of a user's own `.ts` agents module itself.
 */
function typeScriptLoaderArgs(): string[] {
  if (extname(WORKER_PATH) !== '.ts') return [];
  return ['--conditions=baton-source', '--import', import.meta.resolve('tsx')];
}
