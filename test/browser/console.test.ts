import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SessionStatus } from '../../lib/client/baton-client.ts';
import { consoleLoginUrl } from '../../lib/local/local-config.ts';
import { readProbes } from '../fixtures/agents/probe-log.ts';
import { TEST_AGENTS_MODULE } from '../fixtures/agents/registry.ts';
import { startTestStack, type TestStack } from '../fixtures/stack.ts';
import { CHROMIUM_INSTALL_TIMEOUT_MS, ensureChromium, launchChromium } from './chromium.ts';

/** Screenshots are kept as test artifacts (git-ignored). */
const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'screenshots');
/** Generous: worker processes start cold and the machine is busy. */
const PAGE_WAIT_MS = 150_000;
/**
 * The setup installs Chromium when it is missing, then starts the stack and the browser: a hook
 * deadline of its own above the install's, which on a clean machine alone outlasts the suite's
 * 120 s (the hook then failed as a timeout although the install went on and succeeded).
 */
const SETUP_TIMEOUT_MS = CHROMIUM_INSTALL_TIMEOUT_MS + 180_000;

async function waitFor(what: string, done: () => boolean, timeoutMs = 150_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('the web console in Chromium against the local stack', { timeout: 420_000 }, () => {
  let t: TestStack;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    const executablePath = ensureChromium();
    [t, browser] = await Promise.all([
      startTestStack({
        console: { port: 0 },
        // Legs of 20 s: on a loaded machine a cold leg can spend seconds before its first step,
        // and the 4 s tool must still fit (the lease TTL stays short, so recovery stays quick).
        functionTimeoutS: 20,
        visibilityTimeoutS: 60,
        handlerEnv: { BATON_AGENTS_MODULE: TEST_AGENTS_MODULE },
      }),
      launchChromium(executablePath),
    ]);
  }, SETUP_TIMEOUT_MS);
  afterEach(async () => {
    await page?.close();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  /** Opens the console and submits a ticket from its form; resolves on the session's page. */
  async function submitTicket(agent: string, input: unknown): Promise<string> {
    page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    page.setDefaultTimeout(PAGE_WAIT_MS);
    // The address baton dev prints: its token becomes the console's cookie.
    await page.goto(consoleLoginUrl(t.stack.config.console as string, t.stack.config.token as string));
    const form = page.getByRole('form', { name: 'Submit a ticket' });
    await form.getByLabel('Agent').fill(agent);
    await form.getByLabel('Input (JSON)').fill(JSON.stringify(input));
    await form.getByRole('button', { name: 'Submit ticket' }).click();
    await page.waitForURL(/\/sessions\/[a-z2-7]{26}$/);
    return new URL(page.url()).pathname.split('/').at(-1) as string;
  }

  const submitFromConsole = (dir: string, ms: number) => submitTicket('slow-tool', { dir, ms });

  /** Sends an input from the session page's send form; resolves on the turn id and mode the API answered with. */
  async function sendFromConsole(input: unknown, mode: 'queue' | 'inject' | 'steer') {
    const form = page.getByRole('form', { name: 'Send to this conversation' });
    await form.getByLabel('Input (JSON)').fill(JSON.stringify(input));
    await form.getByLabel('Mode').selectOption(mode);
    await form.getByRole('button', { name: 'Send' }).click();
    // The form clears its last answer when it submits, so this is the answer to this send.
    const result = page.locator('#send-result', { hasText: /^Sent / });
    await result.waitFor();
    const [, turnId, sentAs] = /^Sent (\S+) as (\w+)/.exec((await result.textContent()) as string) ?? [];
    return { turnId: turnId as string, mode: sentAs };
  }

  /** Polls the session's status from this process until `done`. */
  async function waitForStatus(sessionId: string, done: (s: SessionStatus) => boolean, what: string) {
    let status: SessionStatus | undefined;
    const deadline = Date.now() + PAGE_WAIT_MS;
    for (;;) {
      status = await t.client.status(sessionId);
      if (status && done(status)) return status;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** The published result of a turn (its ticket id is the turn id). */
  const resultOf = async (turnId: string) =>
    (await t.awaitResults((rs) => rs.some((r) => r.ticketId === turnId), PAGE_WAIT_MS)).find(
      (r) => r.ticketId === turnId,
    );

  it('shows a ticket submitted from the console completing, its timeline marking the recovery after a worker is killed', async () => {
    // Arrange
    const dir = mkdtempSync(join(tmpdir(), 'baton-console-'));
    const sessionId = await submitFromConsole(dir, 2_500);
    await waitFor('the slow tool to start', () => readProbes(dir).some((p) => p.event === 'started'));

    // Act: kill -9 every worker, the lease holder among them; the supervisor starts new ones.
    for (const worker of t.stack.supervisor.workers()) process.kill(worker.pid, 'SIGKILL');

    // Assert: the page follows the session live to its end, with a recovery leg in the timeline.
    await page.locator('#session-state', { hasText: 'completed' }).waitFor();
    await page.locator('#live-state', { hasText: 'Finished' }).waitFor();
    const recovery = page.locator('li.leg[data-reason="recovery"]');
    await expect(recovery.count()).resolves.toBeGreaterThanOrEqual(1);
    await expect(recovery.first().textContent()).resolves.toContain('took over its expired lease');
    await expect(page.locator('#session-outcome').textContent()).resolves.toBe('completed');
    await expect(page.locator('#session-recoveries').textContent()).resolves.not.toBe('0');
    await expect(page.locator('li.step.kind-tool').last().textContent()).resolves.toContain('slowWait');
    // The input names a temporary folder of this machine: masked, so the picture can go in the docs.
    await page.screenshot({
      path: join(ARTIFACTS, 'session-recovery.png'),
      fullPage: true,
      mask: [page.locator('li.step.kind-input .step-detail')],
    });
    // The list shows it too, and links back to it.
    await page.getByRole('link', { name: '← All sessions' }).click();
    await page.getByRole('link', { name: sessionId }).waitFor();
    await page.screenshot({ path: join(ARTIFACTS, 'sessions-list.png'), fullPage: true });
  });

  it('shows nothing to a browser without the token, and cannot be framed by another page', async () => {
    // Arrange: a browser that never opened the printed address, and a page that frames the console.
    const context = await browser.newContext();
    page = await context.newPage();
    page.setDefaultTimeout(PAGE_WAIT_MS);

    // Act
    await page.goto(t.stack.config.console as string);
    const refused = page.locator('p.error', { hasText: 'unauthenticated' });
    await refused.waitFor();
    const said = await refused.textContent();
    const submitHidden = await page.getByRole('form', { name: 'Submit a ticket' }).isHidden();
    const framed = consoleLoginUrl(t.stack.config.console as string, t.stack.config.token as string);
    await page.setContent(`<iframe id="framed" src="${framed}"></iframe>`);
    const frame = await (await page.locator('#framed').elementHandle())?.contentFrame();
    await frame?.waitForLoadState('load');

    // Assert
    expect(said).toContain('.baton/local.json');
    expect(submitHidden).toBe(true);
    // frame-ancestors 'none': the browser shows its own error page in the frame, never the console.
    expect(frame?.url()).not.toMatch(/^http:\/\/127\.0\.0\.1/);
    await expect(frame?.locator('h1', { hasText: 'Sessions' }).count()).resolves.toBe(0);
    await context.close();
  });

  it('stops a running session when Cancel is clicked', async () => {
    // Arrange
    const dir = mkdtempSync(join(tmpdir(), 'baton-console-'));
    await submitFromConsole(dir, 4_000);
    await waitFor('the slow tool to start', () => readProbes(dir).some((p) => p.event === 'started'));

    // Act
    await page.getByRole('button', { name: 'Cancel session' }).click();

    // Assert
    await page.locator('#session-state', { hasText: 'cancelled' }).waitFor();
    await expect(page.locator('#session-outcome').textContent()).resolves.toContain('cancelled by request');
    await expect(page.getByRole('button', { name: /Cancel/ }).isDisabled()).resolves.toBe(true);
    await waitFor('the tool to see its signal abort', () => readProbes(dir).some((p) => p.event === 'aborted'));
    expect(readProbes(dir).filter((p) => p.event === 'finished')).toEqual([]);
    await page.screenshot({ path: join(ARTIFACTS, 'session-cancelled.png'), fullPage: true });
  });

  it('approves a waiting refund from the console, the turn resumes; then queues, injects, steers and stops turns', async () => {
    // Arrange: a support-desk conversation whose first turn asks a human to approve a refund.
    const sessionId = await submitTicket('support-desk', { text: 'refund O-7' });
    const approval = page.getByRole('listitem', { name: 'Approval of t1-refund' });
    await approval.waitFor();
    await expect(approval.textContent()).resolves.toContain('issueRefund');

    // Act
    await approval.getByRole('button', { name: 'Approve' }).click();

    // Assert: the turn resumed from the decision and finished with the refund issued.
    await approval.waitFor({ state: 'detached' });
    const first = await waitForStatus(sessionId, (s) => s.turns?.[0]?.outcome !== undefined, 'the first turn to end');
    expect(first.turns?.[0]).toMatchObject({ status: 'finished', outcome: 'completed' });
    const refund = await resultOf(first.turns?.[0]?.turnId as string);
    expect(refund?.output).toMatch(/^refund R-\w+ issued for O-7$/);
    await page.screenshot({ path: join(ARTIFACTS, 'session-approved.png'), fullPage: true });

    // Act: a work turn queued, a note injected into it while it runs, then a long turn steered away.
    // The work turn lasts seconds (500 ms a call): the note must reach it while it runs, on a busy
    // machine too (at 1.5 s the turn had ended first once, and the note became a turn of its own).
    const work = await sendFromConsole({ text: 'work 10' }, 'queue');
    const note = await sendFromConsole({ text: 'note A' }, 'inject');
    const long = await sendFromConsole({ text: 'work 50' }, 'queue');
    await waitForStatus(sessionId, (s) => s.activeTurnId === long.turnId, 'the long turn to start');
    const steer = await sendFromConsole({ text: 'stop' }, 'steer');

    // Assert: the note landed in the work turn (active from the moment it was queued).
    expect([work.mode, note.mode, long.mode, steer.mode]).toEqual(['queue', 'inject', 'queue', 'steer']);
    expect((await resultOf(work.turnId))?.output).toBe('done 10; notes: note A');
    expect((await resultOf(steer.turnId))?.output).toBe('turn 4: stop');
    const status = await waitForStatus(sessionId, (s) => s.status === 'idle', 'the conversation to go idle');
    expect(status.turns?.find((turn) => turn.turnId === long.turnId)?.outcome).toBe('superseded');

    // Act: a long turn stopped alone from the page's Stop turn button.
    const stopped = await sendFromConsole({ text: 'work 50' }, 'queue');
    await waitForStatus(sessionId, (s) => s.activeTurnId === stopped.turnId, 'the turn to stop to start');
    await page.getByRole('button', { name: 'Stop turn' }).click();

    // Assert: that turn ended cancelled, said it was stopped, and the conversation goes on.
    expect(await resultOf(stopped.turnId)).toMatchObject({
      status: 'cancelled',
      error: expect.stringMatching(/stopped/),
    });
    const after = await waitForStatus(sessionId, (s) => s.status === 'idle', 'the conversation idle after the stop');
    expect(after.turns?.find((turn) => turn.turnId === stopped.turnId)?.outcome).toBe('cancelled');
    await page.getByRole('button', { name: 'Stop turn' }).waitFor({ state: 'hidden' });
  });

  it('forks a refunded conversation from a timeline entry: the fork’s page opens and asks before refunding again', async () => {
    // Arrange: a support-desk conversation that refunded order O-7 with an approval from the console.
    const sessionId = await submitTicket('support-desk', { text: 'refund O-7' });
    const approval = page.getByRole('listitem', { name: 'Approval of t1-refund' });
    await approval.getByRole('button', { name: 'Approve' }).click();
    await waitForStatus(sessionId, (s) => s.turns?.[0]?.outcome !== undefined, 'the refund turn to end');
    const asked = page.locator('li.step.kind-model', { hasText: 'calls issueRefund' });
    const form = page.getByRole('form', { name: 'Fork from here' });

    // Act: fork right after the model asked for the refund; first with a new text, which needs a turn's end.
    await asked.getByRole('button', { name: /^Fork from seq \d+$/ }).click();
    await form.getByLabel(/^New input text/).fill('refund O-8');
    await form.getByRole('button', { name: 'Fork' }).click();
    const refused = form.locator('p.error', { hasText: 'a new input needs a turn boundary' });
    await refused.waitFor();
    await form.getByLabel(/^New input text/).fill('');
    await form.getByLabel('Once-only calls made again').selectOption('ask');
    await form.getByRole('button', { name: 'Fork' }).click();
    await page.waitForURL((url) => /\/sessions\/[a-z2-7]{26}$/.test(url.pathname) && !url.pathname.endsWith(sessionId));
    const forkId = new URL(page.url()).pathname.split('/').at(-1) as string;

    // Assert: the fork's page links back to its original and shows the refund it already made.
    await page.locator('#session-forked-from').getByRole('link', { name: sessionId }).waitFor();
    const repeat = page.getByRole('listitem', { name: 'Approval of t1-refund' });
    await repeat.locator('.ran-before', { hasText: `Already ran in session ${sessionId}` }).waitFor();
    await expect(repeat.textContent()).resolves.toMatch(/refundId/);
    const status = await t.client.status(forkId);
    expect(status).toMatchObject({ forkedFrom: { session: sessionId }, status: 'waiting' });
    expect(status?.pendingApprovals?.[0]?.ranBefore?.session).toBe(sessionId);
    await page.screenshot({ path: join(ARTIFACTS, 'session-fork.png'), fullPage: true });
  });

  it('lists the background tasks with links to their sessions, and a release from the console ends the running task', async () => {
    // Arrange: a dispatcher with a quick task and a long one (40 steps of half a second).
    const sessionId = await submitTicket('dispatcher', {
      tasks: [
        { agent: 'support-desk', input: { text: 'hello' }, description: 'quick' },
        { agent: 'long-haul', input: { steps: 40, stepMs: 500, payloadBytes: 16 }, description: 'long' },
      ],
    });
    const tasks = page.locator('#tasks');
    const quick = tasks.locator('tr', { hasText: 'quick' });
    const long = tasks.locator('tr', { hasText: 'long' });
    await quick.and(page.locator('[data-status="completed"]')).waitFor();
    await long.and(page.locator('[data-status="running"]')).waitFor();
    await expect(quick.textContent()).resolves.toContain('turn 1: hello');
    // The task's link opens its child session, which links back to the session that started it.
    const quickId = (await quick.getAttribute('data-task')) as string;
    await quick.getByRole('link', { name: quickId }).click();
    await page.waitForURL(new RegExp(`/sessions/${quickId}$`));
    await page.locator('#session-parent').getByRole('link', { name: sessionId }).click();
    await page.waitForURL(new RegExp(`/sessions/${sessionId}$`));

    // Act
    await page.getByRole('button', { name: 'Release session' }).click();

    // Assert: the running task was cancelled, the finished one kept its result, new work is refused.
    await page.locator('#release-result', { hasText: /^Released: 1 running task\(s\) cancelled/ }).waitFor();
    await long.and(page.locator('[data-status="cancelled"]')).waitFor();
    await page.locator('#session-release', { hasText: 'released' }).waitFor();
    const longId = (await long.getAttribute('data-task')) as string;
    expect(await t.client.tasks(sessionId)).toEqual([
      expect.objectContaining({ taskId: quickId, status: 'completed' }),
      expect.objectContaining({ taskId: longId, status: 'cancelled' }),
    ]);
    expect((await t.client.status(longId))?.status).toBe('cancelled');
    await expect(page.getByRole('button', { name: 'Release session' }).isDisabled()).resolves.toBe(true);
    await page.screenshot({ path: join(ARTIFACTS, 'session-released.png'), fullPage: true });
  });

  it('resolves a parked once-only call from the console: marked done, the turn goes on from its output without running it again', async () => {
    // Arrange: the charge is cut off by killing every worker; the recovery cannot tell whether it happened.
    const dir = mkdtempSync(join(tmpdir(), 'baton-console-'));
    await submitTicket('once-only', { dir, ms: 1_500 });
    await waitFor('the charge to start', () => readProbes(dir).some((p) => p.event === 'started'));
    for (const worker of t.stack.supervisor.workers()) process.kill(worker.pid, 'SIGKILL');
    const parked = page.getByRole('listitem', { name: 'Parked call charge-1' });
    await parked.waitFor();

    // Act
    await parked.getByLabel('Its output (JSON)').fill('{"charged": true}');
    await parked.getByRole('button', { name: 'It happened' }).click();

    // Assert
    await page.locator('#session-state', { hasText: 'completed' }).waitFor();
    await expect(page.locator('#session-outcome').textContent()).resolves.toBe('completed');
    // The verdict is journaled as a reconciliation the operator made (the timeline follows the
    // events stream, which may show it a moment after the state).
    await page.locator('li.step.kind-reconciled', { hasText: 'charge-1: done' }).waitFor();
    expect(readProbes(dir).filter((p) => p.event === 'started')).toHaveLength(1);
  });
});
