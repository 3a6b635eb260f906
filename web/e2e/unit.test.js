// The UI's pure modules, in node, no browser or server: the line diff, the
// apply_patch reader, how tools.js reads calls and results, the
// moments notify.js tells of, and the list's filters and projects. Run alone
// with `node --test web/e2e/unit.test.js`; `go test ./web/` runs it with
// the rest.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { counts, diffLines, diffText, fold, splitLines } from '../static/diff.js';
import { parsePatch, patchOf } from '../static/patch.js';
import { saidBy } from '../static/harness.js';
import { filtersOf, queryOf } from '../static/filters.js';
import { needOf, ownerOf, project } from '../static/sessionrow.js';
import { moments } from '../static/notify.js';
import { currentState, IDLE_MS } from '../static/state.js';
import { roughly } from '../static/time.js';
import { listTools, parseArgs, readCall, readable, TODO_TOOLS, todoArgs } from '../static/tools.js';

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

describe('reading calls', () => {
  const edit = { file_path: '/r/a.go', old_string: 'a\nb', new_string: 'a\nc' };
  const cases = [
    { name: 'Edit', tool: 'Edit', args: edit, kind: 'edit', gist: '/r/a.go', stat: { added: 1, removed: 1 } },
    { name: 'Edit, its arguments a JSON text', tool: 'Edit', args: JSON.stringify(edit), kind: 'edit', gist: '/r/a.go', stat: { added: 1, removed: 1 } },
    { name: 'Edit cut short by the importer', tool: 'Edit', args: { truncated: true, bytes: 70000 }, kind: 'args', gist: '' },
    { name: 'MultiEdit', tool: 'MultiEdit', args: { file_path: '/r/a.go', edits: [{ old_string: 'a', new_string: 'b' }, { old_string: 'c', new_string: 'd\ne' }] }, kind: 'edit', gist: '/r/a.go', stat: { added: 3, removed: 2 } },
    { name: 'Write', tool: 'Write', args: { file_path: '/r/n.md', content: '# N\n\nText\n' }, kind: 'edit', gist: '/r/n.md', stat: { added: 3, removed: 0 } },
    { name: 'Bash', tool: 'Bash', args: { command: 'npm test\n# twice', description: 'Run the tests' }, kind: 'shell', gist: 'npm test' },
    { name: 'codex shell, bash -lc', tool: 'shell', args: { command: ['bash', '-lc', 'ls -la'], workdir: '/tmp' }, kind: 'shell', gist: 'ls -la' },
    { name: 'codex shell, other argv quoted', tool: 'shell', args: { command: ['rg', '-n', 'two words', "it's"] }, kind: 'shell', gist: `rg -n 'two words' 'it'\\''s'` },
    { name: 'exec_command', tool: 'exec_command', args: '{"cmd":"go vet ./...","workdir":"/repo","yield_time_ms":1000}', kind: 'shell', gist: 'go vet ./...' },
    { name: 'local_shell', tool: 'local_shell', args: { action: { type: 'exec', command: ['make'], working_directory: '/w' } }, kind: 'shell', gist: 'make' },
    { name: 'apply_patch, custom tool input', tool: 'apply_patch', args: { input: '*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n*** End Patch' }, kind: 'patch', gist: 'a', stat: { added: 1, removed: 1 } },
    { name: 'apply_patch run through shell', tool: 'shell', args: { command: ['apply_patch', '*** Begin Patch\n*** Add File: b\n+1\n+2\n*** End Patch'] }, kind: 'patch', gist: 'b', stat: { added: 2, removed: 0 } },
    { name: 'Read with lines', tool: 'Read', args: { file_path: '/r/a.go', offset: 10, limit: 20 }, kind: 'args', gist: '/r/a.go · lines 10–29' },
    { name: 'Grep', tool: 'Grep', args: { pattern: 'func main', path: 'cmd', glob: '*.go' }, kind: 'args', gist: 'func main (*.go) in cmd' },
    { name: 'Glob', tool: 'Glob', args: { pattern: '**/*.go' }, kind: 'args', gist: '**/*.go' },
    { name: 'TaskCreate', tool: 'TaskCreate', args: { subject: 'Write the parser', description: 'Long', activeForm: 'Writing the parser' }, kind: 'args', gist: 'Write the parser' },
    { name: 'TaskUpdate', tool: 'TaskUpdate', args: { taskId: '3', status: 'completed' }, kind: 'args', gist: '#3 → completed' },
    { name: 'TaskUpdate, fields', tool: 'TaskUpdate', args: { taskId: '3', addBlockedBy: ['1'], owner: 'me' }, kind: 'args', gist: '#3 · addBlockedBy, owner' },
    { name: 'TaskGet', tool: 'TaskGet', args: { taskId: '3' }, kind: 'args', gist: '#3' },
    { name: 'any other tool', tool: 'WebFetch', args: { url: 'https://example.org', prompt: 'Summarise' }, kind: 'args', gist: 'https://example.org' },
    { name: 'a raw string input', tool: 'custom', args: 'free text\nmore', kind: 'args', gist: 'free text' },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const call = readCall(c.tool, c.args);
      assert.equal(call.kind, c.kind);
      assert.equal(call.gist, c.gist);
      if (c.stat) assert.deepEqual(call.stat, c.stat);
    });
  }

  test('a shell call keeps where it ran and why', () => {
    assert.deepEqual(readCall('Bash', { command: 'ls', description: 'List' }), { kind: 'shell', gist: 'ls', stat: null, command: 'ls', workdir: '', description: 'List' });
    assert.equal(/** @type {any} */ (readCall('shell', { command: ['ls'], workdir: '/w' })).workdir, '/w');
  });

  test('parseArgs: objects as they are, JSON texts parsed, other strings kept', () => {
    assert.deepEqual(parseArgs({ a: 1 }), { a: 1 });
    assert.deepEqual(parseArgs('{"a":1}'), { a: 1 });
    assert.equal(parseArgs('{not json'), '{not json');
    assert.equal(parseArgs('plain'), 'plain');
    assert.deepEqual(parseArgs(undefined), {});
  });

  // The agents' list tools as the server writes them into the page, and one
  // shaped like Gemini CLI's that no line of tools.js names.
  const agents = [
    { tool: 'TodoWrite', list: 'todos', item: 'content' },
    { tool: 'update_plan', list: 'plan', item: 'step', statuses: { inProgress: 'in_progress' } },
    { tool: 'write_todos', list: 'todos', item: 'description' },
  ];

  test('todoArgs reads a list from arguments sent as a JSON text, by its tool\'s shape', () => {
    const tools = listTools(agents);
    assert.deepEqual(todoArgs('{"plan":[{"step":"A","status":"in_progress"},{"step":"B","status":"inProgress"}]}', tools.get('update_plan')),
      [{ content: 'A', status: 'in_progress' }, { content: 'B', status: 'in_progress' }]);
    assert.deepEqual(todoArgs({ todos: [{ description: 'C', status: 'completed' }] }, tools.get('write_todos')), [{ content: 'C', status: 'completed' }]);
    assert.deepEqual(todoArgs({ todos: [{ content: 'D', status: 'inProgress' }] }), [{ content: 'D', status: 'pending' }]);
  });

  test('the list tools: todo_write always, the agents\' only as given', () => {
    assert.deepEqual([...TODO_TOOLS.keys()], ['todo_write']); // no page here
    assert.deepEqual([...listTools(agents).keys()], ['todo_write', 'TodoWrite', 'update_plan', 'write_todos']);
  });
});

