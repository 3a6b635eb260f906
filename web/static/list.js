// The session list: newest activity first, kept current by GET /live, with
// each session's current item, progress and state; searched by title.

import { get, sessionPath } from './api.js';
import { Live } from './live.js';
import { STALE_MS, ago } from './time.js';
import { summarize } from './todos.js';

/** @typedef {import('./api.js').Session} Session */
/** @typedef {{seq: number, current: string, reason: string}} Detail */

const PAGE = 100;
/** Details read at once: each is one small request. */
const DETAIL_CONCURRENCY = 4;

/**
 * @param {HTMLElement} root the element with data-view="list"
 * @param {(connected: boolean) => void} onStatus
 */
export async function showList(root, onStatus) {
  const ul = /** @type {HTMLElement} */ (root.querySelector('[data-sessions]'));
  const empty = /** @type {HTMLElement} */ (root.querySelector('[data-empty]'));
  const search = /** @type {HTMLInputElement} */ (root.querySelector('[data-search]'));
  const count = /** @type {HTMLElement} */ (root.querySelector('[data-search-count]'));
  const more = /** @type {HTMLButtonElement} */ (root.querySelector('[data-more]'));
  /** @type {Map<string, Session>} */
  const sessions = new Map();
  /** @type {Map<string, Detail>} */
  const details = new Map();
  /** @type {string|undefined} */
  let cursor;

  const render = () => {
    const q = search.value.trim().toLowerCase();
    const sorted = [...sessions.values()]
      .filter((s) => !q || s.title.toLowerCase().includes(q))
      .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt) || b.id.localeCompare(a.id));
    ul.replaceChildren(...sorted.map((s) => renderSession(s, details.get(s.id))));
    empty.hidden = sessions.size > 0;
    count.textContent = q ? `${sorted.length} of ${sessions.size} loaded sessions match` : '';
    more.hidden = !cursor;
  };
  /** Keeps per session the summary with the highest lastSeq: summaries can arrive out of order. @param {Session} s */
  const keep = (s) => {
    const prev = sessions.get(s.id);
    if (!prev || prev.lastSeq <= s.lastSeq) {
      sessions.set(s.id, s);
      wantDetail(s);
    }
  };

  // A session's current item and how its last turn ended are not in its
  // summary: the tail of its history (one event and the snapshot) has both.
  /** @type {Session[]} */
  const queue = [];
  let running = 0;
  /** @param {Session} s */
  const wantDetail = (s) => {
    if (details.get(s.id)?.seq === s.lastSeq || s.lastSeq === 0) return;
    if (!queue.some((q) => q.id === s.id)) queue.push(s);
    pump();
  };
  const pump = () => {
    while (running < DETAIL_CONCURRENCY && queue.length > 0) {
      const s = /** @type {Session} */ (queue.shift());
      running++;
      get(`${sessionPath(s.id)}/history?limit=1`)
        .then((page) => {
          const last = page.events[page.events.length - 1];
          const todos = page.snapshot?.standing ? page.snapshot.todos : [];
          details.set(s.id, {
            seq: page.snapshot?.lastSeq ?? s.lastSeq,
            current: todos.length > 0 ? summarize(todos).current : '',
            reason: last?.type === 'turn/end' ? last.data?.reason ?? 'completed' : '',
          });
          renderSoon();
        }, () => {})
        .finally(() => { running--; pump(); });
    }
  };
  let renderTimer = 0;
  const renderSoon = () => {
    if (!renderTimer) renderTimer = window.setTimeout(() => { renderTimer = 0; render(); }, 50);
  };

  /** Reads the first page again; older pages once asked for stay. */
  const load = async () => {
    const page = await get(`/sessions?limit=${PAGE}`);
    page.sessions.forEach(keep);
    if (cursor === undefined || sessions.size <= PAGE) cursor = page.nextCursor;
    render();
  };
  more.addEventListener('click', async () => {
    if (!cursor) return;
    more.disabled = true;
    try {
      const page = await get(`/sessions?limit=${PAGE}&cursor=${encodeURIComponent(cursor)}`);
      page.sessions.forEach(keep);
      cursor = page.nextCursor;
      render();
    } finally {
      more.disabled = false;
    }
  });
  search.addEventListener('input', render);
  root.querySelector('[data-search-form]')?.addEventListener('submit', (e) => e.preventDefault());

  await load();
  /** @type {HTMLElement} */ (document.querySelector('[data-title]')).textContent = 'Sessions';
  root.hidden = false;
  // /live has no backlog: after every (re)connect the list is read again, so
  // nothing that changed before the socket opened is missed.
  new Live({
    path: () => '/live',
    onStatus,
    onOpen: () => load().catch(() => {}),
    onMessage: (msg) => {
      if (msg.type !== 'session') return;
      keep(msg.session);
      render();
    },
  });
  // Relative times and the stale state move with the clock.
  setInterval(render, 30_000);
}

/**
 * working (a turn open), stale (open and silent for STALE_MS), ended,
 * interrupted, error (how the last turn ended), new (no turn yet).
 * @param {Session} s @param {Detail} [d]
 */
export function sessionState(s, d) {
  if (s.turn.open) return Date.now() - Date.parse(s.updatedAt) > STALE_MS ? 'stale' : 'working';
  if (s.turn.number === 0) return 'new';
  if (d?.reason === 'interrupted' || d?.reason === 'error') return d.reason;
  return 'ended';
}

/** @param {Session} s @param {Detail} [d] */
function renderSession(s, d) {
  const li = document.createElement('li');
  li.className = 'session-item';
  li.dataset.sessionId = s.id;
  const head = document.createElement('div');
  head.className = 'session-head';
  const a = document.createElement('a');
  a.href = `/s/${encodeURIComponent(s.id)}`;
  a.className = 'session-title';
  a.textContent = s.title;
  const state = sessionState(s, d);
  const badge = document.createElement('span');
  badge.className = 'badge';
  badge.dataset.state = state;
  badge.dataset.badge = '';
  badge.textContent = state;
  const time = document.createElement('time');
  time.dateTime = s.updatedAt;
  time.title = new Date(s.updatedAt).toLocaleString();
  time.textContent = ago(s.updatedAt);
  head.append(a, badge, time);
  li.append(head);

  const c = s.todoCounts;
  const total = c.pending + c.inProgress + c.completed;
  if (total > 0) {
    const meta = document.createElement('div');
    meta.className = 'session-meta';
    const bar = document.createElement('progress');
    bar.className = 'progress-bar';
    bar.max = total;
    bar.value = c.completed;
    bar.setAttribute('aria-label', `${s.title}: ${c.completed} of ${total} todos done`);
    const progress = document.createElement('span');
    progress.className = 'session-progress';
    progress.dataset.progress = '';
    progress.textContent = `${c.completed}/${total} done`;
    meta.append(bar, progress);
    if (d?.current) {
      const cur = document.createElement('span');
      cur.className = 'session-current';
      cur.dataset.current = '';
      cur.textContent = d.current;
      meta.append(cur);
    }
    li.append(meta);
  }
  return li;
}
