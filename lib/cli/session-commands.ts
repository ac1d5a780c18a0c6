import { parseArgs } from 'node:util';
import { HttpBatonClient } from '../client/http-baton-client.ts';
import { nodeHttpFetch } from '../client/node-http-fetch.ts';
import { functionUrlRegion } from '../client/sigv4-fetch.ts';
import type { BatonTransport, Forked, SpendFigures } from '../client/transport.ts';
import { SendMode } from '../client/transport.ts';
import { turnAnswering } from '../client/typed-client.ts';
import type { CallIdentity, CallRef } from '../core/call-identity.ts';
import { ForkEffects, SessionState } from '../core/vocabulary.ts';
import { loadAgents } from '../local/agents-module.ts';
import { apiToken, type ConnectOptions, resolveTarget } from './connect.ts';
import { readInput } from './read-input.ts';
import { note, waitForAnswer } from './wait-for-answer.ts';

/** What a command receives: its own arguments and how to print. */
export interface CommandIo {
  readonly json: boolean;
  readonly out: (line: string) => void;
  readonly connect: ConnectOptions;
  readonly signal?: AbortSignal | undefined;
  /** Writes text as it streams, without a line break (`--follow`); absent, streamed text is printed by whole lines. */
  readonly write?: ((text: string) => void) | undefined;
  /** Progress lines that are not the answer (stderr by default), so stdout stays the answer alone. */
  readonly note?: ((line: string) => void) | undefined;
  /** The operations to use instead of connecting by `connect` (an embedding program, tests). */
  readonly client?: BatonTransport | undefined;
}

/**
 * The API when `--api URL` is given (with baton dev's token when it is the local stack's), or the
 * local stack's own API when it serves one with a developer token; otherwise the store and queues
 * of the target stack. `admitting`: inputs are admitted against the agents
 * (lib/runtime/admission.ts), which the local stack's local.json names; the API loads its own,
 * and a deployed stack's tables come without them.
 */
async function client(io: CommandIo, options: { admitting?: boolean } = {}): Promise<BatonTransport> {
  if (io.client) return io.client;
  if (io.connect.api) return httpClient(io.connect.api, apiToken(io.connect.api, io.connect));
  const target = await resolveTarget(io.connect);
  // Through baton dev's API the command loads neither the agents module nor the AWS SDK: a
  // `status` or a `send` then answers in a fraction of the time (docs/PERFORMANCE.md, the CLI).
  if (target.localApi) return httpClient(target.localApi.url, target.localApi.token);
  const agents = options.admitting && target.local ? await loadAgents(target.agentsModule) : undefined;
  // Loaded here, with the AWS SDK clients it builds, only by a command that talks to the tables.
  const { clientFor } = await import('../local/store-target.ts');
  return clientFor(target, agents);
}

/**
 * The HTTP API's client. One call is all most commands make: over node:http it skips the ~100 ms
 * fetch takes to load on its first call. A function URL keeps fetch, signed with SigV4.
 */
const httpClient = (baseUrl: string, token: string | undefined): HttpBatonClient =>
  new HttpBatonClient({
    baseUrl,
    token,
    ...(functionUrlRegion(baseUrl) === undefined ? { fetch: nodeHttpFetch } : {}),
  });

/** The one SESSION argument of a command that takes nothing else; anything more is an error, not ignored. */
function onlySession(args: string[], usage: string): string {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  if (positionals.length !== 1) throw new Error(`usage: ${usage}`);
  return positionals[0] as string;
}

/** Options of the commands that can wait for the turn they start. */
const waitOptions = { wait: { type: 'boolean' }, follow: { type: 'boolean' } } as const;

/**
 * `baton submit --agent NAME [--id TICKET_ID] [--tenant T] (--text TEXT | --input JSON | --file F | --file -) [--wait [--follow]]`.
 * An agent the stack does not host, or an input its schema refuses, is refused here (exit 1) when
 * the agents are at hand: the local stack's, or the API's with --api.
 */
