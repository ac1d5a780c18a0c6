import { fileURLToPath } from 'node:url';
import { defineAgent, type ModelClient } from '@baton-run/baton';
import { type McpServer, mcpTools } from '@baton-run/baton/mcp';
import * as z from 'zod';
import { researcherModel } from './model.ts';
import { RESEARCH_TOOLS } from './tool-catalog.ts';

export const ResearcherInput = z.object({ question: z.string().min(1).max(2_000) });

/**
 * The research desk the researcher's tools come from: the example server over stdio (it runs
 * wherever the source tree is, as in the local stack), or over HTTP at `BATON_RESEARCHER_MCP_URL`.
 */
export function researchServer(env: NodeJS.ProcessEnv = process.env): McpServer {
  const url = env.BATON_RESEARCHER_MCP_URL;
  if (url) return { kind: 'http', name: 'research-desk', url };
  return {
    kind: 'stdio',
    name: 'research-desk',
    command: process.execPath,
    args: [fileURLToPath(new URL('./research-server.ts', import.meta.url))],
    // The server's own settings pass through; the SDK gives it no more of this process's environment.
    env: Object.fromEntries(
      ['RESEARCH_NOTES_FILE', 'RESEARCH_LATENCY_MS'].flatMap((name) => (env[name] ? [[name, env[name]]] : [])),
    ),
  };
}

/**
 * An agent on an AI SDK model with the tools of an MCP server. The read-only tools are `pure`
 * (the server marks them so, and this team ships that server, so its hints are trusted);
 * `save_note` files a note once per idempotency key, durably, so the author declares it
 * `idempotent` rather than the default `once`.
 */
export function researcher(model: ModelClient = researcherModel(), server: McpServer = researchServer()) {
  return defineAgent({
    name: 'researcher',
    instructions:
      'You are a careful researcher. Search the library, read the pages you find, define the key terms, ' +
      'file notes of what you learned, and answer the question citing what the tools returned.',
    input: ResearcherInput,
    model,
    tools: mcpTools(server, RESEARCH_TOOLS, {
      effects: { save_note: 'idempotent' },
      trustReadOnlyHints: true,
      maxDurationMs: 3_000,
    }),
    limits: { maxSteps: 50 },
  });
}
