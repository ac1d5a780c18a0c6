/** Server-Sent Events framing (text/event-stream). */

export const SSE_CONTENT_TYPE = 'text/event-stream; charset=utf-8';

/** One event; `data` is JSON on one line, so it needs no escaping of newlines. */
export function sseEvent(event: { id?: string | number; event?: string; data: unknown }): string {
  const lines: string[] = [];
  if (event.id !== undefined) lines.push(`id: ${event.id}`);
  if (event.event !== undefined) lines.push(`event: ${event.event}`);
  lines.push(`data: ${JSON.stringify(event.data)}`);
  return `${lines.join('\n')}\n\n`;
}

/** Tells an EventSource how soon to reconnect after a response ends (the long poll's next round). */
export const sseRetry = (ms: number): string => `retry: ${ms}\n\n`;

/** Parses a text/event-stream body into its events (the typed client reads the API's stream with it). */
export function parseSse(text: string): Array<{ id?: string; event: string; data: string }> {
  const events: Array<{ id?: string; event: string; data: string }> = [];
  for (const block of text.split(/\n\n/)) {
    let id: string | undefined;
    let event = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      const [field, ...rest] = line.split(':');
      const value = rest.join(':').replace(/^ /, '');
      if (field === 'id') id = value;
      else if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length > 0) events.push({ ...(id === undefined ? {} : { id }), event, data: data.join('\n') });
  }
  return events;
}
