import type { AgentDefinition } from '../agent/define-agent.ts';
import type { AnyTool, ReconcileVerdict, ToolContext } from '../agent/define-tool.ts';
import { InvalidInputError } from '../core/errors.ts';
import type { ModelClient, ModelRequest } from '../ports/model-client.ts';
import { type ModelMock, type ModelScript, modelFromScript } from './model-mock.ts';

/** One call a mocked tool received. */
export interface ToolCallRecord<I = unknown> {
  readonly input: I;
  readonly idempotencyKey: string;
  readonly sessionId: string;
}

/** What replaces a tool: its `run` (and, for a once-only tool, its `reconcile`); schema, effect and approval rules stay. */
export type ToolMockImpl<I> =
  | ((input: I, ctx: ToolContext) => unknown)
  | {
      readonly run?: ((input: I, ctx: ToolContext) => unknown) | undefined;
      readonly reconcile?:
        | ((idempotencyKey: string, input: I, signal: AbortSignal) => Promise<ReconcileVerdict>)
        | undefined;
    };

/** A tool replaced for one agent: the calls it received, in order. */
export interface ToolMock<I = unknown> {
  readonly calls: readonly ToolCallRecord<I>[];
  /** Puts the tool's own implementation back. */
  restore(): void;
}

/** What the doubles tell the harness about each call they make. */
export interface DoubleHooks {
  /** Before a tool runs (the harness's ledger of executions). */
  beforeTool(tool: AnyTool, ctx: ToolContext): Promise<void>;
  /** Around a model or tool call: the harness does not skip time while one is in flight. */
  during<T>(call: () => Promise<T>): Promise<T>;
}

interface ToolOverride {
  readonly run?: ((input: unknown, ctx: ToolContext) => unknown) | undefined;
  readonly reconcile?: AnyTool['reconcile'];
}

/**
 * The agents as the harness's runtime sees them: each model and tool call passes through the
 * hooks, and a test may replace a model or a tool's implementation. The registry is live: a mock
 * set between two actions is what the next leg uses.
 */
export class AgentDoubles {
  readonly registry = new Map<string, AgentDefinition>();
  readonly #originals = new Map<string, AgentDefinition>();
  readonly #models = new Map<string, ModelClient>();
  readonly #tools = new Map<string, Map<string, ToolOverride>>();

  constructor(
    agents: Iterable<AgentDefinition>,
    private readonly hooks: DoubleHooks,
  ) {
    for (const agent of agents) {
      if (this.#originals.has(agent.name)) throw new InvalidInputError(`agent "${agent.name}" is given twice`);
      this.#originals.set(agent.name, agent);
      this.#rebuild(agent.name);
    }
  }

  mockModel(agent: string, script: ModelScript): ModelMock {
    const original = this.#agent(agent);
    const calls: ModelRequest[] = [];
    const model = modelFromScript(agent, script, original.model.maxDurationMs, calls);
    this.#models.set(agent, model);
    this.#rebuild(agent);
    return {
      calls,
      restore: () => {
        if (this.#models.get(agent) !== model) return;
        this.#models.delete(agent);
        this.#rebuild(agent);
      },
    };
  }

  mockTool<I>(agent: string, tool: string, impl: ToolMockImpl<I>): ToolMock<I> {
    const original = this.#agent(agent);
    const definition = original.tools.find((t) => t.name === tool);
    if (definition === undefined)
      throw new InvalidInputError(
        `agent ${agent} has no tool "${tool}" (its tools: ${original.tools.map((t) => t.name).join(', ') || 'none'})`,
      );
    const given = typeof impl === 'function' ? { run: impl } : impl;
    if (given.reconcile !== undefined && definition.effect !== 'once')
      throw new InvalidInputError(
        `tool ${tool} of agent ${agent} is ${definition.effect}: only a once-only tool reconciles`,
      );
    const calls: ToolCallRecord<I>[] = [];
    const run = given.run;
    const override: ToolOverride = {
      run:
        run === undefined
          ? undefined
          : async (input, ctx) => {
              calls.push({ input: input as I, idempotencyKey: ctx.idempotencyKey, sessionId: ctx.sessionId });
              return run(input as I, ctx);
            },
      reconcile: given.reconcile as AnyTool['reconcile'],
    };
    const tools = this.#tools.get(agent) ?? new Map<string, ToolOverride>();
    tools.set(tool, override);
    this.#tools.set(agent, tools);
    this.#rebuild(agent);
    return {
      calls,
      restore: () => {
        if (this.#tools.get(agent)?.get(tool) !== override) return;
        this.#tools.get(agent)?.delete(tool);
        this.#rebuild(agent);
      },
    };
  }

  #agent(name: string): AgentDefinition {
    const agent = this.#originals.get(name);
    if (agent === undefined)
      throw new InvalidInputError(
        `no agent "${name}" in this test baton (agents: ${[...this.#originals.keys()].join(', ')})`,
      );
    return agent;
  }

  /** The agent as the runtime gets it: mocks in place, every call through the hooks. */
  #rebuild(name: string): void {
    const original = this.#agent(name);
    const model = this.#models.get(name) ?? original.model;
    const overrides = this.#tools.get(name);
    const { hooks } = this;
    this.registry.set(name, {
      ...original,
      model: {
        id: model.id,
        maxDurationMs: model.maxDurationMs,
        converse: (request, signal, stream) => hooks.during(() => model.converse(request, signal, stream)),
      },
      tools: original.tools.map((tool): AnyTool => {
        const override = overrides?.get(tool.name);
        const run = override?.run ?? ((input: unknown, ctx: ToolContext) => tool.run(input, ctx));
        const reconcile = override?.reconcile ?? tool.reconcile;
        return {
          ...tool,
          run: async (input, ctx) => {
            await hooks.beforeTool(tool, ctx);
            return hooks.during(async () => run(input, ctx));
          },
          ...(reconcile === undefined
            ? {}
            : { reconcile: (key, input, signal) => hooks.during(() => reconcile(key, input, signal)) }),
        };
      }),
    });
  }
}
