// What a session's state shows around its conversation: the state in the
// bar, the banner while it waits on its person, the working indicator and
// the goal line.

import { markdown } from './markdown.js';
import { currentState, goalText, needsText, stateText } from './state.js';
import { el } from './todos.js';

/** @typedef {import('./api.js').Session} Session */

export class SessionState {
  /** @param {HTMLElement} root the session view */
  constructor(root) {
    this.root = root;
    this.stateEl = /** @type {HTMLElement} */ (document.querySelector('[data-session-state]'));
    this.working = /** @type {HTMLElement} */ (root.querySelector('[data-working]'));
    this.banner = /** @type {HTMLElement} */ (root.querySelector('[data-waiting-banner]'));
    this.bannerReason = /** @type {HTMLElement} */ (root.querySelector('[data-waiting-reason]'));
    this.bannerWords = /** @type {HTMLElement} */ (root.querySelector('[data-waiting-words]'));
    /** @type {string} the reason shown, as JSON */
    this.reasonShown = '';
    /** @type {number} the seq of the words shown */
    this.wordsSeq = -1;
  }

  /**
   * The session's state in the bar, from the server's state and stateSince
   * (read again after events), and the banner while it waits.
   * @param {Session} session @param {string} lastAt @param {import('./conversation.js').Conversation['lastWords']} lastWords
   */
  showState(session, lastAt, lastWords) {
    const st = currentState(session, lastAt);
    this.stateEl.hidden = false;
    this.stateEl.dataset.state = st.state;
    this.stateEl.textContent = stateText(st);
    this.showWaiting(st, session, lastWords);
  }

  /**
   * Waiting on its person: a banner with what for (the permission, the
   * question, the plan, as the agent put it) and what the agent last said.
   * The bar says since when; the banner says what the agent asked.
   * @param {{state: string, since: string}} st @param {Session} session @param {import('./conversation.js').Conversation['lastWords']} last
   */
  showWaiting(st, session, last) {
    const { banner, bannerReason, bannerWords } = this;
    banner.hidden = st.state !== 'needs_you';
    if (banner.hidden) return;
    const need = session.needsYou;
    if (JSON.stringify(need ?? null) !== this.reasonShown) {
      this.reasonShown = JSON.stringify(need ?? null);
      bannerReason.hidden = !need;
      bannerReason.replaceChildren();
      if (need) {
        bannerReason.dataset.kind = need.kind;
        const label = need.kind === 'question' ? 'Question' : need.kind === 'plan' ? 'Plan to approve' : 'Permission';
        const text = need.kind === 'permission' ? need.message || needsText(need) : need.message;
        bannerReason.append(el('strong', '', label), text ? ` · ${text}` : '');
        if (need.kind === 'permission' && need.tool) bannerReason.append(el('code', '', need.input ? `${need.tool}: ${need.input}` : need.tool));
        else if (need.kind === 'question' && need.input) bannerReason.append(el('code', '', need.input));
      }
    }
    if ((last?.seq ?? 0) === this.wordsSeq) return;
    this.wordsSeq = last?.seq ?? 0;
    if (!last) bannerWords.replaceChildren(el('p', 'waiting-none', 'The agent is waiting on you.'));
    else if (last.markdown) bannerWords.replaceChildren(markdown(last.text));
    else bannerWords.replaceChildren(el('p', '', last.text));
  }

  /**
   * The working indicator: shown while the session is working, with the
   * time in that state (waiting on its person, the banner says so instead).
   * @param {Session} session @param {string} lastAt
   */
  showWorking(session, lastAt) {
    const st = currentState(session, lastAt);
    const working = this.working;
    working.hidden = st.state !== 'working';
    if (working.hidden) return;
    working.dataset.state = st.state;
    working.textContent = stateText(st);
  }

  /** The session's goal, above the plan (or where it would be). @param {Session} session */
  showGoal(session) {
    const g = session.goal;
    for (const p of /** @type {NodeListOf<HTMLElement>} */ (this.root.querySelectorAll('[data-goal-line]'))) {
      p.hidden = !g;
      if (!g) continue;
      p.dataset.status = g.status;
      p.textContent = goalText(g);
      p.title = g.by === 'agent' ? 'Set by the agent' : 'Set with /goal';
    }
  }
}
