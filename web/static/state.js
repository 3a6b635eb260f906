// A session's state as people read it ("Working · 2 min", "Idle since
// 14:02", "Ended", "Needs you"), from the state and stateSince the server
// gives with every session.

import { roughly, when } from './time.js';

/**
 * @typedef {'working'|'needs_you'|'idle'|'ended'} State
 * @typedef {{state: State, stateSince: string, updatedAt: string, agentBusy?: boolean}} Stated
 */

/**
 * How long an open turn may go without an event and still be working: the
 * server's default `-idle-after`. The server decides the state when it
 * answers; a page that has shown "working" for this long without hearing
 * of an event says idle itself, so no session reads "working" for hours.
 */
export const IDLE_MS = 5 * 60 * 1000;

/**
 * The state to show now, and since when.
 * @param {Stated} s
 * @param {string} [lastAt] the latest activity, else the session's updatedAt
 * @returns {{state: State, since: string}}
 */
export function currentState(s, lastAt = s.updatedAt) {
  const since = s.stateSince;
  // The agent's own registry says it is busy (a long tool call): working.
  if (s.state === 'working' && !s.agentBusy && Date.now() - Date.parse(lastAt) > IDLE_MS) return { state: 'idle', since: lastAt };
  return { state: s.state, since };
}

/**
 * What a session waits on its person for, in one line: "Allow Bash: rm -rf
 * build", the question it asks, "Approve the plan: …".
 * @param {import('./api.js').NeedsYou} n
 */
export function needsText(n) {
  const first = n.message.split('\n')[0];
  switch (n.kind) {
    case 'question': return first || 'A question for you';
    case 'plan': return first ? `Approve the plan: ${first}` : 'Approve the plan';
    default:
      if (n.tool) return n.input ? `Allow ${n.tool}: ${n.input}` : `Allow ${n.tool}`;
      return first || 'Permission needed';
  }
}

/**
 * The state in words: "Working · 2 min", "Needs you · 1 min", "Idle since
 * 14:02" (or "since 3 Jan 14:02"), "Ended".
 * @param {{state: State, since: string}} st
 */
export function stateText(st) {
  const took = roughly(Date.now() - Date.parse(st.since));
  switch (st.state) {
    case 'working': return `Working · ${took}`;
    case 'needs_you': return `Needs you · ${took}`;
    case 'idle': return `Idle since ${when(st.since)}`;
    default: return 'Ended';
  }
}

/**
 * A session's goal in words: "Goal: <text>" while pursued, "Goal met:
 * <text>" (cleared, blocked, paused) once ended.
 * @param {import('./api.js').Goal} g
 */
export function goalText(g) {
  return g.status === 'active' ? `Goal: ${g.text}` : `Goal ${g.status}: ${g.text}`;
}
