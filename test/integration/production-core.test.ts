import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createS3Client } from '../../lib/adapters/s3/s3-client.ts';
import type { JournalEntry } from '../../lib/core/journal.ts';
import type { Result } from '../../lib/core/messages.ts';
import type { EntryKind } from '../../lib/core/vocabulary.ts';
import { LOCAL_CREDENTIALS } from '../../lib/local/aws-clients.ts';
import { readJsonLines } from '../../lib/local/json-lines.ts';
import { DEFAULT_FUNCTIONS } from '../../lib/local/local-stack.ts';
import { bulkText, sha256 } from '../fixtures/agents/big-result-agent.ts';
import { FLAKY_RETRY } from '../fixtures/agents/flaky-tool-agent.ts';
import { readProbes } from '../fixtures/agents/probe-log.ts';
import { CAPPED_PAYLOAD_BYTES, TEST_AGENTS_MODULE } from '../fixtures/agents/registry.ts';
import { startTestStack, type TestStack } from '../fixtures/stack.ts';
import { waitFor } from '../fixtures/wait-for.ts';

/** How long the slow tool would wait if nothing aborted it. */
const SLOW_TOOL_MS = 4_000;

/**
 * With no sweeper, the only wake-ups are the delayed kick and a redelivery after the 20 s
 * visibility timeout: a leg sooner than this after the retry time was woken by the delayed kick.
 */
const WOKEN_BY_THE_KICK_MS = 15_000;

const newDir = () => mkdtempSync(join(tmpdir(), 'baton-probe-'));

const ofKind = <K extends EntryKind>(entries: JournalEntry[], kind: K) =>
  entries.filter((e): e is Extract<JournalEntry, { kind: K }> => e.kind === kind);

/** The result of a ticket, read from the stack's results queue. */
async function resultOf(t: TestStack, ticketId: string, timeoutMs = 30_000): Promise<Result> {
  const all = await t.awaitResults((rs) => rs.some((r) => r.ticketId === ticketId), timeoutMs);
  return all.find((r) => r.ticketId === ticketId)!;
}

const journalOfSession = (t: TestStack, agent: string, sessionId: string) =>
  t.store.readJournal({ tenant: 'default', agent, id: sessionId });

/** A local stack hosting the test agents; a failpoints file, when given, arms nothing until a test writes it. */
const startWithTestAgents = (options: Parameters<typeof startTestStack>[0] = {}, failpoints?: string) =>
  startTestStack({
    ...options,
    handlerEnv: {
      BATON_AGENTS_MODULE: TEST_AGENTS_MODULE,
      ...(failpoints !== undefined ? { BATON_FAILPOINTS_FILE: failpoints } : {}),
    },
  });

