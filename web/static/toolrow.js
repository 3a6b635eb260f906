// A tool call and its result, shown as one row of the conversation.

import { proposalCard, todoFold } from './planrows.js';
import { between, duration } from './time.js';
import { el } from './todos.js';
import { TODO_TOOLS, readCall, todoArgs } from './tools.js';
import { callBody, resultBody, statEl } from './toolview.js';

/** @typedef {import('./api.js').TackEvent} TackEvent */

/** One tool call and its result, as one row. */
export class ToolRow {
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
    const listTool = TODO_TOOLS.get(name);
    if (listTool) {
      // A todo tool's accepted write is the todo/write row that follows, so
      // its call and result are kept out of sight; a rejected one shows the
      // list that was rejected, with the reason.
      li.classList.add('todo-row');
      li.hidden = status !== 'error';
      if (status === 'error') {
        const reason = String(this.res.content ?? '').split('\n', 1)[0];
        const fold = todoFold(todoArgs(this.call?.args, listTool), `Plan rejected · ${reason}`, 'rejected');
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
