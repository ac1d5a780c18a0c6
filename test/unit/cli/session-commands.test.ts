import { describe, expect, it } from 'vitest';
import { type CommandIo, cancel, events, status, tasks } from '../../../lib/cli/session-commands.ts';

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
