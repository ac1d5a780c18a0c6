import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FollowEvent } from '../../lib/client/baton-client.ts';
import { HttpBatonClient } from '../../lib/client/http-baton-client.ts';
import { readProbes } from '../fixtures/agents/probe-log.ts';
import {
  FOLLOWERS_SAW_FILE,
  GATE_TIMEOUT_MS,
  STREAMING_AGENTS_MODULE,
  streamingAnswer,
} from '../fixtures/agents/streaming-agent.ts';
import { cliEnv } from '../fixtures/cli.ts';
import { startTestStack, type TestStack } from '../fixtures/stack.ts';
import { waitFor } from '../fixtures/wait-for.ts';

const REPO_ROOT = resolve(import.meta.dirname, '../..');
const WORDS = 120;

/** `baton events SESSION --follow` in a process of its own, its JSON lines collected as they come. */
function followWithCli(sessionId: string, stateDir: string) {
  const child: ChildProcessWithoutNullStreams = spawn(
    'sh',
    [join(REPO_ROOT, 'bin', 'baton'), '--state-dir', stateDir, 'events', sessionId, '--follow'],
    { cwd: REPO_ROOT, env: cliEnv() },
  );
  const events: FollowEvent[] = [];
  let buffered = '';
  let stderr = '';
  child.stdout.on('data', (data: Buffer) => {
    buffered += data.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) if (line.trim() !== '') events.push(JSON.parse(line) as FollowEvent);
  });
  child.stderr.on('data', (data: Buffer) => {
    stderr += data.toString();
  });
  const exited = new Promise<number | null>((done) => child.on('close', done));
  return { events, exited, stderr: () => stderr, kill: () => child.kill() };
}

const partialText = (events: FollowEvent[]) => events.map((e) => (e.kind === 'model-text' ? e.text : '')).join('');

/** Asserts what a follower saw: partial text first, then the model entry, whole. */
function expectPartialBeforeEntry(events: FollowEvent[], answer: string) {
  const entryAt = events.findIndex((e) => e.kind === 'model');
  const firstPartial = events.findIndex((e) => e.kind === 'model-text');
  expect(firstPartial).toBeGreaterThanOrEqual(0);
  expect(firstPartial).toBeLessThan(entryAt);
  expect(events.findLastIndex((e) => e.kind === 'model-text')).toBeLessThan(entryAt);
  expect(answer.startsWith(partialText(events))).toBe(true);
  expect(events[entryAt]).toMatchObject({ kind: 'model', data: { text: answer } });
}

// Worker processes and a CLI process start cold on a busy 2-core machine: allow minutes.
describe('streaming model output across processes', { timeout: 240_000 }, () => {
  let t: TestStack;
  let dir: string;

  beforeAll(async () => {
    // Its own stack: the streaming model may wait for the followers longer than the shared 6 s functions allow.
    t = await startTestStack({
      functionTimeoutS: GATE_TIMEOUT_MS / 1000 + 30,
      visibilityTimeoutS: GATE_TIMEOUT_MS / 1000 + 60,
      workers: 1,
      console: { port: 0 },
      handlerEnv: { BATON_AGENTS_MODULE: STREAMING_AGENTS_MODULE },
    });
    dir = mkdtempSync(join(tmpdir(), 'baton-streaming-'));
  });
  afterAll(async () => {
    await t?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('shows followers in other processes partial text before the model entry, which holds the whole answer', async () => {
    // Arrange: a worker process runs the streaming model, which holds most of its answer until
    // both followers — the CLI in a process of its own, and the HTTP API's event stream — showed some.
    const answer = streamingAnswer(WORDS);
    const submitted = await t.client.submit({ agent: 'streaming', input: { dir, words: WORDS } });
    await waitFor(async () => readProbes(dir).some((p) => p.event === 'streaming'), {
      what: 'the worker to start streaming',
    });
    const cli = followWithCli(submitted.sessionId, t.stateDir);
    const http = new HttpBatonClient({ baseUrl: t.stack.config.api as string, token: t.stack.config.token });
    const viaApi: FollowEvent[] = [];
    const apiFollow = (async () => {
      for await (const event of http.events(submitted.sessionId, { follow: true, live: true })) viaApi.push(event);
    })();

    // Act
    try {
      await waitFor(
        () => cli.events.some((e) => e.kind === 'model-text') && viaApi.some((e) => e.kind === 'model-text'),
        {
          what: () =>
            `partial text in both followers (cli: ${cli.events.length} events, ${cli.stderr()}; api: ${viaApi.length})`,
          timeoutMs: GATE_TIMEOUT_MS,
        },
      );
      writeFileSync(join(dir, FOLLOWERS_SAW_FILE), '');
      await apiFollow;
      expect(await cli.exited).toBe(0);
    } finally {
      cli.kill();
    }

    // Assert: the worker was another process, and each follower saw partial text, then the whole entry.
    expect(readProbes(dir).find((p) => p.event === 'streaming')?.detail).toEqual({ sink: true });
    expect(readProbes(dir).find((p) => p.event === 'streamed')?.pid).not.toBe(process.pid);
    expectPartialBeforeEntry(cli.events, answer);
    expectPartialBeforeEntry(viaApi, answer);
    const journal = await t.store.readJournal((await t.store.findSession(submitted.sessionId))!.key);
    expect(journal.filter((e) => e.kind === 'model').map((e) => e.data)).toEqual([
      expect.objectContaining({ text: answer, stopReason: 'end_turn' }),
    ]);
    expect(journal.some((e) => (e.kind as string) === 'model-text')).toBe(false);
  });
});
