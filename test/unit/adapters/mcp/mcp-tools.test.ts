import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { McpServer } from '../../../../lib/adapters/mcp/mcp-server.ts';
import { importMcpTools, type McpToolOptions, mcpTools } from '../../../../lib/adapters/mcp/mcp-tools.ts';
import { toolInputSchema } from '../../../../lib/agent/define-tool.ts';
import { toolResults } from '../../../../lib/agent/scripted-model.ts';
import { deriveSessionId } from '../../../../lib/core/ids.ts';
import { type JournalEntry, legMarkerOf } from '../../../../lib/core/journal.ts';
import { systemClock } from '../../../../lib/ports/clock.ts';
import { acceptTicket } from '../../../../lib/runtime/intake.ts';
import { runKick } from '../../../../lib/runtime/step-runner.ts';
import { serveHttp } from '../../../fixtures/mcp/test-mcp-server.ts';
import { invocation, lookupAgent, makeTestDeps, ticketBody } from '../../../fixtures/runtime.ts';
import { waitFor } from '../../../fixtures/wait-for.ts';

const stdio: McpServer = {
  kind: 'stdio',
  name: 'test',
  command: process.execPath,
  args: [fileURLToPath(new URL('../../../fixtures/mcp/stdio-server.ts', import.meta.url))],
};

/** Script: echo twice in one step, then record a payment, then echo and a refused call, then answer. */
const script = (messages: Parameters<typeof toolResults>[0]) => {
  const done = toolResults(messages);
  if (!done.has('e1'))
    return {
      toolCalls: [
        { id: 'e1', name: 'echo', input: { text: 'one' } },
        { id: 'e2', name: 'echo', input: { text: 'two' } },
      ],
    };
  if (!done.has('p1')) return { toolCalls: [{ id: 'p1', name: 'record_payment', input: { amount: 42 } }] };
  if (!done.has('e3'))
    return {
      toolCalls: [
        { id: 'e3', name: 'echo', input: { text: 'three' } },
        { id: 'r1', name: 'refuse', input: {} },
      ],
    };
  return { final: 'done' };
};

const toolEntries = (journal: JournalEntry[]) =>
  journal.flatMap((e) => (e.kind === 'tool' ? [{ seq: e.seq, ...e.data }] : []));

/** Legs by seq range: the leg each tool entry was journaled in. */
function legOf(journal: JournalEntry[], seq: number): number {
  return journal.filter((e) => legMarkerOf(e) !== undefined && e.seq < seq).length;
}

/**
 * Runs the turn to its end. With `oneToolStepPerLeg`, each leg's invocation reports its time as
 * spent once a tool step has run, so the leg yields before its next model call: legs split the
 * same way however slow the machine is.
 */
async function runAgent(
  server: McpServer,
  ticketId: string,
  oneToolStepPerLeg: boolean,
  options: McpToolOptions = { trustReadOnlyHints: true },
) {
  let toolStepDone = false;
  const tools = (await importMcpTools(server, { maxDurationMs: 2_000, ...options })).map((tool) => ({
    ...tool,
    run: async (input: unknown, ctx: Parameters<typeof tool.run>[1]) => {
      try {
        return await tool.run(input, ctx);
      } finally {
        toolStepDone = true;
      }
    },
  }));
  const agent = lookupAgent({ tools, script });
  const { deps, store, results, workQueue } = makeTestDeps([agent], {
    clock: systemClock, // a real server answers in real time
    // Long enough that a once-only call of 2 s starts (the lease must outlive it and the skew).
    config: { leaseTtlMs: 5_000, reserveMs: 200, retentionDays: 1, sweepGraceMs: 5_000 },
  });
  await acceptTicket(ticketBody('lookup-agent', ticketId, {}), undefined, deps);
  for (let kicks = 0; kicks < 50; kicks++) {
    const [message] = workQueue.receive();
    if (!message) break;
    toolStepDone = false;
    const budget = invocation();
    const remainingMs = () => (oneToolStepPerLeg && toolStepDone ? 0 : budget.remainingMs());
    await runKick(message.body, { requestId: budget.requestId, remainingMs }, deps);
  }
  const key = { tenant: 'default', agent: 'lookup-agent', id: deriveSessionId('default', 'lookup-agent', ticketId) };
  return { journal: await store.readJournal(key), results: results.bodies };
}

function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
}

