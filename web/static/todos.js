// Todo lists on screen: the summary line, the list itself, and the plan strip.
// The lists come from Tack (the snapshot, `todos` messages, todo/write
// events); nothing here decides which plan stands.

/** @typedef {import('./api.js').Todo} Todo */

const STATUS_LABEL = { pending: 'pending', in_progress: 'in progress', completed: 'completed' };

/**
 * The one-line gist of a list: "2/5 done" and the item to show — the one in
 * progress ("first +n" when several are), else the first pending, else the
 * last completed.
 * @param {Todo[]} todos
 * @returns {{done: number, total: number, progress: string, current: string,
 *   state: 'active'|'pending'|'done'}}
 */
export function summarize(todos) {
  const done = todos.filter((t) => t.status === 'completed').length;
  const running = todos.filter((t) => t.status === 'in_progress');
  const pending = todos.find((t) => t.status === 'pending');
  let current = '';
  let state = /** @type {'active'|'pending'|'done'} */ ('done');
  if (running.length > 0) {
    current = running[0].content + (running.length > 1 ? ` +${running.length - 1}` : '');
    state = 'active';
  } else if (pending) {
    current = pending.content;
    state = 'pending';
  } else if (todos.length > 0) {
    current = todos[todos.length - 1].content;
  }
  return { done, total: todos.length, progress: `${done}/${todos.length} done`, current, state };
}

/**
 * Renders a list of todos into an <ol>, one <li> per item with its state.
 * @param {HTMLElement} ol
 * @param {Todo[]} todos
 */
export function renderList(ol, todos) {
  ol.replaceChildren(
    ...todos.map((t) => {
      const li = document.createElement('li');
      li.className = 'todo';
      li.dataset.status = t.status;
      const mark = document.createElement('span');
      mark.className = 'todo-mark';
      mark.setAttribute('aria-hidden', 'true');
      const text = document.createElement(t.status === 'completed' ? 's' : 'span');
      text.className = 'todo-text';
      text.textContent = t.content;
      const state = document.createElement('span');
      state.className = 'visually-hidden';
      state.textContent = ` (${STATUS_LABEL[t.status] ?? t.status})`;
      li.append(mark, text, state);
      return li;
    }),
  );
}

const EXPANDED_KEY = 'tack.plan.expanded';

/** The plan strip docked under the conversation. */
export class PlanStrip {
  /**
   * @param {HTMLElement} root the element with data-plan
   * @param {HTMLElement} announcer the aria-live region progress is told through
   */
  constructor(root, announcer) {
    this.root = root;
    this.toggle = /** @type {HTMLButtonElement} */ (root.querySelector('[data-plan-toggle]'));
    this.items = /** @type {HTMLElement} */ (root.querySelector('[data-plan-items]'));
    this.progress = /** @type {HTMLElement} */ (root.querySelector('[data-plan-progress]'));
    this.current = /** @type {HTMLElement} */ (root.querySelector('[data-plan-current]'));
    this.announcer = announcer;
    this.lastAnnounced = '';
    this.setExpanded(localStorage.getItem(EXPANDED_KEY) === 'true');
    this.toggle.addEventListener('click', () => {
      const expanded = this.toggle.getAttribute('aria-expanded') !== 'true';
      localStorage.setItem(EXPANDED_KEY, String(expanded));
      this.setExpanded(expanded);
    });
  }

  /** @param {boolean} expanded */
  setExpanded(expanded) {
    this.toggle.setAttribute('aria-expanded', String(expanded));
    this.items.hidden = !expanded;
    this.root.dataset.expanded = String(expanded);
  }

  /**
   * Shows the standing plan, or hides the strip when none stands.
   * @param {Todo[]} todos the standing plan ([] when none)
   * @param {boolean} announce whether to tell screen readers about the change
   */
  show(todos, announce) {
    const s = summarize(todos);
    this.root.hidden = todos.length === 0;
    this.root.dataset.state = s.state;
    this.progress.textContent = s.progress;
    this.current.textContent = s.current;
    renderList(this.items, todos);
    const line = todos.length === 0 ? 'Plan cleared.' : `Plan: ${s.done} of ${s.total} done. ${s.current}`;
    if (announce && line !== this.lastAnnounced) this.announcer.textContent = line;
    this.lastAnnounced = line;
  }
}
