import { cancelSession, eventsUrl, getSession, stopTurn, whoAmI } from './api.js';
import { announce, h } from './dom.js';
import { forkForm, mayFork } from './fork-form.js';
import { sessionControls } from './session-controls.js';
import { addModelText, buildTimeline, formatAge, formatDuration, liveTextAfterEntry } from './timeline.js';

const TERMINAL = ['completed', 'failed', 'cancelled'];
const RECONNECT_MS = 1_000;
/** The counters (legs, recoveries, tokens) are re-read while the session runs. */
const STATUS_POLL_MS = 3_000;
const LEG_NOTES = {
  recovery: 'Recovery: the previous owner died or stalled; this leg took over its expired lease',
  retry: 'Retry: a retryable error backed off, then this leg resumed',
  cancel: 'Cancel requested',
};

/** `fork`: opens the fork form at an entry's seq, when the caller may fork. */
function renderTimeline(list, events, fork) {
  const { legs } = buildTimeline(events);
  list.replaceChildren(
    ...legs.map((leg, index) =>
      h(
        'li',
        { class: `leg reason-${leg.reason}`, 'data-reason': leg.reason },
        h(
          'div',
          { class: 'leg-head' },
          h('strong', {}, leg.reason === 'intake' ? 'Intake' : `Leg ${index + (legs[0].reason === 'intake' ? 0 : 1)}`),
          h('span', { class: `badge reason reason-${leg.reason}` }, leg.reason),
          leg.reason !== 'intake' && h('span', { class: 'muted' }, `owner ${leg.owner} · epoch ${leg.epoch}`),
          h('time', { datetime: leg.at, class: 'muted' }, new Date(leg.at).toLocaleTimeString()),
        ),
        LEG_NOTES[leg.reason] && h('p', { class: 'leg-note' }, LEG_NOTES[leg.reason]),
        h(
          'ol',
          { class: 'steps' },
          leg.steps.map((step) =>
            h(
              'li',
              { class: `step kind-${step.kind}${step.highlight ? ` highlight-${step.highlight}` : ''}` },
              h('span', { class: 'step-title' }, step.title),
              h('span', { class: 'step-detail' }, step.detail),
              h('span', { class: 'step-duration' }, formatDuration(step.durationMs)),
              fork &&
                h(
                  'button',
                  {
                    type: 'button',
                    class: 'secondary fork-here',
                    'aria-label': `Fork from seq ${step.seq}`,
                    onclick: () => fork(step.seq),
                  },
                  'Fork from here',
                ),
            ),
          ),
        ),
      ),
    ),
  );
}

