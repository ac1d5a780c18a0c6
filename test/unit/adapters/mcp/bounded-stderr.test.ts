import { describe, expect, it } from 'vitest';
import { BoundedStderr } from '../../../../lib/adapters/mcp/bounded-stderr.ts';

/** A sink over a clock the test moves. */
function sink(limits: ConstructorParameters<typeof BoundedStderr>[1]) {
  const lines: string[] = [];
  let now = 0;
  const stderr = new BoundedStderr(
    (line) => lines.push(line),
    limits,
    () => now,
  );
  return {
    lines,
    write: (text: string) => stderr.write(Buffer.from(text)),
    end: () => stderr.end(),
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe('a stdio MCP server’s stderr, bounded before the logs', () => {
  it('passes lines whole, joining the pieces of a line split across chunks', () => {
    const s = sink({});
    s.write('starting\npar');
    s.write('tial line\n');
    s.write('no newline at the end');
    s.end();
    expect(s.lines).toEqual(['starting', 'partial line', 'no newline at the end']);
  });

  it('cuts a long line at the byte limit and says how much was cut, holding no more than the limit', () => {
    const s = sink({ lineBytes: 10 });
    s.write(`${'a'.repeat(6)}`);
    s.write(`${'b'.repeat(1_000_000)}\nnext\n`);
    expect(s.lines).toEqual(['aaaaaabbbb … (999996 more bytes of this line not logged)', 'next']);
  });

  it('drops lines over the rate after the burst, counts them, and passes lines again once the rate allows', () => {
    const s = sink({ lineBytes: 100, burstBytes: 100, bytesPerSecond: 10 });
    for (let i = 0; i < 50; i++) s.write(`${String(i).padStart(9, '0')}\n`);
    // 100 bytes at once: eleven 9-byte lines pass (99); the other 39 are dropped.
    const passed = s.lines.length;
    expect(passed).toBe(11);
    s.advance(2_000);
    s.write('after two seconds\n');
    expect(s.lines.slice(passed)).toEqual([
      '(39 lines, 390 bytes of stderr not logged: over 10 bytes/s after 100 bytes)',
      'after two seconds',
    ]);
  });

  it('reports what it dropped when the stream ends, even if nothing passes after', () => {
    const s = sink({ burstBytes: 5, bytesPerSecond: 1 });
    s.write('12345\n');
    s.write('dropped\ndropped too\n');
    s.end();
    expect(s.lines).toEqual(['12345', '(2 lines, 20 bytes of stderr not logged: over 1 bytes/s after 5 bytes)']);
  });

  it('meters empty lines too, and replaces control characters so a line cannot rewrite the ones around it', () => {
    const s = sink({ burstBytes: 8, bytesPerSecond: 1 });
    s.write('\x1b[2J\r\n');
    expect(s.lines).toEqual(['?[2J']);
    s.write('\n'.repeat(10));
    s.end();
    expect(s.lines).toEqual([
      '?[2J',
      '',
      '',
      '',
      '(7 lines, 7 bytes of stderr not logged: over 1 bytes/s after 8 bytes)',
    ]);
  });

  it('refuses a limit that is not a positive whole number', () => {
    expect(() => new BoundedStderr(() => {}, { bytesPerSecond: 0 })).toThrow(
      /bytesPerSecond must be a positive integer/,
    );
  });
});
