/**
 * `@baton-run/baton/client`: the typed client for a deployed stack (its HTTP API, signed with SigV4) or the
 * local one, with nothing of the runtime, the CDK or the local stack loaded.
 */

export { InvalidInputError, NotFoundError, TurnRefusedError } from '../core/errors.ts';
export { ApiCallError, HttpBatonClient, type HttpBatonClientOptions } from './http-baton-client.ts';
export { type FetchAnswer, type FetchInit, type FetchLike, nodeHttpFetch } from './node-http-fetch.ts';
export { functionUrlRegion, sigv4Fetch } from './sigv4-fetch.ts';
export type {
  BatonTransport,
  CancelResult,
  EventsOptions,
  FollowEvent,
  ModelTextEvent,
  SendMode,
  SendOptions,
  Sent,
  SessionEvent,
  SessionListItem,
  SessionListPage,
  SessionListQuery,
  SessionStatus,
  SubmitRequest,
  Submitted,
  TaskInfo,
} from './transport.ts';
export { type AwaitTurnOptions, awaitTurnOutcome, DEFAULT_APPEAR_WITHIN_MS, type TurnEnding } from './turn-outcome.ts';
export {
  type AgentInput,
  type AgentOutput,
  type AgentRef,
  agentRef,
  createClient,
  type Run,
  type RunOutcome,
  type StartOptions,
  TypedClient,
  type TypedClientOptions,
} from './typed-client.ts';
