// The session list: grouped by state (Needs you, Working, Idle, Ended),
// newest activity first in each group, kept current by GET /live, with each
// session's agent, project, current item, progress and state, all from its
// summary; searched by title on the server, a page of 100 at a time, and
// narrowed by agent, project and owner; the filters live in the URL.

import { get, me } from './api.js';
import { Live } from './live.js';
import { currentState, goalText, needsText, stateText } from './state.js';
import { ago, timeEl } from './time.js';

/**
 * A session's summary as the list reads it: the item in progress and how
 * the last turn ended come with it.
 * @typedef {import('./api.js').Session & {currentItem: string|null,
 *   turn: {number: number, open: boolean, endReason: 'completed'|'interrupted'|'error'|null},
 *   owner?: string|{name?: string}|null}} Summary
 */

/**
 * What the list is narrowed to: the URL's ?agent=&project=&owner=&q=.
 * @typedef {{agent: string, project: string, owner: string, q: string}} Filters
 */

/** What app.js can ask of the list once shown. @typedef {{refresh: () => void}} ListView */

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

/** The groups, in the order shown: whoever waits on a person first. */
const GROUPS = /** @type {const} */ ([
  ['needs_you', 'Needs you'], ['working', 'Working'], ['idle', 'Idle'], ['ended', 'Ended'],
]);
const FILTER_KEYS = /** @type {const} */ (['agent', 'project', 'owner']);

/** The last element of a path: a session's project. @param {string|null|undefined} cwd */
export const project = (cwd) => (cwd ? cwd.replace(/[\\/]+$/, '').split(/[\\/]/).pop() || cwd : '');

/**
 * Who the list is seen by (the principal's id), and the names of the
 * principals an admin sees the sessions of, by id.
 */
const viewer = { id: '', names: new Map() };

/**
 * The owner's name when the session is another's (an admin's view); ''
 * for one's own, whose owner the row need not say.
 * @param {Summary} s
 */
export const ownerOf = (s) => {
  const o = typeof s.owner === 'string' ? s.owner : s.owner?.name ?? '';
  return !o || o === viewer.id ? '' : viewer.names.get(o) ?? o;
};

/** The filters in the URL's query. @returns {Filters} */
export function filtersOf(search = location.search) {
  const p = new URLSearchParams(search);
  return { agent: p.get('agent') ?? '', project: p.get('project') ?? '', owner: p.get('owner') ?? '', q: (p.get('q') ?? '').trim() };
}

/** The query of filters, '' for none, in one order. @param {Filters} f */
export function queryOf(f) {
  const p = new URLSearchParams();
  for (const k of [...FILTER_KEYS, 'q']) if (f[/** @type {keyof Filters} */ (k)]) p.set(k, f[/** @type {keyof Filters} */ (k)]);
  const q = p.toString();
  return q ? `?${q}` : '';
}

/** Whether a session passes the agent, project and owner filters. @param {Summary} s @param {Filters} f */
const passes = (s, f) => (!f.agent || (s.agent ?? '') === f.agent)
  && (!f.project || project(s.cwd) === f.project)
  && (!f.owner || ownerOf(s) === f.owner);

/**
 * @param {HTMLElement} root the element with data-view="list"
 * @param {(state: import('./live.js').LiveState) => void} onStatus told each change of its socket's state
 * @param {(s: Summary) => void} [onSummary] called with every summary read or heard
 * @param {(shown: Summary[]) => void} [onShown] told the sessions the list shows (filtered, newest first) each time it renders
 * @returns {Promise<ListView>}
 */
