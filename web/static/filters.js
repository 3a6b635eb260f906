// What the list is narrowed to: an agent, a project, an owner and a title
// search, kept in the URL's query, and the selects that choose them.

import { ownerOf, project } from './sessionrow.js';

/** @typedef {import('./list.js').Summary} Summary */

/**
 * What the list is narrowed to: the URL's ?agent=&project=&owner=&q=.
 * @typedef {{agent: string, project: string, owner: string, q: string}} Filters
 */

export const FILTER_KEYS = /** @type {const} */ (['agent', 'project', 'owner']);

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
export const passes = (s, f) => (!f.agent || (s.agent ?? '') === f.agent)
  && (!f.project || project(s.cwd) === f.project)
  && (!f.owner || ownerOf(s) === f.owner);

/** The agent, project and owner selects of the list. */
export class FilterSelects {
  /** @param {HTMLElement} root the element with data-view="list" */
  constructor(root) {
    /** @type {Record<'agent'|'project'|'owner', HTMLSelectElement>} */
    this.selects = {
      agent: /** @type {HTMLSelectElement} */ (root.querySelector('[data-filter="agent"]')),
      project: /** @type {HTMLSelectElement} */ (root.querySelector('[data-filter="project"]')),
      owner: /** @type {HTMLSelectElement} */ (root.querySelector('[data-filter="owner"]')),
    };
    this.ownerLabel = /** @type {HTMLElement} */ (root.querySelector('[data-filter-owner-label]'));
  }

  /**
   * Each select offers the values the sessions have, and the one chosen.
   * @param {Iterable<Summary>} sessions @param {Filters} filters
   */
  fill(sessions, filters) {
    const selects = this.selects;
    /** @type {Record<'agent'|'project'|'owner', Map<string, string>>} value → title */
    const seen = { agent: new Map(), project: new Map(), owner: new Map() };
    for (const s of sessions) {
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
    this.ownerLabel.hidden = selects.owner.hidden;
  }
}
