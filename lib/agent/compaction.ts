import type { JournalEntry } from '../core/journal.ts';
import type { ModelClient, ModelRequest } from '../ports/model-client.ts';
import { asText } from './transcript.ts';

/**
 * Context that always fits: when a model call's input would pass a share of the context window,
 * the oldest part of the transcript is condensed into a summary first. Everything here is pure:
 * the runtime's compaction step (lib/runtime/leg/compaction-step.ts) calls the summarizer and
 * journals the result.
 */

/** How an agent compacts its transcript. */
export interface CompactionOptions {
  /** Compact before a call whose estimated input passes this share of the window. Default 0.8. */
  readonly thresholdRatio?: number | undefined;
  /** The most recent part of the transcript kept word for word, as a share of the window. Default 0.3. */
  readonly keepRatio?: number | undefined;
  /** The model that writes the summary; the agent's own model when absent. */
  readonly summarizer?: ModelClient | undefined;
  /** The summarizer's instructions; SUMMARIZER_INSTRUCTIONS when absent. */
  readonly instructions?: string | undefined;
}

export const DEFAULT_COMPACTION_THRESHOLD_RATIO = 0.8;
export const DEFAULT_COMPACTION_KEEP_RATIO = 0.3;
/** A summary longer than this share of the window is cut: a summary that grows would defeat compaction. */
export const MAX_SUMMARY_WINDOW_RATIO = 0.15;

/**
 * Characters per token of the conservative estimate. Tokenizers of current models average about
 * four characters of English or JSON per token; three over-counts, so the estimate errs towards
 * compacting early rather than sending a request the provider refuses.
 */
export const CHARS_PER_TOKEN_ESTIMATE = 3;

export const SUMMARIZER_INSTRUCTIONS =
  'You condense the earlier part of a conversation between a user and an assistant that uses tools. ' +
  'Write a faithful summary that the assistant can continue from: the user’s goals and requests, facts ' +
  'learned (ids, amounts, names, decisions), tool calls made and what they returned, promises made and ' +
  'anything still open. Fold in the previous summary if one is given. Be concise; no preamble.';

/**
 * A conservative token count of a request: its JSON's UTF-8 bytes over CHARS_PER_TOKEN_ESTIMATE.
 * Bytes, not characters: scripts outside Latin (CJK, Cyrillic) take two or three bytes a character
 * and about as many characters per token as bytes per character, so counting characters would
 * under-count them.
 */
export function estimateTokens(request: ModelRequest): number {
  return Math.ceil(Buffer.byteLength(JSON.stringify(request)) / CHARS_PER_TOKEN_ESTIMATE);
}

/** The window and thresholds an agent's compaction works with, or undefined when it has no window. */
export interface ContextWindow {
  readonly windowTokens: number;
  readonly thresholdTokens: number;
  readonly keepTokens: number;
  readonly maxSummaryChars: number;
}

export function contextWindow(windowTokens: number | undefined, options: CompactionOptions | undefined) {
  if (windowTokens === undefined) return undefined;
  const threshold = options?.thresholdRatio ?? DEFAULT_COMPACTION_THRESHOLD_RATIO;
  const keep = options?.keepRatio ?? DEFAULT_COMPACTION_KEEP_RATIO;
  return {
    windowTokens,
    thresholdTokens: Math.floor(windowTokens * threshold),
    keepTokens: Math.floor(windowTokens * keep),
    maxSummaryChars: Math.floor(windowTokens * MAX_SUMMARY_WINDOW_RATIO * CHARS_PER_TOKEN_ESTIMATE),
  } satisfies ContextWindow;
}

/** The journal range a compaction replaces: from the entry after the previous compaction's through `throughSeq`. */
export interface CompactionRange {
  readonly fromSeq: number;
  readonly throughSeq: number;
}

/**
 * Where to cut: the range to condense so that what stays word for word is at most `keepTokens`
 * (estimated), or as little as can be kept when no cut leaves that little. A cut never separates a
 * tool call from its result: it falls before a turn's input (the calls its turn left open end with
 * it) or where every call asked so far has its result. At least one entry is always kept, so the
 * model still sees where the conversation stands. Undefined when there is nothing to condense.
 */
