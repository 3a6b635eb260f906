// Browser notifications, opted into from the open app: when a session
// needs its person, a turn ends or fails, a plan completes, or a goal ends. The moments
// come from the session summaries the /live feed already sends; the page
// compares each with the one before it.

/**
 * @typedef {import('./list.js').Summary} Summary
 * @typedef {'needs_you'|'turn_failed'|'turn_ended'|'plan_completed'|'goal_ended'} Kind
 * @typedef {{kind: Kind, title: string, body: string}} Moment
 */

import { needsText } from './state.js';

/** Where the person's choice is kept. */
const KEY = 'tack.notify';

/** @param {Summary} s */
const done = (s) => {
  const c = s.todoCounts;
  return c.completed > 0 && c.pending === 0 && c.inProgress === 0;
};

/**
 * What changed from prev to next that is worth telling; nothing for a
 * session seen for the first time.
 * @param {Summary|undefined} prev @param {Summary} next
 * @returns {Moment[]}
 */
export function moments(prev, next) {
  if (!prev) return [];
  /** @type {Moment[]} */
  const out = [];
  if (next.state === 'needs_you' && prev.state !== 'needs_you') {
    // What for, when the agent said; else what it was doing.
    const body = next.needsYou ? needsText(next.needsYou) : next.currentItem ?? 'The agent is waiting on you.';
    out.push({ kind: 'needs_you', title: `${next.title} needs you`, body });
  }
  const ended = !next.turn.open && (prev.turn.open || next.turn.number > prev.turn.number);
  if (ended && next.turn.endReason === 'error') {
    out.push({ kind: 'turn_failed', title: `${next.title}: turn ${next.turn.number} failed`, body: 'The turn ended in an error.' });
  } else if (ended) {
    out.push({ kind: 'turn_ended', title: `${next.title}: turn ${next.turn.number} ${next.turn.endReason || 'completed'}`, body: next.currentItem ?? '' });
  }
  if (done(next) && !done(prev)) {
    const n = next.todoCounts.completed;
    out.push({ kind: 'plan_completed', title: `${next.title}: plan done`, body: `${n} of ${n} items completed.` });
  }
  if (next.goal && next.goal.status !== 'active' && prev.goal?.status === 'active') {
    out.push({ kind: 'goal_ended', title: `${next.title}: goal ${next.goal.status}`, body: next.goal.text });
  }
  return out;
}

/** Shows the moments of the summaries it is given, once the person opts in. */
export class Notifier {
  constructor() {
    /** @type {Map<string, Summary>} */
    this.last = new Map();
  }

  /**
   * Whether notifications are on: asked for here and allowed by the browser.
   * The browser is asked last: reading Notification.permission is a round
   * trip to the browser's process, and the list asks on every summary.
   */
  get on() {
    return typeof Notification !== 'undefined' && localStorage.getItem(KEY) === 'on' && Notification.permission === 'granted';
  }

  /**
   * A button that turns them on or off, asking the browser the first time;
   * hidden where the browser has no notifications.
   * @param {HTMLButtonElement} button
   */
  bind(button) {
    if (typeof Notification === 'undefined') return;
    const show = () => {
      button.textContent = this.on ? 'Notifications on' : 'Notify me';
      button.setAttribute('aria-pressed', String(this.on));
      button.title = Notification.permission === 'denied' ? 'The browser blocks notifications from this site' : '';
    };
    button.hidden = false;
    show();
    button.addEventListener('click', async () => {
      if (this.on) {
        localStorage.setItem(KEY, 'off');
      } else if ((await Notification.requestPermission()) === 'granted') {
        localStorage.setItem(KEY, 'on');
      }
      show();
    });
  }

  /**
   * Takes a session's newest summary, and shows what changed since the one
   * before, when notifications are on and the page is not the session's
   * own, in view.
   * @param {Summary} s
   */
  observe(s) {
    const prev = this.last.get(s.id);
    this.last.set(s.id, s);
    if (!this.on) return;
    const watching = document.visibilityState === 'visible' && location.pathname === `/s/${encodeURIComponent(s.id)}`;
    for (const m of moments(prev, s)) {
      if (watching && m.kind !== 'needs_you') continue;
      const n = new Notification(m.title, { body: m.body, tag: `${s.id}:${m.kind}` });
      n.onclick = () => {
        window.focus();
        location.assign(`/s/${encodeURIComponent(s.id)}`);
      };
    }
  }
}
