// The session list: grouped by state (Needs you, Working, Idle, Ended),
// newest activity first in each group, kept current by GET /live, with each
// session's agent, project, current item, progress and state, all from its
// summary; searched by title on the server, a page of 100 at a time, and
// narrowed by agent, project and owner; the filters live in the URL.

import { FILTER_KEYS, FilterSelects, filtersOf, passes, queryOf } from './filters.js';
import { SessionPages } from './listpages.js';
import { Live } from './live.js';
import { Kept, place } from './kept.js';
import { GROUPS, learnViewer, rowKey, sessionRow } from './sessionrow.js';
import { currentState } from './state.js';

/**
 * A session's summary as the list reads it: the item in progress and how
 * the last turn ended come with it.
 * @typedef {import('./api.js').Session & {currentItem: string|null,
 *   turn: {number: number, open: boolean, endReason: 'completed'|'interrupted'|'error'|null},
 *   owner?: string|{name?: string}|null}} Summary
 */

/** What app.js can ask of the list once shown. @typedef {{refresh: () => void}} ListView */

/** How long typing must pause before the search is sent. */
const DEBOUNCE_MS = 250;

/**
 * @param {HTMLElement} root the element with data-view="list"
 * @param {(state: import('./live.js').LiveState) => void} onStatus told each change of its socket's state
 * @param {(s: Summary) => void} [onSummary] called with every summary read or heard
 * @param {(shown: Summary[]) => void} [onShown] told the sessions the list shows (filtered, newest first) each time it renders
 * @returns {Promise<ListView>}
 */
export async function showList(root, onStatus, onSummary = () => {}, onShown = () => {}) {
  /** What the list is narrowed to; q is the title search shown ('' for none). */
  let filters = filtersOf();
  const pages = new SessionPages(onSummary);
  // The first page is asked for at once, beside who the viewer is, not
  // after: a round trip less (two for an admin) before the first rows.
  const first = pages.load(true, filters.q);
  first.catch(() => {}); // awaited below, once the viewer is known
  await learnViewer();
  const groups = /** @type {HTMLElement} */ (root.querySelector('[data-session-groups]'));
  const empty = /** @type {HTMLElement} */ (root.querySelector('[data-empty]'));
  const search = /** @type {HTMLInputElement} */ (root.querySelector('[data-search]'));
  const count = /** @type {HTMLElement} */ (root.querySelector('[data-search-count]'));
  const more = /** @type {HTMLButtonElement} */ (root.querySelector('[data-more]'));
  const selects = new FilterSelects(root);

  search.value = filters.q;
  const board = new Groups(groups);

  const render = () => {
    const { sessions, cursor } = pages;
    const narrowed = FILTER_KEYS.some((k) => filters[k]);
    const shown = new Map([...sessions].filter(([, s]) => passes(s, filters)));
    const sorted = [...shown.values()]
      .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt) || b.id.localeCompare(a.id));
    // Focus on a row's link stays on it across the re-render.
    const focused = /** @type {HTMLElement|null} */ (document.activeElement?.closest('[data-session-id]') ?? null);
    const focusId = focused && groups.contains(focused) && document.activeElement?.matches('a') ? focused.dataset.sessionId : null;
    board.show(sorted, shown, queryOf(filters));
    if (focusId) /** @type {HTMLElement|null} */ (groups.querySelector(`[data-session-id="${CSS.escape(focusId)}"] a`))?.focus();
    selects.fill(sessions.values(), filters);
    onShown(sorted);
    empty.hidden = filters.q !== '' || narrowed || sessions.size > 0;
    count.textContent = filters.q || narrowed ? matches(sorted.length, Boolean(cursor)) : '';
    more.hidden = !cursor;
  };
  /** @param {boolean} fresh */
  const load = async (fresh) => {
    if (await pages.load(fresh, filters.q)) render();
  };

  more.addEventListener('click', async () => {
    if (!pages.cursor) return;
    more.disabled = true;
    try {
      if (await pages.more(filters.q)) render();
    } finally {
      more.disabled = false;
    }
  });

  /** A new title search: asked of the server. */
  const research = () => {
    groups.setAttribute('aria-busy', 'true');
    load(true).catch(() => {}).finally(() => groups.removeAttribute('aria-busy'));
  };
  /** The URL follows the filters; a new entry for a choice, the same one while typing. @param {boolean} push */
  const toURL = (push) => {
    const url = location.pathname + queryOf(filters);
    if (url === location.pathname + location.search) return;
    if (push) history.pushState(null, '', url);
    else history.replaceState(null, '', url);
  };

  let debounce = 0;
  const searchNow = () => {
    window.clearTimeout(debounce);
    const next = search.value.trim();
    if (next === filters.q) return;
    filters = { ...filters, q: next };
    toURL(false);
    research();
  };
  search.addEventListener('input', () => {
    window.clearTimeout(debounce);
    debounce = window.setTimeout(searchNow, DEBOUNCE_MS);
  });
  root.querySelector('[data-search-form]')?.addEventListener('submit', (e) => {
    e.preventDefault();
    searchNow();
  });
  for (const k of FILTER_KEYS) {
    const sel = selects.selects[k];
    sel.addEventListener('change', () => {
      filters = { ...filters, [k]: sel.value };
      toURL(true);
      render();
    });
  }

  if (await first) render();
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
      if (filters.q && !s.title.toLowerCase().includes(filters.q.toLowerCase())) return;
      pages.keep(s);
      render();
    },
  });
  // Relative times and the idle state move with the clock.
  setInterval(render, 30_000);
  return {
    // The URL changed (back, forward, a row opened on the board): its
    // filters are read again, and the row shown marked.
    refresh: () => {
      const next = filtersOf();
      const searched = next.q !== filters.q;
      filters = next;
      if (search.value.trim() !== next.q) search.value = next.q;
      if (searched) research();
      else render();
    },
  };
}

