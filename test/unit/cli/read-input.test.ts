import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { readInput } from '../../../lib/cli/read-input.ts';

const stdin = (text: string) => Readable.from([Buffer.from(text)]);

describe('a command reads its JSON input', () => {
  it('from stdin when given --file - (as the README shows), not from a file named "-"', async () => {
    await expect(readInput({ file: '-' }, [], stdin('{"steps":2}'))).resolves.toEqual({ steps: 2 });
  });

  it('from stdin when given a - argument', async () => {
    await expect(readInput({}, ['-'], stdin('[1,"✓"]'))).resolves.toEqual([1, '✓']);
  });

  it('from a file, and from --input', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'baton-input-')), 'input.json');
    writeFileSync(file, '{"orderId":"O-1"}');
    await expect(readInput({ file }, [], stdin(''))).resolves.toEqual({ orderId: 'O-1' });
    await expect(readInput({ input: '{"a":1}' }, [], stdin(''))).resolves.toEqual({ a: 1 });
  });

  it('refuses malformed JSON naming where it came from, and a missing input naming the ways to give one', async () => {
    await expect(readInput({ file: '-' }, [], stdin('{nope'))).rejects.toThrow(/input \(stdin\) is not valid JSON/);
    await expect(readInput({}, [], stdin(''))).rejects.toThrow(/--input JSON, --file F or --file -/);
  });
});

describe('a command given its input twice', () => {
  it.each([
    [{ input: '{"a":1}', file: 'input.json' }, '--input and --file'],
    [{ text: 'hi', input: '{"a":1}' }, '--text and --input'],
    [{ text: 'hi', file: '-' }, '--text and --file'],
  ])('refuses %j instead of silently taking one', async (values, named) => {
    await expect(readInput(values, [], stdin('{}'))).rejects.toThrow(`give the input once: ${named} were both given`);
  });

  it('offers --text among the ways to give an input only to a command that takes it', async () => {
    await expect(readInput({ text: undefined }, [], stdin(''))).rejects.toThrow(
      'give the input with --text TEXT, --input JSON, --file F or --file - (stdin)',
    );
    await expect(readInput({}, [], stdin(''))).rejects.toThrow('give the input with --input JSON,');
  });

  it('takes --text as the input { text }', async () => {
    await expect(readInput({ text: 'refund O-7' }, [], stdin(''))).resolves.toEqual({ text: 'refund O-7' });
  });
});
