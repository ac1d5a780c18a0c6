import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readProbes } from '../fixtures/agents/probe-log.ts';
import { TEST_AGENTS_MODULE } from '../fixtures/agents/registry.ts';
import { startTestStack, type TestStack } from '../fixtures/stack.ts';
import { ensureChromium } from './chromium.ts';

/** Screenshots are kept as test artifacts (git-ignored). */
const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'screenshots');
/** Generous: worker processes start cold and the machine is busy. */
const PAGE_WAIT_MS = 150_000;

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
      // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
      chromium.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] }),
    ]);
  });
  afterEach(async () => {
    await page?.close();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  /** Opens the console and submits a slow-tool ticket from its form; resolves on the session's page. */
  async function submitFromConsole(dir: string, ms: number): Promise<string> {
    page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    page.setDefaultTimeout(PAGE_WAIT_MS);
    await page.goto(t.stack.config.console as string);
    const form = page.getByRole('form', { name: 'Submit a ticket' });
    await form.getByLabel('Agent').fill('slow-tool');
    await form.getByLabel('Input (JSON)').fill(JSON.stringify({ dir, ms }));
    await form.getByRole('button', { name: 'Submit ticket' }).click();
    await page.waitForURL(/\/sessions\/[a-z2-7]{26}$/);
    return new URL(page.url()).pathname.split('/').at(-1) as string;
  }

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
});