/**
 * The list's sections, one per state that has sessions, in GROUPS' order. A
 * child (a subagent) shows under its parent when the parent is in the list,
 * else at the top level.
 *
 * A render keeps the elements of what did not change: a row whose session
 * (and subagents) reads as it did when it was made stays the same element,
 * in its place unless the order moved it, and so does each section. A live
 * summary so costs the browser one row's style and layout, not the list's:
 * remaking a hundred rows on every summary kept a board following a busy
 * fleet at tens of milliseconds of main thread a message.
 */
class Groups {
  /** @param {HTMLElement} root the element the sections go in */
  constructor(root) {
    this.root = root;
    this.rows = new Kept();
    /** @type {Map<string, {section: HTMLElement, head: HTMLElement, ul: HTMLElement}>} by state */
    this.sections = new Map();
  }

  /**
   * @param {Summary[]} sorted the sessions shown, newest first
   * @param {Map<string, Summary>} shown the same by id
   * @param {string} link the query each row's link keeps (the list's filters)
   */
  show(sorted, shown, link) {
    /** @type {Map<string, Summary[]>} */
    const kids = new Map();
    for (const s of sorted) {
      if (s.parentId && shown.has(s.parentId)) kids.set(s.parentId, [...(kids.get(s.parentId) ?? []), s]);
    }
    const top = sorted.filter((s) => !(s.parentId && shown.has(s.parentId)));
    /** @param {Summary} s */
    const row = (s) => this.rows.get(s.id, rowKey(s, kids, link), () => sessionRow(s, kids, link));
    const sections = GROUPS.flatMap(([state, label]) => {
      const mine = top.filter((s) => currentState(s).state === state);
      if (mine.length === 0) return [];
      const g = this.sections.get(state) ?? this.section(state);
      const text = `${label} · ${mine.length}`;
      if (g.head.textContent !== text) g.head.textContent = text;
      place(g.ul, mine.map(row));
      return [g.section];
    });
    place(this.root, sections);
    this.rows.done();
  }

  /** A state's section, made once. @param {string} state */
  section(state) {
    const section = document.createElement('section');
    section.className = 'group';
    section.dataset.group = state;
    section.setAttribute('aria-labelledby', `group-${state}`);
    const head = document.createElement('h2');
    head.className = 'group-head';
    head.id = `group-${state}`;
    const ul = document.createElement('ul');
    ul.className = 'session-list';
    ul.dataset.sessions = '';
    section.append(head, ul);
    const g = { section, head, ul };
    this.sections.set(state, g);
    return g;
  }
}

/** The search's count: how many matched, and whether older sessions remain. @param {number} n @param {boolean} partial */
function matches(n, partial) {
  const text = n === 0 ? 'No session matches' : n === 1 ? '1 session matches' : `${n} sessions match`;
  return partial ? `${text} so far; older sessions are not searched yet` : text;
}