// Worker processes start cold on a busy 2-core machine: allow minutes, not seconds.
describe('the production-grade core on the local stack', { timeout: 180_000 }, () => {
  let t: TestStack;
  let s3: S3Client;
  let failpoints: string;

  beforeAll(async () => {
    failpoints = join(newDir(), 'failpoints.json');
    t = await startWithTestAgents({}, failpoints);
    const { region, endpoints } = inject('baton');
    s3 = createS3Client({ region, endpoints, credentials: LOCAL_CREDENTIALS });
  });
  afterAll(async () => {
    await t?.stop();
  });

  const resultFor = (ticketId: string, timeoutMs?: number) => resultOf(t, ticketId, timeoutMs);
  const journalOf = (agent: string, sessionId: string) => journalOfSession(t, agent, sessionId);
  const objectKeys = async (prefix: string): Promise<string[]> => {
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: t.stack.resources.bucket, Prefix: prefix }));
    return (listed.Contents ?? []).map((o) => o.Key ?? '');
  };
  const objectText = async (key: string): Promise<string> => {
    const object = await s3.send(new GetObjectCommand({ Bucket: t.stack.resources.bucket, Key: key }));
    return (await object.Body?.transformToString()) ?? '';
  };

  it('cancels an owner mid tool call, through its next renewal, before the call ends, and cancel is idempotent', async () => {
    // Arrange: a pure tool that would wait 4 s, well past a renewal.
    const dir = newDir();
    const s = await t.client.submit({ agent: 'slow-tool', input: { dir, ms: SLOW_TOOL_MS } });
    await waitFor(() => readProbes(dir).some((p) => p.event === 'started'), { what: 'the slow tool to start' });

    // Act
    const requestedAt = Date.now();
    const first = await t.client.cancel(s.sessionId);
    const second = await t.client.cancel(s.sessionId);
    const result = await resultFor(s.ticketId);

    // Assert
    // Idempotent: a second request is accepted again, or finds the turn already cancelled by the
    // first (a busy machine can finish the cancel in between); either way one outcome, below.
    expect(first).toBe('requested');
    expect(['requested', 'already-finished']).toContain(second);
    const probes = readProbes(dir);
    const aborted = probes.find((p) => p.event === 'aborted');
    expect(aborted?.detail, 'the tool saw its signal abort').toBe('cancel');
    // The abort came from the cancel (a renewal saw it), before the tool's own end.
    expect(aborted!.at).toBeGreaterThanOrEqual(requestedAt);
    expect(aborted!.at - requestedAt).toBeLessThan(SLOW_TOOL_MS);
    expect(probes.filter((p) => p.event === 'finished')).toEqual([]);
    expect(result).toMatchObject({ status: 'cancelled', error: 'cancelled by request' });
    const journal = await journalOf('slow-tool', s.sessionId);
    expect(ofKind(journal, 'tool'), 'an aborted pure call journals nothing').toEqual([]);
    expect(ofKind(journal, 'outcome').map((e) => e.data.status)).toEqual(['cancelled']);
    expect(await t.client.status(s.sessionId)).toMatchObject({ status: 'cancelled', cancelRequested: true });
    expect(await t.client.cancel(s.sessionId), 'a cancel after the end').toBe('already-finished');
    expect(await t.client.cancel('no-such-session'), 'an unknown session').toBe('not-found');
  });

  it('never interrupts a once-only call in flight: the call completes and is journaled, then the turn ends cancelled', async () => {
    // Arrange: a once-only call of 1.2 s, longer than a renewal interval (a third of the 3 s lease).
    const dir = newDir();
    const s = await t.client.submit({ agent: 'once-only', input: { dir, ms: 1_200 } });
    await waitFor(() => readProbes(dir).some((p) => p.event === 'started'), { what: 'the once-only call to start' });

    // Act
    const requestedAt = Date.now();
    const cancel = await t.client.cancel(s.sessionId);
    const result = await resultFor(s.ticketId);

    // Assert
    expect(cancel).toBe('requested');
    const probes = readProbes(dir);
    expect(
      probes.filter((p) => p.event === 'aborted'),
      'cancel aborted the once-only call',
    ).toEqual([]);
    const charged = probes.filter((p) => p.event === 'charged');
    expect(charged).toHaveLength(1);
    expect(charged[0]!.at).toBeGreaterThan(requestedAt);
    const journal = await journalOf('once-only', s.sessionId);
    const [intent] = ofKind(journal, 'intent');
    const tools = ofKind(journal, 'tool');
    expect(tools.map((e) => e.data)).toEqual([
      { callId: 'charge-1', tool: 'charge', ok: true, output: { charged: true } },
    ]);
    expect(intent?.data.idempotencyKey).toBe(charged[0]!.detail);
    const [outcome] = ofKind(journal, 'outcome');
    expect(outcome?.data.status).toBe('cancelled');
    expect(outcome!.seq).toBeGreaterThan(tools[0]!.seq);
    expect(ofKind(journal, 'model'), 'no model call after the cancel').toHaveLength(1);
    expect(result.status).toBe('cancelled');
  });

  it('keeps a 1 MB tool result in S3 across a crash right after its entry, and the next leg reads it back', async () => {
    // Arrange: the tool takes 1 s; meanwhile the next journal append is armed to kill its worker.
    const dir = newDir();
    const bytes = 1_000_000;
    const s = await t.client.submit({ agent: 'big-result', input: { dir, bytes, ms: 1_000 } });
    await waitFor(() => readProbes(dir).some((p) => p.event === 'started'), { what: 'the tool to start' });
    writeFileSync(failpoints, JSON.stringify({ 'after-append': { action: 'kill' } }));

    // Act
    const result = await resultFor(s.ticketId, 45_000);

    // Assert: the worker died right after the tool entry, and a recovery leg came next.
    const fired = readJsonLines<{ failpoint: string; pid: number }>(`${failpoints}.log`);
    expect(fired.map((f) => f.failpoint)).toEqual(['after-append']);
    await waitFor(
      () => t.events.some((e) => e.type === 'worker-exited' && e.signal === 'SIGKILL' && e.pid === fired[0]!.pid),
      { what: `the supervisor to see worker ${fired[0]!.pid} die at after-append` },
    );
    const journal = await journalOf('big-result', s.sessionId);
    const toolAt = journal.findIndex((e) => e.kind === 'tool');
    const tool = journal[toolAt] as Extract<JournalEntry, { kind: 'tool' }>;
    const next = journal[toolAt + 1];
    expect(next?.kind === 'leg' && next.data.reason).toBe('recovery');
    // The entry reads back equal, from an S3 object keyed by its seq and epoch.
    const expected = bulkText(bytes);
    expect(tool.data).toEqual({ callId: 'dump-1', tool: 'dump', ok: true, output: { data: expected } });
    const keys = await objectKeys(`default/big-result/${s.sessionId}/J${tool.seq}-e${tool.epoch}-`);
    expect(keys).toHaveLength(1);
    expect(JSON.parse(await objectText(keys[0]!))).toEqual(tool.data);
    // The tool ran once; the turn completed from what the journal held.
    expect(readProbes(dir).filter((p) => p.event === 'started')).toHaveLength(1);
    expect(result).toMatchObject({
      status: 'completed',
      output: `read ${bytes} characters, sha256 ${sha256(expected)}`,
    });
  });

  it('fails an over-cap tool result once, naming its bytes and the cap, without retrying', async () => {
    // Arrange
    const dir = newDir();
    const s = await t.client.submit({ agent: 'capped-result', input: { dir, bytes: 200_000 } });

    // Act
    const result = await resultFor(s.ticketId);

    // Assert
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(
      new RegExp(
        `result of tool dump at seq \\d+ \\(the agent's limits.maxPayloadBytes\\) is 200\\d{3} bytes, over the hard cap of ${CAPPED_PAYLOAD_BYTES} bytes`,
      ),
    );
    const journal = await journalOf('capped-result', s.sessionId);
    expect(ofKind(journal, 'outcome')).toHaveLength(1);
    expect(ofKind(journal, 'error'), 'no retry was spent').toEqual([]);
    expect(ofKind(journal, 'tool')).toEqual([]);
    expect(readProbes(dir).filter((p) => p.event === 'started')).toHaveLength(1);
    expect(await t.client.status(s.sessionId)).toMatchObject({ status: 'failed' });
  });

  it('accepts a ticket input over the SQS limit through S3 and completes its turn', async () => {
    // Arrange: 300 KB of text, over SQS's 256 KiB message limit.
    const text = bulkText(300_000);

    // Act
    const s = await t.client.submit({ agent: 'echo', input: { text } });
    const result = await resultFor(s.ticketId);

    // Assert
    // Under the ticket's tenant and agent, named by the ticket id and the SHA-256 its reference carries.
    const ticketKey = `tickets/default/echo/${encodeURIComponent(s.ticketId)}-${sha256(JSON.stringify({ text }))}.json`;
    expect(JSON.parse(await objectText(ticketKey))).toEqual({ text });
    expect(result).toMatchObject({ status: 'completed', output: `read 300000 characters, sha256 ${sha256(text)}` });
    const [input] = ofKind(await journalOf('echo', s.sessionId), 'input');
    expect(input?.data.input).toEqual({ text });
  });
});

