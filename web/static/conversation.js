// The conversation: events rendered into rows, oldest first, whichever page
// or live message they come in.

import { harnessHasMore, harnessLabel, promptParts, saidBy } from './harness.js';
import { author } from './history.js';
import { markdown } from './markdown.js';
import { editFold, proposalCard, todoFold } from './planrows.js';
import { between, duration, timeEl } from './time.js';
import { el, summarize } from './todos.js';
import { ToolRow } from './toolrow.js';

/** @typedef {import('./api.js').TackEvent} TackEvent */
/** @typedef {import('./todos.js').ItemTimes} ItemTimes */

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
