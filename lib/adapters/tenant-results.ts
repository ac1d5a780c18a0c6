import type { Result } from '../core/messages.ts';
import type { PublishOptions, ResultPublisher } from '../ports/queues.ts';

/**
 * Results routed by tenant: a tenant with results of its own (a queue only its consumers may
 * read) gets its results there, every other tenant the shared ones. An outsider's refusal, whose
 * tenant is only a claim, always goes to the shared results: no one can post into a tenant's.
 * @example new TenantResults(new SqsResultPublisher({ client, queueUrl }), new Map([['acme', acmePublisher]]))
 */
export class TenantResults implements ResultPublisher {
  constructor(
    private readonly shared: ResultPublisher,
    private readonly byTenant: ReadonlyMap<string, ResultPublisher>,
  ) {}

  publish(result: Result, options?: PublishOptions): Promise<void> {
    const own = options?.unattributed ? undefined : this.byTenant.get(result.tenant);
    return (own ?? this.shared).publish(result, options);
  }
}
