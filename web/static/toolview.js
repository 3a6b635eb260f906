// Tool calls drawn as what they did: an edit as its diff, a patch as its
// files and hunks, a shell call as its command and output, anything else
// as a list of its arguments; and a result, long ones folded. tools.js
// reads the calls; this only draws them.

import { fold } from './diff.js';
import { el } from './todos.js';
import { readable } from './tools.js';

/** @typedef {import('./tools.js').Call} Call */
/** @typedef {import('./diff.js').DiffLine} DiffLine */
/** @typedef {import('./diff.js').Shown} Shown */

/** Results and diffs longer than this many lines show their head and a "show all". */
const FOLD_LINES = 20;

const SIGN = { same: ' ', add: '+', del: '−' };
const SAID = { same: '', add: 'added: ', del: 'removed: ' };

/**
 * "+3 −1", told to screen readers in words.
 * @param {import('./tools.js').Stat} stat
 */
export function statEl(stat) {
  const box = el('span', 'tool-stat');
  const seen = el('span', '');
  seen.setAttribute('aria-hidden', 'true');
  if (stat.added) seen.append(el('span', 'stat-add', `+${stat.added}`));
  if (stat.removed) seen.append(el('span', 'stat-del', `−${stat.removed}`));
  box.append(seen, el('span', 'visually-hidden', ` (${stat.added} ${stat.added === 1 ? 'line' : 'lines'} added, ${stat.removed} removed)`));
  return box;
}

/**
 * What a call did, drawn: the body of its row above the result.
 * @param {Call} call
 * @returns {HTMLElement[]}
 */
export function callBody(call) {
  switch (call.kind) {
    case 'edit': {
      const out = [];
      if (call.note) out.push(el('span', 'output-label', call.note));
      call.diffs.forEach((d, i) => {
        const label = call.diffs.length > 1 ? `Edit ${i + 1} of ${call.diffs.length}` : 'Changes';
        out.push(el('span', 'output-label', label), diffEl(fold(d), `${label} to ${call.path}`));
      });
      return out;
    }
    case 'patch':
      return call.files.map(patchFileEl);
    case 'shell': {
      const out = [];
      if (call.description) out.push(el('p', 'tool-why', call.description));
      out.push(el('span', 'output-label', call.workdir ? `Command · in ${call.workdir}` : 'Command'));
      const pre = el('pre', 'output command');
      const prompt = el('span', 'prompt', '$ ');
      prompt.setAttribute('aria-hidden', 'true');
      pre.append(prompt, call.command);
      out.push(pre);
      return out;
    }
    case 'args':
      return argsEl(call.args);
  }
}

/**
 * A result under its call: "Output" for a shell call, else "Result", with
 * codex's exit code and duration as a note.
 * @param {Call|null} call
 * @param {string} content
 * @returns {HTMLElement[]}
 */
export function resultBody(call, content) {
  const r = readable(content);
  const label = call?.kind === 'shell' ? 'Output' : 'Result';
  return [el('span', 'output-label', r.note ? `${label} · ${r.note}` : label), folded(r.text)];
}

/**
 * A long text as a <pre> of its first FOLD_LINES lines and a button to show the rest.
 * @param {string} text
 */
function folded(text) {
  const box = el('div', 'result');
  const lines = text.split('\n');
  const pre = el('pre', 'output', lines.length > FOLD_LINES ? lines.slice(0, FOLD_LINES).join('\n') : text);
  box.append(pre);
  if (lines.length > FOLD_LINES) {
    box.append(showAll(lines.length, () => { pre.textContent = text; }));
  }
  return box;
}

/**
 * @param {number} n
 * @param {() => void} show
 */
function showAll(n, show) {
  const more = el('button', 'show-all', `Show all ${n} lines`);
  more.setAttribute('type', 'button');
  more.addEventListener('click', () => {
    show();
    more.remove();
  });
  return more;
}

