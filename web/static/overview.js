// The board's right pane until a session is chosen: the fleet's answers at
// a glance. Who needs me and for what, who is working on what, and what
// each said last, for the sessions the list shows (its filters apply), kept
// current with the list (its /live feed). The item in progress and the last
// words come from the tail of a few sessions' history, read again when
// their log moves on; everything else from the summaries the list holds.

import { get, sessionPath } from './api.js';
import { saidBy } from './harness.js';
import { Kept, place } from './kept.js';
import { needOf, project } from './sessionrow.js';
import { markdown } from './markdown.js';
import { currentState, stateText } from './state.js';
import { el } from './todos.js';

/** @typedef {import('./list.js').Summary} Summary */

/** How many sessions of a group the overview names; the rest are counted. */
const SHOWN = { needs_you: 8, working: 8, idle: 4 };
/** How many sessions' last words and items are read at most: a request each. */
const READ_MAX = 12;
/** How many events of a session's tail are looked through for its last words. */
const TAIL = 30;
/** The least time between two reads of one session's tail, however busy it is. */
const READ_GAP_MS = 2000;

/**
 * What the tail of a session's log said: its last words and the item in
 * progress as the agent put it (its activeForm), and the lastSeq read at.
 * @typedef {{seq: number, words: string, doing: string, busy: boolean, at: number, timer: number}} Tail
 */

/** The sections, in order, and what each says when empty. */
const SECTIONS = /** @type {const} */ ([
  ['needs_you', 'Needs you', 'No one needs you now.'],
  ['working', 'Working', 'No session is working.'],
  ['idle', 'Idle', ''],
]);

/** Markdown's text without its marks, on one line: a glance, not a read. @param {string} text */
const plain = (text) => (markdown(text).textContent ?? '').replace(/\s+/g, ' ').trim();

export class Overview {
  /** @param {HTMLElement} root the element with data-overview */
  constructor(root) {
    this.root = root;
    this.body = /** @type {HTMLElement} */ (root.querySelector('[data-overview-body]'));
    this.counts = /** @type {HTMLElement} */ (root.querySelector('[data-overview-counts]'));
    /** @type {Summary[]|null} the sessions the list shows, newest first; null until it has read them */
    this.sessions = null;
    /** @type {Map<string, Tail>} */
    this.tails = new Map();
    /** The items shown, by session. */
    this.items = new Kept();
    /** @type {Map<string, {section: HTMLElement, head: HTMLElement, ul: HTMLElement, none: HTMLElement, more: HTMLElement}>} each state's section */
    this.groups = new Map();
  }

  /**
   * Shows or hides the overview; hidden (a session chosen, a phone) it
   * reads nothing.
   * @param {boolean} on
   */
  show(on) {
    this.root.hidden = !on;
    if (on && this.sessions) this.update(this.sessions);
  }

  /** The list shows these sessions now. @param {Summary[]} sessions */
  update(sessions) {
    this.sessions = sessions;
    if (this.root.hidden) return;
    const read = this.toRead();
    for (const [id, t] of this.tails) {
      if (!read.some((s) => s.id === id)) {
        window.clearTimeout(t.timer);
        this.tails.delete(id);
      }
    }
    read.forEach((s) => this.want(s));
    this.render();
  }

  /** The sessions whose tails are read: whoever needs you, then working, then idle, as shown. */
  toRead() {
    return SECTIONS.flatMap(([state]) => this.of(state).slice(0, SHOWN[state])).slice(0, READ_MAX);
  }

  /**
   * The sessions in a state, as the list orders them and counts them: a
   * subagent whose parent is shown is the parent's business (its row says
   * how its subagents are), unless it needs you.
   * @param {string} state
   */
  of(state) {
    const all = this.sessions ?? [];
    const shown = new Set(all.map((s) => s.id));
    return all.filter((s) => currentState(s).state === state && (state === 'needs_you' || !(s.parentId && shown.has(s.parentId))));
  }

  /** Reads the session's tail unless it is read at its lastSeq, at most once per READ_GAP_MS. @param {Summary} s */
  want(s) {
    if (this.root.hidden) return;
    const t = this.tails.get(s.id) ?? { seq: -1, words: '', doing: '', busy: false, at: 0, timer: 0 };
    this.tails.set(s.id, t);
    if (t.seq >= s.lastSeq || t.busy || t.timer) return;
    const wait = t.at + READ_GAP_MS - Date.now();
    if (wait > 0) {
      t.timer = window.setTimeout(() => {
        t.timer = 0;
        const now = this.sessions?.find((x) => x.id === s.id);
        if (now && this.tails.get(s.id) === t) this.want(now);
      }, wait);
      return;
    }
    t.busy = true;
    t.at = Date.now();
    get(`${sessionPath(s.id)}/history?limit=${TAIL}`).then((/** @type {import('./api.js').HistoryPage} */ page) => {
      t.seq = page.snapshot?.lastSeq ?? s.lastSeq;
      // Words older than the tail are still the last ones said, unless the
      // tail says newer.
      for (const ev of page.events) {
        const said = saidBy(ev);
        if (said) t.words = said.markdown ? plain(said.text) : said.text;
      }
      const active = (page.snapshot?.todos ?? []).filter((x) => x.status === 'in_progress');
      t.doing = active.map((x) => x.activeForm || x.content).join(' · ');
    }, () => {
      t.seq = s.lastSeq; // gone or refused: not asked again until it moves on
    }).finally(() => {
      t.busy = false;
      if (this.tails.get(s.id) !== t) return;
      this.render();
      const now = this.sessions?.find((x) => x.id === s.id);
      if (now) this.want(now);
    });
  }