export async function submit(args: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      agent: { type: 'string' },
      id: { type: 'string' },
      tenant: { type: 'string' },
      text: { type: 'string' },
      input: { type: 'string' },
      file: { type: 'string' },
      ...waitOptions,
    },
  });
  if (!values.agent) throw new Error('--agent NAME is required');
  const waiting = waitRequested(values);
  const input = await readInput({ text: values.text, input: values.input, file: values.file }, positionals);
  const transport = await client(io, { admitting: true });
  const submitted = await transport.submit({
    agent: values.agent,
    input,
    ticketId: values.id,
    tenant: values.tenant,
  });
  const line = io.json
    ? JSON.stringify(submitted)
    : `submitted ticket ${submitted.ticketId} → session ${submitted.sessionId} (trace ${submitted.traceId})`;
  if (!waiting) {
    io.out(line);
    return 0;
  }
  // The turn's answer is what stdout is for; where it went is a note.
  note(io, line);
  return waitForAnswer(transport, submitted.sessionId, submitted.ticketId, io, { follow: values.follow === true });
}

/** `--follow` alone would be silently ignored without `--wait`: refuse it instead. */
function waitRequested(values: { wait?: boolean | undefined; follow?: boolean | undefined }): boolean {
  if (values.follow && !values.wait) throw new Error('--follow streams the answer of --wait: give --wait too');
  return values.wait === true;
}

/** Tokens in and out, model calls and the priced cost, as one phrase. */
const spendLine = (s: SpendFigures): string =>
  `${s.inputTokens} in + ${s.outputTokens} out tokens in ${s.modelCalls} model calls, $${s.costUsd.toFixed(4)}`;

/** `baton status SESSION` */
export async function status(args: string[], io: CommandIo): Promise<number> {
  const sessionId = onlySession(args, 'baton status SESSION');
  const found = await (await client(io)).status(sessionId);
  if (!found) {
    io.out(io.json ? JSON.stringify({ sessionId, error: 'not found' }) : `session ${sessionId} not found`);
    return 1;
  }
  if (io.json) io.out(JSON.stringify(found));
  else {
    // A finished one-shot's status is its outcome's: say it once.
    const outcomeStatus = found.outcome && found.outcome.status !== found.status ? ` ${found.outcome.status}` : '';
    const outcome = `${outcomeStatus}${found.outcome?.error ? `: ${found.outcome.error}` : ''}`;
    io.out(`${found.sessionId} ${found.agent} ${found.status}${outcome}`);
    io.out(
      `  ticket ${found.ticketId} · legs ${found.legs} · epoch ${found.epoch} · recoveries ${found.recoveries} · trace ${found.traceId}`,
    );
    if (found.outcome?.output !== undefined) io.out(`  output ${JSON.stringify(found.outcome.output)}`);
    if (found.usage) io.out(`  spent: turn ${spendLine(found.usage.turn)} · session ${spendLine(found.usage.session)}`);
    for (const turn of found.turns ?? []) io.out(`  turn ${turn.turnId} ${turn.outcome ?? turn.status}`);
    if (found.pendingInputs) io.out(`  pending inputs ${found.pendingInputs}`);
    // The input is the parsed one the tool would run with; the options pin exactly this call.
    for (const a of found.pendingApprovals ?? []) {
      io.out(`  awaiting approval: call ${a.callId} ${a.tool} ${JSON.stringify(a.input)} (${pinOptions(a)})`);
      // A fork's repeat: approving runs it a second time, for real.
      if (a.ranBefore)
        io.out(
          `    already ran in session ${a.ranBefore.session} (seq ${a.ranBefore.seq}, key ${a.ranBefore.idempotencyKey}): ${JSON.stringify(a.ranBefore.result ?? 'result unknown')}`,
        );
    }
    if (found.parked)
      io.out(
        `  parked: call ${found.parked.callId} ${found.parked.tool} (baton resolve … ${pinOptions(found.parked)})`,
      );
    if (found.limited) io.out(`  ${found.limited.reason}`);
    if (found.wakeAt) io.out(`  wakes at ${found.wakeAt}`);
    if (found.parent) io.out(`  task of session ${found.parent}`);
    if (found.forkedFrom) io.out(`  forked from session ${found.forkedFrom.session} at ${found.forkedFrom.cursor}`);
    if (found.tasks)
      io.out(
        `  tasks ${Object.entries(found.tasks)
          .map(([s, n]) => `${s} ${n}`)
          .join(' · ')} (baton tasks)`,
      );
    if (found.release) io.out(`  release ${found.release}`);
  }
  return 0;
}

