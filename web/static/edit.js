// A person's changes to a plan, as gestures: what they meant ("mark this
// item completed", "rename this item"), not the list it made. A gesture is
// applied to the list shown when it is sent; after a conflict the same
// gesture applies again to the newer list, so nothing the person did or
// typed is lost. Items are named by content, which is unique in a list.

import { STATUS_LABEL } from './todos.js';

/** @typedef {import('./api.js').Todo} Todo */
/** @typedef {import('./api.js').Status} Status */
/**
 * An item as PUT /todos takes it: content and status, and what the agent's
 * own tools gave it, kept through a person's edit.
 * @typedef {{content: string, status: Status, activeForm?: string, blockedBy?: string[],
 *   owner?: string, taskId?: string, description?: string}} TodoInput
 */

/** What an agent's tools give an item, which an edit keeps as it is. */
const AGENT_FIELDS = /** @type {const} */ (['activeForm', 'blockedBy', 'owner', 'taskId', 'description']);

/** @param {Todo} t @returns {TodoInput} */
function input(t) {
  /** @type {any} */
  const i = { content: t.content, status: t.status };
  for (const k of AGENT_FIELDS) if (t[k] !== undefined && t[k] !== '') i[k] = t[k];
  return i;
}

/**
 * The list with each item's blockedBy naming only items still in it (by
 * their ids in `todos`): a deleted blocker blocks nothing.
 * @param {Todo[]} todos the list shown, whose ids blockedBy names
 * @param {TodoInput[]} list
 */
function keepBlockers(todos, list) {
  const kept = new Set(list.map((t) => todos.find((x) => (t.taskId ? x.taskId === t.taskId : x.content === t.content))?.id));
  for (const t of list) {
    if (!t.blockedBy) continue;
    t.blockedBy = t.blockedBy.filter((id) => kept.has(id));
    if (t.blockedBy.length === 0) delete t.blockedBy;
  }
  return list;
}

/**
 * @typedef {{kind: 'status', content: string, to: Status}
 *   | {kind: 'text', content: string, to: string, index: number}
 *   | {kind: 'add', content: string}
 *   | {kind: 'delete', content: string}
 *   | {kind: 'move', content: string, by: -1|1}
 *   | {kind: 'clear'}} Gesture
 */

/** @type {Record<Status, Status>} */
const NEXT = { pending: 'in_progress', in_progress: 'completed', completed: 'pending' };

/** The status a click on an item's mark moves it to: pending → in progress → completed → pending. @param {Status} s */
export const nextStatus = (s) => NEXT[s] ?? 'pending';

/** Whether two items are in the same part of the strip (done, or not). @param {Todo} a @param {Todo} b */
const sameGroup = (a, b) => (a.status === 'completed') === (b.status === 'completed');

/**
 * The list a gesture makes of `todos`, as PUT /todos takes it (each item's
 * agent fields kept), or null when it changes nothing (the item is gone,
 * already so, or has nowhere to move).
 * @param {Todo[]} todos
 * @param {Gesture} g
 * @returns {TodoInput[]|null}
 */
export function apply(todos, g) {
  const list = change(todos.map(input), g);
  return list && keepBlockers(todos, list);
}

/** @param {TodoInput[]} list @param {Gesture} g @returns {TodoInput[]|null} */
function change(list, g) {
  const i = 'content' in g ? list.findIndex((t) => t.content === g.content) : -1;
  switch (g.kind) {
    case 'status':
      if (i < 0 || list[i].status === g.to) return null;
      list[i].status = g.to;
      return list;
    case 'text': {
      const to = g.to.trim();
      if (i < 0) {
        // The item was removed meanwhile: what was typed comes back as an
        // item where it stood, not lost.
        if (list.some((t) => t.content === to)) return null;
        return [...list.slice(0, g.index), { content: to, status: 'pending' }, ...list.slice(g.index)];
      }
      if (to === g.content) return null;
      // A text another item has is left to the server to refuse, in its words.
      list[i] = { ...list[i], content: to };
      return list;
    }
    case 'add':
      if (list.some((t) => t.content === g.content.trim())) return null;
      return [...list, { content: g.content.trim(), status: 'pending' }];
    case 'delete':
      if (i < 0) return null;
      return list.filter((_, k) => k !== i);
    case 'move': {
      if (i < 0) return null;
      // Done items are shown apart from the rest, so a move passes the next
      // item shown beside it: the nearest one of the same group.
      let j = i + g.by;
      while (j >= 0 && j < list.length && !sameGroup(list[j], list[i])) j += g.by;
      if (j < 0 || j >= list.length) return null;
      [list[i], list[j]] = [list[j], list[i]];
      return list;
    }
    case 'clear':
      return list.length === 0 ? null : [];
  }
  return null;
}

/**
 * A gesture in words, for the held change and for screen readers.
 * @param {Gesture} g
 */
export function describe(g) {
  switch (g.kind) {
    case 'status': return `mark “${g.content}” ${STATUS_LABEL[g.to]}`;
    case 'text': return `rename “${g.content}” to “${g.to.trim()}”`;
    case 'add': return `add “${g.content.trim()}”`;
    case 'delete': return `delete “${g.content}”`;
    case 'move': return `move “${g.content}” ${g.by < 0 ? 'up' : 'down'}`;
    case 'clear': return 'clear the plan';
  }
  return '';
}

/**
 * What the person hears once a gesture is saved.
 * @param {Gesture} g
 */
export function done(g) {
  switch (g.kind) {
    case 'status': return `“${g.content}” is ${STATUS_LABEL[g.to]}.`;
    case 'text': return `Renamed to “${g.to.trim()}”.`;
    case 'add': return `Added “${g.content.trim()}”.`;
    case 'delete': return `Deleted “${g.content}”.`;
    case 'move': return `Moved “${g.content}” ${g.by < 0 ? 'up' : 'down'}.`;
    case 'clear': return 'Plan cleared.';
  }
  return '';
}
