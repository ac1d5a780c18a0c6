import type { StderrLimits } from './bounded-stderr.ts';

/** How to reach an MCP server: a process spoken to over stdio, or a streamable HTTP endpoint. */
export type McpServer =
  | {
      readonly kind: 'stdio';
      /** Names the server in logs and in the leg's connection key. */
      readonly name: string;
      readonly command: string;
      readonly args?: readonly string[] | undefined;
      /** Added to the SDK's safe default environment (PATH, HOME…), not the whole of process.env. */
      readonly env?: Record<string, string> | undefined;
      readonly cwd?: string | undefined;
      /** How much of the server's stderr reaches the logs (default MCP_STDERR_LIMITS: 2 KiB a line, 32 KiB at once, then 2 KiB/s). */
      readonly stderrLimits?: Partial<StderrLimits> | undefined;
      /** Where the server's stderr lines go, once bounded (default: the process's stderr, prefixed `mcp NAME:`). */
      readonly onStderrLine?: ((line: string) => void) | undefined;
    }
  | {
      readonly kind: 'http';
      readonly name: string;
      readonly url: string;
      readonly headers?: Record<string, string> | undefined;
    };

/** A tool as the server lists it (`tools/list`): what Baton imports. */
export interface McpListedTool {
  readonly name: string;
  readonly description?: string | undefined;
  readonly inputSchema: Record<string, unknown>;
  readonly annotations?: { readonly readOnlyHint?: boolean | undefined } | undefined;
}

/** A call's answer (`tools/call`), as far as Baton reads it. */
export interface McpCallResult {
  readonly content?: readonly { readonly type: string; readonly text?: string | undefined }[] | undefined;
  readonly structuredContent?: Record<string, unknown> | undefined;
  readonly isError?: boolean | undefined;
}

/** One open connection to a server. */
export interface McpConnection {
  listTools(signal?: AbortSignal): Promise<McpListedTool[]>;
  callTool(
    call: { name: string; arguments: Record<string, unknown>; meta: Record<string, unknown> },
    options: { signal: AbortSignal; timeoutMs: number },
  ): Promise<McpCallResult>;
  close(): Promise<void>;
}

/**
 * Opens a connection. The MCP SDK is imported here, on first use, so an agent module that
 * declares MCP tools costs nothing at cold start until a leg calls one.
 */
export async function openMcpConnection(server: McpServer): Promise<McpConnection> {
  const { connectMcp } = await import('./mcp-connection.ts');
  return connectMcp(server);
}
