import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { BoundedStderr } from './bounded-stderr.ts';
import type { McpCallResult, McpConnection, McpListedTool, McpServer } from './mcp-server.ts';

const CLIENT_INFO = { name: 'baton', version: '0.1.0' };

/** Connects an MCP SDK client to `server` (imported lazily through openMcpConnection). */
export async function connectMcp(server: McpServer): Promise<McpConnection> {
  const transport =
    server.kind === 'stdio'
      ? new StdioClientTransport({
          command: server.command,
          args: [...(server.args ?? [])],
          env: { ...getDefaultEnvironment(), ...server.env },
          ...(server.cwd === undefined ? {} : { cwd: server.cwd }),
          // Piped, never inherited: what reaches the logs is bounded (bounded-stderr.ts).
          stderr: 'pipe',
        })
      : new StreamableHTTPClientTransport(
          new URL(server.url),
          server.headers ? { requestInit: { headers: server.headers } } : undefined,
        );
  if (transport instanceof StdioClientTransport && server.kind === 'stdio') boundStderr(transport, server);
  const client = new Client(CLIENT_INFO);
  await client.connect(transport);
  return {
    async listTools(signal) {
      const tools: McpListedTool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor === undefined ? {} : { cursor }, signal ? { signal } : {});
        tools.push(...(page.tools as McpListedTool[]));
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      return tools;
    },
    async callTool(call, options) {
      return (await client.callTool({ name: call.name, arguments: call.arguments, _meta: call.meta }, undefined, {
        signal: options.signal,
        timeout: options.timeoutMs,
      })) as McpCallResult;
    },
    close: () => client.close(),
  };
}

/**
 * Reads the server's piped stderr to its end (an unread pipe would fill and stall the server) and
 * passes what the limits allow to the logs.
 */
function boundStderr(transport: StdioClientTransport, server: Extract<McpServer, { kind: 'stdio' }>): void {
  const stderr = transport.stderr;
  if (stderr === null) return;
  const log = server.onStderrLine ?? ((line: string) => process.stderr.write(`mcp ${server.name}: ${line}\n`));
  const bounded = new BoundedStderr(log, server.stderrLimits);
  stderr.on('data', (chunk: Buffer) => bounded.write(chunk));
  stderr.on('end', () => bounded.end());
  // A broken pipe ends the server's stderr; the connection reports the server's death itself.
  stderr.on('error', () => bounded.end());
}
