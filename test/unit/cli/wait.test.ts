import { describe, expect, it } from 'vitest';
import { type CommandIo, send, status, submit } from '../../../lib/cli/session-commands.ts';
import { WAIT_EXIT } from '../../../lib/cli/wait-for-answer.ts';
import type { BatonTransport } from '../../../lib/client/baton-client.ts';
import { memoryStack } from '../../fixtures/memory-stack.ts';

/** A command's io over `client`, keeping what it printed: stdout lines, raw writes and notes apart. */
function capture(client: BatonTransport, options: { json?: boolean; write?: boolean } = {}) {
  const out: string[] = [];
  const notes: string[] = [];
  let written = '';
  const io: CommandIo = {
    json: options.json ?? false,
    out: (line) => out.push(line),
    note: (line) => notes.push(line),
    ...(options.write
      ? {
          write: (text: string) => {
            written += text;
          },
        }
      : {}),
    connect: { stateDir: 'no-such-state-dir' },
    client,
  };
  return { io, out, notes, written: () => written };
}

describe('baton submit --wait and baton send --wait', () => {
  it('prints a completed turn’s answer alone on stdout and exits 0; the submission is a note', async () => {
    // Arrange
    const { eager } = memoryStack();
    const { io, out, notes } = capture(eager);

    // Act
    const code = await submit(['--agent', 'chatter', '--id', 'W1', '--text', 'hello', '--wait'], io);

    // Assert
    expect(code).toBe(WAIT_EXIT.completed);
    expect(out).toEqual(['echo 1: hello']);
    expect(notes[0]).toMatch(/^submitted ticket W1 → session \S+/);
  });

  it('prints a structured answer as JSON, and with --json the whole outcome', async () => {
    // Arrange
    const { eager } = memoryStack();
    const text = capture(eager);
    const json = capture(eager, { json: true });

    // Act
    await submit(['--agent', 'answerer', '--input', '{"question":"why"}', '--wait'], text.io);
    await submit(['--agent', 'answerer', '--id', 'J1', '--input', '{"question":"how"}', '--wait'], json.io);

    // Assert
    expect(text.out).toEqual(['{"answer":"you asked: why","length":3}']);
    expect(JSON.parse(json.out[0] as string)).toMatchObject({
      turnId: 'J1',
      status: 'completed',
      output: { answer: 'you asked: how', length: 3 },
    });
  });

  it('exits 1 with the reason for a failed turn', async () => {
    // Arrange
    const { eager } = memoryStack();
    const failed = capture(eager);

    // Act
    const code = await submit(['--agent', 'answerer', '--input', '{"question":"break"}', '--wait'], failed.io);

    // Assert
    expect(code).toBe(WAIT_EXIT.failed);
    expect(failed.out).toEqual([expect.stringMatching(/^failed: .+/)]);
  });

  it('waits for a cancelled turn and exits 2', async () => {
    // Arrange: a ticket taken by intake, cancelled before its first step.
    const stack = memoryStack();
    const submitted = capture(stack.client, { json: true });
    await submit(['--agent', 'chatter', '--id', 'X1', '--text', 'hi'], submitted.io);
    const { sessionId } = JSON.parse(submitted.out[0] as string) as { sessionId: string };
    await stack.intakeOnly();
    await stack.client.cancel(sessionId);
    const waited = capture(stack.client);

    // Act
    const waiting = submit(['--agent', 'chatter', '--id', 'X1', '--text', 'hi', '--wait'], waited.io);
    await stack.pump();
    const code = await waiting;

    // Assert
    expect(code).toBe(WAIT_EXIT.other);
    expect(waited.out[0]).toMatch(/^cancelled/);
  });

  it('sends a further turn and prints its answer; --follow writes the text as it comes', async () => {
    // Arrange
    const { eager } = memoryStack();
    const first = capture(eager, { json: true });
    await submit(['--agent', 'chatter', '--id', 'F1', '--text', 'one', '--wait'], first.io);
    const { sessionId } = JSON.parse(first.out[0] as string) as { sessionId: string };
    const plain = capture(eager);
    const followed = capture(eager, { write: true });

    // Act
    const plainCode = await send([sessionId, '--text', 'two', '--wait'], plain.io);
    const followedCode = await send([sessionId, '--text', 'three', '--wait', '--follow'], followed.io);

    // Assert
    expect([plainCode, followedCode]).toEqual([0, 0]);
    expect(plain.out).toEqual(['echo 2: two']);
    // Following, the answer was the streamed text: it is not printed a second time.
    expect(followed.written()).toBe('echo 3: three\n');
    expect(followed.out).toEqual([]);
  });

  it('refuses --follow without --wait, and an unknown agent before anything is queued', async () => {
    // Arrange
    const { client, tickets } = memoryStack();
    const { io } = capture(client);

    // Act
    const follow = submit(['--agent', 'chatter', '--text', 'x', '--follow'], io);
    const unknown = submit(['--agent', 'nobody', '--text', 'x', '--wait'], io);

    // Assert
    await expect(follow).rejects.toThrow('--follow streams the answer of --wait: give --wait too');
    await expect(unknown).rejects.toThrow('unknown agent "nobody" (deployed: answerer, chatter)');
    expect(tickets.pendingCount).toBe(0);
  });
});

describe('baton status', () => {
  it('says a finished one-shot’s status once, with its output', async () => {
    // Arrange
    const { eager } = memoryStack();
    const submitted = capture(eager, { json: true });
    await submit(['--agent', 'answerer', '--input', '{"question":"q"}'], submitted.io);
    const { sessionId } = JSON.parse(submitted.out[0] as string) as { sessionId: string };
    const shown = capture(eager);

    // Act
    await status([sessionId], shown.io);

    // Assert
    expect(shown.out[0]).toBe(`${sessionId} answerer completed`);
    expect(shown.out).toContain('  output {"answer":"you asked: q","length":1}');
  });
});
