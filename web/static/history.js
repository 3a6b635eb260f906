// The plan's history: every version of the list, newest first, who wrote
// it and what changed, and how long each item spent queued, in progress and
// done. Read from GET /sessions/{id}/todos/history a page at a time.

import { get, sessionPath } from './api.js';
import { duration, timeEl } from './time.js';
import { STATUS_LABEL, el } from './todos.js';

/** @typedef {import('./api.js').Todo} Todo */
/** @typedef {import('./api.js').Version} Version */
/** @typedef {import('./api.js').Change} Change */

const PAGE = 20;
/** Counting the versions reads them this many at a time, and gives up after COUNT_PAGES pages. */
const COUNT_PAGE = 100;
const COUNT_PAGES = 50;

/**
 * Who wrote a version, as the reader says it.
 * @param {string} by "agent" or a principal's name
 * @param {string|null} me the signed-in principal's name
 */
export const author = (by, me) => (by === 'agent' ? 'Agent' : by === me ? 'You' : by);

/** @param {Change} c */
function changeText(c) {
  if (c.from === null) return `Added “${c.content}”${c.to && c.to !== 'pending' ? `, ${STATUS_LABEL[c.to]}` : ''}`;
  if (c.to === null) return `Removed “${c.content}”`;
  return `“${c.content}”: ${STATUS_LABEL[c.from]} → ${STATUS_LABEL[c.to]}`;
}

/**
 * How long an item spent in each state up to `end` (when the version it is
 * shown with was replaced, or now for the newest): queued from its creation
 * to its start, in progress from its start to its completion, done since.
 * @param {Todo} t
 * @param {number} end
 * @returns {[string, string, string]}
 */
export function phases(t, end) {
  const at = (/** @type {string|null|undefined} */ s) => (s ? Date.parse(s) : null);
  const created = at(t.createdAt);
  const started = at(t.startedAt);
  const completed = at(t.completedAt);
  const span = (/** @type {number|null} */ a, /** @type {number|null} */ b) => (a === null || b === null ? '—' : duration(b - a));
  const queued = span(created, started ?? completed ?? (t.status === 'pending' ? end : null));
  const running = span(started, completed ?? (t.status === 'in_progress' ? end : null));
  const done = span(completed, completed === null ? null : end);
  return [queued, running, done];
}

export class History {
  /**
   * @param {HTMLDialogElement} dialog
   * @param {string} id the session
   * @param {string|null} me the signed-in principal's name
   */
  constructor(dialog, id, me) {
    this.dialog = dialog;
    this.id = id;
    this.me = me;
    this.list = /** @type {HTMLElement} */ (dialog.querySelector('[data-history-versions]'));
    this.more = /** @type {HTMLButtonElement} */ (dialog.querySelector('[data-history-more]'));
    this.status = /** @type {HTMLElement} */ (dialog.querySelector('[data-history-status]'));
    /** @type {number|null} the oldest version shown */
    this.before = null;
    /** When the newest version shown so far was replaced (its successor's time). */
    this.newerAt = 0;
    /** @type {number|undefined} the newest version of the last page read, where focus goes after "Load older" */
    this.firstOfPage = undefined;
    /**
     * How many versions there are up to the newest shown, once known: the
     * API numbers versions by the log's seq, the dialog 1…n, oldest first.
     * @type {number|null}
     */
    this.total = null;
    /** Moves on with every opening, so a count for an earlier one is dropped. */
    this.opening = 0;
    /** @type {HTMLElement} */ (dialog.querySelector('[data-history-close]')).addEventListener('click', () => dialog.close());
    this.more.addEventListener('click', () => this.page().then(() => {
      /** @type {HTMLElement|null} */ (this.list.querySelector(`[data-version="${this.firstOfPage}"] summary`))?.focus();
    }));
  }

  /** Opens the dialog on the newest versions. */
  async open() {
    this.list.replaceChildren();
    this.before = null;
    this.total = null;
    this.opening++;
    this.newerAt = Date.now();
    this.status.textContent = 'Loading the plan’s history…';
    this.more.hidden = true;
    this.dialog.showModal();
    await this.page();
  }

