/** Types of timeline.js, for the tests that import the console's module. */
export interface TimelineStep {
  readonly seq: number;
  readonly kind: string;
  readonly at: string;
  readonly title: string;
  readonly detail: string;
  readonly durationMs?: number;
  readonly highlight?: 'retry' | 'error';
}
export interface TimelineLeg {
  readonly seq: number;
  readonly epoch: number;
  readonly reason: string;
  readonly owner: string;
  readonly at: string;
  readonly steps: TimelineStep[];
}
export function buildTimeline(
  events: ReadonlyArray<{ seq: number; kind: string; epoch: number; at: string; data: unknown }>,
): { legs: TimelineLeg[]; recoveries: number; retries: number };
export function brief(value: unknown, max?: number): string;
export function formatDuration(durationMs: number | undefined): string;
export function formatAge(iso: string, now?: number): string;
/** Partial model text being shown: the response's seq, the last chunk appended, the text so far. */
export interface LiveModelText {
  readonly seq: number;
  readonly chunk: number;
  readonly text: string;
}
export function addModelText(
  live: LiveModelText | undefined,
  event: { seq: number; chunk: number; text: string },
): LiveModelText | undefined;
export function liveTextAfterEntry(live: LiveModelText | undefined, entry: { seq: number }): LiveModelText | undefined;
