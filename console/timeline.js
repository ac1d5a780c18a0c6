/**
 * Builds a session's timeline from its journal events (the API's SessionEvent): legs with their
 * reason and owner, and in each leg its steps with durations. Pure, so it is unit-tested.
 */

const ms = (iso) => Date.parse(iso);

/** A short label for a value, for the timeline's details. */
export function brief(value, max = 120) {
  if (value === undefined) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function stepOf(event, previousAt, started) {
  const { kind, data } = event;
  const at = ms(event.at);
  switch (kind) {
    case 'input':
      return { title: data.agentVersion ? `input (v${data.agentVersion})` : 'input', detail: brief(data.input) };
    case 'upgraded':
      return { title: 'upgraded', detail: `agent version ${data.from} → ${data.to}` };
    case 'forked':
      return {
        title: data.version ? `forked (v${data.version})` : 'forked',
        detail: `from session ${data.from.id} at seq ${data.cursor} · effects ${data.effects} · ${data.ledger.length} once-only call(s) after it`,
      };
    case 'model': {
      const calls = data.toolCalls.map((c) => c.name);
      const tokens = data.usage.inputTokens + data.usage.outputTokens;
      return {
        title: 'model',
        detail: `${calls.length ? `calls ${calls.join(', ')}` : brief(data.text ?? data.stopReason)} · ${tokens} tokens`,
        durationMs: at - previousAt,
      };
    }
    case 'intent':
      return { title: `intent ${data.tool}`, detail: `once-only call ${data.callId}` };
    case 'tool':
      return {
        title: `tool ${data.tool}`,
        detail: data.ok ? brief(data.output) : `failed: ${brief(data.error)}`,
        durationMs: started.has(data.callId) ? at - started.get(data.callId) : undefined,
        highlight: data.ok ? undefined : 'error',
      };
    case 'error':
      return {
        title: `retry ${data.attempt}`,
        detail: `${data.source}: ${brief(data.message)}`,
        highlight: 'retry',
      };
    case 'message':
      return { title: 'message', detail: brief(data.text) };
    case 'reconciled':
      return { title: 'reconciled', detail: `${data.callId}: ${data.verdict}` };
    case 'outcome':
      return {
        title: `outcome ${data.status}`,
        detail: brief(data.error ?? data.output),
        highlight: data.status === 'completed' ? undefined : 'error',
      };
    case 'published':
      return { title: 'result published', detail: '' };
    default:
      return { title: kind, detail: brief(data) };
  }
}

/**
 * @param {Array<{seq:number, kind:string, epoch:number, at:string, data:any}>} events in seq order
 * @returns {{legs: Array<{seq:number, epoch:number, reason:string, owner:string, at:string, steps:Array}>, recoveries:number, retries:number}}
 */
export function buildTimeline(events) {
  const legs = [];
  const started = new Map(); // callId → when the call could start (its model entry, or its intent)
  let previousAt;
  let recoveries = 0;
  let retries = 0;
  for (const event of events) {
    const at = ms(event.at);
    // A leg that starts a turn carries its marker on the input: a leg, then the input as its first step.
    const marker = event.kind === 'leg' ? event.data : event.kind === 'input' ? event.data?.leg : undefined;
    if (marker) {
      const { reason, owner } = marker;
      if (reason === 'recovery') recoveries++;
      if (reason === 'retry') retries++;
      legs.push({ seq: event.seq, epoch: event.epoch, reason, owner, at: event.at, steps: [] });
      // A call re-run by a later leg starts no earlier than that leg.
      for (const [callId, from] of started) started.set(callId, Math.max(from, at));
    }
    if (event.kind !== 'leg') {
      if (legs.length === 0)
        legs.push({ seq: 0, epoch: 0, reason: 'intake', owner: 'intake', at: event.at, steps: [] });
      if (event.kind === 'model') for (const call of event.data.toolCalls) started.set(call.id, at);
      if (event.kind === 'intent') started.set(event.data.callId, at);
      const step = { seq: event.seq, kind: event.kind, at: event.at, ...stepOf(event, previousAt ?? at, started) };
      legs.at(-1).steps.push(step);
    }
    previousAt = at;
  }
  return { legs, recoveries, retries };
}

/** "850 ms", "3.2 s", "2 min 5 s". */
export function formatDuration(durationMs) {
  if (durationMs === undefined || Number.isNaN(durationMs)) return '';
  if (durationMs < 1000) return `${Math.max(0, Math.round(durationMs))} ms`;
  if (durationMs < 60_000) return `${(durationMs / 1000).toFixed(1)} s`;
  return `${Math.floor(durationMs / 60_000)} min ${Math.round((durationMs % 60_000) / 1000)} s`;
}

/** "12 s ago", "5 min ago", "3 h ago", "2 d ago". */
export function formatAge(iso, now = Date.now()) {
  const seconds = Math.max(0, Math.round((now - ms(iso)) / 1000));
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ago`;
  return `${Math.floor(seconds / 86_400)} d ago`;
}

/**
 * The partial text of a streaming model response, from `model-text` events: chunks appended in
 * order (a repeated one is skipped), the text reset when another response starts. It is shown
 * until the journal's entry at its seq arrives — see `liveTextAfterEntry`.
 * @param {{seq:number, chunk:number, text:string} | undefined} live what is shown now
 * @param {{seq:number, chunk:number, text:string}} event a `model-text` event
 */
export function addModelText(live, event) {
  if (live && live.seq === event.seq) {
    if (event.chunk !== live.chunk + 1) return live;
    return { seq: live.seq, chunk: event.chunk, text: live.text + event.text };
  }
  if (event.chunk !== 0) return live;
  return { seq: event.seq, chunk: 0, text: event.text };
}

/** What stays shown once a journal entry arrives: nothing when it is (or passes) the streaming response. */
export function liveTextAfterEntry(live, entry) {
  return live && entry.seq < live.seq ? live : undefined;
}
