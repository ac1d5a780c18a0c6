import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../lib/aws/function-config.ts';
import { ENV, RUNTIME_DEFAULTS } from '../../../lib/core/resources.ts';
import { DEFAULT_SERVICE_NAME } from '../../../lib/telemetry/metric-names.ts';

const REQUIRED = {
  [ENV.table]: 'sessions',
  [ENV.workQueueUrl]: 'https://sqs.eu-west-1.amazonaws.com/111122223333/work',
  [ENV.resultsQueueUrl]: 'https://sqs.eu-west-1.amazonaws.com/111122223333/results',
};

describe('loadConfig', () => {
  it('defaults every tunable the deployment leaves out to the one set of runtime defaults', () => {
    const config = loadConfig(REQUIRED);

    expect({
      leaseTtlMs: config.leaseTtlMs,
      reserveMs: config.reserveMs,
      retentionDays: config.retentionDays,
      sweepIntervalMs: config.sweepIntervalMs,
      sweepWindowMs: config.sweepWindowMs,
    }).toEqual({
      leaseTtlMs: RUNTIME_DEFAULTS.leaseTtlMs,
      reserveMs: RUNTIME_DEFAULTS.reserveMs,
      retentionDays: RUNTIME_DEFAULTS.retentionDays,
      sweepIntervalMs: RUNTIME_DEFAULTS.sweepIntervalMs,
      sweepWindowMs: RUNTIME_DEFAULTS.sweepWindowMs,
    });
    expect(config.serviceName).toBe(DEFAULT_SERVICE_NAME);
  });

  it('takes the service name the stack sets, so its metrics carry its own service dimension', () => {
    expect(loadConfig({ ...REQUIRED, POWERTOOLS_SERVICE_NAME: 'Orders/Baton' }).serviceName).toBe('Orders/Baton');
  });

  it('reads the tenants with results queues of their own, none by default, and names a bad map', () => {
    const acme = 'https://sqs.eu-west-1.amazonaws.com/111122223333/results-acme';

    expect(loadConfig(REQUIRED).tenantResultsQueueUrls).toEqual({});
    expect(
      loadConfig({ ...REQUIRED, [ENV.tenantResultsQueueUrls]: JSON.stringify({ acme }) }).tenantResultsQueueUrls,
    ).toEqual({ acme });
    expect(() => loadConfig({ ...REQUIRED, [ENV.tenantResultsQueueUrls]: '{"a#b":"x"}' })).toThrow(
      /BATON_TENANT_RESULTS_QUEUE_URLS: not a tenant → queue URL map/,
    );
  });

  it('names a bad value', () => {
    expect(() => loadConfig({ ...REQUIRED, [ENV.leaseTtlMs]: 'soon' })).toThrow(/BATON_LEASE_TTL_MS/);
  });
});
