// Todo lists on screen: the summary line and the list itself (the plan
// strip, which edits them, is plan.js).
// The lists come from Tack (the snapshot, `todos` messages, todo/write
// events); nothing here decides which plan stands.

import { between, duration, when } from './time.js';

/** @typedef {import('./api.js').Todo} Todo */

/**
 * A new element with a class (none when '') and, where given, its text:
 * the one builder the session, plan and history views share.
 * @param {string} tag @param {string} className @param {string} [text]
 */
export function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

export const STATUS_LABEL = { pending: 'pending', in_progress: 'in progress', completed: 'completed' };

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
    // What the agent says it is doing ("Running the tests"), where it says.
    current = (running[0].activeForm || running[0].content) + (running.length > 1 ? ` +${running.length - 1}` : '');
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
  ol.replaceChildren(...todos.map((t) => renderItem(t, todos, times)));
}

/** @param {Todo} t @param {Todo[]} todos the list it is in @param {ItemTimes} [times] */
function renderItem(t, todos, times) {
  const li = document.createElement('li');
  li.className = 'todo';
  li.dataset.status = t.status;
  const mark = document.createElement('span');
  mark.className = 'todo-mark';
  mark.setAttribute('aria-hidden', 'true');
  li.append(mark, itemText(t));
  addItemNotes(li, t, todos);
  addItemTime(li, t, times);
  return li;
}

/**
 * The items the page has seen with their ids, by id: the lists of
 * todo/write events carry no ids, so a blocker named by id in one of them
 * is found by the task id (or content) of the item the id was seen on.
 * @type {Map<string, {taskId?: string, content: string}>}
 */
const seenIDs = new Map();

/** Takes note of the ids of a todos view's items. @param {Todo[]} todos */
export function learnIDs(todos) {
  for (const t of todos) if (t.id) seenIDs.set(t.id, { taskId: t.taskId, content: t.content });
}

/**
 * The items of todos that t waits on and that are not done yet: its open
 * blockers (a blocker no longer in the list blocks nothing).
 * @param {Todo} t @param {Todo[]} todos
 */
export function openBlockers(t, todos) {
  const find = (/** @type {string} */ id) => {
    const byID = todos.find((x) => x.id === id);
    const seen = byID ? undefined : seenIDs.get(id);
    return byID ?? (seen && todos.find((x) => (seen.taskId ? x.taskId === seen.taskId : x.content === seen.content)));
  };
  return (t.blockedBy ?? [])
    .map(find)
    .filter((b) => b !== undefined && b.status !== 'completed');
}

/** How an item is named beside another: "#1 Write the parser", or its content. @param {Todo} t */
const named = (t) => (t.taskId ? `#${t.taskId} ${t.content}` : t.content);

/**
 * Appends what the agent said of an item: what it is doing while in
 * progress (`activeForm`), "Blocked by #1 …" while a blocker is open, and
 * who owns it.
 * @param {HTMLElement} li @param {Todo} t @param {Todo[]} todos the list it is in
 */
export function addItemNotes(li, t, todos) {
  if (t.status === 'in_progress' && t.activeForm && t.activeForm !== t.content) {
    li.append(el('span', 'todo-note todo-active', t.activeForm));
  }
  const blockers = openBlockers(t, todos);
  if (blockers.length > 0 && t.status !== 'completed') {
    li.dataset.blocked = 'true';
    li.append(el('span', 'todo-note todo-blocked', `Blocked by ${blockers.map(named).join(', ')}`));
  }
  if (t.owner) li.append(el('span', 'todo-note todo-owner', t.owner));
}

/**
 * An item's text (struck through when done) and its state for screen readers.
 * @param {Todo} t
 * @returns {DocumentFragment}
 */
export function itemText(t) {
  const f = document.createDocumentFragment();
  const text = document.createElement(t.status === 'completed' ? 's' : 'span');
  text.className = 'todo-text';
  text.textContent = named(t);
  const state = document.createElement('span');
  state.className = 'visually-hidden';
  state.textContent = ` (${STATUS_LABEL[t.status] ?? t.status})`;
  f.append(text, state);
  return f;
}

/**
 * Appends how long an item has run (in progress) or ran (done), where known:
 * from its timeline (`startedAt`, `completedAt`) when the view has one, else
 * from when the page saw it start and finish.
 * @param {HTMLElement} li
 * @param {Todo} t
 * @param {ItemTimes} [times]
 */
export function addItemTime(li, t, times) {
  const seen = times?.get(t.content) ?? {};
  const started = t.startedAt ?? seen.started;
  const completed = t.completedAt ?? seen.completed;
  let took = '';
  if (t.status === 'in_progress' && (started ?? t.updatedAt)) {
    const since = /** @type {string} */ (started ?? t.updatedAt);
    took = duration(Date.now() - Date.parse(since));
    li.dataset.since = since;
  } else if (t.status === 'completed' && started && completed) {
    took = duration(between(started, completed));
  } else if (t.status === 'completed' && (completed ?? t.updatedAt)) {
    took = `at ${when(/** @type {string} */ (completed ?? t.updatedAt))}`;
  }
  if (took) {
    const d = document.createElement('span');
    d.className = 'todo-time';
    d.dataset.itemTime = '';
    d.textContent = took;
    li.append(d);
  }
}

