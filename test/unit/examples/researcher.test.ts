import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { researcher, researchServer } from '../../../examples/researcher/agent.ts';
import { RESEARCH_TOOLS } from '../../../examples/researcher/tool-catalog.ts';
import { openMcpConnection } from '../../../lib/adapters/mcp/mcp-server.ts';
import { MemoryLiveText } from '../../../lib/adapters/memory/memory-live-text.ts';
import { deriveSessionId } from '../../../lib/core/ids.ts';
import { systemClock } from '../../../lib/ports/clock.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { drain, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

const dir = mkdtempSync(join(tmpdir(), 'researcher-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const server = researchServer({ RESEARCH_NOTES_FILE: join(dir, 'notes.json') });

describe('the researcher example', () => {
  it('pins exactly the tools its MCP server lists', async () => {
    const connection = await openMcpConnection(server);
    try {
      const live = (await connection.listTools()).map(({ name, description, inputSchema, annotations }) => {
        const { $schema: _dialect, ...schema } = inputSchema;
        return { name, description, inputSchema: schema, ...(annotations ? { annotations } : {}) };
      });
      expect(live).toEqual(RESEARCH_TOOLS);
    } finally {
      await connection.close();
    }
  });

  it('answers a question with what ten or more MCP tool calls returned, every tool used', async () => {
    const live = new MemoryLiveText();
    const { deps, store, results } = makeTestDeps([researcher(undefined, server)], {
      live,
      clock: systemClock, // a real MCP server answers in real time
      config: { leaseTtlMs: 30_000, reserveMs: 1_000, retentionDays: 1, sweepGraceMs: 30_000 },
    });
    await acceptTicket(
      ticketBody('researcher', 'R-1', { question: 'How do durable agents survive crashes?' }),
      undefined,
      deps,
    );
    await drain(deps);

    const key = { tenant: 'default', agent: 'researcher', id: deriveSessionId('default', 'researcher', 'R-1') };
    const tools = (await store.readJournal(key)).flatMap((e) => (e.kind === 'tool' ? [e.data] : []));
    expect(tools.length).toBeGreaterThanOrEqual(10);
    expect(tools.every((t) => t.ok)).toBe(true);
    expect(new Set(tools.map((t) => t.tool))).toEqual(new Set(['search', 'fetch_page', 'define', 'save_note']));

    const [result] = results.bodies;
    expect(result).toMatchObject({ status: 'completed' });
    // The mock streams its answer: live followers saw the beginning of the final model entry.
    const answer = (await store.readJournal(key)).findLast((e) => e.kind === 'model');
    const partial = (await live.read(key, answer?.seq ?? -1, { now: Date.now() })).map((c) => c.text).join('');
    expect(partial).not.toBe('');
    expect(String(answer?.data.text).startsWith(partial)).toBe(true);
    const output = String(result?.output);
    for (const t of tools.filter((t) => t.tool === 'save_note'))
      expect(output).toContain((t.output as { id: string }).id);
    for (const t of tools.filter((t) => t.tool === 'fetch_page'))
      expect(output).toContain((t.output as { url: string }).url);
  });
});
