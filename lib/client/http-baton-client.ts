import { parseSse } from '../api/sse.ts';
import { type CallIdentity, type CallRef, callRef } from '../core/call-identity.ts';
import { TurnRefusedError } from '../core/errors.ts';
import type { FetchLike } from './node-http-fetch.ts';
import { functionUrlRegion, sigv4Fetch } from './sigv4-fetch.ts';
import {
  type BatonTransport,
  type CancelResult,
  DEFAULT_RELEASE_TIMEOUT_S,
  type EventsOptions,
  type FollowEvent,
  type Forked,
  type ForkOptions,
  type ModelTextEvent,
  type ParkedRef,
  parkOf,
  RELEASE_GRACE_MS,
  type ReleaseOptions,
  type ReleaseOutcome,
  type RerunOptions,
  type SendOptions,
  type Sent,
  type SessionEvent,
  type SessionListPage,
  type SessionListQuery,
  type SessionStatus,
  type StopTurnResult,
  type SubmitRequest,
  type Submitted,
  type TaskInfo,
} from './transport.ts';

/** The call a posted decision or verdict named, from the API's answer (DecisionResponse). */
function namedCall(answer: unknown): CallIdentity {
  const { modelSeq, callId, tool, digest } = answer as CallIdentity;
  return { modelSeq, callId, tool, ...(digest === undefined ? {} : { digest }) };
}

export interface HttpBatonClientOptions {
  /** The API's base address: a function URL, or `baton dev`'s (…/api). */
  readonly baseUrl: string;
  /**
   * Defaults to fetch, signed with SigV4 when the address is a Lambda function URL. Any function
   * with fetch's call and answer will do (the CLI passes nodeHttpFetch, which starts faster).
   */
  readonly fetch?: FetchLike | undefined;
  /** Extra headers on every request (locally: x-baton-tenants). */
  readonly headers?: Readonly<Record<string, string>> | undefined;
  /** `baton dev`'s token (local.json), sent as a bearer token; a function URL is signed instead. */
  readonly token?: string | undefined;
}

/** An error answer of the API, with its stable code. */
export class ApiCallError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(`${code}: ${message}`);
    this.name = 'ApiCallError';
  }
}

/** The refusal each of the API's refusal codes stands for: the same error the store-backed client throws. */
const REFUSALS: Readonly<Record<string, TurnRefusedError['reason']>> = {
  not_found: 'not-found',
  already_finished: 'finished',
  not_a_conversation: 'one-shot',
  stale_turn: 'stale',
  too_many_pending: 'full',
  released: 'released',
  tasks_running: 'tasks-running',
};

/** The pause before a release not yet carried out is asked for again. */
const RELEASE_RETRY_MS = 1_000;

/** How long one events request may wait for news when following (the API caps it at 25 s). */
const FOLLOW_WAIT_MS = 20_000;

/** The typed client over the HTTP API: the same operations as the store-backed one, no table access needed. */
export class HttpBatonClient implements BatonTransport {
  readonly #base: string;
  readonly #fetch: FetchLike;
  readonly #headers: Readonly<Record<string, string>>;