/** `baton list [--tenant T] [--agent A] [--status S] [--from ISO] [--to ISO] [--limit N] [--cursor C]`: one page, newest first. */
export async function list(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      tenant: { type: 'string' },
      agent: { type: 'string' },
      status: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      limit: { type: 'string' },
      cursor: { type: 'string' },
    },
  });
  const states = Object.values(SessionState) as string[];
  if (values.status && !states.includes(values.status)) throw new Error(`--status must be one of ${states.join(', ')}`);
  const limit = values.limit === undefined ? undefined : Number(values.limit);
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 100))
    throw new Error(`--limit must be a whole number from 1 to 100, got '${values.limit}'`);
  const page = await (await client(io)).sessions({
    tenant: values.tenant,
    agent: values.agent,
    state: values.status as SessionState | undefined,
    from: values.from,
    to: values.to,
    limit,
    cursor: values.cursor,
  });
  if (io.json) {
    for (const s of page.sessions) io.out(JSON.stringify(s));
    if (page.cursor) io.out(JSON.stringify({ cursor: page.cursor }));
    return 0;
  }
  for (const s of page.sessions)
    io.out(
      `${s.sessionId}  ${s.agent.padEnd(20)} ${s.status.padEnd(10)} legs ${s.legs}  recoveries ${s.recoveries}  tokens ${s.tokens}  ${s.createdAt}`,
    );
  if (page.cursor) io.out(`more: baton list --cursor ${page.cursor}`);
  return 0;
}

/**
 * `baton events SESSION [--turn TURN_ID] [--after CURSOR] [--follow]`: one JSON line per journal
 * entry; following, also one per chunk of partial model text (`"kind":"model-text"`) while it streams.
 */
export async function events(args: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { after: { type: 'string' }, follow: { type: 'boolean' }, turn: { type: 'string' } },
  });
  const sessionId = positionals[0];
  if (!sessionId || positionals.length > 1)
    throw new Error('usage: baton events SESSION [--turn TURN_ID] [--after CURSOR] [--follow]');
  const after = values.after === undefined ? 0 : Number(values.after);
  // A cursor is an entry's `cursor` (a whole number); NaN would silently match no entry at all.
  if (!Number.isSafeInteger(after) || after < 0 || values.after?.trim() === '')
    throw new Error(
      `--after must be a cursor printed by baton events (a whole number, 0 or more), got '${values.after}'`,
    );
  const options = {
    after,
    follow: values.follow ?? false,
    live: values.follow ?? false,
    ...(values.turn ? { turnId: values.turn } : {}),
    ...(io.signal ? { signal: io.signal } : {}),
  };
  for await (const event of (await client(io)).events(sessionId, options)) io.out(JSON.stringify(event));
  return 0;
}

/** `baton cancel SESSION [--turn TURN_ID]`: the session, or with `--turn` that turn alone (the conversation goes on). */
export async function cancel(args: string[], io: CommandIo): Promise<number> {
  const usage = 'baton cancel SESSION [--turn TURN_ID]';
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { turn: { type: 'string' } } });
  const sessionId = positionals[0];
  if (!sessionId || positionals.length > 1) throw new Error(`usage: ${usage}`);
  if (values.turn !== undefined) return stopTurn(sessionId, values.turn, io);
  const result = await (await client(io)).cancel(sessionId);
  const text = {
    requested: `cancel requested for ${sessionId}`,
    'already-finished': `session ${sessionId} has already finished; nothing to cancel`,
    'not-found': `session ${sessionId} not found`,
  }[result];
  io.out(io.json ? JSON.stringify({ sessionId, result }) : text);
  return result === 'not-found' ? 1 : 0;
}

