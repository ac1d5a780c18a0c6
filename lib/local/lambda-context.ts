import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';

/** The account id emulators put in ARNs. */
export const LOCAL_ACCOUNT_ID = '000000000000';
/** What Lambda reports by default; nothing locally enforces it. */
const LOCAL_MEMORY_LIMIT_MB = '1024';

export interface LambdaContextOptions {
  readonly functionName: string;
  readonly region: string;
  readonly timeoutS: number;
  /** Wall-clock start of the invocation in ms since the epoch; now by default. */
  readonly startedAtMs?: number | undefined;
  readonly now?: (() => number) | undefined;
}

/** A Lambda-like context plus the absolute deadline it counts down to. */
export interface LocalLambdaContext extends Context {
  readonly deadlineMs: number;
}

/**
 * Builds the context Lambda passes to a handler; `getRemainingTimeInMillis()` follows a real
 * deadline (start + timeout), which the supervisor enforces by killing the worker.
 */
export function createLambdaContext(options: LambdaContextOptions): LocalLambdaContext {
  const now = options.now ?? Date.now;
  const deadlineMs = (options.startedAtMs ?? now()) + options.timeoutS * 1000;
  const awsRequestId = randomUUID();
  const gone = (what: string) => () => {
    throw new Error(`context.${what}() is not supported by the local runtime: return a promise instead`);
  };
  const day = new Date().toISOString().slice(0, 10).replaceAll('-', '/');
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: options.functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${options.region}:${LOCAL_ACCOUNT_ID}:function:${options.functionName}`,
    memoryLimitInMB: LOCAL_MEMORY_LIMIT_MB,
    awsRequestId,
    logGroupName: `/aws/lambda/${options.functionName}`,
    logStreamName: `${day}/[$LATEST]${process.pid}`,
    deadlineMs,
    getRemainingTimeInMillis: () => Math.max(0, deadlineMs - now()),
    done: gone('done'),
    fail: gone('fail'),
    succeed: gone('succeed'),
  };
}
