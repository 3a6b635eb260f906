// A session's children (a Claude Code subagent, a codex sub-thread) on the
// parent's page: one row each with its title, plan progress and state,
// linking to it, kept current by GET /live.

import { APIError, get } from './api.js';
import { Kept, place } from './kept.js';
import { Live } from './live.js';
import { rowKey, sessionRow } from './sessionrow.js';

/** @typedef {import('./list.js').Summary} Summary */

/**
 * Shows the children of session id in box (its `[data-children-list]`), or
 * leaves it hidden when there are none. A server that does not know
 * `?parent=` answers 400 and the section stays away; one that ignores it
 * answers sessions that are not children, which are not shown.
 * @param {HTMLElement} box
 * @param {string} id
 * @param {AbortSignal} [signal] stops following them
 */
export async function showChildren(box, id, signal) {
  const ul = /** @type {HTMLElement} */ (box.querySelector('[data-children-list]'));
  const count = /** @type {HTMLElement} */ (box.querySelector('[data-children-count]'));
  /** @type {{sessions: Summary[]}} */
  let page;
  try {
    page = await get(`/sessions?${new URLSearchParams({ parent: id, limit: '100' })}`);
  } catch (err) {
    if (err instanceof APIError && err.status === 400) return;
    throw err;
  }
  const ignored = page.sessions.some((s) => s.parentId !== id);
  /** @type {Map<string, Summary>} */
  const children = new Map();
  const rows = new Kept();
  const render = () => {
    const sorted = [...children.values()].sort((a, b) => b.updatedAt.localeCompare(a.updatedAt) || b.id.localeCompare(a.id));
    place(ul, sorted.map((s) => rows.get(s.id, rowKey(s), () => sessionRow(s))));
    rows.done();
    count.textContent = `Subagents · ${sorted.length}`;
    box.hidden = sorted.length === 0;
  };
  /** @param {Summary} s */
  const keep = (s) => {
    const prev = children.get(s.id);
    if (s.parentId === id && (!prev || prev.lastSeq <= s.lastSeq)) children.set(s.id, s);
  };
  page.sessions.forEach(keep);
  render();
  if (ignored || signal?.aborted) return; // the server lists no children: nothing to follow
  const live = new Live({
    path: () => '/live',
    onOpen: () => {
      get(`/sessions?${new URLSearchParams({ parent: id, limit: '100' })}`)
        .then((p) => { p.sessions.forEach(keep); render(); }, () => {});
    },
    onMessage: (msg) => {
      if (msg.type !== 'session' || msg.session.parentId !== id) return;
      keep(msg.session);
      render();
    },
  });
  // Their states move with the clock.
  const clock = window.setInterval(render, 30_000);
  signal?.addEventListener('abort', () => { live.stop(); window.clearInterval(clock); });
}
