import type { ZodType, z } from 'zod';
import { MAX_CLOCK_SKEW_MS, onceOnlyCanEverFit, stepCanEverFit } from '../core/budget.ts';
import { InvalidInputError } from '../core/errors.ts';
import { NAME_PATTERN } from '../core/ids.ts';
import { describeIssues } from '../core/messages.ts';
import { type PriceTable, type SpendLimits, SpendLimitsSchema } from '../core/spend.ts';
import { TASK_TOOL_NAMES } from '../core/tasks.ts';
import { UpgradePolicy } from '../core/vocabulary.ts';
import type { ModelClient } from '../ports/model-client.ts';
import {
  type CompactionOptions,
  DEFAULT_COMPACTION_KEEP_RATIO,
  DEFAULT_COMPACTION_THRESHOLD_RATIO,
} from './compaction.ts';
import type { AnyTool } from './define-tool.ts';
import { assertKnownOptions, isSchema } from './definition-checks.ts';
import type { RetryPolicy } from './retry-policy.ts';

export interface AgentLimits extends SpendLimits {
  /** Model calls plus tool results per turn; past it the turn fails. */
  readonly maxSteps: number;
  /** Consecutive recoveries without progress before the turn fails as a crash loop. */
  readonly maxRecoveries: number;
  /** Largest payload (input, model response, tool result) in bytes; larger fails the step. */
  readonly maxPayloadBytes: number;
}

export const DEFAULT_LIMITS: AgentLimits = { maxSteps: 200, maxRecoveries: 5, maxPayloadBytes: 8 * 1024 * 1024 };

/**
 * Where an agent's types travel: the input a turn takes and the output a completed turn carries.
 * Never set at run time (a type-only marker): a definition stays a plain object, and an agent
 * typed with any input and output still fits a registry of `AgentDefinition`s.
 */
export declare const AGENT_TYPES: unique symbol;

/** The input and output types an agent definition carries (see AgentInput and AgentOutput). */
export interface AgentTypes<Input, Output> {
  readonly input: Input;
  readonly output: Output;
}

/**
 * An agent as a definition: its name, model, instructions, tools and limits. `Input` and `Output`
 * are its turns' input and a completed turn's output, inferred by defineAgent from its schemas.
 */
export interface AgentDefinition<Input = unknown, Output = unknown> {
  /** Type-only: the input and output types the typed client reads (never present at run time). */
  readonly [AGENT_TYPES]?: AgentTypes<Input, Output>;
  readonly name: string;
  /**
   * Its version, a positive integer (1 when absent). A registry may hold several versions of one
   * agent; a session records the version it started on (lib/agent/agent-versions.ts).
   */
  readonly version?: number | undefined;
  /** How its sessions move to a newer version (`at-turn` when absent); the newest version's policy rules. */
  readonly upgrade?: UpgradePolicy | undefined;
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
  /** Its sessions take further turns and go idle between them; otherwise a session is one turn. */
  readonly conversation?: boolean | undefined;
  /**
   * The agents it may start as background tasks: the model gets the task tools (start_task,
   * wait_tasks, get_task, list_tasks, continue_task, clear_task, cancel_task).
   */
  readonly delegates?: readonly string[] | undefined;
  /** How long one wait_tasks call waits at most (the host's bound; the model cannot change it). Default 10 minutes. */
  readonly taskWaitTimeoutMs?: number | undefined;
  /**
   * The context window in tokens; the model adapter's when absent. With a window, the transcript
   * is compacted before a call that would pass its threshold (`compaction`); without, never.
   */
  readonly contextWindowTokens?: number | undefined;
  /** How the transcript is compacted (threshold, what is kept, the summarizer). */
  readonly compaction?: CompactionOptions | undefined;
  /** US dollars per million tokens by model id: the cost journaled with each model call and shown by status. */
  readonly prices?: PriceTable | undefined;
}

/** A wait_tasks call returns after this long at most unless the agent sets its own bound. */
export const DEFAULT_TASK_WAIT_TIMEOUT_MS = 10 * 60_000;

export interface DefineAgentOptions extends Omit<AgentDefinition, 'limits' | 'tools' | typeof AGENT_TYPES> {
  readonly tools?: readonly AnyTool[];
  readonly limits?: Partial<AgentLimits>;
}

/** Every option of defineAgent (the compiler keeps the list whole): another is a typo, refused at definition. */
const AGENT_OPTIONS = Object.keys({
  name: true,
  version: true,
  upgrade: true,
  instructions: true,
  model: true,
  tools: true,
  limits: true,
  retry: true,
  input: true,
  output: true,
  conversation: true,
  delegates: true,
  taskWaitTimeoutMs: true,
  contextWindowTokens: true,
  compaction: true,
  prices: true,
} satisfies Record<keyof DefineAgentOptions, true>);

/** A turn's input as the caller writes it: what the input schema accepts (anything without one). */
export type InputOfSchema<S> = S extends ZodType ? z.input<S> : unknown;
/** A completed turn's output: what the output schema parses to, or the final answer's text without one. */
export type OutputOfSchema<S> = S extends ZodType ? z.output<S> : string;

