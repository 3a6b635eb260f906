// The session view: the conversation, oldest first, paged backwards as the
// reader scrolls up, appended live; and the plan strip under it.

import { get, me, sessionPath } from './api.js';
import { showChildren } from './children.js';
import { Conversation } from './conversation.js';
import { History } from './history.js';
import { Live } from './live.js';
import { showTitle } from './rename.js';
import { Follow, olderPages } from './scroll.js';
import { SessionPlan } from './sessionplan.js';
import { SessionState } from './sessionstate.js';
import { currentState } from './state.js';
import { ItemTimes, learnIDs } from './todos.js';

/** @typedef {import('./api.js').TackEvent} TackEvent */
/** @typedef {import('./api.js').TodosView} TodosView */

const PAGE = 50;

/**
 * @typedef {object} ShowOptions
 * @property {AbortSignal} [signal] stops the view: its sockets, timers and listeners (the board shows another session)
 * @property {() => void} [mount] puts root in the page, once there is something to show
 * @property {EventTarget} [summaries] dispatches 'summary' events (detail: a session's newest summary) from the list's feed: what changes a session without an event (its agent waiting on its person) reaches the view
 */

/**
 * @param {HTMLElement} root the element with data-view="session", a fresh copy of the page's template
 * @param {string} id
 * @param {(state: import('./live.js').LiveState) => void} onStatus told each change of its socket's state
 * @param {ShowOptions} [opts]
 */
