import * as z from 'zod';
import {
  type AnyTool,
  DEFAULT_TOOL_MAX_DURATION_MS,
  defineTool,
  type ReconcileVerdict,
} from '../../agent/define-tool.ts';
import type { RetryPolicy } from '../../agent/retry-policy.ts';
import { errorMessage, InvalidInputError, StepError } from '../../core/errors.ts';
import type { ToolEffect } from '../../core/vocabulary.ts';
import { type McpCallResult, type McpListedTool, type McpServer, openMcpConnection } from './mcp-server.ts';

/** The `_meta` key that carries a call's idempotency key to the server. */
export const MCP_IDEMPOTENCY_META_KEY = 'idempotencyKey';

export interface McpToolOptions {
  /**
   * The effect of each tool, by name, as the agent's author knows it. A tool left out is `once`:
   * an MCP call is never silently repeated after a crash unless someone said it may be. The
   * server's `readOnlyHint` counts only with `trustReadOnlyHints`.
   */
  readonly effects?: Readonly<Record<string, ToolEffect>> | undefined;
  /**
   * Take the server's `readOnlyHint` as the operator's word: a tool it marks read-only and
   * `effects` leaves out is `pure`, re-run freely after a crash. Only for a server you trust: an
   * annotation is the server's claim, and a hint wrongly set would repeat a side effect.
   * @default false
   */
  readonly trustReadOnlyHints?: boolean | undefined;
  /**
   * A human approves calls before they run: `true` for every tool, a list of tool names, or a
   * function of the tool's name and its parsed input (the approval rule sees what the tool will run with).
   * @default no approval
   */
  readonly requiresApproval?:
    | boolean
    | readonly string[]
    | ((tool: string, input: Record<string, unknown>) => boolean)
    | undefined;
  /** How long an approval may wait before the call is denied by default (see defineTool). */
  readonly approvalTimeoutMs?: number | undefined;
  /**
   * How to find out whether an interrupted once-only call happened, by tool name. Without one,
   * the verdict is `unknown` and the session parks for a human.
   */
  readonly reconcile?:
    | Readonly<Record<string, (idempotencyKey: string, input: Record<string, unknown>) => Promise<ReconcileVerdict>>>
    | undefined;
  /** Upper bound of one call (default 30 s); the call is abandoned past it. */
  readonly maxDurationMs?: number | undefined;
  /** Import only these tools (default: all the server lists). */
  readonly only?: readonly string[] | undefined;
  readonly retry?: Partial<RetryPolicy> | undefined;
}

/** JSON-RPC codes another attempt can cure: connection closed, request timeout, internal error. */
const RETRYABLE_CODES: ReadonlySet<number> = new Set([-32000, -32001, -32603]);

/**
 * Lists the server's tools once and returns them as Baton tools. Each leg that calls one opens
 * its own connection on first use and closes it before the leg hands off.
 * @example const tools = await importMcpTools({ kind: 'stdio', name: 'files', command: 'node', args: ['server.js'] }, { effects: { write_file: 'idempotent' } })
 */
export async function importMcpTools(server: McpServer, options: McpToolOptions = {}): Promise<AnyTool[]> {
  const connection = await openMcpConnection(server);
  try {
    return mcpTools(server, await connection.listTools(), options);
  } finally {
    await connection.close();
  }
}

/**
 * Baton tools from a server's tool list (what `tools/list` returned, live or pinned in a file):
 * name, description and input JSON Schema as the server gives them, the effect as the author declares it.
 */
export function mcpTools(server: McpServer, listed: readonly McpListedTool[], options: McpToolOptions = {}): AnyTool[] {
  const names = new Set(listed.map((t) => t.name));
  const approvals = Array.isArray(options.requiresApproval) ? options.requiresApproval : [];
  for (const name of [
    ...Object.keys(options.effects ?? {}),
    ...Object.keys(options.reconcile ?? {}),
    ...(options.only ?? []),
    ...approvals,
  ])
    if (!names.has(name))
      throw new InvalidInputError(
        `MCP server ${server.name} lists no tool "${name}" (it lists: ${[...names].join(', ')})`,
      );
  const chosen = options.only ? listed.filter((t) => options.only?.includes(t.name)) : listed;
  return chosen.map((tool) => mcpTool(server, tool, options));
}

