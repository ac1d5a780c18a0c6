/**
 * A worker process of the local stack: hosts Lambda handlers behind local event-source mappings
 * and schedules, and reports each invocation's deadline to the supervisor, which kills the whole
 * process when one overruns (as Lambda kills an overrunning sandbox).
 * Run as `node --import tsx lib/local/worker.ts` with WORKER_CONFIG_ENV set; see supervisor.ts.
 */
import { basename, extname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SQSClient } from '@aws-sdk/client-sqs';
import {
  type InvocationHooks,
  type LambdaHandler,
  type RunningMapping,
  startEventSourceMapping,
  startSchedule,
} from './event-source-mapping.ts';
import { WORKER_CONFIG_ENV, type WorkerConfig, type WorkerMessage } from './worker-protocol.ts';

/** How long a stopping worker waits for invocations in flight before it exits anyway. */
const STOP_GRACE_MS = 3_000;

const log = (line: string) => console.error(`[worker ${process.pid}] ${line}`);

function report(message: WorkerMessage): void {
  process.send?.(message);
}

async function loadHandler(module: string, exportName = 'handler'): Promise<LambdaHandler> {
  const url = module.startsWith('file:') ? module : pathToFileURL(module).href;
  const loaded = (await import(url)) as Record<string, unknown>;
  const handler = loaded[exportName];
  if (typeof handler !== 'function') throw new Error(`${module} has no function export '${exportName}'`);
  return handler as LambdaHandler;
}

const nameOf = (module: string) => basename(module, extname(module));

async function main(): Promise<void> {
  const raw = process.env[WORKER_CONFIG_ENV];
  if (raw === undefined) throw new Error(`${WORKER_CONFIG_ENV} is not set`);
  const config = JSON.parse(raw) as WorkerConfig;
  const hooks: InvocationHooks = {
    onStart: (invocation) => report({ type: 'invocation-start', ...invocation }),
    onEnd: (invocation) => report({ type: 'invocation-end', ...invocation }),
  };
  // Region, endpoint (AWS_ENDPOINT_URL_SQS) and credentials come from the environment, as in Lambda.
  const sqs = new SQSClient({});
  const running: RunningMapping[] = [];
  for (const mapping of config.mappings) {
    const handler = await loadHandler(mapping.module, mapping.export);
    running.push(
      startEventSourceMapping({
        sqs,
        queueUrl: mapping.queueUrl,
        queueArn: mapping.queueArn,
        region: config.region,
        functionName: mapping.functionName ?? nameOf(mapping.module),
        handler,
        timeoutS: mapping.timeoutS,
        batchSize: mapping.batchSize,
        waitTimeSeconds: config.waitTimeSeconds,
        hooks,
        log,
      }),
    );
  }
  for (const schedule of config.schedules ?? []) {
    const handler = await loadHandler(schedule.module, schedule.export);
    running.push(
      startSchedule({
        functionName: schedule.functionName ?? nameOf(schedule.module),
        handler,
        region: config.region,
        everyMs: schedule.everyMs,
        timeoutS: schedule.timeoutS,
        hooks,
        log,
      }),
    );
  }

  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(0), STOP_GRACE_MS).unref();
    void Promise.all(running.map((mapping) => mapping.stop())).then(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // The supervisor is gone (even kill -9): nobody would enforce deadlines or stop us, so leave.
  process.on('disconnect', stop);
  report({ type: 'ready' });
}

main().catch((error: unknown) => {
  log(`failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exit(1);
});