describe('MCP tools', () => {
  it('imports names, descriptions and input schemas, with once as the default effect, a read-only hint not trusted', async () => {
    const tools = await importMcpTools(stdio);
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect([...byName.keys()].sort()).toEqual(['echo', 'record_payment', 'refuse']);
    // The server marks echo read-only; that is its claim, not the operator's word (issue 23 item 10).
    expect(byName.get('echo')).toMatchObject({ description: 'Echoes a text back.', effect: 'once' });
    expect(byName.get('record_payment')?.effect).toBe('once');
    expect(byName.get('record_payment')?.reconcile).toBeUndefined();
    expect(toolInputSchema(byName.get('echo')!)).toMatchObject({
      type: 'object',
      properties: { text: { type: 'string' } },
      required: ['text'],
    });
    // The server's schema checks the model's input before any call.
    expect(byName.get('echo')!.input.safeParse({ text: 3 }).success).toBe(false);
    expect(byName.get('echo')!.input.safeParse({ text: 'hi' }).success).toBe(true);
  });

  it('takes a read-only hint as pure only when the operator trusts the server’s hints', () => {
    const listed = [
      { name: 'lookup', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } },
      { name: 'write', inputSchema: { type: 'object' } },
    ];
    const effects = (options: McpToolOptions) =>
      Object.fromEntries(mcpTools(stdio, listed, options).map((t) => [t.name, t.effect]));
    expect(effects({})).toEqual({ lookup: 'once', write: 'once' });
    expect(effects({ trustReadOnlyHints: false })).toEqual({ lookup: 'once', write: 'once' });
    expect(effects({ trustReadOnlyHints: true })).toEqual({ lookup: 'pure', write: 'once' });
    expect(effects({ trustReadOnlyHints: true, effects: { lookup: 'idempotent' } })).toEqual({
      lookup: 'idempotent',
      write: 'once',
    });
  });

  it('lets the operator require approval of every tool, of tools by name, or by a rule over name and input', () => {
    const listed = [
      { name: 'lookup', inputSchema: { type: 'object' } },
      { name: 'deploy', inputSchema: { type: 'object' } },
    ];
    const approvals = (requiresApproval: McpToolOptions['requiresApproval']) =>
      new Map(mcpTools(stdio, listed, { requiresApproval }).map((t) => [t.name, t.requiresApproval]));

    expect([...approvals(undefined).values()]).toEqual([undefined, undefined]);
    expect([...approvals(true).values()]).toEqual([true, true]);
    expect([...approvals(['deploy']).entries()]).toEqual([
      ['lookup', undefined],
      ['deploy', true],
    ]);
    const byRule = approvals((tool, input) => tool === 'deploy' && input.env === 'prod');
    const rule = (tool: string) => byRule.get(tool) as (input: Record<string, unknown>) => boolean;
    expect(rule('lookup')({ env: 'prod' })).toBe(false);
    expect(rule('deploy')({ env: 'prod' })).toBe(true);
    expect(rule('deploy')({ env: 'dev' })).toBe(false);
    expect(() => mcpTools(stdio, listed, { requiresApproval: ['deploy_all'] })).toThrow(/lists no tool "deploy_all"/);
    expect(mcpTools(stdio, listed, { requiresApproval: true, approvalTimeoutMs: 60_000 })[0]?.approvalTimeoutMs).toBe(
      60_000,
    );
  });

  it('stops a call the operator marked for approval before the server sees it', async () => {
    const { journal, results } = await runAgent(stdio, 'M-approve', false, {
      trustReadOnlyHints: true,
      requiresApproval: ['record_payment'],
    });
    expect(results).toEqual([]);
    const approval = journal.find((e) => e.kind === 'approval');
    expect(approval?.data).toMatchObject({ callId: 'p1', tool: 'record_payment' });
    // Nothing of the payment ran: no watermark, no result; the echo calls before it did.
    expect(journal.some((e) => e.kind === 'intent')).toBe(false);
    expect(toolEntries(journal).map((t) => t.callId)).toEqual(['e1', 'e2']);
  });

  it('bounds a stdio server’s stderr before the logs: long lines cut, a flood dropped and counted', async () => {
    const lines: string[] = [];
    const noisy: McpServer = {
      ...stdio,
      name: 'noisy',
      env: { MCP_TEST_STDERR_LINES: '500', MCP_TEST_STDERR_LINE_BYTES: '5000' },
      stderrLimits: { lineBytes: 100, burstBytes: 1_000, bytesPerSecond: 100 },
      onStderrLine: (line) => lines.push(line),
    };
    expect((await importMcpTools(noisy)).map((t) => t.name)).toContain('echo');
    const logged = () => lines.filter((line) => line.startsWith('noise '));
    // Each drop is counted in a line of its own (before the next line that passes, or at the end).
    const dropped = () =>
      lines.reduce(
        (sum, line) => sum + Number(/^\((\d+) lines, \d+ bytes of stderr not logged/.exec(line)?.[1] ?? 0),
        0,
      );
    await waitFor(() => logged().length + dropped() === 500, {
      what: () => `every one of the 500 stderr lines logged or counted as dropped (${logged().length} + ${dropped()})`,
    });
    // 2.5 MB written: about the burst reached the logs, each line cut to 100 bytes.
    expect(logged().length).toBeGreaterThan(0);
    expect(logged().length).toBeLessThan(50);
    expect(logged()[0]).toMatch(/^noise 0 x+ … \(4900 more bytes of this line not logged\)$/);
    expect(lines.join('\n').length).toBeLessThan(10_000);
  });

  it('lets the author declare an effect and a reconcile, and refuses a name the server does not list', () => {
    const listed = [{ name: 'record_payment', inputSchema: { type: 'object' } }];
    const reconcile = async () => ({ verdict: 'notDone' }) as const;
    const [tool] = mcpTools(stdio, listed, {
      effects: { record_payment: 'idempotent' },
      reconcile: { record_payment: reconcile },
    });
    expect(tool).toMatchObject({ effect: 'idempotent', reconcile });
    expect(() => mcpTools(stdio, listed, { effects: { recordPayment: 'pure' } })).toThrow(
      /lists no tool "recordPayment"/,
    );
  });

  it('runs a turn over stdio: one connection per leg, closed before the leg hands off, the key in _meta', async () => {
    const { journal, results } = await runAgent(stdio, 'M-1', true);
    expect(results).toEqual([expect.objectContaining({ status: 'completed', output: 'done' })]);

    const tools = toolEntries(journal);
    const byCall = new Map(tools.map((t) => [t.callId, t]));
    expect(byCall.get('e1')).toMatchObject({ ok: true, output: { text: 'one' } });
    const intent = journal.find((e) => e.kind === 'intent');
    if (intent?.kind !== 'intent') throw new Error('the once-only call journaled no intent');
    expect(intent.data).toMatchObject({ callId: 'p1', tool: 'record_payment' });
    expect(byCall.get('p1')?.output).toMatchObject({
      amount: 42,
      idempotencyKey: intent.data.idempotencyKey,
    });
    expect(byCall.get('r1')).toMatchObject({ ok: false, error: expect.stringMatching(/not allowed today/) });

    // Calls in one leg share a server process; each leg started its own.
    const pidsByLeg = new Map<number, Set<number>>();
    for (const t of tools.filter((t) => t.ok)) {
      const leg = legOf(journal, t.seq);
      pidsByLeg.set(leg, (pidsByLeg.get(leg) ?? new Set()).add((t.output as { pid: number }).pid));
    }
    expect(pidsByLeg.size).toBe(3);
    for (const pids of pidsByLeg.values()) expect(pids.size).toBe(1);
    const allPids = [...pidsByLeg.values()].flatMap((s) => [...s]);
    expect(new Set(allPids).size).toBe(pidsByLeg.size);
    // Every leg closed its connection: no server process is left running.
    const deadline = Date.now() + 5_000;
    while (!allPids.every(processGone)) {
      if (Date.now() > deadline)
        throw new Error(`MCP server processes still running: ${allPids.filter((p) => !processGone(p))}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  });

  describe('over streamable HTTP', () => {
    let http: Awaited<ReturnType<typeof serveHttp>>;
    beforeAll(async () => {
      http = await serveHttp();
    });
    afterAll(() => http.close());

    it('runs a turn against a server on 127.0.0.1, connecting once per leg', async () => {
      const server: McpServer = { kind: 'http', name: 'test-http', url: http.url };
      const listed = http.initializations();
      const { journal, results } = await runAgent(server, 'M-2', false);
      expect(results).toEqual([expect.objectContaining({ status: 'completed', output: 'done' })]);
      expect(toolEntries(journal).map((t) => [t.callId, t.ok])).toEqual([
        ['e1', true],
        ['e2', true],
        ['p1', true],
        ['e3', true],
        ['r1', false],
      ]);
      const legs = journal.filter((e) => legMarkerOf(e) !== undefined).length;
      // One connection listed the tools; then each leg opened exactly one.
      expect(http.initializations() - listed).toBe(1 + legs);
    });
  });
});
