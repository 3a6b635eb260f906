// The session list: newest activity first, kept current by GET /live, with
// each session's current item, progress and state, all from its summary;
// searched by title on the server, a page of 100 at a time.

import { get } from './api.js';
import { Live } from './live.js';
import { currentState, stateText } from './state.js';
import { ago, timeEl } from './time.js';

/**
 * A session's summary as the list reads it: the item in progress and how
 * the last turn ended come with it.
 * @typedef {import('./api.js').Session & {currentItem: string|null,
 *   turn: {number: number, open: boolean, endReason: 'completed'|'interrupted'|'error'|null}}} Summary
 */

const PAGE = 100;
/** How long typing must pause before the search is sent. */
const DEBOUNCE_MS = 250;
/**
 * A search request examines a bounded stretch of the list (at most 2000
 * sessions) and may answer a short page with a cursor to go on; the list
 * follows such cursors until it has a page to show, up to this many
 * requests per page asked for, then offers "Load older sessions".
 */
const MAX_SEARCH_STEPS = 5;

/**
 * @param {HTMLElement} root the element with data-view="list"
 * @param {(connected: boolean) => void} onStatus
 * @param {(s: Summary) => void} [onSummary] called with every summary read or heard
 */
export async function showList(root, onStatus, onSummary = () => {}) {
  const ul = /** @type {HTMLElement} */ (root.querySelector('[data-sessions]'));
  const empty = /** @type {HTMLElement} */ (root.querySelector('[data-empty]'));
  const search = /** @type {HTMLInputElement} */ (root.querySelector('[data-search]'));
  const count = /** @type {HTMLElement} */ (root.querySelector('[data-search-count]'));
  const more = /** @type {HTMLButtonElement} */ (root.querySelector('[data-more]'));

  /** The title search shown ('' for none). */
  let q = '';
  /** @type {Map<string, Summary>} the sessions of the view: all, or q's matches */
  let sessions = new Map();
  /** @type {string|undefined} where the view's next page starts */
  let cursor;
  /** Moves on with every new view, so that answers for an older one are dropped. */
  let generation = 0;

  const render = () => {
    const sorted = [...sessions.values()]
      .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt) || b.id.localeCompare(a.id));
    // A child (a subagent) shows under its parent when the parent is in the
    // list, else at the top level.
    /** @type {Map<string, Summary[]>} */
    const kids = new Map();
    for (const s of sorted) {
      if (s.parentId && sessions.has(s.parentId)) kids.set(s.parentId, [...(kids.get(s.parentId) ?? []), s]);
    }
    ul.replaceChildren(...sorted.filter((s) => !(s.parentId && sessions.has(s.parentId))).map((s) => sessionRow(s, kids)));
    empty.hidden = q !== '' || sessions.size > 0;
    count.textContent = q ? matches(sorted.length, Boolean(cursor)) : '';
    more.hidden = !cursor;
  };
  /** Keeps per session the summary with the highest lastSeq: summaries can arrive out of order. @param {Summary} s */
  const keep = (s) => {
    onSummary(s);
    const prev = sessions.get(s.id);
    if (!prev || prev.lastSeq <= s.lastSeq) sessions.set(s.id, s);
  };

  /**
   * Reads pages of the view from `from` until it has PAGE more sessions,
   * the list ends, or a search has taken MAX_SEARCH_STEPS requests.
   * @param {string|undefined} from @returns {Promise<{found: Summary[], next: string|undefined}>}
   */
  const readPages = async (from) => {
    /** @type {Summary[]} */
    const found = [];
    let next = from;
    for (let step = 0; step < (q ? MAX_SEARCH_STEPS : 1); step++) {
      const params = new URLSearchParams({ limit: String(PAGE - found.length) });
      if (q) params.set('q', q);
      if (next) params.set('cursor', next);
      const page = await get(`/sessions?${params}`);
      found.push(...page.sessions);
      next = page.nextCursor;
      if (!next || found.length >= PAGE) break;
    }
    return { found, next };
  };

  /**
   * Reads the view's first page again. Older pages once asked for stay, and
   * so does their cursor; a new view (fresh) starts over.
   * @param {boolean} fresh
   */
  const load = async (fresh) => {
    const gen = fresh ? ++generation : generation;
    const { found, next } = await readPages(undefined);
    if (gen !== generation) return;
    if (fresh) {
      sessions = new Map();
      cursor = undefined;
    }
    const firstOnly = cursor === undefined || sessions.size <= PAGE;
    found.forEach(keep);
    if (firstOnly) cursor = next;
    render();
  };

  more.addEventListener('click', async () => {
    if (!cursor) return;
    const gen = generation;
    more.disabled = true;
    try {
      const { found, next } = await readPages(cursor);
      if (gen !== generation) return;
      found.forEach(keep);
      cursor = next;
      render();
    } finally {
      more.disabled = false;
    }
  });

  let debounce = 0;
  const searchNow = () => {
    window.clearTimeout(debounce);
    const next = search.value.trim();
    if (next === q) return;
    q = next;
    ul.setAttribute('aria-busy', 'true');
    load(true).catch(() => {}).finally(() => ul.removeAttribute('aria-busy'));
  };
  search.addEventListener('input', () => {
    window.clearTimeout(debounce);
    debounce = window.setTimeout(searchNow, DEBOUNCE_MS);
  });
  root.querySelector('[data-search-form]')?.addEventListener('submit', (e) => {
    e.preventDefault();
    searchNow();
  });

  await load(true);
  /** @type {HTMLElement} */ (document.querySelector('[data-title]')).textContent = 'Sessions';
  root.hidden = false;
  // /live has no backlog: after every (re)connect the list is read again, so
  // nothing that changed before the socket opened is missed.
  new Live({
    path: () => '/live',
    onStatus,
    onOpen: () => load(false).catch(() => {}),
    onMessage: (msg) => {
      if (msg.type !== 'session') return;
      const s = /** @type {Summary} */ (msg.session);
      onSummary(s);
      // While searching, a session shows when its title holds q (what the
      // server's search keeps: a substring, both sides lowercased).
      if (q && !s.title.toLowerCase().includes(q.toLowerCase())) return;
      keep(s);
      render();
    },
  });
  // Relative times and the idle state move with the clock.
  setInterval(render, 30_000);
}

