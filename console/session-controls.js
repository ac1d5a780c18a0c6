import { approveCall, releaseSession, resolveCall, sendInput, sessionTasks } from './api.js';
import { announce, h } from './dom.js';

/**
 * The session page's operations beyond cancel, each one request of the HTTP API (the same the
 * CLI's http client makes): what waits for a human (approve or deny a call, resolve a parked
 * call), sending a turn or a message, the background tasks, and release.
 */

const TERMINAL = ['completed', 'failed', 'cancelled'];
/** How long the console keeps asking for a release not yet carried out (its default bound is 30 s). */
const RELEASE_PATIENCE_MS = 120_000;

const short = (value) => {
  const text = value === undefined ? '' : JSON.stringify(value);
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
};

const errorText = (e) => `${e.code ?? 'error'}: ${e.message}`;

/** Runs one operation from a button: disabled while it runs, its error shown in `error`. */
async function operate(buttons, error, operation) {
  for (const button of buttons) button.disabled = true;
  error.textContent = '';
  try {
    await operation();
  } catch (e) {
    error.textContent = errorText(e);
    for (const button of buttons) button.disabled = false;
  }
}

/** What a decision names (status shows it): the model entry, the call, its tool and its input's digest. */
const callIdentity = ({ modelSeq, callId, tool, digest }) => ({ modelSeq, callId, tool, digest });
/** What a verdict names: the parked call and its park. */
const parkIdentity = (parked) => ({ ...callIdentity(parked), parkSeq: parked.parkSeq });

/** Calls waiting for a human: approvals (approve or deny) and a parked once-only call (done or not). */
function waitsSection(sessionId, onChange) {
  const error = h('p', { class: 'error', role: 'alert' });
  const list = h('ul', { class: 'waits', id: 'waits' });
  const section = h(
    'section',
    { 'aria-labelledby': 'waits-heading', hidden: true },
    h('h2', { id: 'waits-heading' }, 'Waiting for you'),
    list,
    error,
  );
  let shown = '';

  const approvalItem = (approval) => {
    const reason = h('input', { id: `reason-${approval.callId}`, autocomplete: 'off' });
    const approve = h('button', { type: 'button' }, 'Approve');
    const deny = h('button', { type: 'button', class: 'danger' }, 'Deny');
    const decide = (approved) =>
      operate([approve, deny], error, async () => {
        const text = reason.value.trim();
        // The whole identity shown: the decision holds for this call and this input only.
        await approveCall(sessionId, { ...callIdentity(approval), approved, ...(text ? { reason: text } : {}) });
        announce(`${approved ? 'Approved' : 'Denied'} ${approval.callId}`);
        onChange();
      });
    approve.addEventListener('click', () => decide(true));
    deny.addEventListener('click', () => decide(false));
    return h(
      'li',
      { class: 'wait approval', 'data-call': approval.callId, 'aria-label': `Approval of ${approval.callId}` },
      h('p', {}, 'Approval of ', h('code', {}, approval.tool), ' (call ', h('code', {}, approval.callId), ')'),
      h('pre', { class: 'call-input' }, short(approval.input)),
      // A fork's repeat of a call its original made: approving runs it a second time, for real.
      approval.ranBefore &&
        h(
          'p',
          { class: 'ran-before' },
          'Already ran in session ',
          h('code', {}, approval.ranBefore.session),
          ` (seq ${approval.ranBefore.seq})`,
          approval.ranBefore.result ? `: ${short(approval.ranBefore.result)}` : ': its result is unknown',
        ),
      h(
        'div',
        { class: 'row' },
        h('div', { class: 'field' }, h('label', { for: reason.id }, 'Reason (optional)'), reason),
        approve,
        deny,
      ),
    );
  };

  const parkedItem = (parked) => {
    const output = h('textarea', { id: 'resolve-output', rows: 2, spellcheck: 'false' }, 'null');
    const done = h('button', { type: 'button' }, 'It happened');
    const notDone = h('button', { type: 'button', class: 'danger' }, 'It did not happen');
    done.addEventListener('click', () =>
      operate([done, notDone], error, async () => {
        let value;
        try {
          value = JSON.parse(output.value);
        } catch (e) {
          throw { code: 'invalid_json', message: `Output is not valid JSON: ${e.message}` };
        }
        await resolveCall(sessionId, { ...parkIdentity(parked), done: true, output: value });
        announce(`Resolved ${parked.callId} as done`);
        onChange();
      }),
    );
    notDone.addEventListener('click', () =>
      operate([done, notDone], error, async () => {
        await resolveCall(sessionId, { ...parkIdentity(parked), done: false });
        announce(`Resolved ${parked.callId} as not done: it runs again`);
        onChange();
      }),
    );
    return h(
      'li',
      { class: 'wait parked', 'data-call': parked.callId, 'aria-label': `Parked call ${parked.callId}` },
      h(
        'p',
        {},
        'Parked once-only call ',
        h('code', {}, parked.tool),
        ' (call ',
        h('code', {}, parked.callId),
        '): did it happen downstream? If it did, give its output; if not, it runs again under a new key.',
      ),
      h('div', { class: 'field' }, h('label', { for: output.id }, 'Its output (JSON)'), output),
      h('div', { class: 'row' }, done, notDone),
    );
  };

  return {
    section,
    update(status, roles) {
      // An approver decides approvals; an operator says whether a parked call happened.
      const approvals = roles.includes('approve') ? (status.pendingApprovals ?? []) : [];
      const parked = roles.includes('operate') ? status.parked : undefined;
      // Rebuilt only when what waits changes, so a half-typed reason survives the status poll.
      const key = JSON.stringify([approvals.map(callIdentity), parked && parkIdentity(parked)]);
      if (key === shown) return;
      shown = key;
      error.textContent = '';
      list.replaceChildren(...approvals.map(approvalItem), ...(parked ? [parkedItem(parked)] : []));
      section.hidden = approvals.length === 0 && !parked;
    },
  };
}

