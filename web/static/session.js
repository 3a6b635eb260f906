// The session view: the conversation, oldest first, paged backwards as the
// reader scrolls up, appended live; and the plan strip under it.

import { get, me, send, sessionPath } from './api.js';
import { showChildren } from './children.js';
import { harnessHasMore, harnessLabel, promptParts, saidBy } from './harness.js';
import { History, author } from './history.js';
import { Live } from './live.js';
import { markdown } from './markdown.js';
import { PlanStrip } from './plan.js';
import { showTitle } from './rename.js';
import { currentState, goalText, needsText, stateText } from './state.js';
import { between, duration, timeEl } from './time.js';
import { ItemTimes, el, learnIDs, renderList, summarize } from './todos.js';
import { TODO_TOOLS, readCall, todoArgs } from './tools.js';
import { callBody, resultBody, statEl } from './toolview.js';

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
  const working = /** @type {HTMLElement} */ (root.querySelector('[data-working]'));
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
  const plan = new PlanStrip({
    root: /** @type {HTMLElement} */ (root.querySelector('[data-plan]')),
    none: /** @type {HTMLElement} */ (root.querySelector('[data-plan-none]')),
    announcer: /** @type {HTMLElement} */ (root.querySelector('[data-announce]')),
    times,
    // One PUT per change, against the version shown; its answer is shown
    // like any todos view.
    save: async (todos, baseVersion) => applyTodos(await send('PUT', `${sessionPath(id)}/todos`, { todos, baseVersion })),
    reload: async () => applyTodos(await get(`${sessionPath(id)}/todos`)),
    openHistory: () => { history.open(); },
    now: () => {
      const st = currentState(session, lastAt);
      return st.state === 'working' || st.state === 'needs_you' ? Date.now() : Date.parse(lastAt);
    },
    signal,
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

  let lastSeq = tail.snapshot?.lastSeq ?? 0;
  let firstSeq = tail.events[0]?.seq ?? lastSeq + 1;
  let hasMore = tail.hasMore;
  let turn = tail.snapshot?.turn ?? session.turn;
  let lastAt = tail.events[tail.events.length - 1]?.at ?? session.updatedAt;
  // The order of todos views: the version grows, and at one version a plan
  // only ever stops standing. A view older than the one shown is dropped.
  // The snapshot's plan is replaced by the todos view of the same version,
  // which also says when it was written.
  /** @type {{version: number, standing: boolean, view?: TodosView}} */
  let shown = { version: tail.snapshot?.todosVersion ?? 0, standing: tail.snapshot?.standing ?? false };
  /** @type {import('./api.js').Todo[]} */
  let planTodos = tail.snapshot?.standing ? tail.snapshot.todos : [];
  const conv = new Conversation(times, myName);
  list.append(...conv.render(tail.events));
  // A plan from an earlier turn: no longer standing, or (a plan that
  // stands for the whole session) written before the open turn began.
  const earlier = () => {
    if (!shown.standing) return true;
    const started = turn.open ? conv.turnStarts.get(turn.number) : undefined;
    const written = shown.view?.updatedAt;
    return Boolean(started && written && Date.parse(written) < Date.parse(started));
  };
  // Why no plan stands: none yet, or (an agent without a todo tool of its
  // own, never heard by hooks, no list ever) Tack is not connected for it.
  // Of the agents Tack knows, both come without one by default: codex's
  // update_plan is off unless configured, and Claude Code offers none on
  // its current models (a session that wrote a list shows the list).
  const why = () => (shown.version === 0 && !session.hooked && (session.agent === 'codex' || session.agent === 'claude-code')
    ? 'This agent has no todo tool and Tack is not connected for it — `tack connect`'
    : 'No plan yet');
  let proposalSeq = 0;
  const showPlan = (/** @type {boolean} */ announce) => {
    proposalSeq = conv.proposal?.seq ?? 0;
    plan.show({ version: shown.version, todos: planTodos, earlier: earlier(), why: why(), proposal: conv.proposal?.plan }, announce);
  };
  showPlan(false);
  if (todosView) applyTodos(todosView);

  // The session's state in the bar, from the server's state and stateSince
  // (read again after events).
  const stateEl = /** @type {HTMLElement} */ (document.querySelector('[data-session-state]'));
  const showState = () => {
    const st = currentState(session, lastAt);
    stateEl.hidden = false;
    stateEl.dataset.state = st.state;
    stateEl.textContent = stateText(st);
    showWaiting(st);
  };
  // Waiting on its person: a banner with what for (the permission, the
  // question, the plan, as the agent put it) and what the agent last said.
  const banner = /** @type {HTMLElement} */ (root.querySelector('[data-waiting-banner]'));
  const bannerReason = /** @type {HTMLElement} */ (root.querySelector('[data-waiting-reason]'));
  /** @type {string} the reason shown, as JSON */
  let reasonShown = '';
  const bannerWords = /** @type {HTMLElement} */ (root.querySelector('[data-waiting-words]'));
  /** @type {number} the seq of the words shown */
  let wordsSeq = -1;
  /** The bar says since when; the banner says what the agent asked. @param {{state: string, since: string}} st */
  const showWaiting = (st) => {
    banner.hidden = st.state !== 'needs_you';
    if (banner.hidden) return;
    const need = session.needsYou;
    if (JSON.stringify(need ?? null) !== reasonShown) {
      reasonShown = JSON.stringify(need ?? null);
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
    const last = conv.lastWords;
    if ((last?.seq ?? 0) === wordsSeq) return;
    wordsSeq = last?.seq ?? 0;
    if (!last) bannerWords.replaceChildren(el('p', 'waiting-none', 'The agent is waiting on you.'));
    else if (last.markdown) bannerWords.replaceChildren(markdown(last.text));
    else bannerWords.replaceChildren(el('p', '', last.text));
  };
  let reread = 0;
  // The session's goal, above the plan (or where it would be).
  const showGoal = () => {
    const g = session.goal;
    for (const p of /** @type {NodeListOf<HTMLElement>} */ (root.querySelectorAll('[data-goal-line]'))) {
      p.hidden = !g;
      if (!g) continue;
      p.dataset.status = g.status;
      p.textContent = goalText(g);
      p.title = g.by === 'agent' ? 'Set by the agent' : 'Set with /goal';
    }
  };
  showGoal();
  /** The session read again: its state, its goal, and why no plan stands once a hook was heard. @param {import('./api.js').Session} s */
  const setSession = (s) => {
    const heard = s.hooked !== session.hooked;
    session = s;
    showState();
    showWorking();
    showGoal();
    if (heard) showPlan(false);
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

  // The working indicator: shown while the session is working, with the
  // time in that state (waiting on its person, the banner says so instead).
  const showWorking = () => {
    const st = currentState(session, lastAt);
    working.hidden = st.state !== 'working';
    if (working.hidden) return;
    working.dataset.state = st.state;
    working.textContent = stateText(st);
  };
  showWorking();
  showState();
  every(() => { showWorking(); showState(); }, 1000);

  // Following: the reader is at the bottom unless they scrolled away. It is
  // decided by the reader's scrolling alone, never by measuring at append
  // time: the plan strip appearing or growing shrinks the scroller without a
  // scroll, and must not count as the reader leaving.
  const newEvents = /** @type {HTMLButtonElement} */ (root.querySelector('[data-new-events]'));
  let following = true;
  // Where the view last scrolled itself: a scroll event landing there is
  // ours (it fires a frame later, maybe after the strip has grown), not the
  // reader's.
  let ownTop = -1;
  const pin = () => {
    scroller.scrollTop = scroller.scrollHeight;
    ownTop = scroller.scrollTop;
  };
  const atBottom = () => scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 40;
  const toBottom = () => {
    pin();
    following = true;
    newEvents.hidden = true;
  };
  toBottom();
  scroller.addEventListener('scroll', () => {
    if (scroller.scrollTop === ownTop) return;
    ownTop = -1;
    following = atBottom();
    if (following) newEvents.hidden = true;
  }, { passive: true });
  // The scroller changes size (the strip appears or grows, a phone's
  // toolbar hides): a following view stays at the bottom.
  const resized = new ResizeObserver(() => { if (following) pin(); });
  resized.observe(scroller);
  signal.addEventListener('abort', () => resized.disconnect());
  newEvents.addEventListener('click', () => {
    toBottom();
    scroller.focus({ preventScroll: true });
  });

  /** @param {TodosView} t */
  function applyTodos(t) {
    learnIDs(t.todos);
    const newer = t.version > shown.version
      || (t.version === shown.version && ((shown.standing && !t.standing) || !shown.view));
    if (!newer) return;
    shown = { version: t.version, standing: t.standing, view: t };
    planTodos = t.todos;
    showPlan(true);
  }

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
    if (ev.type === 'turn/start' || (conv.proposal?.seq ?? 0) !== proposalSeq) showPlan(false);
    showWorking();
    rereadSession();
    if (following) pin();
    else newEvents.hidden = false;
  };

  const live = new Live({
    path: () => `${sessionPath(id)}/live?after=${lastSeq}`,
    onStatus,
    // A (re)connect may have missed a todos message while away; the view is
    // cheap to read and the ordering above drops it if a newer one came first.
    onOpen: () => get(`${sessionPath(id)}/todos`).then(applyTodos, () => {}),
    onMessage: (msg) => {
      if (msg.type === 'event') append(msg.event);
      else if (msg.type === 'todos') applyTodos(msg.todos);
    },
  });
  signal.addEventListener('abort', () => live.stop());

  // Older pages: when the top comes into view, prepend the page before the
  // first shown event and keep the reader's place.
  // A page that fails to load is tried again on the next scroll.
  let loading = false;
  const loadOlder = () => loadPage().catch(() => {});
  const loadPage = async () => {
    if (loading || !hasMore || signal.aborted) return;
    loading = true;
    older.hidden = false;
    try {
      const page = await get(`${sessionPath(id)}/history?limit=${PAGE}&before=${firstSeq}`);
      older.hidden = true;
      const fromBottom = scroller.scrollHeight - scroller.scrollTop;
      list.prepend(...conv.render(page.events));
      scroller.scrollTop = scroller.scrollHeight - fromBottom;
      if (page.events.length > 0) firstSeq = page.events[0].seq;
      hasMore = page.hasMore;
      showWorking();
    } finally {
      loading = false;
      older.hidden = true;
    }
    // Still at the top (a short page, a tall screen): keep going.
    if (hasMore && scroller.scrollTop < 200) loadOlder();
  };
  scroller.addEventListener('scroll', () => {
    if (scroller.scrollTop < 200) loadOlder();
  }, { passive: true });
  if (hasMore && scroller.scrollHeight <= scroller.clientHeight) loadOlder();
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

/**
 * Renders events into rows, keeping what links them across pages: a tool
 * call and its result share one row (whichever is rendered first makes it),
 * a turn's end knows its start.
 */
export class Conversation {
  /** @param {ItemTimes} times @param {string|null} me the signed-in principal's name, whose edits read "You" */
  constructor(times, me) {
    this.times = times;
    this.me = me;
    /** @type {Map<string, ToolRow>} */
    this.tools = new Map();
    /** @type {Map<number, string>} */
    this.turnStarts = new Map();
    /** @type {Map<number, HTMLElement>} */
    this.turnEnds = new Map();
    /**
     * What the agent last said (its latest text, or a harness line such as
     * a notification), for the "waiting for you" banner.
     * @type {{seq: number, text: string, markdown: boolean}|null}
     */
    this.lastWords = null;
    /** The edit row at the end of the conversation, which a next edit by the same person joins. @type {EditRun|null} */
    this.tailRun = null;
    /** The highest seq rendered: a page with lower ones is an older page, prepended. */
    this.maxSeq = 0;
    /** The latest plan the agent proposed (ExitPlanMode), for the plan panel while no list stands. @type {{seq: number, plan: string}|null} */
    this.proposal = null;
  }

  /**
   * @param {TackEvent[]} events oldest first: the tail, one live event, or an older page
   * @returns {HTMLElement[]} their rows, in order
   */
  render(events) {
    const older = events.length > 0 && events[events.length - 1].seq < this.maxSeq;
    /** @type {EditRun|null} */
    let run = older ? null : this.tailRun;
    /** @type {HTMLElement[]} */
    const rows = [];
    for (const ev of events) {
      // Consecutive edits by one person are one row: "You edited the plan 3 times".
      if (ev.type === 'todo/edit' && run && run.by === (ev.data?.by ?? '') && (ev.data?.todos ?? []).length > 0) {
        run.add(ev);
        continue;
      }
      const made = this.renderEvent(ev);
      // A line Tack heard of after its turn had ended (a transcript read
      // late) joins its turn, before the turn's end, never after it.
      const ended = !ev.type.startsWith('turn/') && ev.turn > 0 ? this.turnEnds.get(ev.turn) : undefined;
      const end = ended && Number(ended.dataset.seq) < ev.seq ? ended : undefined;
      if (end && rows.includes(end)) {
        rows.splice(rows.indexOf(end), 0, ...made);
        continue;
      }
      if (end?.isConnected) {
        for (const r of made) end.before(r);
        continue;
      }
      if (made.some((r) => !r.hidden)) run = null;
      const edit = made.find((r) => r.dataset.type === 'todo/edit' && r.dataset.cleared !== 'true');
      if (edit) run = new EditRun(edit, ev, this);
      rows.push(...made);
    }
    if (!older) {
      this.tailRun = run;
      this.maxSeq = Math.max(this.maxSeq, events[events.length - 1]?.seq ?? 0);
    }
    return rows;
  }

  /** @param {TackEvent} ev keeps the agent's words when ev is newer than those kept */
  said(ev) {
    if (this.lastWords && this.lastWords.seq > ev.seq) return;
    const words = saidBy(ev);
    if (words) this.lastWords = { seq: ev.seq, ...words };
  }

  /** @param {TackEvent} ev @returns {HTMLElement[]} */
  renderEvent(ev) {
    const d = ev.data ?? {};
    this.said(ev);
    // Inside a turn the turn's own row says when: a message shows its time
    // on hover only.
    const at = ev.turn > 0 ? '' : ev.at;
    const li = el('li', 'event');
    li.dataset.seq = String(ev.seq);
    li.dataset.type = ev.type;
    // The agent's own time is the event's; when Tack heard of it is kept.
    li.title = `#${ev.seq} · ${new Date(ev.at).toLocaleString()}`
      + (ev.receivedAt ? ` · received ${new Date(ev.receivedAt).toLocaleString()}` : '');
    switch (ev.type) {
      case 'turn/start': {
        li.classList.add('turn');
        this.turnStarts.set(ev.turn, ev.at);
        li.append(el('span', 'turn-label', `Turn ${ev.turn} · `), timeEl(ev.at));
        const end = this.turnEnds.get(ev.turn);
        if (end) this.fillTurnEnd(end, ev.turn, end.dataset.reason ?? '', end.dataset.at ?? '');
        return [li];
      }
      case 'turn/end':
        li.classList.add('turn', 'turn-end');
        li.dataset.reason = d.reason ?? 'completed';
        li.dataset.at = ev.at;
        this.turnEnds.set(ev.turn, li);
        this.fillTurnEnd(li, ev.turn, d.reason ?? 'completed', ev.at);
        return [li];
      case 'message/user':
        if (d.source === 'harness') return [harnessRow(li, d.kind ?? 'other', d.text ?? '', at)];
        li.classList.add('msg', 'user');
        const { context, request } = promptParts(d.text ?? '');
        // A subagent's task was written by the agent that started it, not by you.
        li.append(this.who(d.source === 'agent' ? 'Agent' : 'You', at), el('div', 'text', request));
        if (context) {
          // The IDE's context, folded under what the person asked.
          const fold = el('details', 'prompt-context');
          fold.append(el('summary', '', 'IDE context'), el('pre', '', context));
          li.append(fold);
        }
        return [li];
      case 'message/assistant': {
        li.classList.add('msg', 'assistant');
        const rows = [];
        if (d.text) {
          const body = el('div', 'text markdown');
          // codex's plan mode proposes its plan in a <proposed_plan> block
          // of its text: a card of its own, between what it says around it.
          const parts = proposedParts(d.text);
          for (const p of parts) {
            if (p.proposal) body.append(proposalCard(p.text, 'said'));
            else if (p.text.trim()) body.append(markdown(p.text));
          }
          const said = parts.findLast((p) => p.proposal);
          if (said && (!this.proposal || ev.seq > this.proposal.seq)) this.proposal = { seq: ev.seq, plan: said.text };
          li.append(this.who('Agent', at), body);
          rows.push(li);
        }
        for (const call of d.toolCalls ?? []) rows.push(...this.call(ev, call));
        return rows;
      }
      case 'tool/result':
        return this.result(ev, d);
      case 'todo/write': {
        li.classList.add('todo-row');
        const list = d.todos ?? [];
        this.times.saw(list, ev.at);
        li.append(todoFold(list, list.length === 0 ? 'Plan cleared' : 'Plan updated', summarize(list).state));
        return [li];
      }
      case 'todo/edit': {
        // A person's edit: its own row, naming them ("You" for the reader).
        li.classList.add('todo-row', 'edit-row');
        const list = d.todos ?? [];
        const who = author(d.by ?? '', this.me);
        li.dataset.by = d.by ?? '';
        this.times.saw(list, ev.at);
        if (list.length === 0) li.dataset.cleared = 'true';
        li.append(editFold(who, list, 1, ev.at));
        return [li];
      }
      case 'session/end':
        li.classList.add('turn', 'session-end');
        li.append(el('span', 'turn-label', `Session ended${d.reason ? ` · ${d.reason}` : ''} · `), timeEl(ev.at));
        return [li];
      default:
        li.append(el('span', 'unknown', ev.type));
        return [li];
    }
  }

  /** @param {string} who @param {string} at the time to show, '' for none (the turn's row says it) */
  who(who, at) {
    if (!at) return el('span', 'who', who);
    const p = el('span', 'who', who + ' · ');
    p.append(timeEl(at));
    return p;
  }

  /** @param {HTMLElement} li @param {number} n @param {string} reason @param {string} at */
  fillTurnEnd(li, n, reason, at) {
    const start = this.turnStarts.get(n);
    const took = start ? ` ${reason === 'completed' ? 'in' : 'after'} ${duration(between(start, at))}` : '';
    li.replaceChildren(el('span', 'turn-label', `Turn ${n} ${reason}${took} · `), timeEl(at));
  }

  /** @param {string} callId */
  row(callId) {
    let r = this.tools.get(callId);
    if (!r) {
      r = new ToolRow();
      this.tools.set(callId, r);
    }
    return r;
  }

  /** @param {TackEvent} ev @param {{id: string, name: string, args: any}} call */
  call(ev, call) {
    const r = this.row(call.id);
    r.setCall(ev, call);
    if (r.view?.kind === 'plan' && (!this.proposal || ev.seq > this.proposal.seq)) this.proposal = { seq: ev.seq, plan: r.view.plan };
    // The row was made by its result (on a newer page): it moves up here.
    return [r.li];
  }

  /** @param {TackEvent} ev @param {any} d */
  result(ev, d) {
    const r = this.row(d.callId);
    const fresh = !r.li.isConnected && !r.call;
    r.setResult(ev, d);
    // A result whose call is already shown joins its row; else it makes it.
    return fresh ? [r.li] : [];
  }
}

/**
 * A person's edits in a row: one row that counts them and shows the last
 * list ("You edited the plan 3 times").
 */
class EditRun {
  /** @param {HTMLElement} li @param {TackEvent} ev @param {Conversation} conv */
  constructor(li, ev, conv) {
    this.li = li;
    this.by = ev.data?.by ?? '';
    this.who = author(this.by, conv.me);
    this.times = conv.times;
    this.count = 1;
  }

  /** @param {TackEvent} ev the next edit, by the same person */
  add(ev) {
    const list = ev.data?.todos ?? [];
    this.count++;
    this.times.saw(list, ev.at);
    const open = /** @type {HTMLDetailsElement|null} */ (this.li.querySelector('details'))?.open ?? false;
    const fold = editFold(this.who, list, this.count, ev.at);
    fold.open = open;
    this.li.replaceChildren(fold);
    this.li.dataset.count = String(this.count);
    this.li.dataset.lastSeq = String(ev.seq);
  }
}

/**
 * An edit row's fold: "You edited the plan · 2/5 done · item · 14:03", or
 * "… edited the plan 3 times · …" for several in a row.
 * @param {string} who @param {import('./api.js').Todo[]} list @param {number} count @param {string} at
 */
function editFold(who, list, count, at) {
  const what = list.length === 0 ? 'cleared the plan' : `edited the plan${count > 1 ? ` ${count} times` : ''}`;
  const fold = todoFold(list, `${who} ${what}`, summarize(list).state);
  fold.querySelector('summary')?.append(' · ', timeEl(at));
  return fold;
}

/**
 * A line the agent's harness wrote into the user role: one quiet row with
 * its label, expandable to the text when that says more.
 * @param {HTMLElement} li @param {string} kind @param {string} text @param {string} at its time to show, '' for none
 */
function harnessRow(li, kind, text, at) {
  li.classList.add('harness');
  li.dataset.kind = kind;
  const label = el('span', 'harness-label', harnessLabel(kind, text));
  const time = at ? [' · ', timeEl(at)] : [];
  if (!harnessHasMore(kind, text)) {
    li.append(label, ...time);
    return li;
  }
  const details = el('details', 'fold harness-fold');
  const summary = el('summary', '');
  summary.append(label, ...time);
  details.append(summary, el('pre', 'output', text));
  li.append(details);
  return li;
}

/** One tool call and its result, as one row. */
class ToolRow {
  constructor() {
    this.li = el('li', 'event tool');
    this.li.dataset.type = 'tool';
    this.li.dataset.status = 'running';
    /** @type {any} */
    this.call = null;
    /** @type {import('./tools.js').Call|null} what the call did, read once */
    this.view = null;
    /** @type {any} */
    this.res = null;
    /** @type {string} */
    this.callAt = '';
    /** @type {string} */
    this.resAt = '';
  }

  /** @param {TackEvent} ev @param {any} call */
  setCall(ev, call) {
    this.call = call;
    this.view = readCall(call.name, call.args);
    this.callAt = ev.at;
    this.li.dataset.seq = String(ev.seq);
    this.draw();
  }

  /** @param {TackEvent} ev @param {any} d */
  setResult(ev, d) {
    this.res = d;
    this.resAt = ev.at;
    if (!this.call) this.li.dataset.seq = String(ev.seq);
    this.li.dataset.resultSeq = String(ev.seq);
    this.draw();
  }

  draw() {
    const name = this.call?.name ?? this.res?.name ?? 'tool';
    const status = !this.res ? 'running' : this.res.isError ? 'error' : 'ok';
    const li = this.li;
    li.dataset.status = status;
    li.dataset.tool = name;
    const open = /** @type {HTMLDetailsElement|null} */ (li.querySelector(':scope > details'))?.open ?? false;
    if (TODO_TOOLS.has(name)) {
      // A todo tool's accepted write is the todo/write row that follows, so
      // its call and result are kept out of sight; a rejected one shows the
      // list that was rejected, with the reason.
      li.classList.add('todo-row');
      li.hidden = status !== 'error';
      if (status === 'error') {
        const reason = String(this.res.content ?? '').split('\n', 1)[0];
        const fold = todoFold(todoArgs(this.call?.args), `Plan rejected · ${reason}`, 'rejected');
        fold.open = open;
        li.replaceChildren(fold);
      }
      return;
    }
    if (this.view?.kind === 'plan') {
      li.classList.add('proposal-row');
      li.replaceChildren(proposalCard(this.view.plan, status));
      return;
    }
    const details = el('details', 'fold tool-fold');
    details.open = open;
    const summary = el('summary', '');
    const icon = el('span', 'tool-icon', { running: '◌', ok: '✓', error: '✕' }[status]);
    icon.setAttribute('aria-hidden', 'true');
    summary.append(icon, el('span', 'tool-name', name));
    const view = this.view;
    if (view?.gist) {
      const g = el('span', 'tool-gist', view.gist);
      g.title = view.gist;
      summary.append(g);
    }
    if (view?.stat) summary.append(statEl(view.stat));
    if (status === 'error') summary.append(el('span', 'tool-failed', 'failed'));
    else summary.append(el('span', 'visually-hidden', status === 'ok' ? ' (done)' : ' (running)'));
    if (this.callAt && this.resAt) summary.append(el('span', 'tool-time', duration(between(this.callAt, this.resAt))));
    details.append(summary);
    // The body (a diff may be thousands of lines) is drawn when first opened.
    const fill = () => {
      if (view) details.append(...callBody(view));
      if (this.res) details.append(...resultBody(view, this.res.content));
    };
    if (open) fill();
    else details.addEventListener('toggle', fill, { once: true });
    li.replaceChildren(details);
  }
}

/** What became of a proposed plan, by its call's status; one in a message (codex's) says nothing of it. */
const PROPOSAL_STATE = { running: 'Awaiting approval', ok: 'Approved', error: 'Not approved', said: '' };

/**
 * An agent's text cut around its <proposed_plan> blocks (codex's plan
 * mode): the plain parts and the plans, in order.
 * @param {string} text
 * @returns {{text: string, proposal: boolean}[]}
 */
export function proposedParts(text) {
  const out = [];
  const re = /<proposed_plan>\n?([\s\S]*?)\n?<\/proposed_plan>/g;
  let at = 0;
  for (const m of text.matchAll(re)) {
    out.push({ text: text.slice(at, m.index), proposal: false }, { text: m[1], proposal: true });
    at = m.index + m[0].length;
  }
  out.push({ text: text.slice(at), proposal: false });
  return out.filter((p) => p.proposal || p.text);
}

/**
 * A plan the agent proposed (ExitPlanMode, codex's <proposed_plan>): its
 * Markdown, under "Proposed plan" and what became of it.
 * @param {string} plan
 * @param {'running'|'ok'|'error'|'said'} status
 */
function proposalCard(plan, status) {
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

/**
 * The compact row of a list: its gist, expandable to the list itself.
 * @param {import('./api.js').Todo[]} todos
 * @param {string} label "Plan updated", "Plan rejected · why"
 * @param {string} state
 */
function todoFold(todos, label, state) {
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