async function stopTurn(sessionId: string, turnId: string, io: CommandIo): Promise<number> {
  if (turnId.trim() === '') throw new Error('--turn needs a turn id');
  const result = await (await client(io)).stopTurn(sessionId, turnId);
  const text = {
    requested: `stop requested for turn ${turnId} of ${sessionId} (that turn alone)`,
    'already-ended': `turn ${turnId} of ${sessionId} has already ended; nothing to stop`,
    'not-found': `session ${sessionId} has no turn ${turnId}`,
  }[result];
  io.out(io.json ? JSON.stringify({ sessionId, turnId, result }) : text);
  return result === 'not-found' ? 1 : 0;
}

/** `baton send SESSION (--text TEXT | --input JSON | --file F) [--id TURN_ID] [--mode queue|inject|steer] [--if-last-turn TURN_ID] [--wait [--follow]]` */
export async function send(args: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      text: { type: 'string' },
      input: { type: 'string' },
      file: { type: 'string' },
      id: { type: 'string' },
      mode: { type: 'string' },
      'if-last-turn': { type: 'string' },
      ...waitOptions,
    },
  });
  const waiting = waitRequested(values);
  const sessionId = positionals[0];
  if (!sessionId) throw new Error('usage: baton send SESSION (--text TEXT | --input JSON | --file F) [--id TURN_ID]');
  const modes = Object.values(SendMode) as string[];
  if (values.mode !== undefined && !modes.includes(values.mode))
    throw new Error(`--mode must be one of ${modes.join(', ')}`);
  // `text` named even when not given: the missing-input error then offers --text too.
  const input = await readInput({ text: values.text, input: values.input, file: values.file }, positionals.slice(1));
  const transport = await client(io, { admitting: true });
  const sent = await transport.send(sessionId, input, {
    id: values.id,
    mode: values.mode as SendMode | undefined,
    ifLastTurn: values['if-last-turn'],
  });
  const line = io.json
    ? JSON.stringify({ sessionId: sent.sessionId, turnId: sent.turnId, mode: sent.mode })
    : sent.turnId;
  if (!waiting) {
    io.out(line);
    return 0;
  }
  note(io, io.json ? line : `sent turn ${sent.turnId} (${sent.mode}) to session ${sent.sessionId}`);
  const turnId = await turnAnswering(transport, sent);
  return waitForAnswer(transport, sent.sessionId, turnId, io, { follow: values.follow === true });
}

/** `--effects`: what a fork does with a once-only call the original made after the fork point. */
function forkEffects(value: string | undefined): ForkEffects | undefined {
  const allowed = Object.values(ForkEffects) as string[];
  if (value !== undefined && !allowed.includes(value))
    throw new Error(`--effects must be one of ${allowed.join(', ')}`);
  return value as ForkEffects | undefined;
}

/** `--version`: the agent version a fork runs on; whether the agent has it is checked against the deployment. */
function forkVersion(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9]\d{0,8}$/.test(value))
    throw new Error(`--version must be an agent version (a whole number from 1), not ${value}`);
  return Number(value);
}

/** How a fork is printed: its id and where it came from. */
const forkedLine = (f: Forked): string =>
  `forked session ${f.forkedFrom.session} at ${f.forkedFrom.cursor} → session ${f.sessionId} (turn ${f.turnId}, effects ${f.effects}${f.version === undefined ? '' : `, agent version ${f.version}`}, ${f.repeatable} once-only call(s) of the original after the cursor)`;

