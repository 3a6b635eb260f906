// The plan strip docked under the conversation: the standing plan at a
// glance and, expanded, the place a person edits it. Every change is one
// gesture (edit.js) sent as one PUT against the version shown; a conflict
// shows the newer list and keeps the gesture to apply again.

import { APIError } from './api.js';
import { markdown } from './markdown.js';
import { apply, describe, done, nextStatus } from './edit.js';
import { duration } from './time.js';
import { STATUS_LABEL, addItemNotes, addItemTime, el, itemText, summarize } from './todos.js';

/** @typedef {import('./api.js').Todo} Todo */
/** @typedef {import('./edit.js').Gesture} Gesture */
/** @typedef {import('./edit.js').TodoInput} TodoInput */
/** @typedef {import('./todos.js').ItemTimes} ItemTimes */
/**
 * The plan shown ([] when there is none), the version it is, and whether it
 * is from an earlier turn (shown folded, with its progress).
 * While none stands, why (`why`) and the plan the agent last proposed
 * (`proposal`, Markdown), if any.
 * @typedef {{version: number, todos: Todo[], earlier?: boolean, why?: string, proposal?: string}} Shown
 */
/** @typedef {{content: string, act: string, list: 'open'|'done', index: number}} FocusKey */

const EXPANDED_KEY = 'tack.plan.expanded';

/**
 * @typedef {object} PlanOptions
 * @property {HTMLElement} root the element with data-plan
 * @property {HTMLElement} none shown while no plan stands: why there is none,
 *   the latest proposed plan, "Add a plan", "Plan history"
 * @property {HTMLElement} announcer the aria-live region changes are told through
 * @property {ItemTimes} times
 * @property {(todos: TodoInput[], baseVersion: number) => Promise<void>} save one PUT; it shows the view it is answered
 * @property {() => Promise<void>} reload reads the list again and shows it (after a conflict)
 * @property {() => void} openHistory
 * @property {() => number} now the time the plan's clocks run to: now while
 *   the session works, its last activity once it rests
 * @property {AbortSignal} [signal] stops its clock (the board shows another session)
 */

/**
 * Where the strip becomes a side panel, always open: the board's width
 * (the list beside the session, the plan beside the conversation).
 */
export const BOARD = '(min-width: 76rem)';

/** @param {string} className @param {string} act @param {string} label @param {string} [text] */
function button(className, act, label, text) {
  const b = /** @type {HTMLButtonElement} */ (el('button', className, text));
  b.type = 'button';
  b.dataset.act = act;
  b.setAttribute('aria-label', label);
  return b;
}