export async function showList(root, onStatus, onSummary = () => {}, onShown = () => {}) {
  const who = await me();
  viewer.id = who?.principal.id ?? '';
  if (who?.principal.admin) {
    const { principals } = await get('/principals').catch(() => ({ principals: [] }));
    for (const p of principals) viewer.names.set(p.id, p.name);
  }
  const groups = /** @type {HTMLElement} */ (root.querySelector('[data-session-groups]'));
  const empty = /** @type {HTMLElement} */ (root.querySelector('[data-empty]'));
  const search = /** @type {HTMLInputElement} */ (root.querySelector('[data-search]'));
  const count = /** @type {HTMLElement} */ (root.querySelector('[data-search-count]'));
  const more = /** @type {HTMLButtonElement} */ (root.querySelector('[data-more]'));
  /** @type {Record<'agent'|'project'|'owner', HTMLSelectElement>} */
  const selects = {
    agent: /** @type {HTMLSelectElement} */ (root.querySelector('[data-filter="agent"]')),
    project: /** @type {HTMLSelectElement} */ (root.querySelector('[data-filter="project"]')),
    owner: /** @type {HTMLSelectElement} */ (root.querySelector('[data-filter="owner"]')),
  };
  const ownerLabel = /** @type {HTMLElement} */ (root.querySelector('[data-filter-owner-label]'));

  /** What the list is narrowed to; q is the title search shown ('' for none). */
  let filters = filtersOf();
  search.value = filters.q;
  /** @type {Map<string, Summary>} the sessions of the view: all, or q's matches */
  let sessions = new Map();
  /** @type {string|undefined} where the view's next page starts */
  let cursor;
  /** Moves on with every new view, so that answers for an older one are dropped. */
  let generation = 0;

  /** Each select offers the values the sessions have, and the one chosen. */
  const fillSelects = () => {
    /** @type {Record<'agent'|'project'|'owner', Map<string, string>>} value → title */
    const seen = { agent: new Map(), project: new Map(), owner: new Map() };
    for (const s of sessions.values()) {
      if (s.agent) seen.agent.set(s.agent, '');
      if (s.cwd) seen.project.set(project(s.cwd), s.cwd);
      if (ownerOf(s)) seen.owner.set(ownerOf(s), '');
    }
    for (const k of FILTER_KEYS) {
      const sel = selects[k];
      if (filters[k]) seen[k].set(filters[k], seen[k].get(filters[k]) ?? '');
      const values = [...seen[k].keys()].sort((a, b) => a.localeCompare(b));
      const first = /** @type {HTMLOptionElement} */ (sel.options[0]);
      const options = values.map((v) => {
        const o = new Option(v, v);
        const title = seen[k].get(v);
        if (title) o.title = title;
        return o;
      });
      if (sel.options.length - 1 !== values.length || values.some((v, i) => sel.options[i + 1].value !== v)) sel.replaceChildren(first, ...options);
      sel.value = filters[k];
    }
    // The owner comes only with an admin's view of others' sessions.
    selects.owner.hidden = seen.owner.size === 0;
    ownerLabel.hidden = selects.owner.hidden;
  };

  const render = () => {
    const narrowed = FILTER_KEYS.some((k) => filters[k]);
    const shown = new Map([...sessions].filter(([, s]) => passes(s, filters)));
    const sorted = [...shown.values()]
      .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt) || b.id.localeCompare(a.id));
    // A child (a subagent) shows under its parent when the parent is in the
    // list, else at the top level.
    /** @type {Map<string, Summary[]>} */
    const kids = new Map();
    for (const s of sorted) {
      if (s.parentId && shown.has(s.parentId)) kids.set(s.parentId, [...(kids.get(s.parentId) ?? []), s]);
    }
    const top = sorted.filter((s) => !(s.parentId && shown.has(s.parentId)));
    // Focus on a row's link stays on it across the re-render.
    const focused = /** @type {HTMLElement|null} */ (document.activeElement?.closest('[data-session-id]') ?? null);
    const focusId = focused && groups.contains(focused) && document.activeElement?.matches('a') ? focused.dataset.sessionId : null;
    const link = queryOf(filters);
    groups.replaceChildren(...GROUPS.flatMap(([state, label]) => {
      const rows = top.filter((s) => currentState(s).state === state);
      if (rows.length === 0) return [];
      const section = document.createElement('section');
      section.className = 'group';
      section.dataset.group = state;
      section.setAttribute('aria-labelledby', `group-${state}`);
      const h = document.createElement('h2');
      h.className = 'group-head';
      h.id = `group-${state}`;
      h.textContent = `${label} · ${rows.length}`;
      const ul = document.createElement('ul');
      ul.className = 'session-list';
      ul.dataset.sessions = '';
      ul.append(...rows.map((s) => sessionRow(s, kids, link)));
      section.append(h, ul);
      return [section];
    }));
    if (focusId) /** @type {HTMLElement|null} */ (groups.querySelector(`[data-session-id="${CSS.escape(focusId)}"] a`))?.focus();
    fillSelects();
    onShown(sorted);
    empty.hidden = filters.q !== '' || narrowed || sessions.size > 0;
    count.textContent = filters.q || narrowed ? matches(sorted.length, Boolean(cursor)) : '';
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
    const q = filters.q;
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
    selects[k].addEventListener('change', () => {
      filters = { ...filters, [k]: selects[k].value };
      toURL(true);
      render();
    });
  }

  await load(true);
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
      keep(s);
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

/** The search's count: how many matched, and whether older sessions remain. @param {number} n @param {boolean} partial */
function matches(n, partial) {
  const text = n === 0 ? 'No session matches' : n === 1 ? '1 session matches' : `${n} sessions match`;
  return partial ? `${text} so far; older sessions are not searched yet` : text;
}

/**
 * What a session waiting on its person waits for, in a line ("Allow Bash:
 * rm -rf build", its question); '' when it is not waiting or the server
 * says nothing more than the state.
 * @param {Summary} s
 */
export function needOf(s) {
  return s.needsYou && currentState(s).state === 'needs_you' ? needsText(s.needsYou) : '';
}

/** The words for a count of children by state ("2 working, 1 ended"). */
const KID_WORDS = { needs_you: 'needing you', working: 'working', idle: 'idle', ended: 'ended' };

/**
 * A parent's children by state at a glance: a dot and a count per state
 * ("● 2 ◦ 1 ✓ 3"), said in words to screen readers.
 * @param {Summary[]} children
 */