describe('reading results', () => {
  const cases = [
    { name: 'plain text', in: 'ok\n', text: 'ok\n', note: '' },
    { name: 'codex JSON output', in: '{"output":"done\\n","metadata":{"exit_code":1,"duration_seconds":0.4}}', text: 'done\n', note: 'exit 1 · 0.4 s' },
    { name: 'codex shell header', in: 'Exit code: 0\nWall time: 1.25 seconds\nOutput:\nok', text: 'ok', note: 'exit 0 · 1.25 s' },
    { name: 'exec_command header', in: 'Chunk ID: ff886d\nWall time: 0.0000 seconds\nProcess exited with code 2\nOriginal token count: 17\nOutput:\n/work\n', text: '/work\n', note: 'exit 2 · 0 s' },
    { name: 'a session still running', in: 'Chunk ID: 1\nWall time: 10.0 seconds\nProcess running with session ID 7\nOriginal token count: 0\nOutput:\n', text: '', note: '10 s' },
    { name: 'text that only looks like a header', in: 'Wall time: soon\nno output line', text: 'Wall time: soon\nno output line', note: '' },
    { name: 'other JSON indented', in: '{"a":[1,2]}', text: '{\n  "a": [\n    1,\n    2\n  ]\n}', note: '' },
  ];
  for (const c of cases) {
    test(c.name, () => assert.deepEqual(readable(c.in), { text: c.text, note: c.note }));
  }
});

