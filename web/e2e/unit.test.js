// The UI's pure modules, in node, no browser or server: the line diff and
// the apply_patch reader. Run alone
// with `node --test web/e2e/unit.test.js`; `go test ./web/` runs it with
// the rest.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { counts, diffLines, diffText, fold, splitLines } from '../static/diff.js';
import { parsePatch, patchOf } from '../static/patch.js';

/** A diff as the lines a reader sees: sign and text. */
const show = (d) => d.map((l) => (l.op === 'skip' ? `…${l.count}` : `${{ same: ' ', add: '+', del: '-' }[l.op]}${l.text}`));

/** The length of a longest common subsequence, by the textbook table. */
function lcs(a, b) {
  const t = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) t[i][j] = a[i - 1] === b[j - 1] ? t[i - 1][j - 1] + 1 : Math.max(t[i - 1][j], t[i][j - 1]);
  }
  return t[a.length][b.length];
}

describe('diff', () => {
  const cases = [
    { name: 'one line changed', before: 'a\nb\nc\n', after: 'a\nx\nc\n', want: [' a', '-b', '+x', ' c'] },
    { name: 'a new file', before: '', after: 'one\ntwo\n', want: ['+one', '+two'] },
    { name: 'all removed', before: 'one\ntwo', after: '', want: ['-one', '-two'] },
    { name: 'nothing changed', before: 'same\n', after: 'same\n', want: [' same'] },
    { name: 'a line added at the end, no final newline', before: 'a', after: 'a\nb', want: [' a', '+b'] },
    { name: 'CRLF lines', before: 'a\r\nb\r\n', after: 'a\r\nc\r\n', want: [' a', '-b', '+c'] },
    { name: 'Myers\' own example: five edits', before: 'a\nb\nc\na\nb\nb\na', after: 'c\nb\na\nb\na\nc', want: ['-a', '-b', ' c', '+b', ' a', ' b', '-b', ' a', '+c'] },
    { name: 'blank lines kept', before: 'x\n\ny', after: 'x\n\n\ny', want: [' x', ' ', '+', ' y'] },
  ];
  for (const c of cases) {
    test(c.name, () => assert.deepEqual(show(diffText(c.before, c.after)), c.want));
  }

  test('splitLines: a final newline ends the last line', () => {
    assert.deepEqual(splitLines(''), []);
    assert.deepEqual(splitLines('\n'), ['']);
    assert.deepEqual(splitLines('a\nb\n'), ['a', 'b']);
    assert.deepEqual(splitLines('a\n\n'), ['a', '']);
  });

  test('random texts: the diff turns one into the other, and is shortest', () => {
    let seed = 42;
    const rand = (n) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 300; round++) {
      const a = Array.from({ length: rand(30) }, () => 'abcde'[rand(5)]);
      const b = Array.from({ length: rand(30) }, () => 'abcde'[rand(5)]);
      const d = diffLines(a, b);
      assert.deepEqual(d.filter((l) => l.op !== 'add').map((l) => l.text), a, `old side of ${a} → ${b}`);
      assert.deepEqual(d.filter((l) => l.op !== 'del').map((l) => l.text), b, `new side of ${a} → ${b}`);
      const { added, removed } = counts(d);
      assert.equal(added + removed, a.length + b.length - 2 * lcs(a, b), `edits of ${a} → ${b}`);
    }
  });

  test('a long, very different pair still diffs, all removed then added past the limit', () => {
    const a = Array.from({ length: 3000 }, (_, i) => `a${i}`);
    const b = Array.from({ length: 3000 }, (_, i) => `b${i}`);
    const d = diffLines(a, b);
    assert.deepEqual(counts(d), { added: 3000, removed: 3000 });
    assert.equal(d[0].op, 'del');
    assert.equal(d[3000].op, 'add');
  });

  test('fold: long runs of kept lines become one skip; short ones stay', () => {
    const before = Array.from({ length: 20 }, (_, i) => `l${i}`);
    const after = [...before];
    after[10] = 'changed';
    assert.deepEqual(show(fold(diffText(before.join('\n'), after.join('\n')), 2)),
      ['…8', ' l8', ' l9', '-l10', '+changed', ' l11', ' l12', '…7']);
    // Two changes close together share their context.
    after[14] = 'again';
    assert.deepEqual(show(fold(diffText(before.join('\n'), after.join('\n')), 2)),
      ['…8', ' l8', ' l9', '-l10', '+changed', ' l11', ' l12', ' l13', '-l14', '+again', ' l15', ' l16', '…3']);
    assert.deepEqual(show(fold(diffText('a\nb', 'a\nb'))), ['…2'], 'nothing changed: all skipped');
  });
});

describe('apply_patch', () => {
  test('files, moves, hunks and their lines', () => {
    const files = parsePatch([
      '*** Begin Patch',
      '*** Update File: src/a.py',
      '*** Move to: src/b.py',
      '@@ def f():',
      '-    return 1',
      '+    return 2',
      '     # end',
      '@@',
      '-x = 1',
      '+x = 2',
      '*** End of File',
      '*** Add File: docs/new.md',
      '+# New',
      '+',
      '*** Delete File: old.txt',
      '*** End Patch',
    ].join('\n'));
    assert.deepEqual(files, [
      {
        op: 'update', path: 'src/a.py', moveTo: 'src/b.py', hunks: [
          { header: 'def f():', endOfFile: false, lines: [{ op: 'del', text: '    return 1' }, { op: 'add', text: '    return 2' }, { op: 'same', text: '    # end' }] },
          { header: '', endOfFile: true, lines: [{ op: 'del', text: 'x = 1' }, { op: 'add', text: 'x = 2' }] },
        ],
      },
      { op: 'add', path: 'docs/new.md', moveTo: '', hunks: [{ header: '', endOfFile: false, lines: [{ op: 'add', text: '# New' }, { op: 'add', text: '' }] }] },
      { op: 'delete', path: 'old.txt', moveTo: '', hunks: [] },
    ]);
  });

  test('an update whose first hunk has no @@, and no End Patch, still reads', () => {
    assert.deepEqual(parsePatch('*** Begin Patch\n*** Update File: a\n-old\n+new'), [
      { op: 'update', path: 'a', moveTo: '', hunks: [{ header: '', endOfFile: false, lines: [{ op: 'del', text: 'old' }, { op: 'add', text: 'new' }] }] },
    ]);
    assert.equal(parsePatch('just text'), null);
  });

  test('patchOf: every way codex sends the patch', () => {
    const p = '*** Begin Patch\n*** Add File: a\n+x\n*** End Patch';
    assert.equal(patchOf(p), p, 'the raw custom tool input');
    assert.equal(patchOf({ input: p }), p, 'the raw input as importers send it');
    assert.equal(patchOf({ command: ['apply_patch', p] }), p, 'the argv of a shell call');
    assert.equal(patchOf({ cmd: `apply_patch <<'EOF'\n${p}\nEOF\n` }), p, 'a heredoc in exec_command');
    assert.equal(patchOf({ command: ['bash', '-lc', `cd /repo && apply_patch <<'PATCH'\n${p}\nPATCH`] }), p, 'a heredoc in bash -lc');
    assert.equal(patchOf({ command: ['ls'] }), '');
  });
});