  render() {
    const ended = this.of('ended').length;
    const parts = SECTIONS.map(([state, label]) => `${this.of(state).length} ${label.toLowerCase()}`);
    const counts = [...parts, `${ended} ended`].join(' · ');
    if (this.counts.textContent !== counts) this.counts.textContent = counts;
    // Focus on a session's link stays on it when its item is made anew.
    const focused = document.activeElement instanceof HTMLAnchorElement && this.body.contains(document.activeElement)
      ? document.activeElement.closest('[data-overview-session]')?.getAttribute('data-overview-session') : null;
    // What did not change stays as it was (kept.js): an item is made anew
    // only when it reads differently.
    place(this.body, SECTIONS.flatMap(([state, label, none]) => {
      const all = this.of(state);
      if (all.length === 0 && !none) return [];
      const g = this.groups.get(state) ?? this.group(state, label, none);
      const head = `${label} · ${all.length}`;
      if (g.head.textContent !== head) g.head.textContent = head;
      const rest = all.length - SHOWN[state];
      const more = `and ${rest} more in the list`;
      if (rest > 0 && g.more.textContent !== more) g.more.textContent = more;
      place(g.ul, all.slice(0, SHOWN[state]).map((s) => {
        const t = this.tails.get(s.id);
        const key = [JSON.stringify(s), stateText(currentState(s)), t?.words, t?.doing, location.search].join('\n');
        return this.items.get(s.id, key, () => this.item(s));
      }));
      place(g.section, [g.head, all.length === 0 ? g.none : g.ul, ...(rest > 0 ? [g.more] : [])]);
      return [g.section];
    }));
    this.items.done();
    if (focused && !this.body.contains(document.activeElement)) {
      /** @type {HTMLElement|null} */ (this.body.querySelector(`[data-overview-session="${CSS.escape(focused)}"] a`))?.focus();
    }
  }

  /**
   * A state's section, made once: its heading, its list, what it says when
   * empty and how many more the list holds.
   * @param {string} state @param {string} label @param {string} none
   */
  group(state, label, none) {
    // Not a landmark each: the list's groups are, with the same names.
    const section = el('div', 'overview-group');
    section.dataset.overviewGroup = state;
    const g = {
      section,
      head: el('h3', 'overview-head'),
      ul: el('ul', 'overview-list'),
      none: el('p', 'overview-none', none),
      more: el('p', 'overview-more'),
    };
    this.groups.set(state, g);
    return g;
  }

  /** One session's answer: its title, where and since when; what it needs or does; its last words. @param {Summary} s */
  item(s) {
    const st = currentState(s);
    const t = this.tails.get(s.id);
    const li = el('li', 'overview-item');
    li.dataset.overviewSession = s.id;
    li.dataset.state = st.state;
    const head = el('div', 'overview-item-head');
    const a = el('a', 'overview-title', s.title);
    a.setAttribute('href', `/s/${encodeURIComponent(s.id)}${location.search}`);
    head.append(a, el('span', 'overview-since', stateText(st)));
    li.append(head);
    const where = [s.agent ?? '', project(s.cwd)].filter(Boolean);
    const c = s.todoCounts;
    const total = c.pending + c.inProgress + c.completed;
    if (total > 0) where.push(`${c.completed}/${total} done`);
    if (where.length > 0) li.append(el('div', 'overview-where', where.join(' · ')));
    /** A labelled line: "Needs", "Now", "Said". @param {string} k @param {string} label @param {string} text */
    const line = (k, label, text) => {
      const p = el('p', `overview-${k}`);
      p.dataset[k] = '';
      p.append(el('span', 'overview-label', `${label} `), el('span', 'overview-text', text));
      p.title = text;
      li.append(p);
    };
    if (st.state === 'needs_you') {
      // What for, in a line as the row says it ("Allow Bash: rm -rf build",
      // the question); without it (an older server, a prompt that said
      // nothing) its last words say it. A question's options go under it.
      const need = needOf(s);
      if (need) line('need', 'Needs', need);
      else if (!t?.words) line('need', 'Needs', 'you to look');
      if (s.needsYou?.kind === 'question' && s.needsYou.input) {
        const input = el('code', 'overview-input', s.needsYou.input);
        input.title = s.needsYou.input;
        li.append(input);
      }
    }
    const doing = t?.doing || (total > 0 ? s.currentItem ?? '' : '');
    if (st.state === 'working' && doing) line('doing', 'Now', doing);
    if (t?.words) line('said', 'Said', t.words);
    return li;
  }
}
