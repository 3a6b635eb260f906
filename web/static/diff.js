// Line diffs, computed in the browser: an Edit carries the text before and
// after, never a diff. Myers' O(ND) algorithm on lines, after the common
// head and tail are set aside; pure, no DOM.

/**
 * One line of a diff: kept, added or removed.
 * @typedef {{op: 'same'|'add'|'del', text: string}} DiffLine
 */

/**
 * What a folded diff shows: a line, or how many kept lines are left out.
 * @typedef {DiffLine | {op: 'skip', count: number}} Shown
 */

/**
 * Beyond this many differences the middle is shown as all removed, then
 * all added: the trace Myers keeps grows with the square of the distance.
 */
const MAX_D = 1000;

/**
 * A text's lines; a final newline ends the last line rather than starting
 * an empty one, and "" has none.
 * @param {string} text
 * @returns {string[]}
 */
export function splitLines(text) {
  if (text === '') return [];
  const lines = text.split(/\r?\n/);
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/**
 * The line diff that turns `before` into `after`, shortest first; among
 * equally short ones, removals come before additions.
 * @param {string} before
 * @param {string} after
 * @returns {DiffLine[]}
 */
export function diffText(before, after) {
  return diffLines(splitLines(before), splitLines(after));
}

/**
 * @param {string[]} a
 * @param {string[]} b
 * @returns {DiffLine[]}
 */
export function diffLines(a, b) {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  /** @type {(text: string) => DiffLine} */
  const same = (text) => ({ op: 'same', text });
  const middle = myers(a.slice(head, a.length - tail), b.slice(head, b.length - tail));
  return [...a.slice(0, head).map(same), ...middle, ...a.slice(a.length - tail).map(same)];
}

/**
 * Myers' greedy forward search, then a walk back through the furthest
 * reaching points of each step.
 * @param {string[]} a
 * @param {string[]} b
 * @returns {DiffLine[]}
 */
function myers(a, b) {
  const n = a.length;
  const m = b.length;
  /** @type {DiffLine[]} */
  const blunt = [...a.map((text) => /** @type {DiffLine} */ ({ op: 'del', text })), ...b.map((text) => /** @type {DiffLine} */ ({ op: 'add', text }))];
  if (n === 0 || m === 0) return blunt;
  const max = Math.min(n + m, MAX_D);
  // v[k + off] is the furthest x reached on diagonal k = x - y.
  const off = max + 1;
  const v = new Int32Array(2 * max + 3);
  /** @type {Int32Array[]} v as it stood before each step d, over k in [-d, d] */
  const trace = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice(off - d, off + d + 1));
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[off + k - 1] < v[off + k + 1]) ? v[off + k + 1] : v[off + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[off + k] = x;
      if (x >= n && y >= m) return backtrack(a, b, trace, d);
    }
  }
  return blunt;
}

/**
 * @param {string[]} a
 * @param {string[]} b
 * @param {Int32Array[]} trace
 * @param {number} depth the step that reached the end
 * @returns {DiffLine[]}
 */
function backtrack(a, b, trace, depth) {
  /** @type {DiffLine[]} */
  const out = [];
  let x = a.length;
  let y = b.length;
  for (let d = depth; d > 0; d--) {
    const prev = trace[d]; // indexed by k + d
    const k = x - y;
    const down = k === -d || (k !== d && prev[k - 1 + d] < prev[k + 1 + d]);
    const pk = down ? k + 1 : k - 1;
    const px = prev[pk + d];
    const py = px - pk;
    for (; x > px && y > py; x--, y--) out.push({ op: 'same', text: a[x - 1] });
    if (down) out.push({ op: 'add', text: b[--y] });
    else out.push({ op: 'del', text: a[--x] });
  }
  for (; x > 0 && y > 0; x--, y--) out.push({ op: 'same', text: a[x - 1] });
  return out.reverse();
}

/**
 * How many lines a diff adds and removes.
 * @param {DiffLine[]} diff
 */
export function counts(diff) {
  let added = 0;
  let removed = 0;
  for (const l of diff) {
    if (l.op === 'add') added++;
    else if (l.op === 'del') removed++;
  }
  return { added, removed };
}

/**
 * The diff with long runs of kept lines folded: only the kept lines within
 * `context` of a change are shown, the rest become one `skip` each, so a
 * one-line change in a long edit reads as that line.
 * @param {DiffLine[]} diff
 * @param {number} [context] kept lines shown on each side of a change
 * @returns {Shown[]}
 */
export function fold(diff, context = 3) {
  // near[i]: how far line i is from the nearest change, either side.
  const near = diff.map(() => Infinity);
  let last = -Infinity;
  diff.forEach((l, i) => {
    if (l.op !== 'same') last = i;
    near[i] = i - last;
  });
  last = Infinity;
  for (let i = diff.length - 1; i >= 0; i--) {
    if (diff[i].op !== 'same') last = i;
    near[i] = Math.min(near[i], last - i);
  }
  /** @type {Shown[]} */
  const out = [];
  for (let i = 0; i < diff.length; i++) {
    if (near[i] <= context) {
      out.push(diff[i]);
      continue;
    }
    const prev = out[out.length - 1];
    if (prev?.op === 'skip') prev.count++;
    else out.push({ op: 'skip', count: 1 });
  }
  return out;
}
