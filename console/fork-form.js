import { forkSession } from './api.js';
import { announce, h, navigate } from './dom.js';

/**
 * "Fork from here": a timeline entry's button opens this form at that entry's seq; the fork is a
 * new session whose history is this one's up to there (POST /sessions/{id}/fork), and the console
 * opens its page. The form lives outside the timeline, which is rebuilt at every event, so what is
 * typed in it survives a live session's updates.
 */

/** A fork needs `submit` (it starts a session) and `read` (it reads this one's history). */
export const mayFork = (roles) => roles.includes('submit') && roles.includes('read');

const EFFECTS = [
  ['ask', 'ask: a once-only call the original made again waits for an approval that shows it ran'],
  ['reuse', "reuse: the original's result, without calling again"],
  ['deny', 'deny: refused, a dry run'],
  ['rerun', 'rerun: called again, under a key of its own'],
];

/** The fork form of one session: `open(seq)` shows it for the entry at `seq`. */
export function forkForm(sessionId) {
  const error = h('p', { class: 'error', role: 'alert' });
  const at = h('code', { id: 'fork-at' });
  const text = h('input', { id: 'fork-text', autocomplete: 'off' });
  const effects = h(
    'select',
    { id: 'fork-effects' },
    EFFECTS.map(([value, label]) => h('option', { value }, label)),
  );
  const submit = h('button', { type: 'submit' }, 'Fork');
  const close = h('button', { type: 'button', class: 'secondary' }, 'Close');
  const form = h(
    'form',
    { class: 'submit fork', 'aria-labelledby': 'fork-heading', hidden: true },
    h('h2', { id: 'fork-heading' }, 'Fork from here'),
    h(
      'p',
      { class: 'muted' },
      'A new session with this one’s history up to seq ',
      at,
      '. Nothing before it runs again.',
    ),
    h(
      'div',
      { class: 'field' },
      h('label', { for: text.id }, 'New input text (at a turn’s end; empty: go on with the turn)'),
      text,
    ),
    h('div', { class: 'field' }, h('label', { for: effects.id }, 'Once-only calls made again'), effects),
    h('div', { class: 'row' }, submit, close),
    error,
  );
  let seq;
  close.addEventListener('click', () => {
    form.hidden = true;
  });
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    submit.disabled = true;
    error.textContent = '';
    try {
      const value = text.value.trim();
      const forked = await forkSession(sessionId, {
        at: seq,
        effects: effects.value,
        ...(value ? { text: value } : {}),
      });
      announce(`Forked at seq ${seq}: session ${forked.sessionId}`);
      navigate(`/sessions/${encodeURIComponent(forked.sessionId)}`);
    } catch (e) {
      // The API names what is wrong with the cursor (inside a turn with a text, past a release…).
      error.textContent = `${e.code ?? 'error'}: ${e.message}`;
      submit.disabled = false;
    }
  });
  return {
    section: form,
    open(entrySeq) {
      seq = entrySeq;
      at.textContent = String(entrySeq);
      error.textContent = '';
      submit.disabled = false;
      form.hidden = false;
      form.scrollIntoView({ block: 'nearest' });
      text.focus();
    },
  };
}