/** One session: its status, the operations as buttons, and its timeline, live over SSE. */
export function renderSessionPage(main, sessionId) {
  const facts = h('dl', { class: 'facts' });
  const error = h('p', { class: 'error', role: 'alert' });
  const live = h('p', { class: 'muted', id: 'live-state' }, 'Connecting…');
  const timeline = h('ol', { class: 'timeline', id: 'timeline', 'aria-label': 'Timeline' });
  // Partial model text while a response streams: never journaled, replaced by its model entry.
  const modelText = h('pre', { class: 'model-text', id: 'model-text', hidden: true, 'aria-label': 'Model writing' });
  let liveText;
  const showLiveText = () => {
    modelText.hidden = liveText === undefined;
    modelText.textContent = liveText?.text ?? '';
  };
  const cancel = h(
    'button',
    { type: 'button', id: 'cancel-button', class: 'danger', disabled: true, hidden: true },
    'Cancel session',
  );
  // A conversation's running (or next) turn can be stopped alone: the conversation goes on.
  const stopActiveTurn = h(
    'button',
    { type: 'button', id: 'stop-turn-button', disabled: true, hidden: true },
    'Stop turn',
  );
  // The operations offered are those the caller's roles allow (the API refuses the rest anyway).
  const caller = whoAmI();
  const events = [];
  let status;
  let source;
  let stopped = false;
  let pendingRender = false;

  let retry;
  let poll;
  const fact = (term, value, id) => [h('dt', {}, term), h('dd', id ? { id } : {}, value)];
  const controls = sessionControls(sessionId, () => void refreshStatus());
  const forking = forkForm(sessionId);
  let canFork = false;
  // One status read at a time: a request made while one runs is made once, after it.
  let reading = false;
  let again = false;

  async function refreshStatus() {
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      status = await getSession(sessionId);
    } catch (e) {
      error.textContent = e.code === 'not_found' ? `Session ${sessionId} not found (yet).` : `${e.code}: ${e.message}`;
      clearTimeout(poll);
      if (!stopped) poll = setTimeout(refreshStatus, STATUS_POLL_MS);
      return;
    } finally {
      reading = false;
    }
    if (again) {
      again = false;
      void refreshStatus();
    }
    if (stopped) return;
    error.textContent = '';
    const outcome = status.outcome
      ? `${status.outcome.status}${status.outcome.error ? `: ${status.outcome.error}` : ''}`
      : '—';
    facts.replaceChildren(
      ...fact('State', h('span', { class: `badge state-${status.status}` }, status.status), 'session-state'),
      ...fact('Agent', status.agent),
      ...fact('Tenant', status.tenant),
      ...fact('Ticket', status.ticketId),
      ...fact('Created', formatAge(status.createdAt)),
      ...fact('Legs', String(status.legs)),
      ...fact('Recoveries', String(status.recoveries), 'session-recoveries'),
      ...fact('Tokens', String(status.tokens)),
      ...fact('Outcome', outcome, 'session-outcome'),
      ...fact('Trace', status.traceId),
      ...(status.parent
        ? fact(
            'Started by',
            h('a', { href: `/sessions/${encodeURIComponent(status.parent)}`, 'data-nav': true }, status.parent),
            'session-parent',
          )
        : []),
      ...(status.tasks
        ? fact(
            'Tasks',
            Object.entries(status.tasks)
              .map(([state, n]) => `${n} ${state}`)
              .join(', '),
            'session-tasks',
          )
        : []),
      ...(status.release ? fact('Release', status.release, 'session-release') : []),
      ...(status.forkedFrom
        ? fact(
            'Forked from',
            [
              h(
                'a',
                { href: `/sessions/${encodeURIComponent(status.forkedFrom.session)}`, 'data-nav': true },
                status.forkedFrom.session,
              ),
              ` at seq ${status.forkedFrom.cursor}`,
            ],
            'session-forked-from',
          )
        : []),
    );
    const { roles } = await caller;
    if (mayFork(roles) !== canFork) {
      canFork = mayFork(roles);
      scheduleRender();
    }
    controls.update(status, roles);
    cancel.hidden = !roles.includes('operate');
    cancel.disabled = TERMINAL.includes(status.status) || status.cancelRequested;
    // An idle conversation keeps its last turn's id: only a turn that runs or waits is stoppable.
    const stoppable =
      status.turns !== undefined &&
      status.activeTurnId !== undefined &&
      status.status !== 'idle' &&
      !TERMINAL.includes(status.status);
    stopActiveTurn.hidden = !roles.includes('operate') || !stoppable;
    stopActiveTurn.disabled = !stoppable || stopActiveTurn.dataset.turn === status.activeTurnId;
    clearTimeout(poll);
    if (!TERMINAL.includes(status.status)) poll = setTimeout(refreshStatus, STATUS_POLL_MS);
    if (status.cancelRequested && !TERMINAL.includes(status.status)) cancel.textContent = 'Cancel requested';
  }

  const scheduleRender = () => {
    if (pendingRender) return;
    pendingRender = true;
    requestAnimationFrame(() => {
      pendingRender = false;
      renderTimeline(timeline, events, canFork ? forking.open : undefined);
    });
  };

  async function connect() {
    if (stopped) return;
    const after = events.length ? `&after=${events.at(-1).seq}` : '';
    source = new EventSource(`${await eventsUrl(sessionId)}?live=true${after}`);
    source.addEventListener('open', () => {
      live.textContent = 'Live: following new events.';
    });
    source.addEventListener('entry', (message) => {
      const event = JSON.parse(message.data);
      if (events.length && event.seq <= events.at(-1).seq) return; // a resumed stream never repeats; be sure
      events.push(event);
      liveText = liveTextAfterEntry(liveText, event);
      showLiveText();
      scheduleRender();
      // What waits, the tasks and the state change with the journal: read the status again.
      void refreshStatus();
    });
    source.addEventListener('model-text', (message) => {
      const event = JSON.parse(message.data);
      if (events.length && event.seq <= events.at(-1).seq) return; // its entry is already here
      liveText = addModelText(liveText, event);
      showLiveText();
    });
    source.addEventListener('end', () => {
      source.close();
      live.textContent = 'Finished: the timeline is complete.';
      announce('Session finished');
      void refreshStatus();
    });
    source.addEventListener('error', () => {
      if (source.readyState !== EventSource.CLOSED) {
        live.textContent = 'Reconnecting…';
        return;
      }
      // A refused stream (the session does not exist yet: intake has not run) is tried again.
      live.textContent = 'Waiting for the session…';
      if (!stopped) retry = setTimeout(connect, RECONNECT_MS);
    });
  }

  cancel.addEventListener('click', async () => {
    cancel.disabled = true;
    try {
      await cancelSession(sessionId);
      announce('Cancel requested');
      cancel.textContent = 'Cancel requested';
    } catch (e) {
      error.textContent = `${e.code}: ${e.message}`;
    }
    void refreshStatus();
  });

  stopActiveTurn.addEventListener('click', async () => {
    const turnId = status?.activeTurnId;
    if (turnId === undefined) return;
    // One stop a turn: the button stays off until another turn is active.
    stopActiveTurn.disabled = true;
    stopActiveTurn.dataset.turn = turnId;
    try {
      const { result } = await stopTurn(sessionId, turnId);
      announce(result === 'requested' ? `Stop of turn ${turnId} requested` : `Turn ${turnId} had already ended`);
    } catch (e) {
      error.textContent = `${e.code}: ${e.message}`;
    }
    void refreshStatus();
  });

  main.append(
    h('p', {}, h('a', { href: '/', 'data-nav': true }, '← All sessions')),
    h('h1', {}, 'Session ', h('code', {}, sessionId)),
    error,
    facts,
    h('div', { class: 'actions', role: 'group', 'aria-label': 'Session operations' }, stopActiveTurn, cancel),
    ...controls.sections,
    h(
      'section',
      { 'aria-labelledby': 'timeline-heading' },
      h('h2', { id: 'timeline-heading' }, 'Timeline'),
      live,
      timeline,
      modelText,
    ),
    forking.section,
  );
  void refreshStatus();
  void connect();
  return () => {
    stopped = true;
    clearTimeout(retry);
    clearTimeout(poll);
    source?.close();
  };
}
