// The session view: the conversation, oldest first, paged backwards as the
// reader scrolls up, appended live; and the plan strip under it.

import { get, sessionPath } from './api.js';
import { Live } from './live.js';
import { PlanStrip, renderList, summarize } from './todos.js';

/** @typedef {import('./api.js').TackEvent} TackEvent */
/** @typedef {import('./api.js').TodosView} TodosView */

const PAGE = 50;

/**
 * @param {HTMLElement} root the element with data-view="session"
 * @param {string} id
 * @param {(connected: boolean) => void} onStatus
 */
export async function showSession(root, id, onStatus) {
  const scroller = /** @type {HTMLElement} */ (root.querySelector('[data-scroller]'));
  const list = /** @type {HTMLElement} */ (root.querySelector('[data-events]'));
  const older = /** @type {HTMLElement} */ (root.querySelector('[data-older]'));
  const plan = new PlanStrip(
    /** @type {HTMLElement} */ (root.querySelector('[data-plan]')),
    /** @type {HTMLElement} */ (root.querySelector('[data-announce]')),
  );

  const [session, tail] = await Promise.all([
    get(sessionPath(id)),
    /** @type {Promise<import('./api.js').HistoryPage>} */ (get(`${sessionPath(id)}/history?limit=${PAGE}`)),
  ]);
  document.title = `${session.title} · Tack`;
  /** @type {HTMLElement} */ (document.querySelector('[data-title]')).textContent = session.title;
  root.hidden = false;

  let lastSeq = tail.snapshot?.lastSeq ?? 0;
  let firstSeq = tail.events[0]?.seq ?? lastSeq + 1;
  let hasMore = tail.hasMore;
  // The order of todos views: the version grows, and at one version a plan
  // only ever stops standing. A view older than the one shown is dropped.
  let shown = { version: tail.snapshot?.todosVersion ?? 0, standing: tail.snapshot?.standing ?? false };
  list.append(...tail.events.map(renderEvent));
  plan.show(tail.snapshot?.standing ? tail.snapshot.todos : [], false);

  // Following: the reader is at the bottom unless they scrolled away. It is
  // decided by the reader's scrolling alone, never by measuring at append
  // time: the plan strip appearing or growing shrinks the scroller without a
  // scroll, and must not count as the reader leaving.
  const newEvents = /** @type {HTMLButtonElement} */ (root.querySelector('[data-new-events]'));
  let following = true;
  // Where the view last scrolled itself: a scroll event landing there is
  // ours (it fires a frame later, maybe after the strip has grown), not the
  // reader's.
  let ownTop = -1;
  const pin = () => {
    scroller.scrollTop = scroller.scrollHeight;
    ownTop = scroller.scrollTop;
  };
  const atBottom = () => scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 40;
  const toBottom = () => {
    pin();
    following = true;
    newEvents.hidden = true;
  };
  toBottom();
  scroller.addEventListener('scroll', () => {
    if (scroller.scrollTop === ownTop) return;
    ownTop = -1;
    following = atBottom();
    if (following) newEvents.hidden = true;
  }, { passive: true });
  // The scroller changes size (the strip appears or grows, a phone's
  // toolbar hides): a following view stays at the bottom.
  new ResizeObserver(() => { if (following) pin(); }).observe(scroller);
  newEvents.addEventListener('click', () => {
    toBottom();
    scroller.focus({ preventScroll: true });
  });

  /** @param {TodosView} t */
  const applyTodos = (t) => {
    const newer = t.version > shown.version || (t.version === shown.version && shown.standing && !t.standing);
    if (!newer) return;
    shown = { version: t.version, standing: t.standing };
    plan.show(t.standing ? t.todos : [], true);
  };

  /** @param {TackEvent} ev */
  const append = (ev) => {
    if (ev.seq <= lastSeq) return; // replayed after a reconnect: already shown
    lastSeq = ev.seq;
    list.append(renderEvent(ev));
    if (following) pin();
    else newEvents.hidden = false;
  };

  new Live({
    path: () => `${sessionPath(id)}/live?after=${lastSeq}`,
    onStatus,
    // A (re)connect may have missed a todos message while away; the view is
    // cheap to read and the ordering above drops it if a newer one came first.
    onOpen: () => get(`${sessionPath(id)}/todos`).then(applyTodos, () => {}),
    onMessage: (msg) => {
      if (msg.type === 'event') append(msg.event);
      else if (msg.type === 'todos') applyTodos(msg.todos);
    },
  });

  // Older pages: when the top comes into view, prepend the page before the
  // first shown event and keep the reader's place.
  // A page that fails to load is tried again on the next scroll.
  let loading = false;
  const loadOlder = () => loadPage().catch(() => {});
  const loadPage = async () => {
    if (loading || !hasMore) return;
    loading = true;
    older.hidden = false;
    try {
      const page = await get(`${sessionPath(id)}/history?limit=${PAGE}&before=${firstSeq}`);
      older.hidden = true;
      const fromBottom = scroller.scrollHeight - scroller.scrollTop;
      list.prepend(...page.events.map(renderEvent));
      scroller.scrollTop = scroller.scrollHeight - fromBottom;
      if (page.events.length > 0) firstSeq = page.events[0].seq;
      hasMore = page.hasMore;
    } finally {
      loading = false;
      older.hidden = true;
    }
    // Still at the top (a short page, a tall screen): keep going.
    if (hasMore && scroller.scrollTop < 200) loadOlder();
  };
  scroller.addEventListener('scroll', () => {
    if (scroller.scrollTop < 200) loadOlder();
  }, { passive: true });
  if (hasMore && scroller.scrollHeight <= scroller.clientHeight) loadOlder();
}