export function chooseCompactionRange(
  entries: readonly JournalEntry[],
  compactedThrough: number,
  keepTokens: number,
): CompactionRange | undefined {
  const fromSeq = compactedThrough + 1;
  const open = new Set<string>();
  const cuts: number[] = [];
  let seen = false;
  for (const entry of entries) {
    if (entry.seq <= compactedThrough) continue;
    const cutBefore =
      seen && (entry.kind === 'input' || (open.size === 0 && (entry.kind === 'model' || entry.kind === 'message')));
    if (cutBefore) cuts.push(entry.seq - 1);
    if (entry.kind === 'input') open.clear();
    if (entry.kind === 'model') for (const call of entry.data.toolCalls) open.add(call.id);
    if (entry.kind === 'tool') open.delete(entry.data.callId);
    if (entry.kind === 'reconciled' && entry.data.verdict === 'done') open.delete(entry.data.callId);
    if (transcriptChars(entry) > 0) seen = true;
  }
  if (cuts.length === 0) return undefined;
  // Estimated tokens kept after each entry: the suffix sums of what each entry adds to the transcript.
  const keptAfter = new Map<number, number>();
  let kept = 0;
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i] as JournalEntry;
    keptAfter.set(entry.seq, kept);
    kept += transcriptChars(entry) / CHARS_PER_TOKEN_ESTIMATE;
  }
  const fitting = cuts.find((cut) => (keptAfter.get(cut) ?? 0) <= keepTokens);
  return { fromSeq, throughSeq: fitting ?? (cuts.at(-1) as number) };
}

/** What an entry adds to the transcript, in characters (0 for entries the model never sees). */
function transcriptChars(entry: JournalEntry): number {
  switch (entry.kind) {
    case 'input':
    case 'message':
    case 'model':
    case 'tool':
    case 'reconciled':
      return JSON.stringify(entry.data).length;
    default:
      return 0;
  }
}

/** Longest rendering of one tool input or result the summarizer reads: a huge payload says little more. */
const MAX_RENDERED_VALUE_CHARS = 4_000;

/**
 * The summarizer's request: the previous summary and the entries of the range as plain text. Plain
 * text, not chat messages, so a call cut off from its result by a turn that ended early cannot
 * make a provider refuse the request; roles still come from entry kinds, never from stored text.
 */
export function summarizerRequest(
  entries: readonly JournalEntry[],
  range: CompactionRange,
  previousSummary: string | undefined,
  instructions: string = SUMMARIZER_INSTRUCTIONS,
): ModelRequest {
  const lines: string[] = [];
  if (previousSummary !== undefined) lines.push('Previous summary:', previousSummary, '', 'Continued:');
  for (const entry of entries) {
    if (entry.seq < range.fromSeq || entry.seq > range.throughSeq) continue;
    const line = renderEntry(entry);
    if (line !== undefined) lines.push(line);
  }
  return {
    system: instructions,
    messages: [{ role: 'user', content: [{ type: 'text', text: lines.join('\n') }] }],
    tools: [],
  };
}

function renderEntry(entry: JournalEntry): string | undefined {
  switch (entry.kind) {
    case 'input':
      return `User: ${clip(asText(entry.data.input))}`;
    case 'message':
      return `User (while the assistant worked): ${clip(entry.data.text)}`;
    case 'model': {
      const calls = entry.data.toolCalls.map(
        (c) => `Assistant called ${c.name} [${c.id}] with ${clip(asText(c.input))}`,
      );
      return [...(entry.data.text ? [`Assistant: ${clip(entry.data.text)}`] : []), ...calls].join('\n') || undefined;
    }
    case 'tool':
      return entry.data.ok
        ? `Result of ${entry.data.tool} [${entry.data.callId}]: ${clip(asText(entry.data.output))}`
        : `Result of ${entry.data.tool} [${entry.data.callId}]: error: ${clip(entry.data.error ?? '')}`;
    case 'reconciled':
      return entry.data.verdict === 'done'
        ? `Result of [${entry.data.callId}] (reconciled): ${clip(asText(entry.data.output))}`
        : undefined;
    default:
      return undefined;
  }
}

const clip = (text: string): string =>
  text.length <= MAX_RENDERED_VALUE_CHARS ? text : `${text.slice(0, MAX_RENDERED_VALUE_CHARS)}… (cut)`;

/** A summary within the window's share for it: a longer one is cut, and says so. */
export function boundedSummary(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `${text.slice(0, maxChars)}… (summary cut to fit the context window)`;
}