  constructor(options: HttpBatonClientOptions) {
    this.#base = options.baseUrl.replace(/\/+$/, '');
    const region = functionUrlRegion(options.baseUrl);
    this.#fetch = options.fetch ?? (region === undefined ? fetch : sigv4Fetch(region));
    // A function URL is signed (SigV4 owns Authorization there); a token is for baton dev only.
    const bearer = options.token !== undefined && region === undefined;
    this.#headers = {
      ...(bearer ? { authorization: `Bearer ${options.token}` } : {}),
      ...options.headers,
    };
  }

  async submit(request: SubmitRequest): Promise<Submitted> {
    return (await this.#call('POST', '/sessions', request)).json as Submitted;
  }

  async fork(sessionId: string, options: ForkOptions): Promise<Forked> {
    const { at, input, id, effects, version } = options;
    const path = `/sessions/${encodeURIComponent(sessionId)}/fork`;
    return (await this.#call('POST', path, { at, input, id, effects, version })).json as Forked;
  }

  async rerun(sessionId: string, options: RerunOptions): Promise<Forked> {
    const { turnId, id, effects, version } = options;
    const path = `/sessions/${encodeURIComponent(sessionId)}/rerun`;
    return (await this.#call('POST', path, { turn: turnId, id, effects, version })).json as Forked;
  }

  async status(sessionId: string): Promise<SessionStatus | undefined> {
    const answer = await this.#call('GET', `/sessions/${encodeURIComponent(sessionId)}`, undefined, [404]);
    return answer.status === 404 ? undefined : (answer.json as SessionStatus);
  }

  async sessions(query: SessionListQuery = {}): Promise<SessionListPage> {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, String(value));
    return (await this.#call('GET', `/sessions?${params}`)).json as SessionListPage;
  }

  events(sessionId: string, options: EventsOptions & { live: true }): AsyncGenerator<FollowEvent>;
  events(sessionId: string, options?: EventsOptions): AsyncGenerator<SessionEvent>;
  async *events(sessionId: string, options: EventsOptions = {}): AsyncGenerator<FollowEvent> {
    let cursor = options.after ?? 0;
    // Chunks of the streaming response after `cursor` already shown: the API resumes after them.
    let chunk: number | undefined;
    const waitMs = options.follow ? FOLLOW_WAIT_MS : 0;
    const live = options.follow && options.live ? '&live=true' : '';
    const turn = options.turnId === undefined ? '' : `&turn=${encodeURIComponent(options.turnId)}`;
    for (;;) {
      if (options.signal?.aborted) return;
      const path = `/sessions/${encodeURIComponent(sessionId)}/events?after=${cursor}&waitMs=${waitMs}${live}${turn}`;
      // Within a streaming response the position has a chunk too, which only the event id carries.
      const resume = chunk === undefined ? {} : { 'last-event-id': `${cursor}.${chunk}` };
      const answer = await this.#call('GET', path, undefined, [], options.signal, resume);
      const events = parseSse(answer.text);
      let news = 0;
      for (const event of events) {
        if (event.event === 'entry') {
          const entry = JSON.parse(event.data) as SessionEvent;
          cursor = entry.cursor;
          chunk = undefined;
          news++;
          yield entry;
        } else if (event.event === 'cursor') {
          // Entries read that were not the turn's: the next request starts after them.
          cursor = (JSON.parse(event.data) as { cursor: number }).cursor;
          chunk = undefined;
          news++;
        } else if (event.event === 'model-text') {
          const text = JSON.parse(event.data) as ModelTextEvent;
          chunk = text.chunk;
          news++;
          yield text;
        }
      }
      if (events.some((e) => e.event === 'end')) return;
      if (!options.follow && news === 0) return;
    }
  }

  async cancel(sessionId: string): Promise<CancelResult> {
    const answer = await this.#call('POST', `/sessions/${encodeURIComponent(sessionId)}/cancel`, undefined, [404, 409]);
    if (answer.status === 404) return 'not-found';
    if (answer.status === 409) return 'already-finished';
    return 'requested';
  }

  async stopTurn(sessionId: string, turnId: string): Promise<StopTurnResult> {
    const path = `/sessions/${encodeURIComponent(sessionId)}/turns/${encodeURIComponent(turnId)}/stop`;
    const answer = await this.#call('POST', path, undefined, [404]);
    if (answer.status === 404) return 'not-found';
    return answer.status === 202 ? 'requested' : 'already-ended';
  }

  async send(sessionId: string, input: unknown, options: SendOptions = {}): Promise<Sent> {
    const body = { input, id: options.id, mode: options.mode, ifLastTurn: options.ifLastTurn };
    return (await this.#refusable(`/sessions/${encodeURIComponent(sessionId)}/send`, body)) as Sent;
  }

  async approve(
    sessionId: string,
    call: string | CallRef,
    decision: { approved: boolean; reason?: string },
  ): Promise<CallIdentity> {
    const body = { ...callRef(call), ...decision };
    return namedCall(await this.#refusable(`/sessions/${encodeURIComponent(sessionId)}/approve`, body));
  }

  async resolve(
    sessionId: string,
    call: string | ParkedRef,
    verdict: { done: boolean; output?: unknown },
  ): Promise<CallIdentity> {
    const body = { ...callRef(call), ...parkOf(call), ...verdict };
    return namedCall(await this.#refusable(`/sessions/${encodeURIComponent(sessionId)}/resolve`, body));
  }

  async tasks(sessionId: string): Promise<TaskInfo[]> {
    const answer = await this.#call('GET', `/sessions/${encodeURIComponent(sessionId)}/tasks`, undefined, [404]);
    if (answer.status === 404) throw new TurnRefusedError('not-found', `session ${sessionId} not found`);
    return (answer.json as { tasks: TaskInfo[] }).tasks;
  }

  /**
   * One request waits up to 20 s; while the release is not carried out, it is asked for again (the
   * first mark stands, so each request waits for the same release) until its bound and a grace.
   */
  async release(sessionId: string, options: ReleaseOptions = {}): Promise<ReleaseOutcome> {
    const path = `/sessions/${encodeURIComponent(sessionId)}/release`;
    const body = { cancel: options.cancel, timeoutS: options.timeoutS };
    const timeoutMs = (options.timeoutS ?? DEFAULT_RELEASE_TIMEOUT_S) * 1000;
    const deadline = Date.now() + (options.waitMs ?? timeoutMs + RELEASE_GRACE_MS);
    const cancelled = new Set<string>();
    for (;;) {
      const outcome = (await this.#refusable(path, body)) as ReleaseOutcome;
      for (const taskId of outcome.cancelled) cancelled.add(taskId);
      if (outcome.released || Date.now() >= deadline) return { ...outcome, cancelled: [...cancelled] };
      // A request that answered early (the holder's own bound has passed) is not repeated at once.
      await new Promise((resolve) => setTimeout(resolve, RELEASE_RETRY_MS));
    }
  }

  /** A POST whose refusals come back as TurnRefusedError, as from the store-backed client. */
  async #refusable(path: string, body: unknown): Promise<unknown> {
    try {
      return (await this.#call('POST', path, body)).json;
    } catch (error) {
      const reason = error instanceof ApiCallError ? REFUSALS[error.code] : undefined;
      if (reason !== undefined) throw new TurnRefusedError(reason, (error as ApiCallError).message);
      throw error;
    }
  }

  async #call(
    method: string,
    path: string,
    body?: unknown,
    expected: number[] = [],
    signal?: AbortSignal,
    headers: Record<string, string> = {},
  ) {
    const url = `${this.#base}${path}`;
    const response = await this.#fetch(url, {
      method,
      headers: {
        ...this.#headers,
        ...headers,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(signal === undefined ? {} : { signal }),
    }).catch((error: unknown) => {
      if (signal?.aborted) throw error;
      // fetch says only "fetch failed": the address and the cause are what a caller can act on.
      const cause = (error as { cause?: { message?: string } }).cause?.message ?? (error as Error).message;
      throw new Error(`cannot reach the Baton API at ${this.#base} (${method} ${url}): ${cause}`, { cause: error });
    });
    const text = await response.text();
    const json = () => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return undefined;
      }
    };
    if (!response.ok && !expected.includes(response.status)) {
      const error = (json() as { error?: { code?: string; message?: string } } | undefined)?.error;
      throw new ApiCallError(response.status, error?.code ?? 'http_error', error?.message ?? `HTTP ${response.status}`);
    }
    return {
      status: response.status,
      text,
      json: response.headers.get('content-type')?.includes('json') ? json() : undefined,
    };
  }
}
