import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createSqsClient } from '../adapters/aws-clients.ts';
import { enabledFaultKinds, FAULTS_ENV, parseFaultSpec } from '../adapters/faults/fault-config.ts';
import { SqsTicketQueue } from '../adapters/sqs/sqs-queues.ts';
import { CallerMap } from '../api/caller.ts';
import { describeIssues } from '../core/messages.ts';
import { ENV } from '../core/resources.ts';
import { parseTenantLimits } from '../core/tenant-limits.ts';
import { agentsModuleFor, EXAMPLE_AGENTS_URL, loadSchedules } from '../local/agents-module.ts';
import { LOCAL_CREDENTIALS } from '../local/aws-clients.ts';
import { waitForOutcome } from '../local/local-baton.ts';
import { consoleLoginUrl, type LocalStackConfig, readLocalStackConfig } from '../local/local-config.ts';
import { startLocalSchedules } from '../local/local-schedules.ts';
import {
  DEFAULT_FUNCTION_TIMEOUT_S,
  DEFAULT_STATE_DIR,
  DEFAULT_WORKERS,
  startLocalStack,
} from '../local/local-stack.ts';
import { formatLogLine, LOG_FORMATS, type LogFormat, useColor } from '../local/log-format.ts';
import { watchModuleGraph } from '../local/module-watch.ts';
import { clientFor, localTarget } from '../local/store-target.ts';
import type { WorkerOutput } from '../local/supervisor.ts';
import { AGENTS_MODULE_ENV } from '../local/worker-protocol.ts';
import { checkFailpointsFile, FAILPOINTS_FILE_ENV } from '../runtime/failpoints.ts';
import { isAlive } from './connect.ts';
import type { CommandIo } from './session-commands.ts';

const positiveNumber = (flag: string, value: string | undefined): number | undefined => {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0) throw new Error(`${flag} must be a positive number, got '${value}'`);
  return number;
};

/** How long `--submit` waits for its sample ticket's outcome. */
const SAMPLE_TIMEOUT_MS = 120_000;

/**
 * `baton dev [--agents FILE] [--callers FILE] [--tenant-limits FILE|JSON] [--submit TICKET.json] [--workers N] [--timeout-s S] [--visibility-s S] [--data DIR] [--port P] [--prefix P] [--log-format pretty|json] [--watch]`:
 * starts DynamoDB Local, fauxqs, the resources, the worker processes hosting the agents of FILE
 * (the repository's examples without it), and the web console with the HTTP API (to the
 * developer with every role, or to the callers of `--callers`, each with a token of its own);
 * `--tenant-limits` gives the workers each tenant's concurrency and model-call rate (fair sharing);
 * submits the sample ticket of `--submit` and prints its outcome; runs until Ctrl-C, then stops all it started.
 * The functions' logs are one readable line each (JSON lines as on AWS with `--log-format json`);
 * `--watch` replaces the workers when the agents module or a file it imports changes.
 */