/**
 * Declares an agent. A step that could never fit in one invocation is refused here, not at run time.
 * @example defineAgent({ name: 'order-investigator', instructions, model: scriptedModel(script), tools })
 */
export function defineAgent<In extends ZodType | undefined = undefined, Out extends ZodType | undefined = undefined>(
  options: DefineAgentOptions & { readonly input?: In; readonly output?: Out },
): AgentDefinition<InputOfSchema<In>, OutputOfSchema<Out>> {
  if (!NAME_PATTERN.test(options.name))
    throw new InvalidInputError(`agent name "${options.name}" must match ${NAME_PATTERN}`);
  checkShape(options);
  if (options.version !== undefined && !(Number.isInteger(options.version) && options.version > 0))
    throw new InvalidInputError(`agent ${options.name}: version must be a positive integer, got ${options.version}`);
  const policies = Object.values(UpgradePolicy) as string[];
  if (options.upgrade !== undefined && !policies.includes(options.upgrade))
    throw new InvalidInputError(
      `agent ${options.name}: upgrade policy "${options.upgrade}" is not one of ${policies.join(', ')}`,
    );
  const tools = options.tools ?? [];
  const names = new Set<string>();
  for (const tool of tools) {
    if (names.has(tool.name))
      throw new InvalidInputError(`agent ${options.name}: tool "${tool.name}" is defined twice`);
    names.add(tool.name);
  }
  if (options.delegates !== undefined) {
    const builtIn = tools.find((t) => TASK_TOOL_NAMES.has(t.name));
    if (builtIn)
      throw new InvalidInputError(
        `agent ${options.name}: tool "${builtIn.name}" is a built-in task tool of delegating agents`,
      );
    const bad = options.delegates.find((d) => !NAME_PATTERN.test(d));
    if (bad !== undefined) throw new InvalidInputError(`agent ${options.name}: delegate "${bad}" is not an agent name`);
  }
  checkContextOptions(options);
  const spend = SpendLimitsSchema.safeParse(spendPart(options.limits ?? {}));
  if (!spend.success) throw new InvalidInputError(`agent ${options.name}: limits: ${describeIssues(spend.error)}`);
  return { ...options, tools, limits: { ...DEFAULT_LIMITS, ...options.limits } };
}

/**
 * What the compiler would check, checked again: an agents module runs with its types stripped, and a
 * missing model would otherwise surface as "cannot read properties of undefined" in the first leg.
 */
function checkShape(options: DefineAgentOptions): void {
  const where = `agent ${options.name}`;
  assertKnownOptions(where, options, AGENT_OPTIONS);
  if (typeof options.instructions !== 'string')
    throw new InvalidInputError(`${where}: instructions must be a string (the system prompt)`);
  const model = options.model as Partial<ModelClient> | undefined;
  if (typeof model?.converse !== 'function' || typeof model.id !== 'string' || !(Number(model.maxDurationMs) > 0))
    throw new InvalidInputError(
      `${where}: model must be a model client with an id, a positive maxDurationMs and converse() (scriptedModel, BedrockModelClient, AiSdkModelClient), got ${model === undefined ? 'none' : typeof model}`,
    );
  if (options.tools !== undefined && !Array.isArray(options.tools))
    throw new InvalidInputError(`${where}: tools must be an array of tools (defineTool)`);
  const notTool = (options.tools ?? []).findIndex(
    (t) => typeof t?.name !== 'string' || typeof (t as { run?: unknown }).run !== 'function',
  );
  if (notTool >= 0) throw new InvalidInputError(`${where}: tools[${notTool}] is not a tool (make it with defineTool)`);
  for (const key of ['input', 'output'] as const) {
    if (options[key] !== undefined && !isSchema(options[key]))
      throw new InvalidInputError(
        `${where}: ${key} must be a zod schema (z.object({ … })), got ${typeof options[key]}`,
      );
  }
}

/** The spend limits among an agent's limits. */
function spendPart(limits: Partial<AgentLimits>): SpendLimits {
  const { maxTokensPerTurn, maxCostPerSession, maxModelCallsPerTurn, onBudget } = limits;
  return Object.fromEntries(
    Object.entries({ maxTokensPerTurn, maxCostPerSession, maxModelCallsPerTurn, onBudget }).filter(
      ([, v]) => v !== undefined,
    ),
  );
}