function mcpTool(server: McpServer, tool: McpListedTool, options: McpToolOptions): AnyTool {
  const maxDurationMs = options.maxDurationMs ?? DEFAULT_TOOL_MAX_DURATION_MS;
  const hintedPure = options.trustReadOnlyHints === true && tool.annotations?.readOnlyHint === true;
  const effect = options.effects?.[tool.name] ?? (hintedPure ? 'pure' : 'once');
  const reconcile = options.reconcile?.[tool.name];
  const requiresApproval = approvalOf(tool.name, options.requiresApproval);
  return defineTool<Record<string, unknown>, unknown>({
    name: tool.name,
    description: tool.description ?? `${tool.name} (MCP server ${server.name})`,
    input: inputValidator(tool.inputSchema),
    inputJsonSchema: withoutDialect(tool.inputSchema),
    effect,
    maxDurationMs,
    retry: options.retry,
    ...(reconcile ? { reconcile } : {}),
    ...(requiresApproval === undefined ? {} : { requiresApproval }),
    ...(options.approvalTimeoutMs === undefined ? {} : { approvalTimeoutMs: options.approvalTimeoutMs }),
    async run(input, ctx) {
      let result: McpCallResult;
      try {
        const connection = await ctx.leg.use(
          `mcp:${server.name}`,
          () => openMcpConnection(server),
          (c) => c.close(),
        );
        result = await connection.callTool(
          { name: tool.name, arguments: input, meta: { [MCP_IDEMPOTENCY_META_KEY]: ctx.idempotencyKey } },
          { signal: ctx.signal, timeoutMs: maxDurationMs },
        );
      } catch (error) {
        throw classifyMcpError(server, tool.name, error);
      }
      // A tool-level error is the tool's answer: the model sees it as a failed result.
      if (result.isError) throw new StepError(`MCP tool ${tool.name} failed: ${textOf(result) || 'no detail given'}`);
      return outputOf(result);
    },
  });
}

/** One tool's approval rule from the operator's option: all, by name, or a predicate over name and input. */
function approvalOf(
  name: string,
  option: McpToolOptions['requiresApproval'],
): boolean | ((input: Record<string, unknown>) => boolean) | undefined {
  if (option === undefined || typeof option === 'boolean') return option;
  if (typeof option === 'function') return (input) => option(name, input);
  return option.includes(name) ? true : undefined;
}

/**
 * Validates the model's input against the server's schema before the call, so a bad input is a
 * tool error the model sees. A schema zod cannot read falls back to "any object": the server checks.
 */
function inputValidator(schema: Record<string, unknown>): z.ZodType<Record<string, unknown>> {
  const anyObject = z.record(z.string(), z.unknown());
  try {
    return anyObject.and(z.fromJSONSchema(schema)) as z.ZodType<Record<string, unknown>>;
  } catch {
    return anyObject;
  }
}

/** The schema without its `$schema` dialect key, which model APIs (Converse among them) refuse. */
function withoutDialect(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

/** The result as journaled: structured content when the server gives it, else the text, else the content blocks. */
function outputOf(result: McpCallResult): unknown {
  if (result.structuredContent !== undefined) return result.structuredContent;
  const content = result.content ?? [];
  if (content.every((c) => c.type === 'text')) return textOf(result);
  return content;
}

const textOf = (result: McpCallResult): string =>
  (result.content ?? [])
    .filter((c) => c.type === 'text')
    .map((c) => c.text ?? '')
    .join('\n');

function classifyMcpError(server: McpServer, tool: string, error: unknown): StepError {
  const code = (error as { code?: unknown }).code;
  const message = `MCP tool ${tool} on ${server.name}: ${errorMessage(error)}`;
  // No JSON-RPC code: the server could not be reached or died (spawn, socket): transient.
  const retryable = typeof code !== 'number' || RETRYABLE_CODES.has(code);
  return new StepError(message, { cause: error, retryable });
}
