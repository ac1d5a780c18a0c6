import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatAnswer } from '../../examples/chat-web/agent.ts';
import { type ChatWebServer, startChatWebServer } from '../../examples/chat-web/server.ts';
import { startTestStack, type TestStack } from '../fixtures/stack.ts';
import { ensureChromium, launchChromium } from './chromium.ts';

/** Screenshots are kept as test artifacts (git-ignored). */
const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'screenshots');
/** Generous: worker processes start cold and the machine is busy. */
const PAGE_WAIT_MS = 150_000;
/** The example's agents module: the workers host its chat agent. */
const CHAT_AGENTS_MODULE = new URL('../../examples/chat-web/agent.ts', import.meta.url).href;

describe('browser chat: the useChat example against a conversation on the local stack', { timeout: 480_000 }, () => {
  let t: TestStack;
  let browser: Browser;
  let web: ChatWebServer;
  let page: Page;

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    const executablePath = ensureChromium();
    [t, browser] = await Promise.all([
      startTestStack({
        console: { port: 0 },
        // A streamed answer takes ~5 s (20 s at most): legs of 40 s hold one on a busy machine.
        functionTimeoutS: 40,
        visibilityTimeoutS: 90,
        handlerEnv: { BATON_AGENTS_MODULE: CHAT_AGENTS_MODULE },
      }),
      launchChromium(executablePath),
    ]);
    web = await startChatWebServer({ apiUrl: t.stack.config.api as string, token: t.stack.config.token });
  });
  afterAll(async () => {
    await page?.close();
    await browser?.close();
    await web?.stop();
    await t?.stop();
  });

  const answers = () => page.locator('li[data-role="assistant"]');
  const answerText = (n: number) =>
    answers()
      .nth(n - 1)
      .locator('span')
      .first();

  /** Sends a message from the page's form. */
  async function send(text: string) {
    const form = page.getByRole('form', { name: 'Send a message' });
    await form.getByLabel('Message').fill(text);
    await form.getByRole('button', { name: 'Send' }).click();
  }

  /** Waits until answer `n` shows part of its text and not yet its end: it is streaming in. */
  async function seenStreaming(n: number) {
    // An expression evaluated in the page (its DOM), polled until it holds.
    const streaming = `(() => {
      const text = document.querySelectorAll('li[data-role="assistant"]')[${n - 1}]?.textContent ?? '';
      return text.includes('thought-') && !text.includes('(end of answer ${n})');
    })()`;
    await page.waitForFunction(streaming, undefined, { timeout: PAGE_WAIT_MS, polling: 20 });
  }

  it('streams the answers to two messages, and a reload mid-answer shows the third completing', async () => {
    // Arrange
    page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
    page.setDefaultTimeout(PAGE_WAIT_MS);
    await page.goto(web.url);
    await page.waitForURL(/\?chat=/);
    const chatAddress = page.url();

    // Act: two messages, each answer seen while it streams and then whole.
    await send('hello');
    await seenStreaming(1);
    await answerText(1).filter({ hasText: '(end of answer 1)' }).waitFor();
    await send('and again');
    await seenStreaming(2);
    await answerText(2).filter({ hasText: '(end of answer 2)' }).waitFor();
    // A third, reloaded while its answer streams in.
    await send('one more');
    await seenStreaming(3);
    const beforeReload = await answerText(3).textContent();
    await page.reload();
    await answerText(3).filter({ hasText: '(end of answer 3)' }).waitFor();

    // Assert: the same chat, the whole conversation, each answer once and whole.
    expect(page.url()).toBe(chatAddress);
    expect(beforeReload).not.toContain('(end of answer 3)');
    await expect(page.locator('li[data-role="user"]').allTextContents()).resolves.toEqual([
      'You: hello',
      'You: and again',
      'You: one more',
    ]);
    await expect(answers().locator('span').allTextContents()).resolves.toEqual([
      chatAnswer(1, 'hello'),
      chatAnswer(2, 'and again'),
      chatAnswer(3, 'one more'),
    ]);
    await expect(page.getByLabel('Status').textContent()).resolves.toBe('ready');
    await page.screenshot({ path: join(ARTIFACTS, 'chat-web.png'), fullPage: true });
  });

  it('stops an answer on the server from the page’s stop button; the next message is a new turn, answered', async () => {
    // Arrange
    page = await browser.newPage();
    page.setDefaultTimeout(PAGE_WAIT_MS);
    await page.goto(web.url);
    await page.waitForURL(/\?chat=/);
    const chatId = new URL(page.url()).searchParams.get('chat') as string;
    await send('stop me');
    await seenStreaming(1);

    // Act: stop mid-answer, then send another message.
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.getByText('Stopped: that answer ends here').waitFor();
    await send('go on');
    await answerText(2).filter({ hasText: '(end of answer 2)' }).waitFor();

    // Assert: the first turn was stopped on the server, not only its fetch aborted; the
    // conversation went on and answered the second.
    const sessions = await t.client.sessions({ agent: 'chat-web' });
    const session = sessions.sessions.find((s) => s.ticketId === chatId);
    const deadline = Date.now() + PAGE_WAIT_MS;
    let status = await t.client.status(session?.sessionId as string);
    while (status?.status !== 'idle' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      status = await t.client.status(session?.sessionId as string);
    }
    expect(status?.status).toBe('idle');
    expect(status?.turns?.map((turn) => turn.outcome)).toEqual(['cancelled', 'completed']);
    await expect(answerText(2).textContent()).resolves.toBe(chatAnswer(2, 'go on'));
  });
});
