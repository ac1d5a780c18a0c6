import * as z from 'zod';
import { InvalidInputError } from '../core/errors.ts';
import { ToolEffect } from '../core/vocabulary.ts';
import { assertKnownOptions, assertOneOf, isSchema } from './definition-checks.ts';
import type { RetryPolicy } from './retry-policy.ts';

/** What a tool's run function receives beside its input. */
export interface ToolContext {
  /** Aborts when the lease is lost, the turn is cancelled or the budget runs out. */
  readonly signal: AbortSignal;
  /** Stable across re-runs of the same call: (tenant, agent, session, model seq, tool call id). */
  readonly idempotencyKey: string;
  readonly sessionId: string;
  readonly log: (message: string, fields?: Record<string, unknown>) => void;
  /** Reports progress; the lease is renewed on a heartbeat regardless. */
  readonly progress: (note: string) => void;
  /** Resources that live for this leg only (a connection opened on first use), closed before it hands off. */
  readonly leg: LegScope;
}

/** The leg's resource scope: opened lazily, shared by the leg's calls, closed before the leg yields, waits or ends. */
export interface LegScope {
  /** The resource under `key`, opened on first use in this leg; `close` runs before the leg hands off. */
  use<T>(key: string, open: () => Promise<T>, close: (value: T) => Promise<void>): Promise<T>;
}

/** A once-only tool's answer to "did the interrupted call happen?" */
export type ReconcileVerdict =
  | { readonly verdict: 'done'; readonly output: unknown }
  /** Only when the downstream will refuse this key from now on: the call may run again. */
  | { readonly verdict: 'notDone' }
  | { readonly verdict: 'unknown' };

export interface ToolDefinition<I = unknown, O = unknown> {
  readonly name: string;
  readonly description: string;
  readonly input: z.ZodType<I>;
  /** The input's JSON Schema as the model sees it, when it comes from elsewhere (an MCP server) rather than `input`. */
  readonly inputJsonSchema?: Record<string, unknown> | undefined;
  /** pure: no side effect. idempotent: safe to repeat with the same key. once: a watermark guards it. */
  readonly effect: ToolEffect;
  readonly maxDurationMs: number;
  readonly retry?: Partial<RetryPolicy> | undefined;
  /**
   * A human approves each call before it runs (or a function of the input decides which): the
   * turn stops there, holding no lease, until `baton approve`; a denial is the call's result.
   */
  readonly requiresApproval?: boolean | ((input: I) => boolean) | undefined;
  /**
   * How long an approval may wait (a durable timer) before the call is denied by default;
   * absent, it waits as long as the session is retained.
   */
  readonly approvalTimeoutMs?: number | undefined;
  run(input: I, ctx: ToolContext): Promise<O>;
  /** Asks the downstream whether an interrupted call happened; `signal` aborts when the leg stops. */
  reconcile?: ((idempotencyKey: string, input: I, signal: AbortSignal) => Promise<ReconcileVerdict>) | undefined;
}

/** A tool of any input and output type, as an agent lists them. */
// biome-ignore lint/suspicious/noExplicitAny: tool inputs are checked at run time by each tool's own schema
export type AnyTool = ToolDefinition<any, any>;

export const DEFAULT_TOOL_MAX_DURATION_MS = 30_000;

const TOOL_NAME = /^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/;

/** Every option of defineTool (the compiler keeps the list whole): another is a typo, refused at definition. */
const TOOL_OPTIONS = Object.keys({
  name: true,
  description: true,
  input: true,
  inputJsonSchema: true,
  effect: true,
  maxDurationMs: true,
  retry: true,
  requiresApproval: true,
  approvalTimeoutMs: true,
  run: true,
  reconcile: true,
} satisfies Record<keyof ToolDefinition, true>);

