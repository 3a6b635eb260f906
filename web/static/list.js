// The session list: newest activity first, kept current by GET /live.

import { get } from './api.js';
import { Live } from './live.js';

/** @typedef {import('./api.js').Session} Session */

/**
 * @param {HTMLElement} root the element with data-view="list"
 * @param {(connected: boolean) => void} onStatus
 */
export async function showList(root, onStatus) {
  const ul = /** @type {HTMLElement} */ (root.querySelector('[data-sessions]'));
  const empty = /** @type {HTMLElement} */ (root.querySelector('[data-empty]'));
  /** @type {Map<string, Session>} */
  const sessions = new Map();

  const render = () => {
    const sorted = [...sessions.values()].sort((a, b) => b.updatedAt.localeCompare(a.updatedAt) || b.id.localeCompare(a.id));
    ul.replaceChildren(...sorted.map(renderSession));
    empty.hidden = sessions.size > 0;
  };
  /** Keeps per session the summary with the highest lastSeq: summaries can arrive out of order. @param {Session} s */
  const keep = (s) => {
    const prev = sessions.get(s.id);
    if (!prev || prev.lastSeq <= s.lastSeq) sessions.set(s.id, s);
  };
  const load = async () => {
    const page = await get('/sessions?limit=100');
    page.sessions.forEach(keep);
    render();
  };

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
  setInterval(() => ul.querySelectorAll('time').forEach(updateAgo), 30_000);
}

/** @param {Session} s */
function renderSession(s) {
  const li = document.createElement('li');
  li.className = 'session-item';
  li.dataset.sessionId = s.id;
  const a = document.createElement('a');
  a.href = `/s/${encodeURIComponent(s.id)}`;
  a.className = 'session-title';
  a.textContent = s.title;
  const meta = document.createElement('span');
  meta.className = 'session-meta';
  const c = s.todoCounts;
  const total = c.pending + c.inProgress + c.completed;
  if (total > 0) {
    const progress = document.createElement('span');
    progress.className = 'session-progress';
    progress.dataset.progress = '';
    progress.textContent = `${c.completed}/${total}`;
    progress.title = `${c.completed} of ${total} todos done`;
    meta.append(progress);
  }
  if (s.turn.open) {
    const live = document.createElement('span');
    live.className = 'session-live';
    live.textContent = 'working';
    meta.append(live);
  }
  const time = document.createElement('time');
  time.dateTime = s.updatedAt;
  updateAgo(time);
  meta.append(time);
  li.append(a, meta);
  return li;
}

/** @param {HTMLTimeElement} t */
function updateAgo(t) {
  const secs = Math.max(0, (Date.now() - Date.parse(t.dateTime)) / 1000);
  t.title = new Date(t.dateTime).toLocaleString();
  if (secs < 60) t.textContent = 'just now';
  else if (secs < 3600) t.textContent = `${Math.floor(secs / 60)} min ago`;
  else if (secs < 86400) t.textContent = `${Math.floor(secs / 3600)} h ago`;
  else t.textContent = new Date(t.dateTime).toLocaleDateString();
}
