/**
 * How `baton dev` shows its functions' log lines to a person: one short line each (time, level,
 * tenant/agent/session, turn, message, then the rest as key=value) instead of the JSON the
 * functions write for CloudWatch. `--log-format json` prints that JSON unchanged.
 */

/** The formats `baton dev --log-format` takes. */
export const LOG_FORMATS = ['pretty', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export interface PrettyLogOptions {
  /** ANSI colours: only for a terminal, and never when NO_COLOR is set (see useColor). */
  readonly color: boolean;
}

/** Colours on when writing to a terminal and NO_COLOR (https://no-color.org) is unset or empty. */
export const useColor = (isTty: boolean | undefined, env: NodeJS.ProcessEnv = process.env): boolean =>
  isTty === true && !env.NO_COLOR;

/** Keys shown in the line's fixed columns, or that say nothing locally (the same on every line of a function). */
const SHOWN_OR_CONSTANT = new Set([
  'level',
  'message',
  'timestamp',
  'tenant',
  'agent',
  'sessionId',
  'turnId',
  'service',
  'cold_start',
  'function_arn',
  'function_memory_size',
  'function_name',
  'function_request_id',
  'sampling_rate',
  'xray_trace_id',
  'traceId',
]);

/** Characters of a session or turn id shown: enough to tell a developer's sessions apart. */
const SHORT_ID_CHARS = 8;

const ANSI = {
  reset: '\x1b[0m',
  dim: '\x1b[2m',
  red: '\x1b[31m',
  yellow: '\x1b[33m',
  green: '\x1b[32m',
  cyan: '\x1b[36m',
};
const LEVEL_COLOR: Record<string, string> = {
  CRITICAL: ANSI.red,
  ERROR: ANSI.red,
  WARN: ANSI.yellow,
  INFO: ANSI.green,
  DEBUG: ANSI.dim,
  TRACE: ANSI.dim,
};

/**
 * One worker output line as a person reads it; undefined for a line not worth showing (the
 * metric records the functions print for CloudWatch's embedded metric format). A line that is
 * not a JSON log record (a worker's own notice, a stack trace) is returned as it is.
 * @example formatLogLine('{"level":"INFO","message":"turn finished",...}', { color: false })
 *   // '14:34:15.672 INFO  step default/support-desk/xkjgbvcd turn ed5f649f  turn finished  status=completed'
 */
export function formatLogLine(line: string, options: PrettyLogOptions): string | undefined {
  const record = parseRecord(line);
  if (record === undefined) return line;
  if ('_aws' in record) return undefined;
  if (typeof record.level !== 'string' || !('message' in record)) return line;
  const paint = (color: string, text: string) => (options.color ? `${color}${text}${ANSI.reset}` : text);
  const level = record.level.toUpperCase();
  const who = [record.tenant, record.agent, shortId(record.sessionId)].filter((part) => part !== undefined).join('/');
  const turn = shortId(record.turnId);
  const extras = Object.entries(record)
    .filter(([key, value]) => !SHOWN_OR_CONSTANT.has(key) && value !== undefined)
    .map(([key, value]) => `${key}=${describe(value)}`);
  return [
    paint(ANSI.dim, clockTime(record.timestamp)),
    paint(LEVEL_COLOR[level] ?? '', level.padEnd(5)),
    typeof record.function_name === 'string' ? record.function_name : undefined,
    who.length > 0 ? paint(ANSI.cyan, who) : undefined,
    turn === undefined ? undefined : paint(ANSI.dim, `turn ${turn}`),
    ` ${String(record.message)}`,
    extras.length > 0 ? ` ${paint(ANSI.dim, extras.join(' '))}` : undefined,
  ]
    .filter((part) => part !== undefined)
    .join(' ');
}

function parseRecord(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const parsed: unknown = JSON.parse(line);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

const shortId = (id: unknown): string | undefined => (typeof id === 'string' ? id.slice(0, SHORT_ID_CHARS) : undefined);

/** HH:MM:SS.mmm of an ISO timestamp, in UTC as the functions write it; the text itself when it is not one. */
function clockTime(timestamp: unknown): string {
  if (typeof timestamp !== 'string') return '--:--:--.---';
  const match = /T(\d\d:\d\d:\d\d(?:\.\d{1,3})?)/.exec(timestamp);
  return match?.[1] ?? timestamp;
}

/** A value for key=value: strings bare unless they hold spaces, an error as `Name: message`, the rest as JSON. */
function describe(value: unknown): string {
  if (typeof value === 'string') return /\s/.test(value) ? JSON.stringify(value) : value;
  if (typeof value === 'object' && value !== null && 'message' in value) {
    const error = value as { name?: unknown; message?: unknown };
    return JSON.stringify(`${typeof error.name === 'string' ? `${error.name}: ` : ''}${String(error.message)}`);
  }
  return JSON.stringify(value);
}
