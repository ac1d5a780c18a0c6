import { App, Duration, Stack } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { BatonRuntime, type BatonRuntimeProps } from '../../infra/constructs/baton-runtime.ts';

// Settings are checked before anything is built; bundling is skipped so an accepted one costs no esbuild run.
const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };

const build = (props: BatonRuntimeProps) => () =>
  new BatonRuntime(new Stack(new App({ context: NO_BUNDLING }), 'Settings'), 'Baton', props);

describe('BatonRuntime settings checked at synth time', () => {
  it('refuses a lease TTL shorter than three renewals of one second', () => {
    expect(build({ leaseTtl: Duration.millis(2_999) })).toThrow(/leaseTtl must be at least 3 × 1 second/);
  });

  it('accepts a lease TTL of exactly three renewals', () => {
    expect(build({ leaseTtl: Duration.seconds(3) })).not.toThrow();
  });

  it('refuses a budget reserve longer than the function timeout', () => {
    expect(build({ functionTimeout: Duration.seconds(10), budgetReserve: Duration.seconds(11) })).toThrow(
      /budgetReserve must be shorter than functionTimeout/,
    );
  });

  it('refuses a function timeout over Lambda’s 15 minutes', () => {
    expect(build({ functionTimeout: Duration.minutes(16) })).toThrow(/functionTimeout exceeds/);
  });

  it('refuses a sweep interval as long as the sweeper’s one-minute window', () => {
    expect(build({ sweepInterval: Duration.minutes(1) })).toThrow(/sweepInterval must be shorter/);
  });

  it('refuses an API tenant map whose key is not an IAM principal ARN or whose tenants are not names', () => {
    expect(build({ apiTenants: { 'support-team': ['acme'] } })).toThrow(/apiTenants: 'support-team' is not an IAM/);
    expect(build({ apiTenants: { 'arn:aws:iam::111122223333:role/Support': [] } })).toThrow(/must be '\*' or/);
    expect(build({ apiTenants: { 'arn:aws:iam::111122223333:role/Support': ['a#b'] } })).toThrow(/must be '\*' or/);
  });

  it('refuses a concurrency the SQS event source cannot take', () => {
    expect(build({ maxConcurrency: 1 })).toThrow(/maxConcurrency must be an integer from 2 to 1000/);
  });
});
