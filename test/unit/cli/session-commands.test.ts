import { describe, expect, it } from 'vitest';
import { type CommandIo, cancel, events, fork, rerun, status, tasks } from '../../../lib/cli/session-commands.ts';
import type { BatonTransport, ForkOptions, RerunOptions } from '../../../lib/client/baton-client.ts';

/** A state dir with no stack: a command that got past its arguments would fail on connecting instead. */
const io: CommandIo = { json: false, out: () => {}, connect: { stateDir: 'no-such-state-dir' } };

describe('session commands refuse arguments they would otherwise ignore', () => {
  it.each([
    ['status', status],
    ['cancel', cancel],
    ['tasks', tasks],
  ] as const)('%s names an unknown option and refuses a second session', async (name, command) => {
    await expect(command(['S-1', '--frob'], io)).rejects.toThrow(/Unknown option '--frob'/);
    await expect(command(['S-1', 'S-2'], io)).rejects.toThrow(`usage: baton ${name} SESSION`);
    await expect(command([], io)).rejects.toThrow(`usage: baton ${name} SESSION`);
  });

  it.each(['abc', '-1', '1.5', ''])(
    'events refuses --after %j, which matched no entry and printed nothing',
    async (after) => {
      await expect(events(['S-1', `--after=${after}`], io)).rejects.toThrow(
        `--after must be a cursor printed by baton events (a whole number, 0 or more), got '${after}'`,
      );
    },
  );
});

describe('fork and rerun --version', () => {
  /** A transport that records what fork and rerun were asked, and answers a fork on version 2. */
  function recording() {
    const asked: Array<ForkOptions | RerunOptions> = [];
    const forked = {
      sessionId: 'F-1',
      tenant: 'default',
      agent: 'support-desk',
      ticketId: 'f',
      turnId: 't',
      forkedFrom: { session: 'S-1', cursor: 4 },
      effects: 'ask' as const,
      version: 2,
      repeatable: 0,
      created: true,
    };
    const client = {
      fork: async (_id: string, options: ForkOptions) => {
        asked.push(options);
        return forked;
      },
      rerun: async (_id: string, options: RerunOptions) => {
        asked.push(options);
        return forked;
      },
    } as unknown as BatonTransport;
    const lines: string[] = [];
    return { asked, lines, io: { ...io, client, out: (line: string) => lines.push(line) } };
  }

  it('passes the version to the fork and prints it', async () => {
    // Arrange
    const r = recording();

    // Act
    await fork(['S-1', '--at', '4', '--text', 'again', '--version', '2'], r.io);
    await rerun(['S-1', '--turn', 'T1', '--version', '2'], r.io);

    // Assert
    expect(r.asked).toEqual([
      expect.objectContaining({ at: 4, input: { text: 'again' }, version: 2 }),
      expect.objectContaining({ turnId: 'T1', version: 2 }),
    ]);
    expect(r.lines[0]).toContain('agent version 2');
  });

  it.each(['0', 'two', '1.5', '-3'])('refuses --version %j before asking anything', async (version) => {
    // Arrange
    const r = recording();

    // Act / Assert
    await expect(fork(['S-1', '--at', '4', `--version=${version}`], r.io)).rejects.toThrow(
      `--version must be an agent version (a whole number from 1), not ${version}`,
    );
    await expect(rerun(['S-1', '--turn', 'T1', `--version=${version}`], r.io)).rejects.toThrow(/--version must be/);
    expect(r.asked).toEqual([]);
  });
});

describe('cancel --turn', () => {
  it('stops that turn alone through the client, not the session', async () => {
    // Arrange
    const asked: string[] = [];
    const client = {
      stopTurn: async (sessionId: string, turnId: string) => {
        asked.push(`stop ${sessionId} ${turnId}`);
        return turnId === 'done' ? 'already-ended' : 'requested';
      },
      cancel: async (sessionId: string) => {
        asked.push(`cancel ${sessionId}`);
        return 'requested';
      },
    } as unknown as BatonTransport;
    const lines: string[] = [];
    const withClient = { ...io, client, out: (line: string) => lines.push(line) };

    // Act
    const codes = [
      await cancel(['S-1', '--turn', 'T-2'], withClient),
      await cancel(['S-1', '--turn', 'done'], { ...withClient, json: true }),
    ];

    // Assert
    expect(codes).toEqual([0, 0]);
    expect(asked).toEqual(['stop S-1 T-2', 'stop S-1 done']);
    expect(lines).toEqual([
      'stop requested for turn T-2 of S-1 (that turn alone)',
      JSON.stringify({ sessionId: 'S-1', turnId: 'done', result: 'already-ended' }),
    ]);
  });
});
