import { describe, expect, it } from 'vitest';
import { main } from '../../../lib/cli/main.ts';

async function help(command: string): Promise<string> {
  const lines: string[] = [];
  expect(await main([command, '--help'], (line) => lines.push(line))).toBe(0);
  return lines.join('\n');
}

describe("a command's --help", () => {
  it('says what the input flags send, for a command that takes an input', async () => {
    const text = await help('send');
    expect(text).toMatch(/^usage: baton send SESSION/);
    expect(text).toContain('--text TEXT sends {"text": TEXT}');
  });

  it('names the global options every command takes, --state-dir among them, and no input flags where none are taken', async () => {
    const text = await help('dev');
    expect(text).toContain('--state-dir DIR');
    expect(text).not.toContain('--text TEXT sends');
  });
});
