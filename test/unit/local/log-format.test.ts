import { describe, expect, it } from 'vitest';
import { formatLogLine, useColor } from '../../../lib/local/log-format.ts';

/** A step function's log record as Powertools writes it, with Baton's keys. */
const record = (fields: Record<string, unknown> = {}) =>
  JSON.stringify({
    level: 'INFO',
    message: 'turn finished',
    timestamp: '2026-12-02T14:34:15.672Z',
    service: 'baton',
    cold_start: false,
    function_arn: 'arn:aws:lambda:us-east-1:000000000000:function:step',
    function_memory_size: '1024',
    function_name: 'step',
    function_request_id: '7b2ffa11-e8fb-43ab-87a1-9f6c24175824',
    sampling_rate: 0,
    tenant: 'acme',
    agent: 'support-desk',
    sessionId: 'xkjgbvcdey5fizkh52qmh5oyfr',
    traceId: '3833475c4b66bac3137b0091ae98ac68',
    turnId: 'ed5f649f-87ef-46b3-a2d8-0ef24cfdbc7a',
    ...fields,
  });

describe('formatLogLine', () => {
  it('shows time, level, function, tenant/agent/short session, short turn, message and the other keys', () => {
    const line = formatLogLine(record({ status: 'completed', legs: 11 }), { color: false });

    expect(line).toBe(
      '14:34:15.672 INFO  step acme/support-desk/xkjgbvcd turn ed5f649f  turn finished  status=completed legs=11',
    );
  });

  it('leaves out what is the same on every line of a function (ARN, request id, trace, cold start)', () => {
    const line = formatLogLine(record(), { color: false }) ?? '';

    for (const constant of ['arn:aws', '7b2ffa11', '3833475c', 'cold_start', 'sampling_rate', 'baton'])
      expect(line).not.toContain(constant);
  });

  it('shows an error as its name and message, and a string with spaces quoted', () => {
    const line = formatLogLine(
      record({
        level: 'ERROR',
        message: 'leg failed',
        error: { name: 'StepError', message: 'tool timed out', stack: 'StepError: tool timed out\n    at run' },
        reason: 'model said no',
      }),
      { color: false },
    );

    expect(line).toMatch(/^14:34:15\.672 ERROR step acme\/support-desk\/xkjgbvcd turn ed5f649f {2}leg failed {2}/);
    expect(line).toContain('error="StepError: tool timed out"');
    expect(line).toContain('reason="model said no"');
    expect(line).not.toContain('at run');
  });

  it('drops the embedded-metric records, which are for CloudWatch, not for reading', () => {
    const metrics = JSON.stringify({
      _aws: { Timestamp: 1, CloudWatchMetrics: [{ Namespace: 'Baton', Dimensions: [['service']], Metrics: [] }] },
      service: 'baton',
      Legs: 1,
    });

    expect(formatLogLine(metrics, { color: false })).toBeUndefined();
  });

  it('passes through a line that is not a JSON log record (a worker notice, a stack trace, an array)', () => {
    for (const line of ['[worker 2524] failed to start: boom', '    at main (worker.ts:3:1)', '[1,2]', '{not json'])
      expect(formatLogLine(line, { color: false })).toBe(line);
  });

  it('shows a record without session keys with what it has (the sweeper)', () => {
    const line = formatLogLine(
      JSON.stringify({ level: 'WARN', message: 'stalled sessions', timestamp: '2026-12-02T01:02:03.004Z', found: 2 }),
      { color: false },
    );

    expect(line).toBe('01:02:03.004 WARN   stalled sessions  found=2');
  });

  it('colours the level and the ids only when asked', () => {
    const plain = formatLogLine(record({ level: 'ERROR' }), { color: false }) ?? '';
    const coloured = formatLogLine(record({ level: 'ERROR' }), { color: true }) ?? '';

    expect(plain).not.toContain('\x1b[');
    expect(coloured).toContain('\x1b[31mERROR\x1b[0m');
    expect(coloured.replaceAll(new RegExp(`${'\x1b'}\\[\\d+m`, 'g'), '')).toBe(plain);
  });
});

describe('useColor', () => {
  it('colours a terminal unless NO_COLOR is set, and never a pipe or a file', () => {
    expect(useColor(true, {})).toBe(true);
    expect(useColor(true, { NO_COLOR: '1' })).toBe(false);
    expect(useColor(true, { NO_COLOR: '' })).toBe(true);
    expect(useColor(false, {})).toBe(false);
    expect(useColor(undefined, {})).toBe(false);
  });
});