describe('notify.js: the moments between two summaries', () => {
  const sum = (o) => ({ id: 's1', title: 'Fix it', state: 'working', currentItem: null, todoCounts: { pending: 1, inProgress: 1, completed: 0 },
    turn: { number: 1, open: true, endReason: null }, ...o });
  const kinds = (prev, next) => moments(prev, next).map((m) => m.kind);
  test('nothing for a session first seen, or one that did not change', () => {
    assert.deepEqual(kinds(undefined, sum({ state: 'needs_you' })), []);
    assert.deepEqual(kinds(sum(), sum()), []);
  });
  test('needs you once, as it begins', () => {
    assert.deepEqual(kinds(sum(), sum({ state: 'needs_you' })), ['needs_you']);
    assert.deepEqual(kinds(sum({ state: 'needs_you' }), sum({ state: 'needs_you' })), []);
  });
  test('needs you says what for, when the agent said', () => {
    const body = (needsYou) => moments(sum(), sum({ state: 'needs_you', currentItem: 'Patch', needsYou }))[0].body;
    assert.equal(body(undefined), 'Patch');
    assert.equal(body({ kind: 'permission', message: 'Claude needs your permission to use Bash', tool: 'Bash', input: 'make deploy' }), 'Allow Bash: make deploy');
    assert.equal(body({ kind: 'permission', message: 'Claude needs your permission to use Bash' }), 'Claude needs your permission to use Bash');
    assert.equal(body({ kind: 'question', message: 'Which target?\nAnd why?', tool: 'AskUserQuestion', input: 'a · b' }), 'Which target?');
    assert.equal(body({ kind: 'plan', message: '# Clean build\n1. Remove build/', tool: 'ExitPlanMode' }), 'Approve the plan: # Clean build');
  });
  test('a turn ends or fails, also when the feed skipped its start', () => {
    assert.deepEqual(kinds(sum(), sum({ state: 'idle', turn: { number: 1, open: false, endReason: 'completed' } })), ['turn_ended']);
    assert.deepEqual(kinds(sum(), sum({ turn: { number: 1, open: false, endReason: 'error' } })), ['turn_failed']);
    const idle = sum({ turn: { number: 1, open: false, endReason: 'completed' } });
    assert.deepEqual(kinds(idle, sum({ turn: { number: 2, open: false, endReason: 'interrupted' } })), ['turn_ended']);
  });
  test('a plan completes once', () => {
    const doneCounts = { pending: 0, inProgress: 0, completed: 2 };
    assert.deepEqual(kinds(sum(), sum({ todoCounts: doneCounts })), ['plan_completed']);
    assert.deepEqual(kinds(sum({ todoCounts: doneCounts }), sum({ todoCounts: doneCounts })), []);
    assert.match(moments(sum(), sum({ todoCounts: doneCounts }))[0].body, /^2 of 2 items completed/);
  });
  test('a goal ends once: met, cleared', () => {
    const goal = (status) => ({ goal: { text: 'All tests pass', status, setAt: '2026-12-01T14:00:00Z', by: 'user' } });
    assert.deepEqual(kinds(sum(goal('active')), sum(goal('met'))), ['goal_ended']);
    assert.deepEqual(kinds(sum(goal('met')), sum(goal('met'))), []);
    assert.deepEqual(kinds(sum(), sum(goal('active'))), []);
    const [m] = moments(sum(goal('active')), sum(goal('cleared')));
    assert.equal(m.title, 'Fix it: goal cleared');
    assert.equal(m.body, 'All tests pass');
  });
});

