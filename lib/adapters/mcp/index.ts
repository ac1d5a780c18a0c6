/** `@baton-run/baton/mcp`: tools served by an MCP server, as Baton tools (the MCP SDK loads only with this entry). */
export { BoundedStderr, MCP_STDERR_LIMITS, type StderrLimits } from './bounded-stderr.ts';
export type { McpListedTool, McpServer } from './mcp-server.ts';
export { importMcpTools, MCP_IDEMPOTENCY_META_KEY, type McpToolOptions, mcpTools } from './mcp-tools.ts';