export async function dev(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      workers: { type: 'string' },
      'timeout-s': { type: 'string' },
      'visibility-s': { type: 'string' },
      data: { type: 'string' },
      agents: { type: 'string' },
      callers: { type: 'string' },
      port: { type: 'string' },
      submit: { type: 'string' },
      prefix: { type: 'string' },
      'tenant-limits': { type: 'string' },
      'log-format': { type: 'string' },
      watch: { type: 'boolean' },
    },
  });
  const tenantLimits = values['tenant-limits'] === undefined ? undefined : readTenantLimits(values['tenant-limits']);
  const logFormat = values['log-format'] ?? (io.json ? 'json' : 'pretty');
  if (!(LOG_FORMATS as readonly string[]).includes(logFormat))
    throw new Error(`--log-format must be one of ${LOG_FORMATS.join(', ')}, got '${logFormat}'`);
  const sample = values.submit === undefined ? undefined : readSample(values.submit);
  const callers = values.callers === undefined ? undefined : readCallers(values.callers);
  const agentsModule = agentsModuleFor(values.agents);
  const workers = positiveNumber('--workers', values.workers) ?? DEFAULT_WORKERS;
  if (!Number.isInteger(workers)) throw new Error('--workers must be a whole number');
  const functionTimeoutS = positiveNumber('--timeout-s', values['timeout-s']) ?? DEFAULT_FUNCTION_TIMEOUT_S;
  const visibilityTimeoutS = positiveNumber('--visibility-s', values['visibility-s']);
  // Lambda refuses an event source mapping whose queue hides a message for less than the function
  // may run: the message would be delivered again while its first invocation still runs.
  if (visibilityTimeoutS !== undefined && visibilityTimeoutS < functionTimeoutS)
    throw new Error(
      `--visibility-s ${visibilityTimeoutS} is shorter than the function timeout (--timeout-s ${functionTimeoutS}); Lambda refuses that (default: 6 × the timeout)`,
    );
  const port = positiveNumber('--port', values.port);
  if (port !== undefined && !(Number.isInteger(port) && port < 65_536))
    throw new Error(`--port must be a whole number below 65536, got '${values.port}'`);
  const stateDir = io.connect.stateDir ?? DEFAULT_STATE_DIR;
  // Checked here, before the stack boots: a bad spec would otherwise stop every worker at its start.
  const faultSpec = process.env[FAULTS_ENV];
  const faults = faultSpec ? enabledFaultKinds(parseFaultSpec(faultSpec)) : [];
  const failpointsFile = process.env[FAILPOINTS_FILE_ENV] || undefined;
  const crashPoints = failpointsFile === undefined ? [] : checkFailpointsFile(failpointsFile);

  const existing = readLocalStackConfig(stateDir);
  if (existing !== undefined && existing.supervisorPid !== process.pid && isAlive(existing.supervisorPid)) {
    throw new Error(
      `a local stack is already running (pid ${existing.supervisorPid}, ${stateDir}/local.json); stop it first or pass --state-dir`,
    );
  }

  const startedAt = Date.now();
  const stack = await startLocalStack({
    workers,
    functionTimeoutS,
    visibilityTimeoutS,
    dataDir: values.data,
    stateDir,
    prefix: values.prefix,
    signal: io.signal,
    handlerEnv: {
      ...(agentsModule === undefined ? {} : { [AGENTS_MODULE_ENV]: agentsModule }),
      ...(tenantLimits === undefined ? {} : { [ENV.tenantLimits]: tenantLimits }),
    },
    console: { port, callers },
    workerOutput: workerOutput(logFormat as LogFormat, io),
  }).catch((error: unknown) => {
    if (io.signal?.aborted) return undefined;
    throw error;
  });
  if (stack === undefined) {
    if (!io.json) io.out('baton dev: stopped before the stack was up');
    return 130;
  }
  const { config } = stack;
  if (io.json) io.out(JSON.stringify({ ...config, startMs: Date.now() - startedAt }));
  else {
    const { queues } = config.resources;
    const functions = Object.entries(config.functions).map(([name]) => name);
    io.out(`baton dev: local stack up in ${((Date.now() - startedAt) / 1000).toFixed(1)} s (region ${config.region})`);
    const address = config.console ?? '';
    if (config.token !== undefined) io.out(`  console    ${consoleLoginUrl(address, config.token)}`);
    for (const [name, token] of Object.entries(config.callers ?? {}))
      io.out(`  console    ${consoleLoginUrl(address, token)}   (as ${name})`);
    io.out(`  API        ${config.api}   (OpenAPI at ${config.api}/openapi.json)`);
    io.out(`  DynamoDB   ${config.endpoints.dynamodb}   table ${config.resources.table}`);
    io.out(`  SQS        ${config.endpoints.sqs}`);
    io.out(`    tickets  ${queues.tickets.url}  (DLQ ${queues.ticketsDlq.url})`);
    io.out(`    work     ${queues.work.url}  (DLQ ${queues.workDlq.url})`);
    io.out(`    results  ${queues.results.url}`);
    io.out(`  S3         ${config.endpoints.s3}   bucket ${config.resources.bucket}`);
    io.out(
      `  functions  ${functions.length > 0 ? functions.join(', ') : 'none'} (timeout ${config.functionTimeoutS} s)`,
    );
    io.out(`  workers    ${config.workers.map((worker) => `pid ${worker.pid}`).join(', ')}`);
    if (tenantLimits !== undefined) io.out(`  tenant limits ${tenantLimits}`);
    if (faults.length > 0) io.out(`  faults     ${faults.join(', ')} (${FAULTS_ENV}, injected in the workers)`);
    if (failpointsFile !== undefined)
      io.out(
        `  crash points ${crashPoints.join(', ') || 'none yet'} (${FAILPOINTS_FILE_ENV}=${failpointsFile}, read at each point; firings in ${failpointsFile}.log)`,
      );
    io.out(`  ledger     ${config.ledger}`);
    io.out(`  state      ${stateDir}/local.json — other baton commands find the stack there`);
    io.out('Ctrl-C stops everything this command started.');
  }
  const watching = values.watch
    ? watchModuleGraph(agentsModule ?? fileURLToPath(EXAMPLE_AGENTS_URL), (changed) => {
        if (!io.json) io.out(`baton dev: ${changed} changed; reloading the workers`);
        stack.supervisor.reload();
      })
    : undefined;
  if (watching !== undefined && !io.json) io.out(`  watching   ${watching.files().length} files of the agents module`);
  const fired = await fireSchedules(config, agentsModule, io);
  if (sample !== undefined) await submitSample(config, sample, io);

  await new Promise<void>((resolve) => {
    if (io.signal === undefined) return; // no way to be stopped: run until the process is killed
    if (io.signal.aborted) resolve();
    else io.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  if (!io.json) io.out('baton dev: stopping');
  watching?.close();
  fired.stop();
  await stack.stop();
  if (!io.json) io.out('baton dev: stopped');
  return 0;
}

/**
 * `--tenant-limits`: inline JSON (starting with `{`) or a JSON file, checked before the stack
 * boots (a bad value would stop every worker at its start); the workers get it as JSON text.
 */
function readTenantLimits(value: string): string {
  const text = value.trimStart().startsWith('{') ? value : readFileSync(resolve(value), 'utf8');
  return JSON.stringify(parseTenantLimits(text, '--tenant-limits'));
}

/**
 * Where the workers' output goes: each line made readable (`pretty`, coloured on a terminal
 * unless NO_COLOR is set), or the functions' JSON lines unchanged on this process's own output.
 */
function workerOutput(format: LogFormat, io: CommandIo): WorkerOutput {
  if (format === 'json') return 'inherit';
  const color = useColor(process.stdout.isTTY);
  return (line) => {
    const shown = formatLogLine(line, { color });
    if (shown !== undefined) io.out(shown);
  };
}

/** The agents module's schedules, fired on the local tickets queue as Scheduler fires them on AWS. */
async function fireSchedules(config: LocalStackConfig, agentsModule: string | undefined, io: CommandIo) {
  const schedules = await loadSchedules(agentsModule);
  const aws = { region: config.region, endpoints: config.endpoints, credentials: LOCAL_CREDENTIALS };
  const tickets = new SqsTicketQueue({ client: createSqsClient(aws), queueUrl: config.resources.queues.tickets.url });
  const fired = startLocalSchedules({ schedules, tickets, log: (line) => !io.json && io.out(`baton dev: ${line}`) });
  if (!io.json) for (const { name, at } of fired.next()) io.out(`  schedule   ${name}, next fire ${at.toISOString()}`);
  return fired;
}

/** The `--callers` file: `{ NAME: { "tenants": [...] | "*", "roles": [...] | "*" } }`, checked before the stack starts. */
function readCallers(file: string): CallerMap {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(resolve(file), 'utf8'));
  } catch (error) {
    throw new Error(`--callers: cannot read ${resolve(file)} as JSON: ${(error as Error).message}`);
  }
  const callers = CallerMap.safeParse(parsed);
  if (!callers.success)
    throw new Error(
      `--callers: ${resolve(file)} must map caller names to { "tenants": [...] | "*", "roles": [...] | "*" }: ${describeIssues(callers.error)}`,
    );
  if (Object.keys(callers.data).length === 0) throw new Error(`--callers: ${resolve(file)} names no caller`);
  return callers.data;
}

