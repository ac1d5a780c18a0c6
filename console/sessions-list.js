import { listSessions, submitTicket, whoAmI } from './api.js';
import { announce, h, navigate } from './dom.js';
import { formatAge } from './timeline.js';

const STATES = ['queued', 'running', 'waiting', 'idle', 'completed', 'failed', 'cancelled'];
const PAGE_SIZE = 50;
const REFRESH_MS = 5_000;

const field = (label, control, hint) =>
  h('div', { class: 'field' }, h('label', { for: control.id }, label), control, hint && h('small', {}, hint));

/** A datetime-local value as an ISO instant, or undefined. */
const isoOf = (value) => (value ? new Date(value).toISOString() : undefined);

function submitForm() {
  const error = h('p', { class: 'error', role: 'alert', id: 'submit-error' });
  const agent = h('input', { id: 'submit-agent', name: 'agent', required: true, autocomplete: 'off' });
  const ticketId = h('input', { id: 'submit-ticket', name: 'ticketId', autocomplete: 'off' });
  const tenant = h('input', { id: 'submit-tenant', name: 'tenant', autocomplete: 'off', placeholder: 'default' });
  const input = h(
    'textarea',
    { id: 'submit-input', name: 'input', rows: 4, required: true, spellcheck: 'false' },
    '{}',
  );
  const form = h(
    'form',
    { class: 'submit', 'aria-labelledby': 'submit-heading', 'aria-describedby': 'submit-error', hidden: true },
    h('h2', { id: 'submit-heading' }, 'Submit a ticket'),
    h(
      'div',
      { class: 'row' },
      field('Agent', agent),
      field('Ticket id', ticketId, 'optional'),
      field('Tenant', tenant, 'optional'),
    ),
    field('Input (JSON)', input),
    h('button', { type: 'submit' }, 'Submit ticket'),
    error,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.textContent = '';
    let parsed;
    try {
      parsed = JSON.parse(input.value);
    } catch (e) {
      error.textContent = `Input is not valid JSON: ${e.message}`;
      input.focus();
      return;
    }
    try {
      const submitted = await submitTicket({
        agent: agent.value.trim(),
        input: parsed,
        ...(ticketId.value.trim() ? { ticketId: ticketId.value.trim() } : {}),
        ...(tenant.value.trim() ? { tenant: tenant.value.trim() } : {}),
      });
      announce(`Ticket ${submitted.ticketId} submitted`);
      navigate(`/sessions/${encodeURIComponent(submitted.sessionId)}`);
    } catch (e) {
      error.textContent = `${e.code ?? 'error'}: ${e.message}`;
    }
  });
  // Offered to a caller with the submit role only.
  void whoAmI().then((caller) => {
    form.hidden = !caller.roles.includes('submit');
  });
  return form;
}

/** The sessions list: filters, one server-side page at a time, refreshed in place. */
export function renderSessionsList(main) {
  const params = new URLSearchParams(location.search);
  const filters = {
    tenant: h('input', {
      id: 'filter-tenant',
      name: 'tenant',
      value: params.get('tenant') ?? '',
      placeholder: 'default',
    }),
    agent: h('input', { id: 'filter-agent', name: 'agent', value: params.get('agent') ?? '' }),
    state: h(
      'select',
      { id: 'filter-state', name: 'state' },
      h('option', { value: '' }, 'any'),
      STATES.map((s) => h('option', { value: s, selected: params.get('state') === s }, s)),
    ),
    from: h('input', { id: 'filter-from', name: 'from', type: 'datetime-local' }),
    to: h('input', { id: 'filter-to', name: 'to', type: 'datetime-local' }),
  };
  const body = h('tbody');
  const summary = h('p', { class: 'muted', id: 'list-summary' });
  const error = h('p', { class: 'error', role: 'alert' });
  const newer = h('button', { type: 'button', disabled: true }, 'Newer');
  const older = h('button', { type: 'button', disabled: true }, 'Older');
  const cursors = [undefined]; // the cursor of each page seen so far; the last is the current page's
  let next;
  let timer;
  let stopped = false;

  const query = () => ({
    tenant: filters.tenant.value.trim(),
    agent: filters.agent.value.trim(),
    state: filters.state.value,
    from: isoOf(filters.from.value),
    to: isoOf(filters.to.value),
    limit: PAGE_SIZE,
    cursor: cursors.at(-1),
  });

  const row = (s) =>
    h(
      'tr',
      { class: s.recoveries > 0 ? 'has-recovery' : undefined },
      h('td', {}, h('a', { href: `/sessions/${encodeURIComponent(s.sessionId)}`, 'data-nav': true }, s.sessionId)),
      h('td', {}, s.agent),
      h('td', {}, h('span', { class: `badge state-${s.status}` }, s.status)),
      h('td', { title: s.createdAt }, formatAge(s.createdAt)),
      h('td', { class: 'num' }, s.legs),
      h('td', { class: 'num' }, s.recoveries),
      h('td', { class: 'num' }, s.tokens),
    );

  async function load() {
    clearTimeout(timer);
    try {
      const page = await listSessions(query());
      if (stopped) return;
      error.textContent = '';
      body.replaceChildren(
        ...(page.sessions.length
          ? page.sessions.map(row)
          : [h('tr', {}, h('td', { colspan: 7, class: 'muted' }, 'No sessions match.'))]),
      );
      next = page.cursor;
      older.disabled = next === undefined;
      newer.disabled = cursors.length === 1;
      summary.textContent = `Page ${cursors.length} · ${page.sessions.length} session${page.sessions.length === 1 ? '' : 's'}`;
    } catch (e) {
      if (!stopped) error.textContent = `${e.code ?? 'error'}: ${e.message}`;
    }
    if (!stopped) timer = setTimeout(load, REFRESH_MS);
  }

  const filterForm = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Filter sessions' },
    field('Tenant', filters.tenant),
    field('Agent', filters.agent),
    field('State', filters.state),
    field('Created from', filters.from),
    field('Created to', filters.to),
    h('button', { type: 'submit' }, 'Apply filters'),
  );
  filterForm.addEventListener('submit', (event) => {
    event.preventDefault();
    cursors.splice(1);
    const search = new URLSearchParams(
      Object.entries({ tenant: filters.tenant.value, agent: filters.agent.value, state: filters.state.value }).filter(
        ([, v]) => v,
      ),
    );
    history.replaceState({}, '', `/${search.size ? `?${search}` : ''}`);
    void load();
  });
  older.addEventListener('click', () => {
    if (next === undefined) return;
    cursors.push(next);
    void load();
  });
  newer.addEventListener('click', () => {
    if (cursors.length > 1) cursors.pop();
    void load();
  });

  main.append(
    h('h1', {}, 'Sessions'),
    submitForm(),
    h(
      'section',
      { 'aria-labelledby': 'list-heading' },
      h('h2', { id: 'list-heading' }, 'Sessions, newest first'),
      filterForm,
      error,
      h(
        'table',
        { class: 'sessions' },
        h('caption', { class: 'visually-hidden' }, 'Sessions'),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Session', 'Agent', 'State', 'Age', 'Legs', 'Recoveries', 'Tokens'].map((c) =>
              h('th', { scope: 'col' }, c),
            ),
          ),
        ),
        body,
      ),
      h('div', { class: 'pager' }, newer, summary, older),
    ),
  );
  void load();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
