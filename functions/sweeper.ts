import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { sweep } from '../lib/runtime/sweeper.ts';
import { telemetryMiddlewares } from '../lib/telemetry/middleware.ts';
import { config, deps, telemetry } from './runtime.ts';

/** The sweeper: runs on a schedule and polls every few seconds within its window. */
async function handleSchedule(_event: unknown, context: Context) {
  return sweep(
    {
      windowMs: config.sweepWindowMs,
      intervalMs: config.sweepIntervalMs,
      stalledAfterMs: 2 * config.leaseTtlMs,
      remainingMs: () => context.getRemainingTimeInMillis(),
    },
    deps,
  );
}

export const handler = middy(handleSchedule).use(telemetryMiddlewares(telemetry));