interface SampleTicket {
  readonly agent: string;
  readonly input: unknown;
  readonly tenant?: string;
}

/** The `--submit` file: `{ "agent": NAME, "input": ANY, "tenant"?: T }`, checked before the stack starts. */
function readSample(file: string): SampleTicket {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(resolve(file), 'utf8'));
  } catch (error) {
    throw new Error(`--submit: cannot read ${resolve(file)} as JSON: ${(error as Error).message}`);
  }
  const sample = parsed as Partial<SampleTicket> | null;
  if (typeof sample?.agent !== 'string' || !('input' in sample))
    throw new Error(`--submit: ${resolve(file)} must be { "agent": NAME, "input": ... }`);
  return sample as SampleTicket;
}

/** Submits the sample ticket and prints its outcome; a failure is reported, and the stack keeps running. */
async function submitSample(config: LocalStackConfig, sample: SampleTicket, io: CommandIo): Promise<void> {
  const client = clientFor(localTarget(config));
  try {
    const submitted = await client.submit(sample);
    io.out(`sample ticket ${submitted.ticketId} → ${sample.agent}, session ${submitted.sessionId}`);
    const status = await waitForOutcome(client, submitted.sessionId, SAMPLE_TIMEOUT_MS);
    const outcome = status.outcome;
    io.out(
      `sample session ${submitted.sessionId} ${outcome?.status ?? status.status}: ${JSON.stringify(outcome?.output ?? outcome?.error ?? null)}`,
    );
  } catch (error) {
    io.out(`sample ticket failed: ${(error as Error).message}`);
  }
}