/** Sends a further turn, a message into the running turn, or a turn that supersedes it. */
function sendSection(sessionId, onChange) {
  const error = h('p', { class: 'error', role: 'alert' });
  const result = h('p', { class: 'muted', id: 'send-result' });
  const input = h('textarea', { id: 'send-input', rows: 3, required: true, spellcheck: 'false' }, '{"text": ""}');
  const mode = h(
    'select',
    { id: 'send-mode' },
    h('option', { value: 'queue' }, 'queue: a new turn after the current one'),
    h('option', { value: 'inject' }, 'inject: a message into the running turn'),
    h('option', { value: 'steer' }, 'steer: a new turn that supersedes the running one'),
  );
  const send = h('button', { type: 'submit' }, 'Send');
  const form = h(
    'form',
    { class: 'submit', 'aria-labelledby': 'send-heading', hidden: true },
    h('h2', { id: 'send-heading' }, 'Send to this conversation'),
    h('div', { class: 'field' }, h('label', { for: input.id }, 'Input (JSON)'), input),
    h('div', { class: 'field' }, h('label', { for: mode.id }, 'Mode'), mode),
    send,
    result,
    error,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    result.textContent = '';
    void operate([send], error, async () => {
      let value;
      try {
        value = JSON.parse(input.value);
      } catch (e) {
        throw { code: 'invalid_json', message: `Input is not valid JSON: ${e.message}` };
      }
      const sent = await sendInput(sessionId, { input: value, mode: mode.value });
      result.textContent = `Sent ${sent.turnId} as ${sent.mode}${sent.accepted ? '' : ' (already sent before)'}.`;
      announce(result.textContent);
      send.disabled = false;
      onChange();
    });
  });
  return {
    section: form,
    update(status, roles) {
      // Only a conversation (its status lists turns) takes further input, until it ends or is released.
      form.hidden =
        !roles.includes('converse') ||
        status.turns === undefined ||
        TERMINAL.includes(status.status) ||
        status.release !== undefined;
    },
  };
}

