import type { ZodType } from 'zod';
import { InvalidInputError } from '../core/errors.ts';
import { NAME_PATTERN } from '../core/ids.ts';
import type { ModelClient } from '../ports/model-client.ts';
import type { AnyTool } from './define-tool.ts';
import type { RetryPolicy } from './retry-policy.ts';

export interface AgentLimits {
  /** Model calls plus tool results per turn; past it the turn fails. */
  readonly maxSteps: number;
  /** Consecutive recoveries without progress before the turn fails as a crash loop. */
  readonly maxRecoveries: number;
  /** Largest payload (input, model response, tool result) in bytes; larger fails the step. */
  readonly maxPayloadBytes: number;
}

export const DEFAULT_LIMITS: AgentLimits = { maxSteps: 200, maxRecoveries: 5, maxPayloadBytes: 8 * 1024 * 1024 };

export interface AgentDefinition {
  readonly name: string;
  /** The system prompt. Always from code, never from stored state. */
  readonly instructions: string;
  readonly model: ModelClient;
  readonly tools: readonly AnyTool[];
  readonly limits: AgentLimits;
  readonly retry?: Partial<RetryPolicy> | undefined;
  /** Validates the ticket input; an invalid input fails the ticket at intake with this schema's message. */
  readonly input?: ZodType | undefined;
  /** A structured result: the final answer is parsed as JSON and validated; a mismatch fails the turn. */
  readonly output?: ZodType | undefined;
}

export interface DefineAgentOptions extends Omit<AgentDefinition, 'limits' | 'tools'> {
  readonly tools?: readonly AnyTool[];
  readonly limits?: Partial<AgentLimits>;
}

/**
 * Declares an agent. A step that could never fit in one invocation is refused here, not at run time.
 * @example defineAgent({ name: 'order-investigator', instructions, model: scriptedModel(script), tools })
 */
export function defineAgent(options: DefineAgentOptions): AgentDefinition {
  if (!NAME_PATTERN.test(options.name))
    throw new InvalidInputError(`agent name "${options.name}" must match ${NAME_PATTERN}`);
  const tools = options.tools ?? [];
  const names = new Set<string>();
  for (const tool of tools) {
    if (names.has(tool.name))
      throw new InvalidInputError(`agent ${options.name}: tool "${tool.name}" is defined twice`);
    names.add(tool.name);
  }
  return { ...options, tools, limits: { ...DEFAULT_LIMITS, ...options.limits } };
}

/**
 * Refuses an agent whose model or tool maximum cannot fit in one invocation's budget
 * (timeout − reserve − leg overhead). Called by the runtime's registry with the deployed timeout.
 */
export function assertFitsBudget(agent: AgentDefinition, fits: (maxDurationMs: number) => boolean): void {
  const steps = [
    { what: `model ${agent.model.id}`, ms: agent.model.maxDurationMs },
    ...agent.tools.map((t) => ({ what: `tool ${t.name}`, ms: t.maxDurationMs })),
  ];
  for (const step of steps) {
    if (!fits(step.ms)) {
      throw new InvalidInputError(
        `agent ${agent.name}: ${step.what} may take ${step.ms} ms, which cannot fit in the invocation budget`,
      );
    }
  }
}

/** The agents a deployment hosts, by name. */
export type AgentRegistry = ReadonlyMap<string, AgentDefinition>;

export function agentRegistry(agents: readonly AgentDefinition[]): AgentRegistry {
  const registry = new Map<string, AgentDefinition>();
  for (const agent of agents) {
    if (registry.has(agent.name)) throw new InvalidInputError(`agent "${agent.name}" is registered twice`);
    registry.set(agent.name, agent);
  }
  return registry;
}
