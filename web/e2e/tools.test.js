// Tools read as tools, in a real browser: an edit as its diff, a patch as
// its files and hunks, a shell call as its command and output, anything
// else as its arguments; never an escaped JSON string, and no axe-core
// violation, light and dark.

import { before, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { append, axe, base, callEv, newPage, newSession, openSession, resultEv, withBrowser } from './helpers.js';

let browser;
withBrowser((b) => { browser = b; });

// The shapes below are the agents' own: Claude Code's Edit, Write and Bash
// (tool_use input, tool_result text), codex's apply_patch as a custom tool
// call (its raw input, as importers send it: {"input": …}, and as a bare
// string) and its shell call, whose arguments are a JSON text.
const PATCH = [
  '*** Begin Patch',
  '*** Update File: internal/api/todos.go',
  '@@ func writeList(w http.ResponseWriter) {',
  '   d := decode(r)',
  '-  if d == nil {',
  '+  if d == nil || d.empty() {',
  '     return',
  '@@ func readList() {',
  '-  return nil',
  '+  return list',
  '*** Add File: docs/tools.md',
  '+# Tools',
  '+Each tool call is one row.',
  '*** End Patch',
].join('\n');
const MOVE = '*** Begin Patch\n*** Update File: old/name.go\n*** Move to: new/name.go\n@@\n-package old\n+package name\n*** Delete File: gone.txt\n*** End Patch';
const WRITTEN = Array.from({ length: 30 }, (_, i) => `line ${i + 1} of the new file`).join('\n') + '\n';

// One page for the file, made once the browser is up: each test opens the
// session afresh.
let page;
beforeEach(async () => {
  page ??= (await newPage(browser, { viewport: { width: 1000, height: 900 } })).page;
});

let id;
before(async () => {
  id = await newSession('Tools read as tools');
  await append(id, [
    ['turn/start', {}],
    callEv('e1', 'Edit', {
      file_path: '/repo/internal/api/todos.go',
      old_string: 'func add(a, b int) int {\n\treturn a - b\n}',
      new_string: 'func add(a, b int) int {\n\t// Sum, not difference.\n\treturn a + b\n}',
    }),
    resultEv('e1', 'Edit', "The file /repo/internal/api/todos.go has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n    12\tfunc add(a, b int) int {\n    13\t\t// Sum, not difference.\n    14\t\treturn a + b\n    15\t}"),
    callEv('w1', 'Write', { file_path: '/repo/docs/notes.md', content: WRITTEN }),
    resultEv('w1', 'Write', 'File created successfully at: /repo/docs/notes.md'),
    callEv('b1', 'Bash', { command: 'go test ./internal/...', description: 'Run the tests' }),
    resultEv('b1', 'Bash', 'ok  \tgithub.com/tack-dev/tack/internal/api\t1.204s\nok  \tgithub.com/tack-dev/tack/internal/store\t0.881s'),
    callEv('p1', 'apply_patch', { input: PATCH }),
    resultEv('p1', 'apply_patch', JSON.stringify({ output: 'Success. Updated the following files:\nM internal/api/todos.go\nA docs/tools.md\n', metadata: { exit_code: 0, duration_seconds: 0.1 } })),
    callEv('p2', 'apply_patch', MOVE),
    resultEv('p2', 'apply_patch', 'Success. Updated the following files:\nM new/name.go\nD gone.txt\n'),
    callEv('s1', 'shell', JSON.stringify({ command: ['bash', '-lc', 'cargo test -q'], workdir: '/repo', timeout_ms: 120000 })),
    resultEv('s1', 'shell', 'Exit code: 0\nWall time: 1.5 seconds\nOutput:\nrunning 3 tests\ntest result: ok. 3 passed'),
    callEv('t1', 'TaskUpdate', { taskId: '2', status: 'in_progress', addBlockedBy: ['1'], owner: 'agent' }),
    resultEv('t1', 'TaskUpdate', 'Updated task #2 status, blockedBy, owner'),
    callEv('m1', 'mcp__happy__change_title', { title: 'Tools read as tools', options: { notify: false, depth: 2 } }),
    resultEv('m1', 'mcp__happy__change_title', 'Successfully changed chat title'),
  ]);
});

/** The row of a call, expanded. */
async function open(p, callTool, n = 0) {
  const row = p.locator(`[data-events] > li[data-type="tool"][data-tool="${callTool}"]`).nth(n);
  await row.locator('summary').click();
  await row.locator('details[open]').waitFor();
  // The body is drawn when the row opens (its toggle event): wait for it.
  await row.locator('details[open] > :not(summary)').first().waitFor();
  return row;
}

const lines = (row) => row.locator('.diff-line').evaluateAll((els) => els.map((e) =>
  `${e.querySelector('.diff-sign').textContent}${e.querySelector('.diff-text').textContent}`));

test('an Edit is a diff of its old and new text, a Write its new file, the row one line', async () => {
  await openSession(page, id);
  const edit = page.locator('li[data-tool="Edit"]');
  assert.equal(await edit.locator('.tool-gist').innerText(), '/repo/internal/api/todos.go');
  assert.equal(await edit.locator('.tool-stat [aria-hidden]').innerText(), '+2−1');
  assert.match(await edit.locator('.tool-stat .visually-hidden').textContent(), /2 lines added, 1 removed/);
  const box = await edit.locator('summary').boundingBox();
  assert.ok(box && box.height < 30, `the summary is one line (${box?.height}px)`);
  assert.equal(await edit.locator('.diff').count(), 0, 'the diff is drawn when the row opens');

  await open(page, 'Edit');
  assert.deepEqual(await lines(edit), [
    ' func add(a, b int) int {',
    '−\treturn a - b',
    '+\t// Sum, not difference.',
    '+\treturn a + b',
    ' }',
  ]);
  // A screen reader hears what each changed line is.
  assert.deepEqual(await edit.locator('.diff-line[data-op="add"] .visually-hidden').allTextContents(), ['added: ', 'added: ']);
  assert.deepEqual(await edit.locator('.diff-line[data-op="del"] .visually-hidden').allTextContents(), ['removed: ']);
  assert.equal(await edit.locator('.diff-sign[aria-hidden="true"]').count(), 5);
  assert.match(await edit.locator('.result pre').innerText(), /^The file \/repo\/internal\/api\/todos.go has been updated/);

  const write = await open(page, 'Write');
  assert.equal(await write.locator('.tool-stat [aria-hidden]').innerText(), '+30');
  assert.equal(await write.locator('.diff-line').count(), 20, 'a long diff shows its head');
  await write.getByRole('button', { name: 'Show all 30 lines' }).click();
  const written = await lines(write);
  assert.equal(written.length, 30);
  assert.ok(written.every((l, i) => l === `+line ${i + 1} of the new file`), written.join('\n'));
});

test('a Bash call and a codex shell call show their command and output', async () => {
  await openSession(page, id);
  const bash = await open(page, 'Bash');
  assert.equal(await bash.locator('.tool-gist').innerText(), 'go test ./internal/...');
  assert.equal(await bash.locator('.tool-why').innerText(), 'Run the tests');
  assert.equal(await bash.locator('pre.command').innerText(), '$ go test ./internal/...');
  assert.deepEqual(await bash.locator('.output-label').allInnerTexts(), ['Command', 'Output']);
  assert.match(await bash.locator('.result pre').innerText(), /^ok {2}\tgithub.com\/tack-dev\/tack\/internal\/api\t1.204s\nok/);

  // codex's arguments arrive as a JSON text: parsed, the argv read as its script.
  const shell = await open(page, 'shell');
  assert.equal(await shell.locator('.tool-gist').innerText(), 'cargo test -q');
  assert.equal(await shell.locator('pre.command').innerText(), '$ cargo test -q');
  assert.deepEqual(await shell.locator('.output-label').allInnerTexts(), ['Command · in /repo', 'Output · exit 0 · 1.5 s']);
  assert.equal(await shell.locator('.result pre').innerText(), 'running 3 tests\ntest result: ok. 3 passed');
});

test('a codex apply_patch shows its files and hunks, never "*** Begin Patch"', async () => {
  await openSession(page, id);
  const patch = page.locator('li[data-tool="apply_patch"]').first();
  assert.equal(await patch.locator('.tool-gist').innerText(), '2 files: internal/api/todos.go, docs/tools.md');
  assert.equal(await patch.locator('.tool-stat [aria-hidden]').innerText(), '+4−2');
  await open(page, 'apply_patch', 0);
  assert.deepEqual(await patch.locator('.patch-head').allInnerTexts(), ['Update internal/api/todos.go', 'Add docs/tools.md']);
  assert.deepEqual(await patch.locator('.diff-hunk').allInnerTexts(), ['@@ func writeList(w http.ResponseWriter) {', '@@ func readList() {']);
  assert.deepEqual(await lines(patch.locator('.patch-file').first()), [
    '   d := decode(r)', '−  if d == nil {', '+  if d == nil || d.empty() {', '     return',
    '−  return nil', '+  return list',
  ]);
  assert.deepEqual(await lines(patch.locator('.patch-file').nth(1)), ['+# Tools', '+Each tool call is one row.']);
  assert.equal(await patch.locator('.result pre').innerText(), 'Success. Updated the following files:\nM internal/api/todos.go\nA docs/tools.md\n');
  assert.match(await patch.locator('.output-label').last().innerText(), /^Result · exit 0 · 0.1 s$/);

  // The raw custom tool input, a bare string: a move and a delete.
  const moved = await open(page, 'apply_patch', 1);
  assert.deepEqual(await moved.locator('.patch-head').allInnerTexts(), ['Move old/name.go → new/name.go', 'Delete gone.txt']);
  assert.deepEqual(await lines(moved), ['−package old', '+package name']);
  assert.ok(!(await page.locator('[data-events]').innerText()).includes('*** '), 'no patch markers on the page');
});

test('other tools: a task update and any tool read as a key/value list, no escaped JSON anywhere', async () => {
  await openSession(page, id);
  const task = page.locator('li[data-tool="TaskUpdate"]');
  assert.equal(await task.locator('.tool-gist').innerText(), '#2 → in_progress · addBlockedBy, owner');
  await open(page, 'TaskUpdate');
  const pairs = (row) => row.locator('dl.args dt').evaluateAll((dts) => dts.map((dt) => `${dt.textContent}=${dt.nextElementSibling.textContent}`));
  assert.deepEqual(await pairs(task), ['taskId=2', 'status=in_progress', 'addBlockedBy=#1', 'owner=agent']);

  const mcp = await open(page, 'mcp__happy__change_title');
  assert.equal(await mcp.locator('.tool-gist').innerText(), 'Tools read as tools');
  assert.deepEqual(await pairs(mcp), ['title=Tools read as tools', 'options={\n  "notify": false,\n  "depth": 2\n}']);

  // Every row open: nothing on the page is an escaped JSON string.
  const closed = page.locator('li[data-type="tool"] details:not([open]) > summary');
  for (let n = 0; n < 20 && (await closed.count()) > 0; n++) await closed.first().click();
  assert.equal(await closed.count(), 0);
  const text = await page.locator('[data-events]').innerText();
  for (const escaped of ['\\n', '\\t', '\\"', '{"', '"}', '*** Begin Patch']) {
    assert.ok(!text.includes(escaped), `the page shows ${escaped}:\n${text}`);
  }
});

test('axe-core finds nothing on the tool rows, all open, light and dark', async () => {
  const failures = [];
  for (const colorScheme of ['light', 'dark']) {
    const ctx = await browser.newContext({ viewport: { width: 1000, height: 900 }, colorScheme, bypassCSP: true });
    const p = await ctx.newPage();
    await p.goto(`${base}/s/${id}`);
    await p.locator('li[data-type="tool"]').first().waitFor();
    for (const s of await p.locator('li[data-type="tool"] summary').all()) await s.click();
    await p.locator('li[data-tool="Write"] .diff-line').first().waitFor();
    failures.push(...(await axe(p)).map((v) => `${colorScheme}: ${v}`));
    await ctx.close();
  }
  assert.deepEqual(failures, []);
});
