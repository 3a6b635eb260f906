// Todo lists on screen: the summary line, the list itself, and the plan strip.
// The lists come from Tack (the snapshot, `todos` messages, todo/write
// events); nothing here decides which plan stands.

import { between, clock, duration } from './time.js';

/** @typedef {import('./api.js').Todo} Todo */

const STATUS_LABEL = { pending: 'pending', in_progress: 'in progress', completed: 'completed' };

/**
 * The one-line gist of a list: "2/5 done" and the item to show — the one in
 * progress ("first +n" when several are), else the first pending; a list
 * with everything done has no current item ("all done").
 * @param {Todo[]} todos
 * @returns {{done: number, total: number, progress: string, current: string,
 *   state: 'active'|'pending'|'done'}}
 */
export function summarize(todos) {
  const done = todos.filter((t) => t.status === 'completed').length;
  const running = todos.filter((t) => t.status === 'in_progress');
  const pending = todos.find((t) => t.status === 'pending');
  let current = 'all done';
  let state = /** @type {'active'|'pending'|'done'} */ ('done');
  if (running.length > 0) {
    current = running[0].content + (running.length > 1 ? ` +${running.length - 1}` : '');
    state = 'active';
  } else if (pending) {
    current = `next: ${pending.content}`;
    state = 'pending';
  }
  return { done, total: todos.length, progress: `${done}/${todos.length} done`, current, state };
}

/**
 * When the page saw each item start and finish, by content: todo/write rows
 * and views report them, the strip reads them for per-item durations.
 */
export class ItemTimes {
  constructor() {
    /** @type {Map<string, {started?: string, completed?: string}>} */
    this.m = new Map();
  }

  /** @param {Todo[]} todos @param {string} [at] the time of the write, else each item's updatedAt */
  saw(todos, at) {
    for (const t of todos) {
      const when = at ?? t.updatedAt;
      if (!when) continue;
      const e = this.m.get(t.content) ?? {};
      if (t.status === 'in_progress' && (!e.started || e.completed)) { e.started = when; delete e.completed; }
      if (t.status === 'completed' && !e.completed) e.completed = when;
      if (t.status === 'pending') { delete e.started; delete e.completed; }
      this.m.set(t.content, e);
    }
  }

  /** @param {string} content */
  get(content) { return this.m.get(content) ?? {}; }
}

/**
 * Renders a list of todos into an <ol>, one <li> per item with its state,
 * and, where known, how long it has run or took.
 * @param {HTMLElement} ol
 * @param {Todo[]} todos
 * @param {ItemTimes} [times]
 */
export function renderList(ol, todos, times) {
  ol.replaceChildren(...todos.map((t) => renderItem(t, times)));
}

/** @param {Todo} t @param {ItemTimes} [times] */
function renderItem(t, times) {
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
  const when = times?.get(t.content) ?? {};
  let took = '';
  if (t.status === 'in_progress' && (when.started ?? t.updatedAt)) {
    const since = /** @type {string} */ (when.started ?? t.updatedAt);
    took = duration(Date.now() - Date.parse(since));
    li.dataset.since = since;
  } else if (t.status === 'completed' && when.started && when.completed) {
    took = duration(between(when.started, when.completed));
  } else if (t.status === 'completed' && t.updatedAt) {
    took = `at ${clock(t.updatedAt)}`;
  }
  if (took) {
    const d = document.createElement('span');
    d.className = 'todo-time';
    d.dataset.itemTime = '';
    d.textContent = took;
    li.append(d);
  }
  return li;
}

const EXPANDED_KEY = 'tack.plan.expanded';