function checkContextOptions(options: DefineAgentOptions): void {
  const window = options.contextWindowTokens;
  if (window !== undefined && !(Number.isInteger(window) && window > 0))
    throw new InvalidInputError(`agent ${options.name}: contextWindowTokens must be a positive integer, not ${window}`);
  const threshold = options.compaction?.thresholdRatio ?? DEFAULT_COMPACTION_THRESHOLD_RATIO;
  const keep = options.compaction?.keepRatio ?? DEFAULT_COMPACTION_KEEP_RATIO;
  if (!(threshold > 0 && threshold <= 1))
    throw new InvalidInputError(`agent ${options.name}: compaction.thresholdRatio must be in (0, 1], not ${threshold}`);
  if (!(keep > 0 && keep < threshold))
    throw new InvalidInputError(
      `agent ${options.name}: compaction.keepRatio must be above 0 and below the threshold ratio ${threshold}, not ${keep}`,
    );
  for (const [model, price] of Object.entries(options.prices ?? {})) {
    const ok = [price.inputPerMillionTokens, price.outputPerMillionTokens].every((n) => Number.isFinite(n) && n >= 0);
    if (!ok) throw new InvalidInputError(`agent ${options.name}: prices.${model} must be two non-negative numbers`);
  }
}

/** The context window an agent's compaction works with: its own, else its model adapter's. */
export const contextWindowOf = (agent: AgentDefinition): number | undefined =>
  agent.contextWindowTokens ?? agent.model.contextWindowTokens;

/** The model that writes an agent's summaries. */
export const summarizerOf = (agent: AgentDefinition): ModelClient => agent.compaction?.summarizer ?? agent.model;

/** The deployment's durations that every step must fit in. */
export interface BudgetLimits {
  readonly functionTimeoutMs: number;
  readonly reserveMs: number;
  readonly leaseTtlMs: number;
}

/**
 * Refuses an agent whose model or tool maximum cannot fit in one invocation's budget
 * (timeout − reserve − leg overhead), or a once-only tool the lease could never outlive.
 * Functions call it at cold start with their deployed durations, so the error shows at deploy.
 */
export function assertFitsBudget(agent: AgentDefinition, limits: BudgetLimits): void {
  const summarizer = agent.compaction?.summarizer;
  const steps = [
    { what: `model ${agent.model.id}`, ms: agent.model.maxDurationMs },
    ...(summarizer ? [{ what: `summarizer ${summarizer.id}`, ms: summarizer.maxDurationMs }] : []),
    ...agent.tools.map((t) => ({ what: `tool ${t.name}`, ms: t.maxDurationMs })),
  ];
  for (const step of steps) {
    if (!stepCanEverFit(step.ms, limits.functionTimeoutMs, limits.reserveMs)) {
      throw new InvalidInputError(
        `agent ${agent.name}: ${step.what} may take ${step.ms} ms, which cannot fit in a ${limits.functionTimeoutMs} ms invocation less its ${limits.reserveMs} ms reserve`,
      );
    }
  }
  for (const tool of agent.tools.filter((t) => t.effect === 'once')) {
    if (!onceOnlyCanEverFit(tool.maxDurationMs, limits.leaseTtlMs)) {
      throw new InvalidInputError(
        `agent ${agent.name}: once-only tool ${tool.name} may take ${tool.maxDurationMs} ms, which a ${limits.leaseTtlMs} ms lease cannot outlive (with ${MAX_CLOCK_SKEW_MS} ms clock skew)`,
      );
    }
  }
}

/**
 * The agents a deployment hosts, by name: each name maps to its newest version. The older
 * versions it holds are read through `agentVersions` (lib/agent/agent-versions.ts).
 */
export type AgentRegistry = ReadonlyMap<string, AgentDefinition>;

/** Every version a registry holds, by name, oldest first; a registry not built by agentRegistry has none here. */
export const REGISTRY_VERSIONS = new WeakMap<AgentRegistry, ReadonlyMap<string, readonly AgentDefinition[]>>();

/**
 * A deployment's agents. Several versions of one agent may be registered (distinct versions);
 * the same name and version twice is refused.
 * @example export const agents = agentRegistry([supportDeskV1, supportDeskV2, triage]);
 */
export function agentRegistry(agents: readonly AgentDefinition[]): AgentRegistry {
  const versions = new Map<string, AgentDefinition[]>();
  for (const agent of agents) {
    const known = versions.get(agent.name) ?? [];
    const version = agent.version ?? 1;
    if (known.some((a) => (a.version ?? 1) === version))
      throw new InvalidInputError(`agent "${agent.name}" version ${version} is registered twice`);
    versions.set(
      agent.name,
      [...known, agent].sort((a, b) => (a.version ?? 1) - (b.version ?? 1)),
    );
  }
  const registry = new Map<string, AgentDefinition>();
  for (const [name, all] of versions) registry.set(name, all.at(-1) as AgentDefinition);
  REGISTRY_VERSIONS.set(registry, versions);
  return registry;
}

/**
 * The delegates the newest version of each agent names and the registry does not host: its
 * `start_task` with one of them can only fail ("not deployed here"). Older versions are left out:
 * one kept for pinned sessions may name an agent since removed, on purpose.
 */
export function undeployedDelegates(registry: AgentRegistry): Array<{ agent: string; delegate: string }> {
  return [...registry.values()].flatMap((agent) =>
    (agent.delegates ?? []).filter((d) => !registry.has(d)).map((delegate) => ({ agent: agent.name, delegate })),
  );
}
