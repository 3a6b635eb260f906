// A session's plan strip and what it shows: the newest todos view, or why
// no plan stands, or the plan the agent proposed while none does.

import { get, send, sessionPath } from './api.js';
import { PlanStrip } from './plan.js';
import { learnIDs } from './todos.js';

/** @typedef {import('./api.js').TodosView} TodosView */

/**
 * @typedef {object} SessionPlanOptions
 * @property {HTMLElement} root the session view
 * @property {string} id the session
 * @property {import('./todos.js').ItemTimes} times
 * @property {import('./conversation.js').Conversation} conv whose turns and proposal the strip follows
 * @property {import('./api.js').Snapshot|undefined} snapshot the history's, with the plan standing when it was read
 * @property {() => import('./api.js').Session} session the session as last read
 * @property {() => {number: number, open: boolean}} turn the session's latest turn
 * @property {() => void} openHistory
 * @property {() => number} now the time the plan's clocks run to (PlanOptions)
 * @property {AbortSignal} signal
 */

export class SessionPlan {
  /** @param {SessionPlanOptions} o */
  constructor(o) {
    this.o = o;
    // The order of todos views: the version grows, and at one version a plan
    // only ever stops standing. A view older than the one shown is dropped.
    // The snapshot's plan is replaced by the todos view of the same version,
    // which also says when it was written.
    /** @type {{version: number, standing: boolean, view?: TodosView}} */
    this.shown = { version: o.snapshot?.todosVersion ?? 0, standing: o.snapshot?.standing ?? false };
    /** @type {import('./api.js').Todo[]} */
    this.todos = o.snapshot?.standing ? o.snapshot.todos : [];
    /** The seq of the proposal shown. */
    this.proposalSeq = 0;
    const path = `${sessionPath(o.id)}/todos`;
    this.strip = new PlanStrip({
      root: /** @type {HTMLElement} */ (o.root.querySelector('[data-plan]')),
      none: /** @type {HTMLElement} */ (o.root.querySelector('[data-plan-none]')),
      announcer: /** @type {HTMLElement} */ (o.root.querySelector('[data-announce]')),
      times: o.times,
      // One PUT per change, against the version shown; its answer is shown
      // like any todos view.
      save: async (todos, baseVersion) => this.apply(await send('PUT', path, { todos, baseVersion })),
      reload: async () => this.apply(await get(path)),
      openHistory: o.openHistory,
      now: o.now,
      signal: o.signal,
    });
  }

  /**
   * A plan from an earlier turn: no longer standing, or (a plan that
   * stands for the whole session) written before the open turn began.
   */
  earlier() {
    if (!this.shown.standing) return true;
    const turn = this.o.turn();
    const started = turn.open ? this.o.conv.turnStarts.get(turn.number) : undefined;
    const written = this.shown.view?.updatedAt;
    return Boolean(started && written && Date.parse(written) < Date.parse(started));
  }

  /**
   * Why no plan stands: none yet, or (an agent without a todo tool of its
   * own, never heard by hooks, no list ever) Tack is not connected for it.
   * Of the agents Tack knows, both come without one by default: codex's
   * update_plan is off unless configured, and Claude Code offers none on
   * its current models (a session that wrote a list shows the list).
   */
  why() {
    const session = this.o.session();
    return this.shown.version === 0 && !session.hooked && (session.agent === 'codex' || session.agent === 'claude-code')
      ? 'This agent has no todo tool and Tack is not connected for it — `tack connect`'
      : 'No plan yet';
  }

  /** @param {boolean} announce */
  show(announce) {
    const conv = this.o.conv;
    this.proposalSeq = conv.proposal?.seq ?? 0;
    this.strip.show({ version: this.shown.version, todos: this.todos, earlier: this.earlier(), why: this.why(), proposal: conv.proposal?.plan }, announce);
  }

  /** Whether the conversation holds a newer proposal than the one shown. */
  proposalMoved() {
    return (this.o.conv.proposal?.seq ?? 0) !== this.proposalSeq;
  }

  /** Shows t unless a newer view is shown. @param {TodosView} t */
  apply(t) {
    learnIDs(t.todos);
    const shown = this.shown;
    const newer = t.version > shown.version
      || (t.version === shown.version && ((shown.standing && !t.standing) || !shown.view));
    if (!newer) return;
    this.shown = { version: t.version, standing: t.standing, view: t };
    this.todos = t.todos;
    this.show(true);
  }
}
