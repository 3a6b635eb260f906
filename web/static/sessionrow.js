// One session's row, as the list and a parent's children show it, and what
// a row reads from a session's summary: its project, its owner, what it
// waits on its person for.

import { get, me } from './api.js';
import { currentState, goalText, needsText, stateText } from './state.js';
import { ago, timeEl } from './time.js';

/** @typedef {import('./list.js').Summary} Summary */

/** The states, in the order shown: whoever waits on a person first. */
export const GROUPS = /** @type {const} */ ([
  ['needs_you', 'Needs you'], ['working', 'Working'], ['idle', 'Idle'], ['ended', 'Ended'],
]);

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

/** Learns who the list is seen by, and for an admin the principals' names. */
export async function learnViewer() {
  const who = await me();
  viewer.id = who?.principal.id ?? '';
  if (who?.principal.admin) {
    const { principals } = await get('/principals').catch(() => ({ principals: [] }));
    for (const p of principals) viewer.names.set(p.id, p.name);
  }
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
 * What sessionRow(s, kids, query) shows, as a string: the same string, the
 * same row (kept.js). Its summary, its state and times as they read now,
 * whether it is the page shown, and its subagents', the same way.
 * @param {Summary} s
 * @param {Map<string, Summary[]>} [kids]
 * @param {string} [query]
 * @returns {string}
 */
export function rowKey(s, kids, query = '') {
  const reads = (/** @type {Summary} */ x) => [JSON.stringify(x), stateText(currentState(x)), ago(x.updatedAt), ...(kids?.get(x.id) ?? []).map(reads)].join('\n');
  return `${query} ${location.pathname === `/s/${encodeURIComponent(s.id)}`}\n${reads(s)}`;
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