/** `baton fork SESSION --at CURSOR [--text T | --input JSON | --file F] [--id NEW] [--effects ask|reuse|deny|rerun] [--version V]` */
export async function fork(args: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      at: { type: 'string' },
      text: { type: 'string' },
      input: { type: 'string' },
      file: { type: 'string' },
      id: { type: 'string' },
      effects: { type: 'string' },
      version: { type: 'string' },
    },
  });
  const sessionId = positionals[0];
  if (!sessionId || values.at === undefined)
    throw new Error(
      'usage: baton fork SESSION --at CURSOR [--text T | --input JSON] [--id NEW] [--effects E] [--version V]',
    );
  if (!/^\d{1,15}$/.test(values.at))
    throw new Error(`--at must be a journal cursor (a whole number), not ${values.at}`);
  const given = values.text !== undefined || values.input !== undefined || values.file !== undefined;
  const input = given
    ? await readInput({ text: values.text, input: values.input, file: values.file }, positionals.slice(1))
    : undefined;
  const forked = await (await client(io, { admitting: true })).fork(sessionId, {
    at: Number(values.at),
    input,
    id: values.id,
    effects: forkEffects(values.effects),
    version: forkVersion(values.version),
  });
  io.out(io.json ? JSON.stringify(forked) : forkedLine(forked));
  return 0;
}

/** `baton rerun SESSION --turn TURN_ID [--id NEW] [--effects ask|reuse|deny|rerun] [--version V]` */
export async function rerun(args: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      turn: { type: 'string' },
      id: { type: 'string' },
      effects: { type: 'string' },
      version: { type: 'string' },
    },
  });
  const sessionId = positionals[0];
  if (!sessionId || !values.turn || positionals.length !== 1)
    throw new Error('usage: baton rerun SESSION --turn TURN_ID [--id NEW] [--effects E] [--version V]');
  const version = forkVersion(values.version);
  // The agents are needed to check a version (and the rerun's input against it).
  const forked = await (await client(io, { admitting: version !== undefined })).rerun(sessionId, {
    turnId: values.turn,
    id: values.id,
    effects: forkEffects(values.effects),
    version,
  });
  io.out(io.json ? JSON.stringify(forked) : forkedLine(forked));
  return 0;
}

/** Options that pin a call beyond its id, as `status` shows it (the model entry and the input digest). */
const callOptions = { 'model-seq': { type: 'string' }, digest: { type: 'string' } } as const;

/** The call a command names: its id, pinned by `--model-seq` and `--digest` when given. */
function pinnedRef(callId: string, values: { 'model-seq'?: string | undefined; digest?: string | undefined }): CallRef {
  const modelSeq = values['model-seq'] === undefined ? undefined : Number(values['model-seq']);
  if (modelSeq !== undefined && !(Number.isInteger(modelSeq) && modelSeq > 0))
    throw new Error(`--model-seq must be a positive integer, not ${values['model-seq']}`);
  return {
    callId,
    ...(modelSeq === undefined ? {} : { modelSeq }),
    ...(values.digest === undefined ? {} : { digest: values.digest }),
  };
}

/** The options that name exactly this call to `baton approve` or `baton resolve`. */
const pinOptions = (call: CallIdentity): string =>
  `--model-seq ${call.modelSeq}${call.digest ? ` --digest ${call.digest}` : ''}`;

/** How the CLI tells what a decision named: the call, its model entry, its tool and its input digest. */
const describeCall = (call: CallIdentity): string =>
  `call ${call.callId} (model entry ${call.modelSeq}, ${call.tool}${call.digest ? `, input ${call.digest.slice(0, 12)}` : ''})`;

const APPROVE_USAGE = 'usage: baton approve SESSION CALL_ID [--model-seq N] [--digest SHA256] [--deny] [--reason TEXT]';

