/** The stable error codes of the HTTP API: clients branch on `code`, never on the message. */
export const ApiErrorCode = {
  invalidRequest: 'invalid_request',
  tenantRequired: 'tenant_required',
  unauthenticated: 'unauthenticated',
  forbidden: 'forbidden',
  /** The caller may see the tenant but lacks the role the operation needs; the message names it. */
  missingRole: 'missing_role',
  notFound: 'not_found',
  methodNotAllowed: 'method_not_allowed',
  /** A body (or a declared type) that is not `application/json`. */
  unsupportedMediaType: 'unsupported_media_type',
  alreadyFinished: 'already_finished',
  /** A further turn sent to a one-shot session. */
  notAConversation: 'not_a_conversation',
  /** `ifLastTurn` names a turn that is no longer the last one accepted: read the session again. */
  staleTurn: 'stale_turn',
  /** Too many turns or messages already wait for the session. */
  tooManyPending: 'too_many_pending',
  /** The caller holds as many open event streams as one caller may; the message names the bound. */
  tooManyStreams: 'too_many_streams',
  /** The session was released (`baton release`): it takes no further input. */
  released: 'released',
  /** A release without cancel (`--no-cancel`) of a session whose tasks still run. */
  tasksRunning: 'tasks_running',
  internal: 'internal',
} as const;
export type ApiErrorCode = (typeof ApiErrorCode)[keyof typeof ApiErrorCode];

/** The HTTP status of each code. */
export const API_ERROR_STATUS: Record<ApiErrorCode, number> = {
  invalid_request: 400,
  tenant_required: 400,
  unauthenticated: 401,
  forbidden: 403,
  missing_role: 403,
  not_found: 404,
  method_not_allowed: 405,
  unsupported_media_type: 415,
  already_finished: 409,
  not_a_conversation: 409,
  stale_turn: 409,
  too_many_pending: 429,
  too_many_streams: 429,
  released: 409,
  tasks_running: 409,
  internal: 500,
};

/** An error the API answers with `{ error: { code, message } }` and the code's status. */
export class ApiError extends Error {
  constructor(
    readonly code: ApiErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  get status(): number {
    return API_ERROR_STATUS[this.code];
  }
}