export class PlanStrip {
  /** @param {PlanOptions} opts */
  constructor(opts) {
    const root = opts.root;
    this.opts = opts;
    this.root = root;
    this.times = opts.times;
    /** @param {string} sel */
    const $ = (sel) => /** @type {HTMLElement} */ (root.querySelector(sel));
    this.toggle = /** @type {HTMLButtonElement} */ (root.querySelector('[data-plan-toggle]'));
    this.label = /** @type {HTMLElement} */ (root.querySelector('.plan-label'));
    this.panel = $('[data-plan-panel]');
    this.items = $('[data-plan-items]');
    this.doneFold = /** @type {HTMLDetailsElement} */ ($('[data-plan-done]'));
    this.doneItems = $('[data-plan-done-items]');
    this.doneCount = $('[data-plan-done-count]');
    this.progress = $('[data-plan-progress]');
    this.bar = /** @type {HTMLProgressElement} */ ($('[data-plan-bar]'));
    this.current = $('[data-plan-current]');
    this.elapsed = $('[data-plan-elapsed]');
    this.heldBox = $('[data-plan-held]');
    this.heldText = $('[data-plan-held-text]');
    this.reapply = /** @type {HTMLButtonElement} */ ($('[data-plan-reapply]'));
    this.errorBox = $('[data-plan-error]');
    this.addForm = /** @type {HTMLFormElement} */ ($('[data-plan-add]'));
    this.addInput = /** @type {HTMLInputElement} */ ($('[data-plan-add-input]'));
    this.clearButton = /** @type {HTMLButtonElement} */ ($('[data-plan-clear]'));
    this.clearConfirm = $('[data-plan-clear-confirm]');
    this.startButton = /** @type {HTMLButtonElement} */ (opts.none.querySelector('[data-plan-start]'));
    this.announcer = opts.announcer;
    this.lastAnnounced = '';
    /** @type {Shown} */
    this.view = { version: 0, todos: [] };
    this.todos = this.view.todos;
    /** A view that came while an item's text was being edited, shown when the editing ends. @type {{view: Shown, announce: boolean}|null} */
    this.deferred = null;
    /** @type {{content: string, index: number, input: HTMLInputElement}|null} */
    this.editing = null;
    /** The person's change a conflict kept, to apply again. @type {Gesture|null} */
    this.held = null;
    /** The proposed plan drawn in the place of the plan, drawn again only when it changes. */
    this.proposalShown = '';
    /** "Add a plan" was pressed: the strip shows with no items yet. */
    this.drafting = false;
    /** Where focus goes after the next render (else it stays on the item it was on). @type {Partial<FocusKey>|null} */
    this.focusNext = null;
    this.queue = Promise.resolve();
    this.inFlight = 0;

    // On the board the plan is a side panel, always open; the strip's
    // preference is kept for narrower screens.
    const side = window.matchMedia(BOARD);
    this.pinned = side.matches;
    const pin = () => {
      this.pinned = side.matches;
      this.root.dataset.pinned = String(this.pinned);
      if (this.pinned) this.toggle.setAttribute('aria-disabled', 'true');
      else this.toggle.removeAttribute('aria-disabled');
      this.setExpanded(localStorage.getItem(EXPANDED_KEY) === 'true');
    };
    pin();
    side.addEventListener('change', pin, { signal: opts.signal });
    this.toggle.addEventListener('click', () => {
      if (this.pinned) return;
      const expanded = this.toggle.getAttribute('aria-expanded') !== 'true';
      localStorage.setItem(EXPANDED_KEY, String(expanded));
      this.setExpanded(expanded);
    });
    this.panel.addEventListener('click', (e) => this.onClick(e));
    this.panel.addEventListener('keydown', (e) => this.onKey(e));
    this.addForm.addEventListener('submit', (e) => {
      e.preventDefault();
      const content = this.addInput.value;
      if (!content.trim()) return;
      this.addInput.value = '';
      this.run({ kind: 'add', content });
    });
    this.addInput.addEventListener('keydown', (e) => {
      if (e.key !== 'Escape' || this.addInput.value || !this.drafting) return;
      // Escape from a plan not begun: back to where it was started.
      e.preventDefault();
      this.drafting = false;
      this.render(this.view, false);
      this.startButton.focus();
    });
    this.reapply.addEventListener('click', () => { if (this.held) this.run(this.held); });
    $('[data-plan-discard]').addEventListener('click', () => {
      this.held = null;
      this.render(this.view, false);
      this.addInput.focus();
      this.say('Your change was discarded.');
    });
    this.clearButton.addEventListener('click', () => this.askClear(true));
    this.clearConfirm.addEventListener('click', (e) => {
      const act = /** @type {HTMLElement} */ (e.target).closest('button')?.dataset.act;
      if (act === 'clear-yes') {
        // The question stays, focus on it, until the answer is shown.
        this.run({ kind: 'clear' });
      } else if (act === 'clear-no') {
        this.askClear(false);
        this.clearButton.focus();
      }
    });
    this.startButton.addEventListener('click', () => {
      this.drafting = true;
      this.render(this.view, false);
      this.setExpanded(true);
      this.addInput.focus();
    });
    for (const b of [...root.querySelectorAll('[data-plan-history]'), ...opts.none.querySelectorAll('[data-plan-history]')]) {
      b.addEventListener('click', () => opts.openHistory());
    }
    const clock = window.setInterval(() => this.tick(), 1000);
    opts.signal?.addEventListener('abort', () => window.clearInterval(clock));
  }