export async function showSession(root, id, onStatus, opts = {}) {
  const signal = opts.signal ?? new AbortController().signal;
  /** setInterval until the view stops. @param {() => void} fn @param {number} ms */
  const every = (fn, ms) => {
    const t = window.setInterval(fn, ms);
    signal.addEventListener('abort', () => window.clearInterval(t));
  };
  const scroller = /** @type {HTMLElement} */ (root.querySelector('[data-scroller]'));
  const list = /** @type {HTMLElement} */ (root.querySelector('[data-events]'));
  const older = /** @type {HTMLElement} */ (root.querySelector('[data-older]'));
  const times = new ItemTimes();

  const [first, tail, whoami, todosView] = await Promise.all([
    get(sessionPath(id)),
    /** @type {Promise<import('./api.js').HistoryPage>} */ (get(`${sessionPath(id)}/history?limit=${PAGE}`)),
    me(),
    // The list the API reports, standing or from an earlier turn: the
    // snapshot holds only a standing one.
    /** @type {Promise<TodosView|null>} */ (get(`${sessionPath(id)}/todos`).catch(() => null)),
  ]);
  if (signal.aborted) return;
  // Before the conversation is drawn: its plan rows name blockers by id.
  if (todosView) learnIDs(todosView.todos);
  /** @type {import('./api.js').Session} */
  let session = first;
  const myName = whoami?.principal.name ?? null;
  const history = new History(/** @type {HTMLDialogElement} */ (root.querySelector('[data-history]')), id, myName);
  let lastSeq = tail.snapshot?.lastSeq ?? 0;
  const firstSeq = tail.events[0]?.seq ?? lastSeq + 1;
  let turn = tail.snapshot?.turn ?? session.turn;
  let lastAt = tail.events[tail.events.length - 1]?.at ?? session.updatedAt;
  const conv = new Conversation(times, myName);
  const plan = new SessionPlan({
    root, id, times, conv, snapshot: tail.snapshot, session: () => session, turn: () => turn, signal,
    openHistory: () => { history.open(); },
    now: () => {
      const st = currentState(session, lastAt);
      return st.state === 'working' || st.state === 'needs_you' ? Date.now() : Date.parse(lastAt);
    },
  });
  document.title = `${session.title} · Tack`;
  // Its owner (or an admin) with a write credential may rename it; the
  // server decides in the end, so a page that cannot tell offers it.
  const mayRename = !whoami || (whoami.scope !== 'read' && (Boolean(whoami.principal.admin) || session.owner === whoami.principal.id));
  showTitle(/** @type {HTMLElement} */ (document.querySelector('[data-title]')), session, mayRename, (s) => {
    session = { ...session, title: s.title, untitled: s.untitled };
    document.title = `${s.title} · Tack`;
  });
  opts.mount?.();
  root.hidden = false;
  keyboard(root, scroller, signal);

  list.append(...conv.render(tail.events));
  plan.show(false);
  if (todosView) plan.apply(todosView);

  const state = new SessionState(root);
  const showState = () => state.showState(session, lastAt, conv.lastWords);
  const showWorking = () => state.showWorking(session, lastAt);
  state.showGoal(session);
  let reread = 0;
  /** The session read again: its state, its goal, and why no plan stands once a hook was heard. @param {import('./api.js').Session} s */
  const setSession = (s) => {
    const heard = s.hooked !== session.hooked;
    session = s;
    showState();
    showWorking();
    state.showGoal(session);
    if (heard) plan.show(false);
  };
  const rereadSession = () => {
    window.clearTimeout(reread);
    reread = window.setTimeout(() => get(sessionPath(id)).then((s) => { if (!signal.aborted) setSession(s); }, () => {}), 500);
  };
  signal.addEventListener('abort', () => window.clearTimeout(reread));
  opts.summaries?.addEventListener('summary', (e) => {
    const s = /** @type {CustomEvent<import('./api.js').Session>} */ (e).detail;
    if (s.id !== id || s.lastSeq < session.lastSeq) return;
    setSession(s);
  }, { signal });
  showChildren(/** @type {HTMLElement} */ (root.querySelector('[data-children]')), id, signal).catch(() => {});
  showWorking();
  showState();
  every(() => { showWorking(); showState(); }, 1000);

  const follow = new Follow(scroller, /** @type {HTMLButtonElement} */ (root.querySelector('[data-new-events]')), signal);

  /** @param {TackEvent} ev */
  const append = (ev) => {
    if (ev.seq <= lastSeq) return; // replayed after a reconnect: already shown
    lastSeq = ev.seq;
    lastAt = ev.at;
    if (ev.type === 'turn/start') turn = { number: ev.turn, open: true };
    if (ev.type === 'turn/end') turn = { number: ev.turn, open: false };
    // What the server will say of the state, at once: the read that follows
    // confirms it.
    const next = ev.type === 'session/end' ? 'ended' : ev.type === 'turn/start' ? 'working' : ev.type === 'turn/end' ? 'idle' : '';
    if (next && session.state !== 'ended') session = { ...session, state: next, stateSince: ev.at };
    list.append(...conv.render([ev]));
    // A plan that stands for the session is now from an earlier turn; a
    // new proposal shows while none stands.
    if (ev.type === 'turn/start' || plan.proposalMoved()) plan.show(false);
    showWorking();
    rereadSession();
    follow.appended();
  };

  const live = new Live({
    path: () => `${sessionPath(id)}/live?after=${lastSeq}`,
    onStatus,
    // A (re)connect may have missed a todos message while away; the view is
    // cheap to read and the ordering above drops it if a newer one came first.
    onOpen: () => get(`${sessionPath(id)}/todos`).then((t) => plan.apply(t), () => {}),
    onMessage: (msg) => {
      if (msg.type === 'event') append(msg.event);
      else if (msg.type === 'todos') plan.apply(msg.todos);
    },
  });
  signal.addEventListener('abort', () => live.stop());

  olderPages({
    scroller, older, signal, firstSeq, hasMore: tail.hasMore,
    read: (before) => get(`${sessionPath(id)}/history?limit=${PAGE}&before=${before}`),
    prepend: (events) => list.prepend(...conv.render(events)),
    loaded: showWorking,
  });
}

/**
 * Keyboard: Alt+Shift+P (or the skip link, the first tab stop) goes to the
 * plan strip; the conversation is a tab stop, so PageUp and PageDown scroll it.
 * @param {HTMLElement} root
 * @param {HTMLElement} scroller
 * @param {AbortSignal} signal
 */
function keyboard(root, scroller, signal) {
  const toggle = /** @type {HTMLElement} */ (root.querySelector('[data-plan-toggle]'));
  const planRoot = /** @type {HTMLElement} */ (root.querySelector('[data-plan]'));
  const skip = /** @type {HTMLElement} */ (document.querySelector('[data-skip-plan]'));
  const toPlan = () => {
    if (planRoot.hidden) return false;
    toggle.focus();
    return true;
  };
  skip.hidden = false;
  skip.addEventListener('click', (e) => {
    e.preventDefault();
    if (!toPlan()) scroller.focus();
  }, { signal });
  document.addEventListener('keydown', (e) => {
    if (e.altKey && e.shiftKey && !e.ctrlKey && !e.metaKey && e.code === 'KeyP' && toPlan()) e.preventDefault();
  }, { signal });
}
