/**
 * The researcher's MCP server: a small, self-contained research desk (no network). Each tool
 * takes a few hundred milliseconds, like a real lookup. `save_note` is the one with a side
 * effect; it files a note once per idempotency key (from the call's `_meta`), kept in a file, so
 * a repeated call after a crash — from a new server process — returns the note already filed.
 * Runs over stdio: `node research-server.ts`.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import * as z from 'zod';

const LATENCY_MS = Number(process.env.RESEARCH_LATENCY_MS ?? 300);
const NOTES_FILE = process.env.RESEARCH_NOTES_FILE ?? join(tmpdir(), 'baton-research-notes.json');

type Note = { id: string; text: string };
const readNotes = (): Record<string, Note> =>
  existsSync(NOTES_FILE) ? (JSON.parse(readFileSync(NOTES_FILE, 'utf8')) as Record<string, Note>) : {};

/** A deterministic stand-in for a search index: the same query always finds the same pages. */
const pagesFor = (query: string) =>
  ['overview', 'history', 'criticism'].map((aspect, i) => ({
    url: `https://library.example/${encodeURIComponent(query.toLowerCase().replace(/\s+/g, '-'))}/${aspect}`,
    title: `${query}: ${aspect}`,
    rank: i + 1,
  }));

const json = (value: Record<string, unknown>) => ({
  content: [{ type: 'text' as const, text: JSON.stringify(value) }],
  structuredContent: value,
});

export function buildResearchServer(): McpServer {
  const server = new McpServer({ name: 'research-desk', version: '1.0.0' });

  server.registerTool(
    'search',
    {
      description: 'Searches the library for pages about a query; returns up to three pages.',
      inputSchema: { query: z.string().min(1) },
      annotations: { readOnlyHint: true },
    },
    async ({ query }) => {
      await sleep(LATENCY_MS);
      return json({ query, pages: pagesFor(query) });
    },
  );
  server.registerTool(
    'fetch_page',
    {
      description: 'Fetches one page by URL and returns its summary.',
      inputSchema: { url: z.string().url() },
      annotations: { readOnlyHint: true },
    },
    async ({ url }) => {
      await sleep(LATENCY_MS);
      const aspect = url.split('/').at(-1) ?? 'page';
      return json({
        url,
        summary: `The ${aspect} page explains the subject from its ${aspect} angle.`,
        words: 120 + url.length,
      });
    },
  );
  server.registerTool(
    'define',
    {
      description: 'Looks a term up in the glossary.',
      inputSchema: { term: z.string().min(1) },
      annotations: { readOnlyHint: true },
    },
    async ({ term }) => {
      await sleep(LATENCY_MS);
      return json({ term, definition: `"${term}" as the glossary defines it (${term.length} letters).` });
    },
  );
  server.registerTool(
    'save_note',
    {
      description: 'Files a research note; returns its id. Filing the same call twice files one note.',
      inputSchema: { text: z.string().min(1) },
    },
    async ({ text }, extra) => {
      await sleep(LATENCY_MS);
      const notes = readNotes();
      const key = String(extra._meta?.idempotencyKey ?? `unkeyed-${Object.keys(notes).length + 1}`);
      const existing = notes[key];
      if (existing) return json({ ...existing, duplicate: true });
      const note = { id: `note-${Object.keys(notes).length + 1}`, text };
      writeFileSync(NOTES_FILE, JSON.stringify({ ...notes, [key]: note }));
      return json({ ...note, duplicate: false });
    },
  );
  return server;
}

if (process.argv[1]?.endsWith('research-server.ts')) {
  await buildResearchServer().connect(new StdioServerTransport());
}
