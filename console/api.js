/** The console's view of the HTTP API: JSON over fetch, errors as ApiError with the API's stable code. */

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

let basePromise;

/** The API's base address: config.json next to the page says where it is (`/api` under `baton dev`). */
export function apiBase() {
  basePromise ??= fetch('/config.json')
    .then((r) => (r.ok ? r.json() : {}))
    .then((c) => (c.apiBase ?? '/api').replace(/\/$/, ''))
    .catch(() => '/api');
  return basePromise;
}

async function call(method, path, body) {
  const base = await apiBase();
  const response = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const payload = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = payload.error ?? { code: 'internal', message: `HTTP ${response.status}` };
    throw new ApiError(response.status, error.code, error.message);
  }
  return payload;
}

let callerPromise;

/**
 * Who the API takes this console's user for (GET /me): the console offers only the operations
 * its roles allow. A caller the API refuses (no token) has none.
 */
export function whoAmI() {
  callerPromise ??= call('GET', '/me').catch(() => ({ roles: [] }));
  return callerPromise;
}

export const listSessions = (query) => {
  const params = new URLSearchParams(Object.entries(query).filter(([, v]) => v !== undefined && v !== ''));
  return call('GET', `/sessions?${params}`);
};
export const getSession = (id) => call('GET', `/sessions/${encodeURIComponent(id)}`);
export const submitTicket = (ticket) => call('POST', '/sessions', ticket);
export const cancelSession = (id) => call('POST', `/sessions/${encodeURIComponent(id)}/cancel`);
/** Stops one turn of a conversation (running or queued); the conversation goes on. */
export const stopTurn = (id, turnId) =>
  call('POST', `/sessions/${encodeURIComponent(id)}/turns/${encodeURIComponent(turnId)}/stop`);
export const sessionTasks = (id) => call('GET', `/sessions/${encodeURIComponent(id)}/tasks`);
/** One release request: the API waits up to 20 s; `released: false` means ask again. */
export const releaseSession = (id, options = {}) =>
  call('POST', `/sessions/${encodeURIComponent(id)}/release`, options);
/** A further turn (`queue`), a message into the running turn (`inject`) or a turn that supersedes it (`steer`). */
export const sendInput = (id, body) => call('POST', `/sessions/${encodeURIComponent(id)}/send`, body);
export const approveCall = (id, body) => call('POST', `/sessions/${encodeURIComponent(id)}/approve`, body);
export const resolveCall = (id, body) => call('POST', `/sessions/${encodeURIComponent(id)}/resolve`, body);
/** A fork at a journal cursor (`at`), with a new `text` there or going on with the turn, and its `effects`. */
export const forkSession = (id, body) => call('POST', `/sessions/${encodeURIComponent(id)}/fork`, body);

/** The event stream's address: EventSource resumes it with Last-Event-ID by itself. */
export const eventsUrl = async (id) => `${await apiBase()}/sessions/${encodeURIComponent(id)}/events`;
