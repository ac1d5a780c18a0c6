import { describe, expect, it } from 'vitest';
import { BATON_METRIC, METRICS_NAMESPACE, OUTCOME_STATUSES, SERVICE_NAME } from '../../infra/constructs/monitoring.ts';
import { OutcomeStatus } from '../../lib/core/vocabulary.ts';
import * as telemetry from '../../lib/telemetry/telemetry.ts';

// infra/ may not import lib/ (bar resources.ts), so the dashboard copies these names: this keeps them equal.
describe('the names the dashboard and alarms watch', () => {
  it('are the metric names the runtime publishes', () => {
    expect(BATON_METRIC).toEqual(telemetry.METRIC);
  });

  it('are in the namespace and service dimension the runtime publishes under', () => {
    expect(METRICS_NAMESPACE).toBe(telemetry.METRICS_NAMESPACE);
    expect(SERVICE_NAME).toBe(telemetry.SERVICE_NAME);
  });

  it('chart every outcome status', () => {
    expect([...OUTCOME_STATUSES].sort()).toEqual(Object.values(OutcomeStatus).sort());
  });
});