/** The search's count: how many matched, and whether older sessions remain. @param {number} n @param {boolean} partial */
function matches(n, partial) {
  const text = n === 0 ? 'No session matches' : n === 1 ? '1 session matches' : `${n} sessions match`;
  return partial ? `${text} so far; older sessions are not searched yet` : text;
}

/**
 * One session's row: its title (a link), state, last activity and plan
 * progress, and under it the rows of its children, when kids has them.
 * @param {Summary} s
 * @param {Map<string, Summary[]>} [kids]
 */
export function sessionRow(s, kids) {
  const li = document.createElement('li');
  li.className = 'session-item';
  li.dataset.sessionId = s.id;
  const head = document.createElement('div');
  head.className = 'session-head';
  const a = document.createElement('a');
  a.href = `/s/${encodeURIComponent(s.id)}`;
  a.className = 'session-title';
  a.textContent = s.title;
  const st = currentState(s);
  const badge = document.createElement('span');
  badge.className = 'badge';
  badge.dataset.state = st.state;
  badge.dataset.badge = '';
  // "Working · 2 min", "Idle since 14:02", and how the last turn ended
  // when it did not complete.
  const how = s.turn.endReason === 'interrupted' || s.turn.endReason === 'error' ? s.turn.endReason : '';
  if (how && st.state === 'idle') badge.dataset.turnEnd = how;
  badge.textContent = stateText(st) + (badge.dataset.turnEnd ? ` · ${how}` : '');
  head.append(a, badge, timeEl(s.updatedAt, ago(s.updatedAt)));
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
    if (s.currentItem) {
      const cur = document.createElement('span');
      cur.className = 'session-current';
      cur.dataset.current = '';
      cur.textContent = s.currentItem;
      meta.append(cur);
    }
    li.append(meta);
  }
  const children = kids?.get(s.id) ?? [];
  if (children.length > 0) {
    const ul = document.createElement('ul');
    ul.className = 'session-children';
    ul.setAttribute('aria-label', `Subagents of ${s.title}`);
    ul.append(...children.map((c) => sessionRow(c, kids)));
    li.append(ul);
  }
  return li;
}
