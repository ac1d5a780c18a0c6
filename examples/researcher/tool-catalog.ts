import type { McpListedTool } from '@baton-run/baton/mcp';

/**
 * What research-server.ts answers to `tools/list`, pinned here so the agent module declares its
 * tools without starting the server at cold start. A test keeps it equal to the live listing;
 * `importMcpTools` reads the same list live, for servers you do not ship.
 */
export const RESEARCH_TOOLS: readonly McpListedTool[] = [
  {
    name: 'search',
    description: 'Searches the library for pages about a query; returns up to three pages.',
    inputSchema: {
      type: 'object',
      properties: { query: { type: 'string', minLength: 1 } },
      required: ['query'],
    },
    annotations: { readOnlyHint: true },
  },
  {
    name: 'fetch_page',
    description: 'Fetches one page by URL and returns its summary.',
    inputSchema: {
      type: 'object',
      properties: { url: { type: 'string', format: 'uri' } },
      required: ['url'],
    },
    annotations: { readOnlyHint: true },
  },
  {
    name: 'define',
    description: 'Looks a term up in the glossary.',
    inputSchema: {
      type: 'object',
      properties: { term: { type: 'string', minLength: 1 } },
      required: ['term'],
    },
    annotations: { readOnlyHint: true },
  },
  {
    name: 'save_note',
    description: 'Files a research note; returns its id. Filing the same call twice files one note.',
    inputSchema: {
      type: 'object',
      properties: { text: { type: 'string', minLength: 1 } },
      required: ['text'],
    },
  },
];