  /** @param {boolean} expanded whether open, unless the board keeps it open */
  setExpanded(expanded) {
    expanded ||= this.pinned;
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
   * Shows the standing plan, or hides the strip when none stands. While an
   * item's text is being edited the view waits, so nothing typed is swept
   * away; the edit is then sent against the version the person saw.
   * @param {Shown} view
   * @param {boolean} announce whether to tell screen readers about the change
   */
  show(view, announce) {
    if (this.editing) {
      this.deferred = { view, announce };
      return;
    }
    this.render(view, announce);
  }

  /**
   * What the place of a plan says while none stands: why, and the plan the
   * agent last proposed, drawn again only when it changes.
   * @param {Shown} view
   */
  showNone(view) {
    const none = this.opts.none;
    const why = /** @type {HTMLElement} */ (none.querySelector('[data-plan-why]'));
    why.replaceChildren();
    const [text, command] = (view.why ?? 'No plan yet').split('`');
    why.append(text);
    if (command) why.append(el('code', '', command));
    const box = /** @type {HTMLElement} */ (none.querySelector('[data-plan-proposal]'));
    const proposal = view.proposal ?? '';
    box.hidden = !proposal;
    if (this.proposalShown !== proposal) {
      this.proposalShown = proposal;
      const body = /** @type {HTMLElement} */ (box.querySelector('[data-plan-proposal-body]'));
      body.replaceChildren(markdown(proposal));
    }
  }

  /** @param {Shown} view @param {boolean} announce */
  render(view, announce) {
    const todos = view.todos;
    // A plan from an earlier turn folds when it becomes one; the reader may
    // open it again (the preference is left as it was).
    const wasEarlier = Boolean(this.view.earlier) && this.view.todos.length > 0;
    if (view.earlier && todos.length > 0 && !wasEarlier) this.setExpanded(false);
    this.label.textContent = view.earlier ? 'Plan from an earlier turn' : 'Plan';
    this.root.dataset.earlier = String(Boolean(view.earlier));
    this.view = view;
    this.todos = todos;
    this.times.saw(todos);
    if (todos.length > 0) this.drafting = false;
    const s = summarize(todos);
    const hadFocus = this.root.contains(document.activeElement);
    this.root.hidden = todos.length === 0 && !this.drafting && !this.held;
    this.opts.none.hidden = !this.root.hidden;
    this.showNone(view);
    this.root.dataset.state = todos.length === 0 ? 'empty' : s.state;
    this.progress.textContent = todos.length === 0 ? '' : s.progress;
    this.bar.max = Math.max(1, s.total);
    this.bar.value = s.done;
    this.current.textContent = todos.length === 0 ? 'No items yet' : s.current;
    this.root.dataset.version = String(view.version);
    this.clearConfirm.hidden = true;
    this.clearButton.hidden = todos.length === 0;
    // Done items fold into "n done"; what is in progress and what is next
    // stay in view.
    const focus = this.focusNext ?? this.focusKey();
    this.focusNext = null;
    const done = todos.filter((t) => t.status === 'completed');
    this.doneFold.hidden = done.length === 0;
    this.doneCount.textContent = `${done.length} done`;
    this.doneItems.replaceChildren(...done.map((t) => this.item(t)));
    this.items.replaceChildren(...todos.filter((t) => t.status !== 'completed').map((t) => this.item(t)));
    this.renderHeld();
    this.tick();
    this.reveal();
    if (focus) this.restoreFocus(focus);
    if (this.root.hidden && hadFocus) this.startButton.focus();
    const line = todos.length === 0 ? 'Plan cleared.' : `Plan: ${s.done} of ${s.total} done. ${s.current}`;
    if (announce && line !== this.lastAnnounced) this.announcer.textContent = line;
    this.lastAnnounced = line;
  }

  /**
   * One item of the strip: its status button (a click moves it on), its text
   * (a click or Enter edits it), its time, and move and delete buttons.
   * @param {Todo} t
   */
  item(t) {
    const li = el('li', 'todo editable');
    li.dataset.status = t.status;
    li.dataset.content = t.content;
    const next = nextStatus(t.status);
    const status = button('todo-status', 'status', `“${t.content}” is ${STATUS_LABEL[t.status]}; mark it ${STATUS_LABEL[next]}`);
    const mark = el('span', 'todo-mark');
    mark.setAttribute('aria-hidden', 'true');
    status.append(mark);
    const text = /** @type {HTMLButtonElement} */ (el('button', 'todo-edit'));
    text.type = 'button';
    text.dataset.act = 'edit';
    text.setAttribute('aria-describedby', 'plan-keys');
    text.title = 'Edit the text';
    text.append(itemText(t));
    li.append(status, text);
    addItemNotes(li, t, this.todos);
    addItemTime(li, t, this.times);
    const tools = el('span', 'todo-tools');
    tools.append(
      button('todo-tool', 'up', `Move “${t.content}” up`, '↑'),
      button('todo-tool', 'down', `Move “${t.content}” down`, '↓'),
      button('todo-tool', 'delete', `Delete “${t.content}”`, '✕'),
    );
    li.append(tools);
    return li;
  }

  /** Where focus is among the items, to put it back after a render. @returns {FocusKey|null} */
  focusKey() {
    const a = /** @type {HTMLElement|null} */ (document.activeElement);
    const li = /** @type {HTMLElement|null} */ (a?.closest('li.editable') ?? null);
    if (!a || !li || !this.panel.contains(li)) return null;
    const list = this.doneItems.contains(li) ? 'done' : 'open';
    const index = [...(list === 'done' ? this.doneItems : this.items).children].indexOf(li);
    return { content: li.dataset.content ?? '', act: a.dataset.act ?? 'edit', list, index };
  }

  /**
   * Puts focus on the item it was on (or the one it is told to), where it
   * went; if that item is gone or folded away, on the item now in its place.
   * Only when focus was lost with the old rows: it is never taken from elsewhere.
   * @param {Partial<FocusKey>} key
   */
  restoreFocus(key) {
    const a = document.activeElement;
    if (a && a !== document.body) return;
    /** @param {Element|null|undefined} li */
    const target = (li) => /** @type {HTMLElement|null} */ (li?.querySelector(`[data-act="${key.act ?? 'edit'}"]`) ?? li?.querySelector('[data-act="edit"]') ?? null);
    const all = [...this.panel.querySelectorAll('li.editable')];
    const same = all.find((li) => /** @type {HTMLElement} */ (li).dataset.content === key.content);
    if (same && !same.closest('details:not([open])')) {
      target(same)?.focus();
      return;
    }
    const list = key.list === 'done' && this.doneFold.open ? this.doneItems : this.items;
    const rows = [...list.children];
    const near = rows[Math.min(key.index ?? 0, rows.length - 1)];
    if (near) target(near)?.focus();
    else this.addInput.focus();
  }

  /** Shows the change a conflict kept, if any. @param {boolean} [focus] */
  renderHeld(focus) {
    this.heldBox.hidden = !this.held;
    if (!this.held) return;
    this.heldText.textContent = `The plan changed before your change arrived, so it was not made. The latest list is shown; your change is kept: ${describe(this.held)}.`;
    if (focus) this.reapply.focus();
  }

  /** @param {string} text */
  say(text) {
    this.announcer.textContent = text;
    this.lastAnnounced = '';
  }

  /** @param {string} message */
  showError(message) {
    this.errorBox.textContent = message;
    this.errorBox.hidden = !message;
  }

  /** @param {boolean} open */
  askClear(open) {
    this.clearConfirm.hidden = !open;
    this.clearButton.hidden = open;
    if (open) {
      /** @type {HTMLElement} */ (this.clearConfirm.querySelector('[data-label]')).textContent = `Clear all ${this.todos.length} items?`;
      /** @type {HTMLElement} */ (this.clearConfirm.querySelector('[data-act="clear-yes"]')).focus();
    }
  }

  /** @param {MouseEvent} e */
  onClick(e) {
    const b = /** @type {HTMLElement} */ (e.target).closest('button[data-act]');
    const li = /** @type {HTMLElement|null} */ (b?.closest('li.editable') ?? null);
    if (!b || !li) return;
    this.act(/** @type {HTMLElement} */ (b).dataset.act ?? '', li);
  }

  /**
   * Keys on an item: Alt+↑/↓ move it, Delete deletes it, ↑/↓ go to the item
   * above or below; Enter or Space on its text edits it (it is a button).
   * @param {KeyboardEvent} e
   */
  onKey(e) {
    const t = /** @type {HTMLElement} */ (e.target);
    if (t.dataset.act === 'input' || e.ctrlKey || e.metaKey) return;
    const li = /** @type {HTMLElement|null} */ (t.closest('li.editable'));
    if (!li) {
      if (e.key === 'Escape' && !this.clearConfirm.hidden) {
        this.askClear(false);
        this.clearButton.focus();
      }
      return;
    }
    if (e.altKey && !e.shiftKey && (e.key === 'ArrowUp' || e.key === 'ArrowDown')) {
      e.preventDefault();
      this.act(e.key === 'ArrowUp' ? 'up' : 'down', li);
    } else if (e.key === 'Delete' && !e.altKey && !e.shiftKey) {
      e.preventDefault();
      this.act('delete', li);
    } else if (!e.altKey && !e.shiftKey && (e.key === 'ArrowUp' || e.key === 'ArrowDown')) {
      const rows = [...this.panel.querySelectorAll('li.editable')].filter((r) => !r.closest('details:not([open])'));
      const to = rows[rows.indexOf(li) + (e.key === 'ArrowUp' ? -1 : 1)];
      if (!to) return;
      e.preventDefault();
      /** @type {HTMLElement|null} */ (to.querySelector(`[data-act="${t.dataset.act}"]`) ?? to.querySelector('[data-act="edit"]'))?.focus();
    }
  }

  /** @param {string} act @param {HTMLElement} li */
  act(act, li) {
    const content = li.dataset.content ?? '';
    const t = this.todos.find((x) => x.content === content);
    if (!t) return;
    switch (act) {
      case 'status':
        this.run({ kind: 'status', content, to: nextStatus(t.status) });
        break;
      case 'edit':
        this.startEdit(li, content, content);
        break;
      case 'up':
      case 'down':
        this.run({ kind: 'move', content, by: act === 'up' ? -1 : 1 });
        break;
      case 'delete': {
        // Focus goes on to the item after it (or before, at the end).
        const key = this.focusKey();
        if (key) this.focusNext = { ...key, content: '' };
        this.run({ kind: 'delete', content });
        break;
      }
    }
  }

  /**
   * Turns an item's text into a field: Enter saves, Escape cancels, leaving
   * the field saves.
   * @param {HTMLElement} li
   * @param {string} content the item's content
   * @param {string} value what the field starts with (the text typed before, after a refusal)
   * @param {string} [error] why the last try was refused
   */
  startEdit(li, content, value, error) {
    const text = li.querySelector('[data-act="edit"]');
    if (!text || this.editing) return;
    const input = /** @type {HTMLInputElement} */ (el('input', 'todo-input'));
    input.type = 'text';
    input.value = value;
    input.maxLength = 1000;
    input.dataset.act = 'input';
    input.setAttribute('aria-label', `Edit “${content}”`);
    if (error) {
      input.setAttribute('aria-invalid', 'true');
      input.setAttribute('aria-describedby', 'plan-error');
    }
    const index = this.todos.findIndex((t) => t.content === content);
    this.editing = { content, index, input };
    text.replaceWith(input);
    input.focus();
    input.select();
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        e.preventDefault();
        this.finishEdit(true);
      } else if (e.key === 'Escape') {
        e.preventDefault();
        e.stopPropagation();
        this.finishEdit(false);
      }
    });
    input.addEventListener('blur', () => this.finishEdit(true));
  }

  /** @param {boolean} save */
  finishEdit(save) {
    const e = this.editing;
    if (!e) return;
    this.editing = null;
    const to = e.input.value.trim();
    // The gesture is bound to the list shown now, before any view that
    // came meanwhile is shown.
    if (save && to !== '' && to !== e.content) this.run({ kind: 'text', content: e.content, to, index: e.index });
    // Back to a button, the text as it stands until the answer comes; focus
    // stays on it (and then on the renamed item in its place).
    if (document.activeElement === e.input) {
      const list = this.doneItems.contains(e.input) ? 'done' : 'open';
      const li = e.input.closest('li');
      const index = li?.parentElement ? [...li.parentElement.children].indexOf(li) : 0;
      this.focusNext = { content: e.content, act: 'edit', list, index };
    }
    const d = this.deferred;
    this.deferred = null;
    if (d) this.render(d.view, d.announce);
    else this.render(this.view, false);
  }

  /**
   * Sends a gesture: at once against the version shown, or, while another
   * is on its way, against the version that one's answer shows.
   * @param {Gesture} g
   */
  run(g) {
    const base = this.inFlight === 0 ? this.view : null;
    this.inFlight++;
    this.queue = this.queue
      .then(() => this.send(g, base ?? this.view))
      .finally(() => { this.inFlight--; });
  }

  /** @param {Gesture} g @param {Shown} base */
  async send(g, base) {
    const list = apply(base.todos, g);
    if (!list) {
      if (this.held === g) {
        this.held = null;
        this.renderHeld();
        this.addInput.focus();
      }
      this.say(`Nothing to change: ${describe(g)} no longer applies.`);
      return;
    }
    this.showError('');
    this.panel.setAttribute('aria-busy', 'true');
    try {
      await this.opts.save(list, base.version);
      if (this.held === g) {
        this.held = null;
        const hadFocus = this.heldBox.contains(document.activeElement);
        this.renderHeld();
        if (hadFocus) this.addInput.focus();
      }
      this.say(done(g));
    } catch (err) {
      if (err instanceof APIError && err.status === 409) {
        // Someone wrote first: show their list, keep the person's change.
        this.held = g;
        await this.opts.reload().catch(() => {});
        // A field being typed in stays as it is; the rows follow when it closes.
        if (!this.editing) this.render(this.view, false);
        this.renderHeld(!this.editing);
        this.say(`The plan changed before your change arrived. The latest list is shown; your change is kept: ${describe(g)}. Apply again?`);
        return;
      }
      const message = err instanceof Error ? err.message : String(err);
      this.showError(message);
      // What was typed goes back where it was typed.
      if (g.kind === 'text') {
        const li = [...this.panel.querySelectorAll('li.editable')].find((r) => /** @type {HTMLElement} */ (r).dataset.content === g.content);
        if (li) this.startEdit(/** @type {HTMLElement} */ (li), g.content, g.to, message);
      } else if (g.kind === 'add' && !this.addInput.value) {
        this.addInput.value = g.content;
        this.addInput.focus();
      }
    } finally {
      this.panel.removeAttribute('aria-busy');
    }
  }

  /**
   * The plan's elapsed time (from its first item's creation to its last
   * change, or to opts.now() while unfinished) and running items' times.
   */
  tick() {
    const ms = (/** @type {(string|null|undefined)[]} */ ts) => ts.filter(Boolean).map((t) => Date.parse(/** @type {string} */ (t)));
    const starts = ms(this.todos.map((t) => t.createdAt ?? t.updatedAt));
    const now = this.opts.now();
    if (starts.length === 0) {
      this.elapsed.textContent = '';
    } else {
      const finished = this.todos.every((t) => t.status === 'completed');
      const end = finished ? Math.max(...ms(this.todos.map((t) => t.completedAt ?? t.updatedAt))) : now;
      this.elapsed.textContent = duration(Math.max(0, end - Math.min(...starts)));
      this.elapsed.title = finished ? 'Time the plan took' : 'Time since the plan began';
    }
    this.items.querySelectorAll('li[data-since]').forEach((li) => {
      const d = li.querySelector('[data-item-time]');
      if (d) d.textContent = duration(Math.max(0, now - Date.parse(/** @type {string} */ (/** @type {HTMLElement} */ (li).dataset.since))));
    });
  }
}
