// The sessions the list holds, read a page at a time: all of them, or a
// title search's matches, newest activity first.

import { get } from './api.js';

/** @typedef {import('./list.js').Summary} Summary */

const PAGE = 100;
/**
 * A search request examines a bounded stretch of the list (at most 2000
 * sessions) and may answer a short page with a cursor to go on; the list
 * follows such cursors until it has a page to show, up to this many
 * requests per page asked for, then offers "Load older sessions".
 */
const MAX_SEARCH_STEPS = 5;

export class SessionPages {
  /** @param {(s: Summary) => void} onSummary called with every summary read or heard */
  constructor(onSummary) {
    this.onSummary = onSummary;
    /** @type {Map<string, Summary>} the sessions of the view: all, or q's matches */
    this.sessions = new Map();
    /** @type {string|undefined} where the view's next page starts */
    this.cursor = undefined;
    /** Moves on with every new view, so that answers for an older one are dropped. */
    this.generation = 0;
  }

  /** Keeps per session the summary with the highest lastSeq: summaries can arrive out of order. @param {Summary} s */
  keep(s) {
    this.onSummary(s);
    const prev = this.sessions.get(s.id);
    if (!prev || prev.lastSeq <= s.lastSeq) this.sessions.set(s.id, s);
  }

  /**
   * Reads pages of the view from `from` until it has PAGE more sessions,
   * the list ends, or a search (q) has taken MAX_SEARCH_STEPS requests.
   * @param {string|undefined} from @param {string} q
   * @returns {Promise<{found: Summary[], next: string|undefined}>}
   */
  async read(from, q) {
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
  }

  /**
   * Reads the view's first page again. Older pages once asked for stay, and
   * so does their cursor; a new view (fresh) starts over. It reports
   * whether the sessions changed: false when a newer view began meanwhile.
   * @param {boolean} fresh @param {string} q the title search, '' for none
   */
  async load(fresh, q) {
    const gen = fresh ? ++this.generation : this.generation;
    const { found, next } = await this.read(undefined, q);
    if (gen !== this.generation) return false;
    if (fresh) {
      this.sessions = new Map();
      this.cursor = undefined;
    }
    const firstOnly = this.cursor === undefined || this.sessions.size <= PAGE;
    found.forEach((s) => this.keep(s));
    if (firstOnly) this.cursor = next;
    return true;
  }

  /**
   * Reads the page after those held, reporting whether the sessions
   * changed: false when a newer view began meanwhile.
   * @param {string} q the title search, '' for none
   */
  async more(q) {
    const gen = this.generation;
    const { found, next } = await this.read(this.cursor, q);
    if (gen !== this.generation) return false;
    found.forEach((s) => this.keep(s));
    this.cursor = next;
    return true;
  }
}