/**
 * Declares a tool: its input schema, its side-effect kind and how long it may take.
 * @example
 * defineTool({ name: 'lookupOrder', description: 'Reads an order', input: z.object({ orderId: z.string() }),
 *   effect: 'pure', maxDurationMs: 5_000, run: async ({ orderId }) => db.get(orderId) })
 */
export function defineTool<I, O>(
  definition: Omit<ToolDefinition<I, O>, 'maxDurationMs'> & { maxDurationMs?: number },
): ToolDefinition<I, O> {
  if (!TOOL_NAME.test(definition.name))
    throw new InvalidInputError(`tool name "${definition.name}" must match ${TOOL_NAME}`);
  const where = `tool ${definition.name}`;
  assertKnownOptions(where, definition, TOOL_OPTIONS);
  // A misspelt effect would otherwise run a once-only call without its watermark.
  assertOneOf(`${where}: effect`, definition.effect, Object.values(ToolEffect));
  if (!isSchema(definition.input))
    throw new InvalidInputError(
      `${where}: input must be a zod schema (z.object({ … })), got ${typeof definition.input}`,
    );
  if (definition.inputJsonSchema === undefined && !describesObject(definition.input))
    throw new InvalidInputError(
      `${where}: input must describe an object (z.object({ … })): models pass a tool's arguments as one JSON object, got ${rootKind(definition.input)}`,
    );
  if (typeof definition.run !== 'function') throw new InvalidInputError(`${where}: run must be a function`);
  if (definition.reconcile !== undefined && typeof definition.reconcile !== 'function')
    throw new InvalidInputError(`${where}: reconcile must be a function`);
  const maxDurationMs = definition.maxDurationMs ?? DEFAULT_TOOL_MAX_DURATION_MS;
  if (!(maxDurationMs > 0)) throw new InvalidInputError(`tool ${definition.name}: maxDurationMs must be positive`);
  if (definition.approvalTimeoutMs !== undefined && !(definition.approvalTimeoutMs > 0))
    throw new InvalidInputError(`tool ${definition.name}: approvalTimeoutMs must be positive`);
  return { ...definition, maxDurationMs };
}

/** Root kinds whose JSON Schema is (or may be) an object; anything else no model provider accepts as tool input. */
const OBJECT_KINDS = new Set(['object', 'record', 'union', 'intersection', 'lazy', 'any', 'unknown', 'custom']);

/**
 * The zod kind at the schema's root, wrappers (optional, default, transform's input…) looked
 * through. A preprocess (a pipe from a transform) is judged by what it pipes into, as its JSON
 * Schema is.
 */
function rootKind(schema: unknown): string {
  let def = defOf(schema);
  for (let depth = 0; def && depth < 16; depth++) {
    const inner = def.type === 'pipe' && defOf(def.in)?.type === 'transform' ? def.out : (def.innerType ?? def.in);
    if (inner === undefined) return def.type;
    def = defOf(inner);
  }
  return 'unknown';
}
type ZodDefLike = { type: string; innerType?: unknown; in?: unknown; out?: unknown };
const defOf = (schema: unknown): ZodDefLike | undefined => (schema as { _zod?: { def?: ZodDefLike } })._zod?.def;

/**
 * A zod schema at load, with no JSON Schema built: a scalar or array input would run under a
 * scripted model and be refused by Bedrock, Anthropic and OpenAI at the first real model call.
 */
const describesObject = (schema: unknown): boolean => OBJECT_KINDS.has(rootKind(schema));

/** Each tool's input schema as JSON, built once: a tool is code, and every model call sends it. */
const inputSchemas = new WeakMap<AnyTool, Record<string, unknown>>();

/** The JSON Schema of a tool's input, as models want it. */
export function toolInputSchema(tool: AnyTool): Record<string, unknown> {
  if (tool.inputJsonSchema) return tool.inputJsonSchema;
  const built = inputSchemas.get(tool);
  if (built) return built;
  const { $schema: _ignored, ...schema } = z.toJSONSchema(tool.input, { unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  inputSchemas.set(tool, schema);
  return schema;
}
