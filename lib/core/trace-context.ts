import { randomHex } from './random-hex.ts';

/** W3C trace context: one trace id per session, a new span id per leg. */
export interface TraceContext {
  readonly traceId: string; // 32 hex
  readonly spanId: string; // 16 hex
  readonly sampled: boolean;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

export function parseTraceparent(header: string | undefined): TraceContext | undefined {
  const match = header ? TRACEPARENT.exec(header.trim()) : null;
  if (!match?.[1] || !match[2] || !match[3]) return undefined;
  if (/^0+$/.test(match[1]) || /^0+$/.test(match[2])) return undefined;
  return { traceId: match[1], spanId: match[2], sampled: (Number.parseInt(match[3], 16) & 1) === 1 };
}

export const formatTraceparent = (ctx: TraceContext): string =>
  `00-${ctx.traceId}-${ctx.spanId}-${ctx.sampled ? '01' : '00'}`;

export const newTraceId = (): string => randomHex(16);
export const newSpanId = (): string => randomHex(8);

/** A child span of the same trace: what a leg sends on with its continuation. */
export const childContext = (traceId: string, sampled = true): TraceContext => ({
  traceId,
  spanId: newSpanId(),
  sampled,
});

/**
 * The X-Ray header for the same trace: X-Ray ids are `1-{8 hex epoch}-{24 hex}`, so the W3C id
 * maps onto one directly, and the X-Ray trace and the W3C trace name the same session.
 */
export function xrayHeaderFor(ctx: TraceContext): string {
  const root = `1-${ctx.traceId.slice(0, 8)}-${ctx.traceId.slice(8)}`;
  return `Root=${root};Parent=${ctx.spanId};Sampled=${ctx.sampled ? '1' : '0'}`;
}

/** Reads the W3C trace id back out of an X-Ray header (the inverse of {@link xrayHeaderFor}). */
export function traceIdFromXrayHeader(header: string | undefined): string | undefined {
  const root = header?.match(/Root=1-([0-9a-f]{8})-([0-9a-f]{24})/);
  return root?.[1] && root[2] ? `${root[1]}${root[2]}` : undefined;
}
