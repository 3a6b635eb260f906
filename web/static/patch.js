// codex's apply_patch, read: the `*** Begin Patch … *** End Patch` text as
// files (added, updated, deleted, moved) and their `@@` hunks; and where
// a call carries that text, whichever way codex sent it. Pure, no DOM.

/** @typedef {import('./diff.js').DiffLine} DiffLine */

/**
 * One hunk of an updated file: its `@@` line's context (often a function's
 * signature, or '') and its lines; `endOfFile` when the hunk is anchored to
 * the file's end.
 * @typedef {{header: string, lines: DiffLine[], endOfFile: boolean}} PatchHunk
 */

/**
 * One file of a patch. An added file is one hunk of added lines; a deleted
 * one has none.
 * @typedef {{op: 'add'|'update'|'delete', path: string, moveTo: string, hunks: PatchHunk[]}} PatchFile
 */

const BEGIN = '*** Begin Patch';
const END = '*** End Patch';
const FILE = /^\*\*\* (Add|Update|Delete) File: (.*)$/;
const MOVE = /^\*\*\* Move to: (.*)$/;

/**
 * The files of a patch, or null when the text is not one. Lenient as codex
 * is: a missing `*** End Patch` or an update's first hunk without `@@` still
 * reads; a line it cannot place is kept as context rather than dropped.
 * @param {string} text
 * @returns {PatchFile[] | null}
 */
export function parsePatch(text) {
  const lines = text.split(/\r?\n/);
  let i = lines.findIndex((l) => l.trim() === BEGIN);
  if (i < 0) return null;
  /** @type {PatchFile[]} */
  const files = [];
  /** @type {PatchFile | null} */
  let file = null;
  /** @type {PatchHunk | null} */
  let hunk = null;
  for (i++; i < lines.length; i++) {
    const line = lines[i];
    if (line.trim() === END) break;
    const f = FILE.exec(line);
    if (f) {
      const op = /** @type {'add'|'update'|'delete'} */ (f[1].toLowerCase());
      file = { op, path: f[2].trim(), moveTo: '', hunks: [] };
      files.push(file);
      hunk = op === 'add' ? { header: '', lines: [], endOfFile: false } : null;
      if (hunk) file.hunks.push(hunk);
      continue;
    }
    if (!file) continue;
    const mv = MOVE.exec(line);
    if (mv) {
      file.moveTo = mv[1].trim();
      continue;
    }
    if (line.trim() === '*** End of File') {
      if (hunk) hunk.endOfFile = true;
      continue;
    }
    if (file.op === 'update' && line.startsWith('@@')) {
      hunk = { header: line.slice(2).trim(), lines: [], endOfFile: false };
      file.hunks.push(hunk);
      continue;
    }
    if (file.op === 'delete') continue;
    if (!hunk) {
      hunk = { header: '', lines: [], endOfFile: false };
      file.hunks.push(hunk);
    }
    hunk.lines.push(patchLine(line, file.op));
  }
  return files;
}

/**
 * @param {string} line
 * @param {'add'|'update'} op
 * @returns {DiffLine}
 */
function patchLine(line, op) {
  const sign = line[0];
  if (sign === '+') return { op: 'add', text: line.slice(1) };
  if (op === 'add') return { op: 'add', text: line };
  if (sign === '-') return { op: 'del', text: line.slice(1) };
  if (sign === ' ') return { op: 'same', text: line.slice(1) };
  return { op: 'same', text: line };
}

/**
 * The patch text a call carries, or '' when it carries none: the raw input
 * of codex's custom apply_patch tool (a string, or `{"input": …}` as
 * importers send it), `patch`, or a shell call running `apply_patch` with
 * the patch as its argument or in a heredoc.
 * @param {any} args the call's arguments, already parsed
 * @returns {string}
 */
export function patchOf(args) {
  const candidates = [];
  if (typeof args === 'string') candidates.push(args);
  else if (args && typeof args === 'object') {
    for (const k of ['input', 'patch', 'command', 'cmd']) {
      const v = args[k];
      if (typeof v === 'string') candidates.push(v);
      else if (Array.isArray(v)) candidates.push(...v.filter((x) => typeof x === 'string'));
    }
  }
  for (const c of candidates) {
    const begin = c.indexOf(BEGIN);
    if (begin < 0) continue;
    const end = c.indexOf(END, begin);
    return end < 0 ? c.slice(begin) : c.slice(begin, end + END.length);
  }
  return '';
}
