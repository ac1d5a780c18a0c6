import { readFileSync } from 'node:fs';

/** Where a command's JSON input comes from: `--input JSON`, `--file F` (`--file -` is stdin) or a `-` argument. */
export interface InputSource {
  readonly input?: string | undefined;
  readonly file?: string | undefined;
  /** `baton send --text T`: the input `{ text: T }`. A command that takes --text names the key even when it is not given. */
  readonly text?: string | undefined;
}

/** Reads and parses a command's JSON input, with an error naming what is missing or malformed. */
export async function readInput(
  values: InputSource,
  positionals: readonly string[],
  stdin: AsyncIterable<Buffer | string> = process.stdin,
): Promise<unknown> {
  const given = (['text', 'input', 'file'] as const).filter((k) => values[k] !== undefined).map((k) => `--${k}`);
  // Two sources would silently take the first: say so instead.
  if (given.length > 1) throw new Error(`give the input once: ${given.join(' and ')} were both given`);
  if (values.text !== undefined) return { text: values.text };
  const fromStdin = values.file === '-' || (values.file === undefined && positionals.includes('-'));
  const source =
    values.input ?? (fromStdin ? await readAll(stdin) : values.file ? readFileSync(values.file, 'utf8') : undefined);
  if (source === undefined)
    throw new Error(
      `give the input with ${'text' in values ? '--text TEXT, ' : ''}--input JSON, --file F or --file - (stdin)`,
    );
  try {
    return JSON.parse(source);
  } catch (error) {
    const where = values.input !== undefined ? '--input' : fromStdin ? 'stdin' : values.file;
    throw new Error(`input (${where}) is not valid JSON: ${(error as Error).message}`);
  }
}

async function readAll(stream: AsyncIterable<Buffer | string>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}