/**
 * Diff lines, each with its sign for the eye and "added"/"removed" for a
 * screen reader; folded kept lines as "⋯ n unchanged lines"; more than
 * FOLD_LINES behind a "show all".
 * @param {Shown[]} shown
 * @param {string} label
 */
function diffEl(shown, label) {
  const box = el('div', 'diff');
  box.setAttribute('role', 'group');
  box.setAttribute('aria-label', label);
  const draw = (/** @type {Shown[]} */ part) => part.map(lineEl);
  if (shown.length > FOLD_LINES) {
    box.append(...draw(shown.slice(0, FOLD_LINES)));
    const more = showAll(shown.length, () => { more.before(...draw(shown.slice(FOLD_LINES))); });
    box.append(more);
  } else {
    box.append(...draw(shown));
  }
  return box;
}

/** @param {Shown} l */
function lineEl(l) {
  if (l.op === 'skip') return el('div', 'diff-skip', `⋯ ${l.count} unchanged ${l.count === 1 ? 'line' : 'lines'}`);
  const row = el('div', 'diff-line');
  row.dataset.op = l.op;
  const sign = el('span', 'diff-sign', SIGN[l.op]);
  sign.setAttribute('aria-hidden', 'true');
  row.append(sign);
  if (SAID[l.op]) row.append(el('span', 'visually-hidden', SAID[l.op]));
  row.append(el('span', 'diff-text', l.text));
  return row;
}

const FILE_OP = { add: 'Add', update: 'Update', delete: 'Delete' };

/** @param {import('./patch.js').PatchFile} f */
function patchFileEl(f) {
  const box = el('div', 'patch-file');
  box.dataset.op = f.moveTo ? 'move' : f.op;
  const head = el('div', 'patch-head');
  head.append(el('span', 'patch-op', f.moveTo ? 'Move' : FILE_OP[f.op]), ' ', el('span', 'patch-path', f.path));
  if (f.moveTo) head.append(' → ', el('span', 'patch-path', f.moveTo));
  box.append(head);
  f.hunks.forEach((h, i) => {
    /** @type {Shown[]} */
    const lines = h.lines;
    if (f.op === 'update') box.append(el('div', 'diff-hunk', h.header ? `@@ ${h.header}` : '@@'));
    const label = f.op === 'add' ? `New file ${f.path}` : `Hunk ${i + 1} of ${f.path}`;
    box.append(diffEl(lines, label));
    if (h.endOfFile) box.append(el('div', 'diff-skip', 'end of file'));
  });
  return box;
}

/**
 * Arguments as a key/value list: strings as text, numbers and booleans as
 * they read, the task tools' lists of ids as "#1, #2", other nested values
 * as indented JSON. A string that is not an object shows as it is.
 * @param {any} args
 * @returns {HTMLElement[]}
 */
function argsEl(args) {
  if (args == null || typeof args !== 'object' || Array.isArray(args)) {
    const text = typeof args === 'string' ? args : JSON.stringify(args, null, 2);
    return [el('span', 'output-label', 'Arguments'), el('pre', 'output args', text)];
  }
  const entries = Object.entries(args);
  if (entries.length === 0) return [];
  const dl = el('dl', 'args');
  for (const [k, v] of entries) {
    const dd = el('dd', '');
    if (typeof v === 'string') dd.append(v.includes('\n') ? el('pre', 'output', v) : el('span', 'arg-text', v));
    else if (v === null || typeof v !== 'object') dd.append(el('span', 'arg-text', String(v)));
    else if (/^(addB|b)lock(s|edBy)$/.test(k) && Array.isArray(v) && v.every((x) => typeof x !== 'object')) dd.append(el('span', 'arg-text', v.map((x) => `#${x}`).join(', ')));
    else dd.append(el('pre', 'output', JSON.stringify(v, null, 2)));
    dl.append(el('dt', '', k), dd);
  }
  return [el('span', 'output-label', 'Arguments'), dl];
}