/**
 * @param {string} tag
 * @param {string} className
 * @param {string} [text]
 */
function el(tag, className, text) {
  const e = document.createElement(tag);
  e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** @param {string} iso */
const clock = (iso) => new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });

/**
 * One event as one <li> of the conversation.
 * @param {TackEvent} ev
 * @returns {HTMLElement}
 */
export function renderEvent(ev) {
  const li = el('li', 'event');
  li.dataset.seq = String(ev.seq);
  li.dataset.type = ev.type;
  li.title = `#${ev.seq} · ${clock(ev.at)}`;
  const d = ev.data ?? {};
  switch (ev.type) {
    case 'turn/start':
      li.classList.add('turn');
      li.append(el('span', 'turn-label', `Turn ${ev.turn}`));
      break;
    case 'turn/end':
      li.classList.add('turn', 'turn-end');
      if (d.reason && d.reason !== 'completed') li.append(el('span', 'turn-label', `Turn ${ev.turn} ${d.reason}`));
      break;
    case 'message/user':
      li.classList.add('msg', 'user');
      li.append(el('span', 'who', 'You'), el('div', 'text', d.text ?? ''));
      break;
    case 'message/assistant': {
      // A todo_write call is shown by the todo row that follows it, so a
      // message holding nothing else is kept out of sight.
      const calls = (d.toolCalls ?? []).filter((/** @type {any} */ c) => c.name !== 'todo_write');
      li.classList.add('msg', 'assistant');
      if (!d.text) li.classList.add('calls-only');
      if (!d.text && calls.length === 0) li.hidden = true;
      if (d.text) li.append(el('span', 'who', 'Agent'), el('div', 'text', d.text));
      for (const call of calls) li.append(renderCall(call));
      break;
    }
    case 'tool/result': {
      li.classList.add('tool-result');
      if (d.isError) li.classList.add('is-error');
      // A successful todo_write answers only what its todo row shows.
      if (d.name === 'todo_write' && !d.isError) li.hidden = true;
      const details = el('details', 'fold');
      const first = String(d.content ?? '').split('\n', 1)[0];
      const label = d.isError ? `${d.name ?? 'tool'} failed · ${first}` : `${d.name ?? 'tool'} → ${first}`;
      details.append(el('summary', '', label), el('pre', 'output', d.content ?? ''));
      li.append(details);
      break;
    }
    case 'todo/write':
      li.classList.add('todo-row');
      li.append(renderTodoRow(d.todos ?? []));
      break;
    default:
      li.append(el('span', 'unknown', ev.type));
  }
  return li;
}

/** @param {{id: string, name: string, args: any}} call */
function renderCall(call) {
  const details = el('details', 'fold call');
  const args = call.args ?? {};
  const gist = typeof args === 'object' ? Object.values(args).find((v) => typeof v === 'string') ?? '' : String(args);
  details.append(el('summary', '', `${call.name}${gist ? ' · ' + gist : ''}`), el('pre', 'output', JSON.stringify(args, null, 2)));
  return details;
}

/**
 * The compact row of a todo/write: its gist, expandable to the list it wrote.
 * @param {import('./api.js').Todo[]} todos
 */
function renderTodoRow(todos) {
  const s = summarize(todos);
  const details = el('details', 'fold todo-fold');
  details.dataset.state = s.state;
  const summary = el('summary', '');
  summary.append(
    el('span', 'todo-state', ''),
    el('span', 'todo-summary', todos.length === 0 ? 'Plan cleared' : ['Plan updated', s.progress, s.current].join(' · ')),
  );
  const ol = el('ol', 'todos');
  renderList(ol, todos);
  details.append(summary, ol);
  return details;
}
