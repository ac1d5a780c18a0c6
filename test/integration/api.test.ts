import { mkdtempSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSse } from '../../lib/api/sse.ts';
import { main } from '../../lib/cli/main.ts';
import type { SessionEvent } from '../../lib/client/baton-client.ts';
import { ApiCallError, HttpBatonClient } from '../../lib/client/http-baton-client.ts';
import { TurnRefusedError } from '../../lib/core/errors.ts';
import { readProbes } from '../fixtures/agents/probe-log.ts';
import { TEST_AGENTS_MODULE } from '../fixtures/agents/registry.ts';
import { startTestStack, type TestStack } from '../fixtures/stack.ts';

/** Polls `check` until it returns a value, or fails naming what it waited for. */
async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// Worker processes start cold on a busy 2-core machine: allow minutes, not seconds.
describe('the HTTP API served by the local stack', { timeout: 180_000 }, () => {
  let t: TestStack;
  let api: string;
  /** The run's token, as baton dev wrote it to local.json. */
  const token = () => t.stack.config.token as string;
  /** The CLI against the API: it finds the token in the stack's local.json. */
  const cli = (args: string[], out: (line: string) => void) => main(['--state-dir', t.stateDir, ...args], out);

  beforeAll(async () => {
    t = await startTestStack({ console: { port: 0 }, handlerEnv: { BATON_AGENTS_MODULE: TEST_AGENTS_MODULE } });
    api = t.stack.config.api as string;
  });
  afterAll(async () => {
    await t?.stop();
  });

  const call = async (
    method: string,
    path: string,
    options: { body?: unknown; headers?: Record<string, string> } = {},
  ) => {
    const response = await fetch(`${api}${path}`, {
      method,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token()}`, ...options.headers },
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    });
    const text = await response.text();
    return {
      status: response.status,
      type: response.headers.get('content-type') ?? '',
      text,
      json: () => JSON.parse(text),
    };
  };
  const settled = (sessionId: string, headers: Record<string, string> = {}) =>
    waitFor(`session ${sessionId} to finish`, async () => {
      const r = await call('GET', `/sessions/${sessionId}`, { headers });
      const body = r.status === 200 ? r.json() : undefined;
      return body && ['completed', 'failed', 'cancelled'].includes(body.status) ? body : undefined;
    });

  it('writes its address and the console’s to local.json, and serves the console page', async () => {
    // Act
    const page = await fetch(new URL('/sessions/anything', t.stack.config.console as string));

    // Assert
    expect(t.stack.config.api).toBe(`${t.stack.config.console?.replace(/\/$/, '')}/api`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<script type="module" src="/app.js">');
  });

  it('answers only its own console and local tools: without the run’s token, from a foreign page, under a rebound name or with a text/plain body it refuses and changes nothing', async () => {
    // Arrange: a web page would post a ticket as text/plain (no CORS preflight) or under a rebinding name.
    const tenant = `guard${Date.now().toString(36)}`;
    const ticket = JSON.stringify({ agent: 'echo', input: { text: 'from a page' }, tenant });
    const port = new URL(api).port;
    const raw = (headers: Record<string, string>, body?: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const request = httpRequest(
          { host: '127.0.0.1', port, path: '/api/sessions', method: body === undefined ? 'GET' : 'POST', headers },
          (response) => {
            let text = '';
            response.on('data', (chunk) => {
              text += chunk;
            });
            response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
          },
        );
        request.on('error', reject);
        request.end(body);
      });
    const json = { 'content-type': 'application/json', authorization: `Bearer ${token()}` };

    // Act
    const noToken = await raw({ 'content-type': 'application/json' }, ticket);
    const wrongToken = await raw({ ...json, authorization: 'Bearer guessed' }, ticket);
    const textPlain = await raw({ ...json, 'content-type': 'text/plain' }, ticket);
    const foreignPage = await raw({ ...json, origin: 'https://attacker.example' }, ticket);
    const nullOrigin = await raw({ ...json, origin: 'null' }, ticket);
    const rebound = await raw({ ...json, host: `attacker.example:${port}` }, ticket);
    const ownPage = await raw({ ...json, origin: `http://localhost:${port}` });
    const list = await call('GET', `/sessions?tenant=${tenant}`);

    // Assert
    expect([noToken.status, JSON.parse(noToken.body).error.code]).toEqual([401, 'unauthenticated']);
    expect(JSON.parse(noToken.body).error.message).toContain('.baton/local.json');
    expect(wrongToken.status).toBe(401);
    expect([textPlain.status, JSON.parse(textPlain.body).error.code]).toEqual([415, 'unsupported_media_type']);
    expect([foreignPage.status, JSON.parse(foreignPage.body).error.message]).toEqual([
      403,
      expect.stringContaining('Origin https://attacker.example'),
    ]);
    expect(nullOrigin.status).toBe(403);
    expect([rebound.status, JSON.parse(rebound.body).error.message]).toEqual([
      403,
      expect.stringContaining('not a loopback name'),
    ]);
    expect(ownPage.status).toBe(200);
    expect(list.json().sessions).toEqual([]);
  });

  it('logs the console in from the address baton dev printed (a strict, HTTP-only cookie), and forbids framing it', async () => {
    // Act
    const login = await fetch(`${t.stack.config.console}sessions/x?token=${token()}`, { redirect: 'manual' });
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const withCookie = await fetch(`${api}/me`, { headers: { cookie } });
    const page = await fetch(t.stack.config.console as string);
    const me = await call('GET', '/me');

    // Assert
    expect(login.status).toBe(303);
    expect(login.headers.get('location')).toBe('/sessions/x');
    expect(login.headers.get('set-cookie')).toMatch(/^baton_token_\d+=[\w-]+; HttpOnly; SameSite=Strict; Path=\/$/);
    expect(withCookie.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(me.json()).toEqual({
      principal: 'dev',
      tenants: 'all',
      roles: ['submit', 'converse', 'approve', 'operate', 'read'],
    });
  });

  it('submits a ticket, reports its status, lists it, and streams its events with Last-Event-ID resume', async () => {
    // Arrange
    const tenant = `api${Date.now().toString(36)}`;
    const headers = { 'x-baton-tenants': tenant };

    // Act
    const submitted = await call('POST', '/sessions', {
      body: { agent: 'echo', input: { text: 'hello' }, tenant },
      headers,
    });
    const session = submitted.json();
    const status = await settled(session.sessionId, headers);
    // Status shows the turn's outcome as soon as it is written; the record's state (what the list
    // filters on, through an eventually consistent index) follows at the release.
    const list = await waitFor('the list to show the session completed', async () => {
      const page = await call('GET', `/sessions?tenant=${tenant}&agent=echo&state=completed&limit=10`, { headers });
      return page.json().sessions.length > 0 ? page : undefined;
    });
    const all = await call('GET', '/sessions?limit=1', { headers });
    const events = await call('GET', `/sessions/${session.sessionId}/events`, { headers });
    const parsed = parseSse(events.text).filter((e) => e.event === 'entry');
    const second = parsed[1]?.id as string;
    const resumed = await call('GET', `/sessions/${session.sessionId}/events`, {
      headers: { ...headers, 'last-event-id': second },
    });

    // Assert
    expect(submitted.status).toBe(202);
    expect(session).toMatchObject({ agent: 'echo', tenant });
    expect(status).toMatchObject({ status: 'completed', tenant, outcome: { status: 'completed' } });
    expect(list.json().sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual([session.sessionId]);
    expect(list.json().sessions[0]).toMatchObject({ agent: 'echo', status: 'completed', legs: 1, recoveries: 0 });
    expect(all.json().sessions).toHaveLength(1);
    expect(events.type).toContain('text/event-stream');
    expect(parsed.map((e) => JSON.parse(e.data).kind)).toContain('outcome');
    expect(parseSse(events.text).at(-1)).toMatchObject({ event: 'end' });
    const resumedSeqs = parseSse(resumed.text)
      .filter((e) => e.event === 'entry')
      .map((e) => JSON.parse(e.data).seq);
    expect(resumedSeqs[0]).toBe(Number(second) + 1);
    expect(resumedSeqs).toEqual(parsed.slice(2).map((e) => JSON.parse(e.data).seq));
  });

  it('answers JSON errors with stable codes, naming what is wrong', async () => {
    // Act
    const badBody = await call('POST', '/sessions', { body: { agent: 'bad agent!', input: {} } });
    const noInput = await call('POST', '/sessions', { body: { agent: 'echo' } });
    const notJson = await fetch(`${api}/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token()}`, 'content-type': 'application/json' },
      body: '{nope',
    });
    const missing = await call('GET', '/sessions/no-such-session');
    const wrongMethod = await call('DELETE', '/sessions');
    const badQuery = await call('GET', '/sessions?state=sleeping');
    const badCursor = await call('GET', '/sessions?cursor=garbage');
    const noRoute = await call('GET', '/nothing-here');

    // Assert
    expect([badBody.status, badBody.json().error.code]).toEqual([400, 'invalid_request']);
    expect(badBody.json().error.message).toContain('agent');
    expect(noInput.json().error).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('input') });
    expect([notJson.status, ((await notJson.json()) as { error: { code: string } }).error.code]).toEqual([
      400,
      'invalid_request',
    ]);
    expect([missing.status, missing.json().error.code]).toEqual([404, 'not_found']);
    expect([wrongMethod.status, wrongMethod.json().error.code]).toEqual([405, 'method_not_allowed']);
    expect([badQuery.status, badQuery.json().error.message]).toEqual([400, expect.stringContaining('state')]);
    expect([badCursor.status, badCursor.json().error.message]).toEqual([400, expect.stringContaining('cursor')]);
    expect([noRoute.status, noRoute.json().error.code]).toEqual([404, 'not_found']);
  });

  it('isolates tenants: a caller sees, lists, cancels and submits only for its own tenants', async () => {
    // Arrange
    const mine = `mine${Date.now().toString(36)}`;
    const theirs = `theirs${Date.now().toString(36)}`;
    const theirSession = (
      await call('POST', '/sessions', { body: { agent: 'echo', input: { text: 'x' }, tenant: theirs } })
    ).json();
    await settled(theirSession.sessionId);
    const asMine = { 'x-baton-tenants': mine };

    // Act
    const status = await call('GET', `/sessions/${theirSession.sessionId}`, { headers: asMine });
    const events = await call('GET', `/sessions/${theirSession.sessionId}/events`, { headers: asMine });
    const cancel = await call('POST', `/sessions/${theirSession.sessionId}/cancel`, { headers: asMine });
    const list = await call('GET', `/sessions?tenant=${theirs}`, { headers: asMine });
    const submit = await call('POST', '/sessions', {
      body: { agent: 'echo', input: {}, tenant: theirs },
      headers: asMine,
    });
    const ownList = await call('GET', '/sessions', { headers: asMine });
    const twoTenants = await call('GET', '/sessions', { headers: { 'x-baton-tenants': `${mine},${theirs}` } });

    // Assert
    expect([status.status, events.status, cancel.status]).toEqual([404, 404, 404]);
    expect([list.status, list.json().error.code]).toEqual([403, 'forbidden']);
    expect([submit.status, submit.json().error.code]).toEqual([403, 'forbidden']);
    expect(ownList.json().sessions).toEqual([]);
    expect([twoTenants.status, twoTenants.json().error.code]).toEqual([400, 'tenant_required']);
  });

  it('cancels a running session, and a second cancel after the end is a conflict', async () => {
    // Arrange
    const dir = mkdtempSync(join(tmpdir(), 'baton-api-'));
    const session = (
      await call('POST', '/sessions', { body: { agent: 'slow-tool', input: { dir, ms: 4_000 } } })
    ).json();
    await waitFor('the slow tool to start', async () =>
      readProbes(dir).some((p) => p.event === 'started') ? true : undefined,
    );

    // Act
    const cancel = await call('POST', `/sessions/${session.sessionId}/cancel`);
    const final = await settled(session.sessionId);
    // Status reports the turn's outcome just before the owner's release ends the session: a
    // cancel in between is still accepted, so wait for the release.
    const again = await waitFor('a cancel after the release to be a conflict', async () => {
      const r = await call('POST', `/sessions/${session.sessionId}/cancel`);
      return r.status === 202 ? undefined : r;
    });

    // Assert
    expect([cancel.status, cancel.json()]).toEqual([202, { sessionId: session.sessionId, result: 'requested' }]);
    expect(final).toMatchObject({ status: 'cancelled', cancelRequested: true });
    expect([again.status, again.json().error.code]).toEqual([409, 'already_finished']);
  });

  it('gives the typed client over HTTP the same answers as the store-backed one, and the CLI takes --api', async () => {
    // Arrange
    const http = new HttpBatonClient({ baseUrl: api, token: token() });
    const tenant = `cli${Date.now().toString(36)}`;

    // Act
    const submitted = await http.submit({ agent: 'echo', input: { text: 'over http' }, tenant });
    await waitFor('intake to create the session', () => http.status(submitted.sessionId));
    const followed: string[] = [];
    for await (const event of http.events(submitted.sessionId, { follow: true })) followed.push(event.kind);
    const overHttp = await http.status(submitted.sessionId);
    const direct = await t.client.status(submitted.sessionId);
    const page = await http.sessions({ tenant });
    const directPage = await t.client.sessions({ tenant });
    const lines: string[] = [];
    const code = await cli(['--api', api, '--json', 'list', '--tenant', tenant], (line) => lines.push(line));
    const missing = await http.status('no-such-session');
    const cancelMissing = await http.cancel('no-such-session');
    const refused = await http.submit({ agent: 'not a name', input: {} }).catch((error: unknown) => error);

    // Assert
    // The release records the sent result: the outcome is the session's last entry.
    expect(followed.at(-1)).toBe('outcome');
    expect(overHttp).toEqual(direct);
    expect(page).toEqual(directPage);
    expect(code).toBe(0);
    expect(lines.map((l) => JSON.parse(l).sessionId)).toEqual([submitted.sessionId]);
    expect(missing).toBeUndefined();
    expect(cancelMissing).toBe('not-found');
    expect(refused).toBeInstanceOf(ApiCallError);
    expect((refused as ApiCallError).code).toBe('invalid_request');
  });

  it('sends turns, approves a call and answers refusals by code over HTTP, for the caller’s tenants only, and the CLI does it with --api', async () => {
    // Arrange: a conversation of one tenant, idle after its first turn.
    const tenant = `conv${Date.now().toString(36)}`;
    const http = new HttpBatonClient({ baseUrl: api, token: token(), headers: { 'x-baton-tenants': tenant } });
    const stranger = { 'x-baton-tenants': `other${Date.now().toString(36)}` };
    const { sessionId } = await http.submit({ agent: 'support-desk', input: { text: 'hello' }, tenant });
    const turnDone = (turnId: string) =>
      waitFor(`turn ${turnId} to finish`, async () => {
        const status = await http.status(sessionId);
        return status?.turns?.find((turn) => turn.turnId === turnId && turn.outcome !== undefined);
      });
    const first = (await waitFor('the first turn', () => http.status(sessionId))).turnId as string;
    await turnDone(first);

    // Act
    const strangerSend = await call('POST', `/sessions/${sessionId}/send`, {
      body: { input: { text: 'refund O-9' } },
      headers: stranger,
    });
    const sent = await http.send(sessionId, { text: 'refund O-7' }, { id: 'api-refund' });
    const again = await http.send(sessionId, { text: 'refund O-7' }, { id: 'api-refund' });
    const waiting = await waitFor('the approval request', async () => {
      const status = await http.status(sessionId);
      return status?.pendingApprovals?.length ? status : undefined;
    });
    const pending = waiting.pendingApprovals?.[0];
    const callId = pending?.callId as string;
    const otherInput = await call('POST', `/sessions/${sessionId}/approve`, {
      body: { callId, digest: '0'.repeat(64), approved: true },
    });
    const strangerApprove = await call('POST', `/sessions/${sessionId}/approve`, {
      body: { callId, approved: true },
      headers: stranger,
    });
    const lines: string[] = [];
    const pin = ['--model-seq', String(pending?.modelSeq), '--digest', pending?.digest as string];
    const approved = await cli(['--api', api, '--json', 'approve', sessionId, callId, ...pin], (line) =>
      lines.push(line),
    );
    const refunded = await turnDone('api-refund');
    const turnStream: SessionEvent[] = [];
    for await (const event of http.events(sessionId, { turnId: 'api-refund' })) turnStream.push(event);
    const unknownTurn = await http
      .events(sessionId, { turnId: 'nope' })
      .next()
      .catch((error: unknown) => error);
    const stale = await call('POST', `/sessions/${sessionId}/send`, {
      body: { input: { text: 'late' }, ifLastTurn: first },
    });
    const noParked = await call('POST', `/sessions/${sessionId}/resolve`, { body: { callId, done: false } });
    const noInput = await call('POST', `/sessions/${sessionId}/send`, { body: { mode: 'queue' } });
    const oneShot = await http.submit({ agent: 'echo', input: { text: 'once' }, tenant });
    await waitFor('intake to create the one-shot session', () => http.status(oneShot.sessionId));
    const toOneShot = await http.send(oneShot.sessionId, { text: 'more' }).catch((error: unknown) => error);

    // Assert
    expect([strangerSend.status, strangerApprove.status]).toEqual([404, 404]);
    expect(sent).toEqual({ sessionId, turnId: 'api-refund', mode: 'queue', accepted: true });
    expect(again.accepted).toBe(false);
    expect(approved).toBe(0);
    // A pin that names another input is refused; the decision posted names the call's whole identity.
    expect([otherInput.status, otherInput.json().error.code]).toEqual([400, 'invalid_request']);
    expect(pending).toMatchObject({ tool: 'issueRefund', digest: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(JSON.parse(lines[0] as string)).toEqual({
      sessionId,
      modelSeq: pending?.modelSeq,
      callId,
      tool: 'issueRefund',
      digest: pending?.digest,
      approved: true,
    });
    expect(refunded.outcome).toBe('completed');
    // --turn over HTTP: that turn's entries only, from its input (which carries its leg's marker) to its outcome.
    expect(turnStream.every((event) => event.turnId === 'api-refund')).toBe(true);
    expect([turnStream[0]?.kind, turnStream.at(-1)?.kind]).toEqual(['input', 'outcome']);
    expect((unknownTurn as ApiCallError).code).toBe('not_found');
    expect([stale.status, stale.json().error.code]).toEqual([409, 'stale_turn']);
    expect([noParked.status, noParked.json().error.message]).toEqual([400, expect.stringContaining('no parked call')]);
    expect([noInput.status, noInput.json().error.message]).toEqual([400, expect.stringContaining('input')]);
    expect(toOneShot).toBeInstanceOf(TurnRefusedError);
    expect((toOneShot as TurnRefusedError).reason).toBe('one-shot');
  });

  it('admits a sent input as intake admits a ticket, over HTTP and from the CLI on the tables: a bad one is refused by name and nothing is stored', async () => {
    // Arrange: a support-desk conversation (its turns are { text }), idle after its first turn.
    const tenant = `adm${Date.now().toString(36)}`;
    const http = new HttpBatonClient({ baseUrl: api, token: token(), headers: { 'x-baton-tenants': tenant } });
    const { sessionId } = await http.submit({ agent: 'support-desk', input: { text: 'hello' }, tenant });
    const first = (await waitFor('the first turn', () => http.status(sessionId))).turnId as string;
    await waitFor('the first turn to finish', async () =>
      (await http.status(sessionId))?.turns?.find((turn) => turn.turnId === first && turn.outcome),
    );
    const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const send = (input: string) =>
      fetch(`${api}/sessions/${sessionId}/send`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token()}` },
        body: `{"input":${input}}`,
      });

    // Act
    const deep = await send(`{"text":"x","more":${nested(2_000)}}`);
    const deeper = await send(nested(100_000));
    const lone = await send('{"text":"a \\ud800 b"}');
    const wrong = await send('{"words":"refund O-1"}');
    const fromCli = await cli(['send', sessionId, '--input', '{"words":"refund O-1"}'], () => {}).catch(
      (error: unknown) => error,
    );
    const after = await http.status(sessionId);

    // Assert
    expect([deep.status, ((await deep.json()) as { error: { message: string } }).error.message]).toEqual([
      400,
      expect.stringContaining('nested deeper than 64 levels'),
    ]);
    expect(deeper.status).toBe(400);
    expect(((await lone.json()) as { error: { message: string } }).error.message).toContain('lone surrogate');
    expect(((await wrong.json()) as { error: { message: string } }).error.message).toContain(
      'does not match agent support-desk: text:',
    );
    expect((fromCli as Error).message).toContain('does not match agent support-desk: text:');
    expect(after?.turns?.map((turn) => turn.turnId)).toEqual([first]);
  });

  it('lists tasks and releases a session over HTTP, for the caller’s tenants only, refusing a release without cancel while tasks run, and the CLI does both with --api', async () => {
    // Arrange: a dispatcher of one tenant with a long task running and a quick one done.
    const tenant = `rel${Date.now().toString(36)}`;
    const http = new HttpBatonClient({ baseUrl: api, token: token(), headers: { 'x-baton-tenants': tenant } });
    const stranger = { 'x-baton-tenants': `other${Date.now().toString(36)}` };
    const long = { agent: 'long-haul', input: { steps: 100, stepMs: 500, payloadBytes: 16 }, description: 'long' };
    const quick = { agent: 'support-desk', input: { text: 'hi' }, description: 'quick' };
    const { sessionId } = await http.submit({ agent: 'dispatcher', input: { tasks: [long, quick] }, tenant });
    const running = await waitFor('the quick task done while the long one runs', async () => {
      const tasks = await http.tasks(sessionId).catch(() => undefined);
      const status = (description: string) => tasks?.find((task) => task.description === description)?.status;
      return status('quick') === 'completed' && status('long') === 'running' ? tasks : undefined;
    });
    const longId = running.find((task) => task.description === 'long')?.taskId;

    // Act
    const strangerTasks = await call('GET', `/sessions/${sessionId}/tasks`, { headers: stranger });
    const strangerRelease = await call('POST', `/sessions/${sessionId}/release`, { body: {}, headers: stranger });
    const badTimeout = await call('POST', `/sessions/${sessionId}/release`, { body: { timeoutS: -1 } });
    const lines: string[] = [];
    const refused = await cli(['--api', api, 'release', sessionId, '--no-cancel'], (line) => lines.push(line)).catch(
      (error: unknown) => error,
    );
    const released = await cli(['--api', api, '--json', 'release', sessionId, '--timeout-s', '20'], (line) =>
      lines.push(line),
    );
    const listed = await cli(['--api', api, '--json', 'tasks', sessionId], (line) => lines.push(line));

    // Assert
    expect([strangerTasks.status, strangerRelease.status]).toEqual([404, 404]);
    expect([badTimeout.status, badTimeout.json().error.code]).toEqual([400, 'invalid_request']);
    expect(refused).toBeInstanceOf(TurnRefusedError);
    expect((refused as TurnRefusedError).reason).toBe('tasks-running');
    expect(released).toBe(0);
    const json = lines.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line));
    expect(json[0]).toEqual({ sessionId, released: true, cancelled: [longId], stragglers: [] });
    expect(listed).toBe(0);
    expect(json.slice(1).map((task) => [task.description, task.status])).toEqual([
      ['long', 'cancelled'],
      ['quick', 'completed'],
    ]);
  });

  it('serves an OpenAPI 3.1 document generated from the same schemas as the queues', async () => {
    // Act
    const document = (await call('GET', '/openapi.json')).json();

    // Assert
    expect(document.openapi).toBe('3.1.0');
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining([
        '/sessions',
        '/sessions/{id}',
        '/sessions/{id}/events',
        '/sessions/{id}/cancel',
        '/sessions/{id}/send',
        '/sessions/{id}/approve',
        '/sessions/{id}/resolve',
        '/sessions/{id}/tasks',
        '/sessions/{id}/release',
      ]),
    );
    const submit = document.paths['/sessions'].post;
    const ref = submit.requestBody.content['application/json'].schema.$ref as string;
    const body = document.components.schemas[ref.replace('#/components/schemas/', '')];
    expect(body.required).toEqual(['agent', 'input']);
    expect(body.properties.agent.pattern).toBeDefined();
    expect(body.additionalProperties).toBe(false);
    const list = document.paths['/sessions'].get.parameters.map((p: { name: string }) => p.name);
    expect(list).toEqual(expect.arrayContaining(['tenant', 'agent', 'state', 'from', 'to', 'limit', 'cursor']));
    expect(Object.keys(document.paths['/sessions/{id}/events'].get.responses['200'].content)).toEqual([
      'text/event-stream; charset=utf-8',
    ]);
  });
});