/** The plan strip docked under the conversation. */
export class PlanStrip {
  /**
   * @param {HTMLElement} root the element with data-plan
   * @param {HTMLElement} announcer the aria-live region progress is told through
   * @param {ItemTimes} times
   */
  constructor(root, announcer, times) {
    this.root = root;
    this.times = times;
    this.toggle = /** @type {HTMLButtonElement} */ (root.querySelector('[data-plan-toggle]'));
    this.panel = /** @type {HTMLElement} */ (root.querySelector('[data-plan-panel]'));
    this.items = /** @type {HTMLElement} */ (root.querySelector('[data-plan-items]'));
    this.doneFold = /** @type {HTMLDetailsElement} */ (root.querySelector('[data-plan-done]'));
    this.doneItems = /** @type {HTMLElement} */ (root.querySelector('[data-plan-done-items]'));
    this.doneCount = /** @type {HTMLElement} */ (root.querySelector('[data-plan-done-count]'));
    this.progress = /** @type {HTMLElement} */ (root.querySelector('[data-plan-progress]'));
    this.bar = /** @type {HTMLProgressElement} */ (root.querySelector('[data-plan-bar]'));
    this.current = /** @type {HTMLElement} */ (root.querySelector('[data-plan-current]'));
    this.elapsed = /** @type {HTMLElement} */ (root.querySelector('[data-plan-elapsed]'));
    this.announcer = announcer;
    this.lastAnnounced = '';
    /** @type {Todo[]} */
    this.todos = [];
    this.setExpanded(localStorage.getItem(EXPANDED_KEY) === 'true');
    this.toggle.addEventListener('click', () => {
      const expanded = this.toggle.getAttribute('aria-expanded') !== 'true';
      localStorage.setItem(EXPANDED_KEY, String(expanded));
      this.setExpanded(expanded);
    });
    setInterval(() => this.tick(), 1000);
  }

  /** @param {boolean} expanded */
  setExpanded(expanded) {
    this.toggle.setAttribute('aria-expanded', String(expanded));
    this.panel.hidden = !expanded;
    this.root.dataset.expanded = String(expanded);
    if (expanded) this.reveal();
  }

  /** Keeps the item in progress in view inside the panel. */
  reveal() {
    const running = /** @type {HTMLElement|null} */ (this.items.querySelector('[data-status="in_progress"]'));
    if (!running || this.panel.hidden) return;
    const top = running.offsetTop - this.panel.offsetTop;
    if (top < this.panel.scrollTop || top + running.offsetHeight > this.panel.scrollTop + this.panel.clientHeight) {
      this.panel.scrollTop = Math.max(0, top - 8);
    }
  }

  /**
   * Shows the standing plan, or hides the strip when none stands.
   * @param {Todo[]} todos the standing plan ([] when none)
   * @param {boolean} announce whether to tell screen readers about the change
   */
  show(todos, announce) {
    this.times.saw(todos);
    this.todos = todos;
    const s = summarize(todos);
    this.root.hidden = todos.length === 0;
    this.root.dataset.state = s.state;
    this.progress.textContent = s.progress;
    this.bar.max = Math.max(1, s.total);
    this.bar.value = s.done;
    this.current.textContent = s.current;
    // Done items fold into "n done"; what is in progress and what is next
    // stay in view.
    const done = todos.filter((t) => t.status === 'completed');
    this.doneFold.hidden = done.length === 0;
    this.doneCount.textContent = `${done.length} done`;
    renderList(this.doneItems, done, this.times);
    renderList(this.items, todos.filter((t) => t.status !== 'completed'), this.times);
    this.tick();
    this.reveal();
    const line = todos.length === 0 ? 'Plan cleared.' : `Plan: ${s.done} of ${s.total} done. ${s.current}`;
    if (announce && line !== this.lastAnnounced) this.announcer.textContent = line;
    this.lastAnnounced = line;
  }

  /** The plan's elapsed time (from its earliest item time to its last, or now while unfinished) and running items' times. */
  tick() {
    const times = this.todos.map((t) => t.updatedAt).filter(Boolean).map((t) => Date.parse(/** @type {string} */ (t)));
    if (times.length === 0) {
      this.elapsed.textContent = '';
    } else {
      const finished = this.todos.every((t) => t.status === 'completed');
      const end = finished ? Math.max(...times) : Date.now();
      this.elapsed.textContent = duration(end - Math.min(...times));
      this.elapsed.title = finished ? 'Time the plan took' : 'Time since the plan began';
    }
    this.items.querySelectorAll('li[data-since]').forEach((li) => {
      const d = li.querySelector('[data-item-time]');
      if (d) d.textContent = duration(Date.now() - Date.parse(/** @type {string} */ (/** @type {HTMLElement} */ (li).dataset.since)));
    });
  }
}