/** `baton approve SESSION CALL_ID [--model-seq N] [--digest SHA256] [--deny] [--reason TEXT]` */
export async function approve(args: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { deny: { type: 'boolean' }, reason: { type: 'string' }, ...callOptions },
  });
  const [sessionId, callId] = positionals;
  if (!sessionId || !callId) throw new Error(APPROVE_USAGE);
  const approved = !values.deny;
  const call = await (await client(io)).approve(sessionId, pinnedRef(callId, values), {
    approved,
    ...(values.reason !== undefined ? { reason: values.reason } : {}),
  });
  io.out(
    io.json
      ? JSON.stringify({ sessionId, ...call, approved })
      : `${approved ? 'approved' : 'denied'} ${describeCall(call)} of ${sessionId}`,
  );
  return 0;
}

const RESOLVE_USAGE =
  'usage: baton resolve SESSION CALL_ID [--model-seq N] [--digest SHA256] (--done [--output JSON] | --not-done)';

/** `baton resolve SESSION CALL_ID [--model-seq N] [--digest SHA256] (--done [--output JSON] | --not-done)` */
export async function resolve(args: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { done: { type: 'boolean' }, 'not-done': { type: 'boolean' }, output: { type: 'string' }, ...callOptions },
  });
  const [sessionId, callId] = positionals;
  if (!sessionId || !callId || values.done === values['not-done']) throw new Error(RESOLVE_USAGE);
  let output: unknown;
  if (values.output !== undefined) {
    try {
      output = JSON.parse(values.output);
    } catch (error) {
      throw new Error(`--output is not valid JSON: ${(error as Error).message}`);
    }
  }
  const done = values.done === true;
  const call = await (await client(io)).resolve(sessionId, pinnedRef(callId, values), {
    done,
    ...(output !== undefined ? { output } : {}),
  });
  io.out(
    io.json
      ? JSON.stringify({ sessionId, ...call, done })
      : `resolved ${describeCall(call)} of ${sessionId} as ${done ? 'done' : 'not done'}`,
  );
  return 0;
}

/** `baton tasks SESSION`: a session's background tasks, with status read now. */
export async function tasks(args: string[], io: CommandIo): Promise<number> {
  const sessionId = onlySession(args, 'baton tasks SESSION');
  const found = await (await client(io)).tasks(sessionId);
  if (io.json) {
    for (const t of found) io.out(JSON.stringify(t));
    return 0;
  }
  if (found.length === 0) io.out(`session ${sessionId} has no tasks`);
  for (const t of found) {
    const result =
      t.error !== undefined ? `error: ${t.error}` : t.output !== undefined ? `result: ${JSON.stringify(t.output)}` : '';
    io.out(`${t.taskId}  ${t.agent.padEnd(20)} ${t.status.padEnd(10)} ${t.description}${result ? `  ${result}` : ''}`);
  }
  return 0;
}

/** `baton release SESSION [--no-cancel] [--timeout-s 30]` */
export async function release(args: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { 'no-cancel': { type: 'boolean' }, 'timeout-s': { type: 'string' } },
  });
  const sessionId = positionals[0];
  if (!sessionId) throw new Error('usage: baton release SESSION [--no-cancel] [--timeout-s 30]');
  const timeoutS = values['timeout-s'] === undefined ? undefined : Number(values['timeout-s']);
  if (timeoutS !== undefined && !(Number.isFinite(timeoutS) && timeoutS >= 0))
    throw new Error(`--timeout-s must be a number of seconds, 0 or more, got '${values['timeout-s']}'`);
  const outcome = await (await client(io)).release(sessionId, {
    cancel: values['no-cancel'] !== true,
    timeoutS,
  });
  if (io.json) io.out(JSON.stringify(outcome));
  else if (!outcome.released) io.out(`release of ${sessionId} requested; its holder has not carried it out yet`);
  else
    io.out(
      `released ${sessionId}: ${outcome.cancelled.length} task(s) cancelled, ${outcome.stragglers.length} recorded failed after the bound`,
    );
  return outcome.released ? 0 : 1;
}