function kidStates(children) {
  const span = document.createElement('span');
  span.className = 'session-kids';
  span.dataset.kids = '';
  span.setAttribute('role', 'img');
  const words = [];
  for (const [state] of GROUPS) {
    const n = children.filter((c) => currentState(c).state === state).length;
    if (n === 0) continue;
    const dot = document.createElement('span');
    dot.className = 'kid-state';
    dot.dataset.state = state;
    dot.textContent = String(n);
    span.append(dot);
    words.push(`${n} ${KID_WORDS[state]}`);
  }
  const label = `${children.length === 1 ? '1 subagent' : `${children.length} subagents`}: ${words.join(', ')}`;
  span.setAttribute('aria-label', label);
  span.title = label;
  return span;
}

/**
 * One session's row: its title (a link) and its children's states, the
 * state and time in it, last activity; its agent and owner, project, plan's
 * progress, and what it is doing: the item in progress, or what it waits on
 * its person for; and under it the rows of its children, when kids has them.
 * Its parts are in cells (`.session-name`, `.session-who`, `.session-plan`,
 * `.session-doing`) that a wide row lays out as aligned columns on one
 * line, and a narrow one on two.
 * @param {Summary} s
 * @param {Map<string, Summary[]>} [kids]
 * @param {string} [query] kept on the link (the list's filters)
 */
export function sessionRow(s, kids, query = '') {
  const li = document.createElement('li');
  li.className = 'session-item';
  li.dataset.sessionId = s.id;
  const children = kids?.get(s.id) ?? [];
  const head = document.createElement('div');
  head.className = 'session-head';
  const name = document.createElement('span');
  name.className = 'session-name';
  const a = document.createElement('a');
  const path = `/s/${encodeURIComponent(s.id)}`;
  a.href = path + query;
  a.className = 'session-title';
  a.textContent = s.title;
  a.title = s.title;
  if (location.pathname === path) a.setAttribute('aria-current', 'page');
  name.append(a);
  if (children.length > 0) name.append(kidStates(children));
  const st = currentState(s);
  li.dataset.state = st.state;
  const badge = document.createElement('span');
  badge.className = 'badge';
  badge.dataset.state = st.state;
  badge.dataset.badge = '';
  // "Working · 2 min", "Idle since 14:02", and how the last turn ended
  // when it did not complete.
  const how = s.turn.endReason === 'interrupted' || s.turn.endReason === 'error' ? s.turn.endReason : '';
  if (how && st.state === 'idle') badge.dataset.turnEnd = how;
  badge.textContent = stateText(st) + (badge.dataset.turnEnd ? ` · ${how}` : '');
  badge.title = badge.textContent;
  head.append(name, badge, timeEl(s.updatedAt, ago(s.updatedAt)));
  li.append(head);

  const meta = document.createElement('div');
  meta.className = 'session-meta';
  /** @param {string} cls @param {Node[]} parts */
  const cell = (cls, parts) => {
    const c = document.createElement('span');
    c.className = cls;
    c.append(...parts);
    meta.append(c);
  };
  /** A labelled span, its full text on hover. @param {string} k @param {string} text @param {string} [title] */
  const part = (k, text, title = text) => {
    const span = document.createElement('span');
    span.className = `session-${k}`;
    span.dataset[k] = '';
    span.textContent = text;
    span.title = title;
    return span;
  };
  // Who and where: the agent and the owner, the project (its full path on hover).
  const owner = ownerOf(s);
  cell('session-who', [...(s.agent ? [part('agent', s.agent)] : []), ...(owner ? [part('owner', owner)] : [])]);
  cell('session-where', s.cwd ? [part('project', project(s.cwd), s.cwd)] : []);
  const c = s.todoCounts;
  const total = c.pending + c.inProgress + c.completed;
  /** @type {Node[]} */
  const plan = [];
  if (s.goal) plan.push(part('goal', goalText(s.goal)));
  if (total > 0) {
    const bar = document.createElement('progress');
    bar.className = 'progress-bar';
    bar.max = total;
    bar.value = c.completed;
    bar.setAttribute('aria-label', `${s.title}: ${c.completed} of ${total} todos done`);
    plan.push(bar, part('progress', `${c.completed}/${total} done`));
  }
  cell('session-plan', plan);
  // What it is doing: what it waits on its person for, else the item in progress.
  /** @type {Node[]} */
  const doing = [];
  const need = needOf(s);
  if (need && s.needsYou) {
    const needs = document.createElement('span');
    needs.className = 'session-needs';
    needs.dataset.needsYou = s.needsYou.kind;
    needs.textContent = needs.title = need;
    doing.push(needs);
  } else if (total > 0 && s.currentItem) doing.push(part('current', s.currentItem));
  cell('session-doing', doing);
  if ([...meta.children].some((el) => el.childElementCount > 0)) li.append(meta);
  if (children.length > 0) {
    const ul = document.createElement('ul');
    ul.className = 'session-children';
    ul.setAttribute('aria-label', `Subagents of ${s.title}`);
    ul.append(...children.map((c) => sessionRow(c, kids, query)));
    li.append(ul);
  }
  return li;
}