describe('the list\'s filters and rows', () => {
  test('a project is the last element of the working directory', () => {
    assert.equal(project('/home/me/src/tack'), 'tack');
    assert.equal(project('/home/me/src/tack/'), 'tack');
    assert.equal(project('C:\\work\\api'), 'api');
    assert.equal(project('/'), '/');
    assert.equal(project(null), '');
  });
  test('the filters go to the URL and come back, in one order, empty ones left out', () => {
    const f = { agent: 'codex', project: 'tack', owner: '', q: 'fix the parser' };
    assert.equal(queryOf(f), '?agent=codex&project=tack&q=fix+the+parser');
    assert.deepEqual(filtersOf(queryOf(f)), f);
    assert.equal(queryOf({ agent: '', project: '', owner: '', q: '' }), '');
    assert.deepEqual(filtersOf('?q=%20padded%20&owner=alice'), { agent: '', project: '', owner: 'alice', q: 'padded' });
  });
  test('an owner is a name or a principal', () => {
    assert.equal(ownerOf(/** @type {any} */ ({ owner: 'alice' })), 'alice');
    assert.equal(ownerOf(/** @type {any} */ ({ owner: { id: 'prn_1', name: 'bob' } })), 'bob');
    assert.equal(ownerOf(/** @type {any} */ ({})), '');
  });
  test('what a session waits on its person for, only while it does', () => {
    const at = new Date().toISOString();
    const s = (state, needsYou) => /** @type {any} */ ({ state, stateSince: at, updatedAt: at, needsYou });
    assert.equal(needOf(s('needs_you', { kind: 'permission', message: 'Claude needs your permission to use Bash', tool: 'Bash', input: 'rm -rf build' })), 'Allow Bash: rm -rf build');
    assert.equal(needOf(s('needs_you', { kind: 'question', message: 'Which target?', tool: 'AskUserQuestion', input: 'debug · release' })), 'Which target?');
    assert.equal(needOf(s('needs_you', undefined)), '', 'an older server says only the state');
    assert.equal(needOf(s('working', { kind: 'question', message: 'stale' })), '', 'only while it waits');
  });
  test('what an event says to the person: the agent\'s text, a harness notice, nothing else', () => {
    assert.deepEqual(saidBy({ type: 'message/assistant', data: { text: 'Shall I **drop** it?' } }), { text: 'Shall I **drop** it?', markdown: true });
    assert.equal(saidBy({ type: 'message/assistant', data: { text: '', toolCalls: [{ id: 'c', name: 'Bash', args: {} }] } }), null);
    assert.equal(saidBy({ type: 'message/user', data: { text: 'Fix it' } }), null, 'the person\'s own words');
    assert.equal(saidBy({ type: 'message/user', data: { text: '/compact', source: 'harness', kind: 'command' } }), null);
    assert.deepEqual(saidBy({ type: 'message/user', data: { source: 'harness', kind: 'task-notification', text: '<task-notification>\n<task-id>b77</task-id>\n<status>failed</status>\n<summary>Background command "make" failed with exit code 2</summary>\n</task-notification>' } }),
      { text: 'Background task b77 failed (exit 2)', markdown: false });
    assert.equal(saidBy({ type: 'tool/result', data: { content: 'ok' } }), null);
  });
  test('time in a state, to the minute past the first', () => {
    assert.equal(roughly(12_400), '12 s');
    assert.equal(roughly(3 * 60_000 + 20_000), '3 min');
    assert.equal(roughly(125 * 60_000), '2 h 5 min');
  });
});

describe('state', () => {
  test('a page reads a quiet working session as idle, unless its agent says it is busy', () => {
    const quiet = new Date(Date.now() - IDLE_MS - 60_000).toISOString();
    const s = { state: 'working', stateSince: quiet, updatedAt: quiet };
    assert.equal(currentState(s).state, 'idle');
    assert.equal(currentState({ ...s, agentBusy: true }).state, 'working');
    const now = new Date().toISOString();
    assert.equal(currentState({ state: 'working', stateSince: now, updatedAt: now }).state, 'working');
  });
});