  async page() {
    /** @type {import('./api.js').VersionPage} */
    let page;
    try {
      page = await get(`${sessionPath(this.id)}/todos/history?limit=${PAGE}${this.before ? `&before=${this.before}` : ''}`);
    } catch (err) {
      this.status.textContent = `The history could not be read: ${err instanceof Error ? err.message : err}`;
      return;
    }
    const first = this.before === null;
    for (const [i, v] of page.versions.entries()) {
      this.list.append(this.version(v, first && i === 0));
      this.newerAt = Date.parse(v.at);
    }
    this.firstOfPage = page.versions[0]?.version;
    if (page.versions.length > 0) this.before = page.versions[page.versions.length - 1].version;
    this.more.hidden = !page.hasMore;
    // All shown: they are the count. Else the older ones are counted aside.
    if (!page.hasMore) this.total = this.list.children.length;
    else if (first && page.versions.length > 0) this.count(page.versions[0].version);
    this.number();
    const n = this.list.children.length;
    this.status.textContent = n === 0 ? 'No versions yet: the plan has never been written.' : `${n} version${n === 1 ? '' : 's'} shown${page.hasMore ? ', older ones to load' : ''}.`;
  }

  /**
   * Counts the versions up to newest (the first shown), a large page at a
   * time, then numbers the rows.
   * @param {number} newest
   */
  async count(newest) {
    const opening = this.opening;
    let n = 0;
    let before = newest + 1;
    for (let step = 0; step < COUNT_PAGES; step++) {
      /** @type {import('./api.js').VersionPage} */
      let page;
      try {
        page = await get(`${sessionPath(this.id)}/todos/history?limit=${COUNT_PAGE}&before=${before}`);
      } catch {
        return;
      }
      if (opening !== this.opening) return;
      n += page.versions.length;
      if (!page.hasMore || page.versions.length === 0) {
        this.total = n;
        this.number();
        return;
      }
      before = page.versions[page.versions.length - 1].version;
    }
  }

  /** Names each row shown by its place, 1 the oldest, once the count is known. */
  number() {
    if (this.total === null) return;
    const total = this.total;
    [...this.list.children].forEach((li, i) => {
      const n = String(total - i);
      const label = /** @type {HTMLElement} */ (li.querySelector('.version-n'));
      label.textContent = `Version ${n}`;
      /** @type {HTMLElement} */ (li).dataset.n = n;
      li.querySelector('.changes')?.setAttribute('aria-label', `Changes in version ${n}`);
      const caption = li.querySelector('caption');
      if (caption) caption.textContent = `Items of version ${n}: time queued, in progress and done`;
    });
  }

  /**
   * One version: who and when, its changes, and its items with their times.
   * @param {Version} v
   * @param {boolean} open
   */
  version(v, open) {
    const li = el('li', 'version');
    li.dataset.version = String(v.version);
    li.dataset.by = v.by;
    const details = /** @type {HTMLDetailsElement} */ (el('details', 'fold version-fold'));
    details.open = open;
    const summary = el('summary', '');
    const who = author(v.by, this.me);
    const n = v.changes.length;
    summary.append(
      el('span', 'version-n', 'Version'), ' · ', timeEl(v.at), ' · ',
      el('span', 'version-by', who), ' · ',
      el('span', 'version-count', v.todos.length === 0 ? 'cleared' : `${n} change${n === 1 ? '' : 's'}`),
    );
    details.append(summary);
    const changes = el('ul', 'changes');
    changes.setAttribute('aria-label', 'Changes in this version');
    for (const c of v.changes) {
      const item = el('li', 'change', changeText(c));
      item.dataset.change = c.from === null ? 'added' : c.to === null ? 'removed' : 'status';
      changes.append(item);
    }
    if (n > 0) details.append(changes);
    if (v.todos.length > 0) details.append(this.table(v, this.newerAt));
    li.append(details);
    return li;
  }

  /**
   * @param {Version} v
   * @param {number} end
   */
  table(v, end) {
    const table = el('table', 'durations');
    const caption = el('caption', 'visually-hidden', 'Items of this version: time queued, in progress and done');
    const head = el('thead', '');
    const row = el('tr', '');
    for (const h of ['Item', 'Status', 'Queued', 'In progress', 'Done']) {
      const th = el('th', '', h);
      th.setAttribute('scope', 'col');
      row.append(th);
    }
    head.append(row);
    const body = el('tbody', '');
    for (const t of v.todos) {
      const tr = el('tr', '');
      tr.dataset.status = t.status;
      const th = el('th', 'duration-item', t.content);
      th.setAttribute('scope', 'row');
      tr.append(th, el('td', 'duration-status', STATUS_LABEL[t.status]));
      for (const p of phases(t, end)) tr.append(el('td', 'duration', p));
      body.append(tr);
    }
    table.append(caption, head, body);
    return table;
  }
}
