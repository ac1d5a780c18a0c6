import type { TelemetryMetrics } from '../../telemetry/telemetry.ts';

/**
 * A model call's usage in the metrics: the deployment's tokens, and the tenant's tokens and cost
 * (dimension `tenant`), so usage per tenant is read from CloudWatch rather than from every journal.
 */
export function countUsage(
  metrics: TelemetryMetrics,
  tenant: string,
  usage: { readonly inputTokens: number; readonly outputTokens: number },
  costUsd: number | undefined,
): void {
  metrics.count('InputTokens', usage.inputTokens);
  metrics.count('OutputTokens', usage.outputTokens);
  metrics.count('TenantInputTokens', usage.inputTokens, { tenant });
  metrics.count('TenantOutputTokens', usage.outputTokens, { tenant });
  if (costUsd !== undefined) metrics.count('TenantCostUsd', costUsd, { tenant });
}
