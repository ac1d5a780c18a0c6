import { describe, expect, it } from 'vitest';
import { enabledFaultKinds, parseFaultSpec } from '../../../lib/adapters/faults/fault-config.ts';
import { DEFAULT_CHAOS_OPTIONS, parseChaosArgs } from '../../../lib/chaos/chaos-options.ts';

describe('fault specifications', () => {
  it('reads the short form and JSON alike', () => {
    const short = parseFaultSpec('dynamoThrottle=0.05,commitThenFail=0.02,latencyMs=20,duplicateKicks');
    const json = parseFaultSpec('{"dynamoThrottle":0.05,"commitThenFail":0.02,"latencyMs":20,"duplicateKicks":true}');

    expect(short).toEqual(json);
    expect(enabledFaultKinds(short)).toEqual(['dynamoThrottle', 'commitThenFail', 'latency', 'duplicateKicks']);
  });

  it('names the field of a bad specification', () => {
    expect(() => parseFaultSpec('dynamoThrotle=0.05')).toThrow(/Unrecognized key.*dynamoThrotle/);
    expect(() => parseFaultSpec('dynamoThrottle=5')).toThrow(/dynamoThrottle: /);
    expect(() => parseFaultSpec('{"dynamoThrottle":')).toThrow(/not valid JSON/);
  });

  it('turns nothing on by default', () => {
    expect(enabledFaultKinds(parseFaultSpec('{}'))).toEqual([]);
  });
});

describe('baton chaos arguments', () => {
  it('takes seconds on the command line and keeps milliseconds inside', () => {
    const options = parseChaosArgs(['--tickets', '1000', '--kill-every', '2.5', '--faults', 'none']);

    expect(options).toMatchObject({ tickets: 1000, killEveryMs: 2_500, workers: DEFAULT_CHAOS_OPTIONS.workers });
    expect(enabledFaultKinds(options.faults)).toEqual([]);
  });

  it('refuses a pause no longer than the lease, which would test nothing', () => {
    expect(() => parseChaosArgs(['--pause-for', '2', '--lease-ttl-ms', '3000'])).toThrow(/longer than the lease TTL/);
  });

  it('names a flag with a bad value', () => {
    expect(() => parseChaosArgs(['--workers', 'many'])).toThrow(/--workers must be a number/);
  });
});
