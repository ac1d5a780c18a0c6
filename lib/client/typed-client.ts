import type { AGENT_TYPES, AgentTypes } from '../agent/define-agent.ts';
import { InvalidInputError } from '../core/errors.ts';
import type { OutcomeStatus } from '../core/vocabulary.ts';
import { HttpBatonClient, type HttpBatonClientOptions } from './http-baton-client.ts';
import type { BatonTransport, SendOptions, Sent, Submitted } from './transport.ts';
import { type AwaitTurnOptions, awaitTurnOutcome } from './turn-outcome.ts';

/**
 * What names an agent to the typed client and carries its types: the agent's definition itself,
 * or `agentRef<typeof myAgent>('my-agent')` where the caller imports the agent's type only.
 */
export interface AgentRef<Input = unknown, Output = unknown> {
  readonly name: string;
  readonly [AGENT_TYPES]?: AgentTypes<Input, Output>;
}

/** The input a turn of `A` takes (`unknown` for an agent named by string, or one without an input schema). */
export type AgentInput<A> = A extends { readonly [AGENT_TYPES]?: AgentTypes<infer I, unknown> } ? I : unknown;
/** What a completed turn of `A` answers: its output schema's type, or the final text without one. */
export type AgentOutput<A> = A extends { readonly [AGENT_TYPES]?: AgentTypes<unknown, infer O> } ? O : unknown;

/**
 * A name with the types of agent `A`, for a caller that should not load the agent (its model and
 * tools) just to call it: import its type only.
 * @example const desk = agentRef<typeof supportDesk>('support-desk');
 */
export function agentRef<A>(name: string): AgentRef<AgentInput<A>, AgentOutput<A>> {
  return { name };
}

/** How a turn ended, with the output typed by its agent. */
export type RunOutcome<Output> =
  | {
      readonly status: typeof OutcomeStatus.completed;
      readonly sessionId: string;
      readonly turnId: string;
      readonly output: Output;
    }
  | {
      /** `superseded`: a steered turn took its place (its work stays in the transcript). */
      readonly status: Exclude<OutcomeStatus, typeof OutcomeStatus.completed>;
      readonly sessionId: string;
      readonly turnId: string;
      /** Why it failed or was cancelled. */
      readonly error?: string | undefined;
    };

/** A turn started by `start` or `send`: where it is, and a wait for its outcome; typed by its agent. */
export interface Run<Output = unknown, Input = unknown> {
  /** Type-only: the agent's types, so `send(run, input)` checks the input against the same agent. */
  readonly [AGENT_TYPES]?: AgentTypes<Input, Output>;
  readonly sessionId: string;
  readonly turnId: string;
  readonly agent: string;
  /**
   * Waits for the turn's outcome, however many legs, recoveries and approvals it takes.
   * Rejects when `signal` aborts, or when the turn does not appear within `appearWithinMs`.
   */
  result(options?: AwaitTurnOptions): Promise<RunOutcome<Output>>;
}

export interface StartOptions {
  /** The ticket id (the first turn's id): starting again with the same id converges on the same session. */
  readonly ticketId?: string | undefined;
  readonly tenant?: string | undefined;
}

export type TypedClientOptions =
  /** A deployed stack's HTTP API (signed with SigV4 when it is a function URL), or `baton dev`'s. */
  | HttpBatonClientOptions
  /** Any client of the operations: the store-backed BatonClient, or an HttpBatonClient already built. */
  | { readonly transport: BatonTransport };

/**
 * A client typed by the agents it calls: `start(agent, input)` accepts only the agent's input and
 * its `result()` answers the agent's output type. Naming an agent by string also works, untyped.
 * Every other operation (status, events, cancel, approve …) is on `transport`.
 * @example
 * const baton = createClient({ baseUrl: 'https://abc.lambda-url.eu-west-1.on.aws' });
 * const run = await baton.start(supportDesk, { text: 'where is my order?' });
 * const outcome = await run.result();
 * if (outcome.status === 'completed') console.log(outcome.output);
 */
export class TypedClient {
  readonly transport: BatonTransport;

  constructor(options: TypedClientOptions) {
    this.transport = 'transport' in options ? options.transport : new HttpBatonClient(options);
  }

  /**
   * Starts a session of `agent` with its first turn. An input the agent refuses, or an agent the
   * deployment does not host, throws here (InvalidInputError) when the transport knows the agents
   * (the API always does), before anything is queued.
   */
  start<A extends AgentRef>(
    agent: A,
    input: AgentInput<A>,
    options?: StartOptions,
  ): Promise<Run<AgentOutput<A>, AgentInput<A>>>;
  start(agent: string, input: unknown, options?: StartOptions): Promise<Run<unknown>>;
  async start(agent: AgentRef | string, input: unknown, options: StartOptions = {}): Promise<Run<unknown>> {
    const name = agentName(agent);
    const submitted: Submitted = await this.transport.submit({
      agent: name,
      input,
      ticketId: options.ticketId,
      tenant: options.tenant,
    });
    return this.#run(submitted.sessionId, submitted.ticketId, name);
  }

  /**
   * Sends a further turn to a conversation started by `start` (typed by its agent), or to a session
   * named by id (untyped). A message into the running turn (`mode: 'inject'`) has no outcome of its
   * own: its run's `result()` is the running turn's.
   */
  send<R extends Run>(run: R, input: AgentInput<R>, options?: SendOptions): Promise<Run<AgentOutput<R>, AgentInput<R>>>;
  send(sessionId: string, input: unknown, options?: SendOptions): Promise<Run<unknown>>;
  async send(target: Run<unknown> | string, input: unknown, options: SendOptions = {}): Promise<Run<unknown>> {
    const sessionId = typeof target === 'string' ? target : target.sessionId;
    const sent: Sent = await this.transport.send(sessionId, input, options);
    const agent = typeof target === 'string' ? ((await this.transport.status(sessionId))?.agent ?? '') : target.agent;
    return this.#run(sessionId, await turnAnswering(this.transport, sent), agent);
  }

  #run(sessionId: string, turnId: string, agent: string): Run<unknown> {
    const transport = this.transport;
    return {
      sessionId,
      turnId,
      agent,
      async result(options) {
        const ending = await awaitTurnOutcome(transport, sessionId, turnId, options);
        if (ending.status === 'completed') return { status: 'completed', sessionId, turnId, output: ending.output };
        return {
          status: ending.status,
          sessionId,
          turnId,
          ...(ending.error === undefined ? {} : { error: ending.error }),
        };
      },
    };
  }
}

/**
 * The turn whose outcome answers a sent input: its own turn, or for a message that landed in the
 * running turn (`inject`), that turn.
 */
export async function turnAnswering(transport: BatonTransport, sent: Sent): Promise<string> {
  if (sent.mode !== 'inject') return sent.turnId;
  return (await transport.status(sent.sessionId))?.activeTurnId ?? sent.turnId;
}

/** A typed client over a deployed stack's API, `baton dev`'s, or any transport. */
export function createClient(options: TypedClientOptions): TypedClient {
  return new TypedClient(options);
}

function agentName(agent: AgentRef | string): string {
  const name = typeof agent === 'string' ? agent : agent?.name;
  if (typeof name !== 'string' || name === '')
    throw new InvalidInputError('start needs an agent: its definition, an agentRef, or its name');
  return name;
}