describe('the retry policy on the local stack, with delayed kicks as the only wake-up', { timeout: 180_000 }, () => {
  let t: TestStack;
  beforeAll(async () => {
    // No sweeper: it would wake a due session too, and hide a delayed kick that never lands.
    t = await startWithTestAgents({ functions: { intake: DEFAULT_FUNCTIONS.intake, step: DEFAULT_FUNCTIONS.step } });
  });
  afterAll(async () => {
    await t?.stop();
  });

  it('retries a flaky tool through delayed kicks: success on the third attempt, failure after the fourth', async () => {
    // Arrange: one tool that fails twice, one that never answers.
    const [flakyDir, brokenDir] = [newDir(), newDir()];
    const flaky = await t.client.submit({ agent: 'flaky-tool', input: { dir: flakyDir, failures: 2 } });
    const broken = await t.client.submit({ agent: 'flaky-tool', input: { dir: brokenDir, failures: 99 } });

    // Act
    const flakyResult = await resultOf(t, flaky.ticketId, 45_000);
    const brokenResult = await resultOf(t, broken.ticketId, 45_000);

    // Assert: the attempt history and its backoff are in the journal.
    const delayOf = (attempt: number) => FLAKY_RETRY.initialDelayMs * FLAKY_RETRY.multiplier ** (attempt - 1);
    const assertBackoff = (journal: JournalEntry[], errors: Extract<JournalEntry, { kind: 'error' }>[]) => {
      for (const error of errors) {
        if (error.data.retryAt === undefined) continue;
        // retryAt is set just before the entry's own timestamp (apart by one busy moment at most).
        const delay = delayOf(error.data.attempt);
        expect(error.data.retryAt - error.at, `attempt ${error.data.attempt}'s delay`).toBeLessThanOrEqual(delay);
        expect(error.data.retryAt - error.at).toBeGreaterThan(delay - 1_000);
        // The next leg is woken by the delayed kick: at the retry time, not before.
        const leg = journal.find((e) => e.seq > error.seq && e.kind === 'leg') as
          | Extract<JournalEntry, { kind: 'leg' }>
          | undefined;
        expect(leg?.data.reason).toBe('retry');
        expect(leg!.at).toBeGreaterThanOrEqual(error.data.retryAt);
        expect(leg!.at - error.data.retryAt).toBeLessThan(WOKEN_BY_THE_KICK_MS);
      }
    };
    expect(flakyResult).toMatchObject({ status: 'completed', output: 'answered: {"attempt":3}' });
    const flakyJournal = await journalOfSession(t, 'flaky-tool', flaky.sessionId);
    const flakyErrors = ofKind(flakyJournal, 'error');
    expect(flakyErrors.map((e) => [e.data.source, e.data.attempt, typeof e.data.retryAt])).toEqual([
      ['tool:flaky', 1, 'number'],
      ['tool:flaky', 2, 'number'],
    ]);
    assertBackoff(flakyJournal, flakyErrors);
    expect(ofKind(flakyJournal, 'tool').map((e) => e.data.output)).toEqual([{ attempt: 3 }]);

    expect(brokenResult.status).toBe('failed');
    expect(brokenResult.error).toMatch(/tool:flaky failed 4 times; last error: .*attempt 4/);
    const brokenJournal = await journalOfSession(t, 'flaky-tool', broken.sessionId);
    const brokenErrors = ofKind(brokenJournal, 'error');
    expect(brokenErrors.map((e) => [e.data.attempt, e.data.retryAt === undefined])).toEqual([
      [1, false],
      [2, false],
      [3, false],
      [FLAKY_RETRY.attempts, true],
    ]);
    assertBackoff(brokenJournal, brokenErrors);
    expect(readProbes(brokenDir).filter((p) => p.event === 'attempt')).toHaveLength(FLAKY_RETRY.attempts);
    expect(ofKind(brokenJournal, 'outcome')).toHaveLength(1);
  });
});
