// The plan's rows in the conversation: a list the agent wrote, a person's
// edits of it, a plan the agent proposed.

import { markdown } from './markdown.js';
import { timeEl } from './time.js';
import { el, renderList, summarize } from './todos.js';

/**
 * The compact row of a list: its gist, expandable to the list itself.
 * @param {import('./api.js').Todo[]} todos
 * @param {string} label "Plan updated", "Plan rejected · why"
 * @param {string} state
 */
export function todoFold(todos, label, state) {
  const s = summarize(todos);
  const details = el('details', 'fold todo-fold');
  details.dataset.state = state;
  const summary = el('summary', '');
  const parts = todos.length === 0 ? [label] : [label, s.progress, s.current];
  summary.append(el('span', 'todo-state', ''), el('span', 'todo-summary', parts.join(' · ')));
  const ol = el('ol', 'todos');
  renderList(ol, todos);
  details.append(summary, ol);
  return details;
}

/**
 * An edit row's fold: "You edited the plan · 2/5 done · item · 14:03", or
 * "… edited the plan 3 times · …" for several in a row.
 * @param {string} who @param {import('./api.js').Todo[]} list @param {number} count @param {string} at
 */
export function editFold(who, list, count, at) {
  const what = list.length === 0 ? 'cleared the plan' : `edited the plan${count > 1 ? ` ${count} times` : ''}`;
  const fold = todoFold(list, `${who} ${what}`, summarize(list).state);
  fold.querySelector('summary')?.append(' · ', timeEl(at));
  return fold;
}

/** What became of a proposed plan, by its call's status; one in a message (codex's) says nothing of it. */
const PROPOSAL_STATE = { running: 'Awaiting approval', ok: 'Approved', error: 'Not approved', said: '' };

/**
 * A plan the agent proposed (ExitPlanMode, codex's <proposed_plan>): its
 * Markdown, under "Proposed plan" and what became of it.
 * @param {string} plan
 * @param {'running'|'ok'|'error'|'said'} status
 */
export function proposalCard(plan, status) {
  const card = el('section', 'proposal');
  card.dataset.status = status;
  const head = el('header', 'proposal-head');
  head.append(el('span', 'proposal-title', 'Proposed plan'));
  if (PROPOSAL_STATE[status]) head.append(el('span', 'proposal-state', PROPOSAL_STATE[status]));
  const body = el('div', 'proposal-body markdown');
  body.append(markdown(plan));
  card.append(head, body);
  return card;
}