/** The session's background tasks, each linking to its child session, and the release. */
function tasksSection(sessionId, onChange) {
  const error = h('p', { class: 'error', role: 'alert' });
  const result = h('p', { class: 'muted', id: 'release-result' });
  const body = h('tbody');
  const release = h('button', { type: 'button', id: 'release-button', class: 'danger' }, 'Release session');
  const section = h(
    'section',
    { 'aria-labelledby': 'tasks-heading', hidden: true },
    h('h2', { id: 'tasks-heading' }, 'Background tasks'),
    h(
      'table',
      { class: 'sessions', id: 'tasks', 'aria-labelledby': 'tasks-heading' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Task (child session)', 'Agent', 'Description', 'Status', 'Result'].map((c) => h('th', { scope: 'col' }, c)),
        ),
      ),
      body,
    ),
    h(
      'p',
      { class: 'muted' },
      'Release cancels the running tasks, waits for them (30 s at most), records the rest failed, and refuses new work.',
    ),
    release,
    result,
    error,
  );
  let loading = false;

  async function loadTasks() {
    if (loading) return;
    loading = true;
    try {
      const { tasks } = await sessionTasks(sessionId);
      body.replaceChildren(
        ...tasks.map((task) =>
          h(
            'tr',
            { 'data-task': task.taskId, 'data-status': task.status },
            h(
              'td',
              {},
              h('a', { href: `/sessions/${encodeURIComponent(task.sessionId)}`, 'data-nav': true }, task.taskId),
            ),
            h('td', {}, task.agent),
            h('td', {}, task.description),
            h('td', {}, h('span', { class: `badge task-status state-${task.status}` }, task.status)),
            h('td', { class: 'step-detail' }, task.error ?? short(task.output)),
          ),
        ),
      );
    } catch (e) {
      error.textContent = errorText(e);
    } finally {
      loading = false;
    }
  }

  release.addEventListener('click', () =>
    operate([release], error, async () => {
      result.textContent = 'Release requested: waiting for the running tasks…';
      announce(result.textContent);
      // One request waits up to 20 s; the same release is asked for again until it is carried out.
      const deadline = Date.now() + RELEASE_PATIENCE_MS;
      const cancelled = new Set();
      for (;;) {
        const outcome = await releaseSession(sessionId);
        for (const id of outcome.cancelled) cancelled.add(id);
        if (outcome.released) {
          const stragglers = outcome.stragglers.length ? `; recorded failed: ${outcome.stragglers.join(', ')}` : '';
          result.textContent = `Released: ${cancelled.size} running task(s) cancelled${stragglers}.`;
          break;
        }
        if (Date.now() > deadline) {
          result.textContent = 'Release asked for, not carried out yet: try again.';
          release.disabled = false;
          break;
        }
      }
      announce(result.textContent);
      onChange();
    }),
  );

  return {
    section,
    update(status, roles) {
      section.hidden = status.tasks === undefined;
      release.hidden = !roles.includes('operate');
      release.disabled = status.release === 'released' || release.disabled;
      if (status.release === 'released' && !result.textContent) result.textContent = 'Released.';
      if (!section.hidden) void loadTasks();
    },
  };
}

/** The operations of one session; `update` is called with each status read, `onChange` asks for a fresh one. */
export function sessionControls(sessionId, onChange) {
  const parts = [
    waitsSection(sessionId, onChange),
    sendSection(sessionId, onChange),
    tasksSection(sessionId, onChange),
  ];
  return {
    sections: parts.map((p) => p.section),
    /** `roles`: the caller's (GET /me); a section it may not use is not offered. */
    update: (status, roles) => {
      for (const part of parts) part.update(status, roles);
    },
  };
}
