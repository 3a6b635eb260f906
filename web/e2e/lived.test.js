// Sessions as the agent lived them: harness lines as quiet rows, the
// agent's own times, the plan kept across turns, what the agent's tools
// give an item (activeForm, blockers, owner), Claude Code's task tools,
// states and subagents; and no axe-core violation on any of it.

import { beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { axe, base, call, connected, must, newPage, newSession, openSession, withBrowser } from './helpers.js';

let browser;
let context;
let page;
withBrowser((b) => { browser = b; });
beforeEach(async () => {
  await context?.close();
  ({ context, page } = await newPage(browser, { viewport: { width: 1000, height: 800 } }));
});

/** 3 January of last year, 10:00 UTC, plus s seconds: a time long past. */
const jan = (s = 0) => new Date(Date.UTC(new Date().getUTCFullYear() - 1, 0, 3, 10, 0, s)).toISOString();

/**
 * Appends events given as [type, data, at] triples, at being the agent's
 * own time where given.
 * @param {string} id @param {[string, any, string?][]} events
 */
const appendAt = (id, events) => must('POST', `/sessions/${id}/events`, { events: events.map(([type, data, at]) => (at ? { type, data, at } : { type, data })) });

/** A harness line of a kind. */
const harness = (kind, text) => ({ text, source: 'harness', kind });

const NOTIFICATION = '<task-notification>\n<task-id>b6fdbf0</task-id>\n<output-file>/tmp/claude/tasks/b6fdbf0.output</output-file>\n'
  + '<status>failed</status>\n<summary>Background command "npm test" failed with exit code 137</summary>\n</task-notification>\n'
  + 'Read the output file to retrieve the result: /tmp/claude/tasks/b6fdbf0.output';

/** A January session: a prompt, harness lines of several kinds, a timed tool call, an interruption. */
async function livedSession(title = 'Fix the flaky test') {
  const id = await newSession(title);
  await appendAt(id, [
    ['turn/start', {}, jan(0)],
    ['message/user', { text: 'Fix the flaky test' }, jan(0)],
    ['message/user', harness('command', '<command-name>/compact</command-name>\n<command-message>compact</command-message>\n<command-args></command-args>'), jan(1)],
    ['message/user', harness('ide-context', '<ide_selection>The user selected the lines 3 to 9 from /src/app/main.go:\nfunc main() {}</ide_selection>'), jan(2)],
    ['message/assistant', { text: 'Running the suite.', toolCalls: [{ id: 'c1', name: 'Bash', args: { command: 'go test ./...' } }] }, jan(5)],
    ['tool/result', { callId: 'c1', name: 'Bash', content: 'ok', isError: false }, jan(17)],
    ['message/user', harness('task-notification', NOTIFICATION), jan(20)],
    ['message/user', harness('interrupted', '[Request interrupted by user]'), jan(30)],
    ['turn/end', { reason: 'interrupted' }, jan(30)],
  ]);
  return id;
}

/** Creates a session with the fields given, or, where the server does not take them yet, with its title alone. */
async function sessionWith(fields) {
  const [status, body] = await call('POST', '/sessions', fields);
  if (status >= 200 && status < 300) return body.id;
  return newSession(fields.title);
}

test('harness lines are quiet rows, never "You"; the agent\'s own times give durations and dates', async () => {
  const id = await livedSession();
  await openSession(page, id);

  const rows = page.locator('li.harness');
  assert.deepEqual(await rows.locator('.harness-label').allInnerTexts(), [
    '/compact', 'IDE selection · main.go', 'Background task b6fdbf0 failed (exit 137)', 'Interrupted by you',
  ]);
  assert.deepEqual(await rows.evaluateAll((els) => els.map((e) => e.dataset.kind)), ['command', 'ide-context', 'task-notification', 'interrupted']);
  // Only the person's prompt is a "You" message.
  assert.deepEqual(await page.locator('li.msg.user .text').allInnerTexts(), ['Fix the flaky test']);
  assert.equal(await page.locator('li.harness .who').count(), 0);
  // A line that says more than its label expands to its text; an interruption does not.
  const note = rows.filter({ hasText: 'Background task' });
  await note.locator('summary').click();
  assert.match(await note.locator('pre').innerText(), /exit code 137/);
  assert.equal(await rows.filter({ hasText: 'Interrupted by you' }).locator('details').count(), 0);
  // The title stays the server's: never a harness line.
  assert.equal(await page.title(), 'Fix the flaky test · Tack');

  // The interruption ended the turn as interrupted.
  assert.match(await page.locator('li[data-type="turn/end"]').innerText(), /^Turn 1 interrupted after /);
  {
    // Durations from the agent's times: the tool's result 12 s after its
    // call's message, the turn 30 s from its start to the interruption.
    assert.equal(await page.locator('li[data-type="tool"] .tool-time').innerText(), '12 s');
    assert.match(await page.locator('li[data-type="turn/end"]').innerText(), /^Turn 1 interrupted after 30 s ·\s*3 Jan \d{4} \d\d:\d\d/);
    // A January session reads as January, not "just now".
    assert.match(await page.locator('li[data-type="turn/start"] time').innerText(), /^3 Jan \d{4} \d\d:\d\d/);
    const { events } = await must('GET', `/sessions/${id}/history?limit=50`);
    assert.ok(events[1].receivedAt, 'the receipt time is kept');
    const title = await page.locator('li[data-type="message/user"]').first().getAttribute('title');
    assert.match(title, /received/, 'the receipt time is kept beside the agent\'s');
  }
  // No open turn: nothing says working.
  assert.ok(await page.locator('[data-working]').isHidden());

  await page.goto(base + '/');
  const row = page.locator(`[data-session-id="${id}"]`);
  await row.waitFor();
  assert.match(await row.locator('.session-head > time').innerText(), /^3 Jan \d{4}$/);
});

test('times long past read as days: "3 Jan" in the list, "3 Jan 14:03" in a log', async () => {
  await context.clock.install({ time: new Date('2026-03-10T12:00:00') });
  await page.goto(base + '/');
  const shown = await page.evaluate(async () => {
    const t = await import(document.querySelector('script[src$="/app.js"]').src.replace(/app\.js$/, 'time.js'));
    return [t.ago('2026-01-03T10:00:00'), t.ago('2025-01-03T10:00:00'), t.when('2026-01-03T10:05:00'), t.when('2026-03-10T09:30:00'), t.ago('2026-03-10T11:59:30')];
  });
  assert.deepEqual(shown.map((x) => x.replace(/\s?[AP]M$/, '')), ['3 Jan', '3 Jan 2025', '3 Jan 10:05', '09:30', 'just now']);
});

test('TodoWrite keeps activeForm: the item in progress says what the agent is doing', async () => {
  const id = await newSession('Active form');
  await appendAt(id, [['turn/start', {}]]);
  await must('POST', `/sessions/${id}/tools/TodoWrite`, {
    todos: [
      { content: 'Run the tests', status: 'in_progress', activeForm: 'Running the tests' },
      { content: 'Write the docs', status: 'pending', activeForm: 'Writing the docs' },
    ],
  });
  await page.addInitScript(() => localStorage.setItem('tack.plan.expanded', 'true'));
  await openSession(page, id);
  assert.equal(await page.locator('[data-plan-current]').innerText(), 'Running the tests');
  const running = page.locator('[data-plan-items] li[data-status="in_progress"]');
  assert.equal(await running.locator('.todo-active').innerText(), 'Running the tests');
  // Only the item in progress shows it.
  assert.equal(await page.locator('[data-plan-items] li[data-status="pending"] .todo-active').count(), 0);
  // The conversation's row expands to the same list.
  const row = page.locator('li[data-type="todo/write"]');
  await row.locator('summary').click();
  assert.equal(await row.locator('li[data-status="in_progress"] .todo-active').innerText(), 'Running the tests');
});

test('Claude Code\'s task tools: ids, a blocker, an owner; a person\'s edit keeps them', async () => {
  const id = await newSession('Task tools');
  await appendAt(id, [['turn/start', {}]]);
  const tool = (name, args) => must('POST', `/sessions/${id}/tools/${name}`, args);
  assert.match(JSON.stringify(await tool('TaskCreate', { subject: 'Write the parser', description: 'Parse the config file.', activeForm: 'Writing the parser' })), /Task #1 created successfully: Write the parser/);
  assert.match(JSON.stringify(await tool('TaskCreate', { subject: 'Test the parser', description: 'Table tests.' })), /Task #2 created successfully: Test the parser/);
  await tool('TaskUpdate', { taskId: '2', addBlockedBy: ['1'], owner: 'tester' });
  await tool('TaskUpdate', { taskId: '1', status: 'in_progress' });

  await page.addInitScript(() => localStorage.setItem('tack.plan.expanded', 'true'));
  await openSession(page, id);
  await connected(page);
  const item = (n) => page.locator('[data-plan-panel] li.editable', { has: page.locator('.todo-text', { hasText: `#${n} ` }) });
  assert.equal(await item(1).locator('.todo-text').innerText(), '#1 Write the parser');
  assert.equal(await item(1).locator('.todo-active').innerText(), 'Writing the parser');
  assert.equal(await item(2).getAttribute('data-blocked'), 'true');
  assert.equal(await item(2).locator('.todo-blocked').innerText(), 'Blocked by #1 Write the parser');
  assert.equal(await item(2).locator('.todo-owner').innerText(), 'tester');
  assert.equal(await page.locator('[data-plan-current]').innerText(), 'Writing the parser');

  // The blocker done: nothing blocks #2 any more.
  await tool('TaskUpdate', { taskId: '1', status: 'completed' });
  await page.waitForFunction(() => !document.querySelector('[data-plan-panel] li[data-blocked]'));
  assert.equal(await item(2).locator('.todo-blocked').count(), 0);

  // A person starts #2 from the strip: the PUT keeps its id, blocker and owner.
  const put = page.waitForRequest((r) => r.method() === 'PUT');
  await page.getByRole('button', { name: '“Test the parser” is pending; mark it in progress' }).click();
  const body = JSON.parse((await put).postData());
  const before = await must('GET', `/sessions/${id}/todos`);
  const oneId = before.todos.find((t) => t.taskId === '1').id;
  assert.deepEqual(body.todos.find((t) => t.content === 'Test the parser'),
    { content: 'Test the parser', status: 'in_progress', taskId: '2', owner: 'tester', blockedBy: [oneId], description: 'Table tests.' });
  await page.locator('[data-plan-items] li[data-status="in_progress"]', { hasText: '#2 Test the parser' }).waitFor();
  const view = await must('GET', `/sessions/${id}/todos`);
  const two = view.todos.find((t) => t.taskId === '2');
  assert.equal(two.status, 'in_progress');
  assert.equal(two.owner, 'tester');
  assert.deepEqual(two.blockedBy, [oneId]);
});

test('a plan from an earlier turn shows folded with its progress, never beside "Add a plan"', async () => {
  const id = await newSession('Earlier plan');
  await appendAt(id, [['turn/start', {}]]);
  await must('POST', `/sessions/${id}/tools/todo_write`, { todos: [{ content: 'Read', status: 'completed' }, { content: 'Patch', status: 'in_progress' }] });
  await appendAt(id, [['turn/end', { reason: 'completed' }], ['turn/start', {}], ['message/user', { text: 'And the docs?' }]]);
  const view = await must('GET', `/sessions/${id}/todos`);
  assert.equal(view.todos.length, 2, 'the API reports the list');

  await page.addInitScript(() => localStorage.setItem('tack.plan.expanded', 'true'));
  await openSession(page, id);
  const strip = page.locator('[data-plan]');
  await page.locator('[data-plan][data-earlier="true"]').waitFor();
  assert.equal(await strip.locator('.plan-label').innerText(), 'PLAN FROM AN EARLIER TURN');
  assert.equal(await page.locator('[data-plan-progress]').innerText(), '1/2 done');
  assert.ok(await page.locator('[data-plan-none]').isHidden(), 'no "Add a plan" beside the list');
  const toggle = page.locator('[data-plan-toggle]');
  assert.equal(await toggle.getAttribute('aria-expanded'), 'false', 'folded');
  await toggle.click();
  assert.equal(await page.locator('[data-plan-items] li').count(), 1);
});

test('states, subagents and the session lifetime of a plan', async () => {
  const parent = await sessionWith({ title: 'Parent session', agent: 'claude-code', planLifetime: 'session' });
  const child = await sessionWith({ title: 'Subagent: explore the parser', agent: 'claude-code', parentId: parent });
  await appendAt(parent, [['turn/start', {}], ['message/user', { text: 'Plan it' }]]);
  await must('POST', `/sessions/${parent}/tools/todo_write`, { todos: [{ content: 'Explore', status: 'in_progress' }, { content: 'Fix', status: 'pending' }] });
  await appendAt(child, [['turn/start', {}], ['message/user', { text: 'Explore the parser' }]]);
  await must('POST', `/sessions/${child}/tools/todo_write`, { todos: [{ content: 'Read parser.go', status: 'completed' }, { content: 'Report', status: 'in_progress' }] });
  await appendAt(parent, [['turn/end', { reason: 'completed' }], ['turn/start', {}], ['message/user', { text: 'Go on' }]]);
  const ps = await must('GET', `/sessions/${parent}`);
  const cs = await must('GET', `/sessions/${child}`);

  await openSession(page, parent);
  await connected(page);
  // A plan that stands for the session, written in an earlier turn.
  assert.equal(ps.planLifetime, 'session');
  await page.locator('[data-plan][data-earlier="true"]').waitFor();
  assert.equal(await page.locator('[data-plan-progress]').innerText(), '0/2 done');
  // The parent's page lists its child.
  assert.equal(cs.parentId, parent);
  {
    const row = page.locator(`[data-children] [data-session-id="${child}"]`);
    await row.waitFor();
    assert.equal(await row.locator('a.session-title').getAttribute('href'), `/s/${child}`);
    assert.equal(await row.locator('[data-progress]').innerText(), '1/2 done');
    assert.ok(await row.locator('[data-badge]').innerText());
    assert.equal(await page.locator('[data-children-count]').innerText(), 'SUBAGENTS · 1');
  }
  // The header says the state and the time in it.
  assert.equal(ps.state, 'working');
  assert.match(await page.locator('[data-session-state]').innerText(), /^Working · \d/);

  // The agent ends the session: a row says so, and the state follows.
  await appendAt(parent, [['turn/end', { reason: 'completed' }], ['session/end', { reason: 'prompt_input_exit' }]]);
  const end = page.locator('li[data-type="session/end"]');
  await end.waitFor();
  assert.match(await end.innerText(), /^Session ended · prompt_input_exit ·\s*\d\d:\d\d/);
  assert.ok(await page.locator('[data-working]').isHidden());
  await page.waitForFunction(() => document.querySelector('[data-session-state]')?.textContent === 'Ended');

  await page.goto(base + '/');
  await page.locator(`[data-session-id="${parent}"]`).waitFor();
  // Children nest under their parent.
  assert.equal(await page.locator(`[data-sessions] > li[data-session-id="${child}"]`).count(), 0, 'not at the top level');
  assert.equal(await page.locator(`[data-session-id="${parent}"] .session-children [data-session-id="${child}"]`).count(), 1);
  assert.equal(await page.locator(`[data-session-id="${parent}"] > .session-head [data-badge]`).innerText(), 'Ended');
  assert.match(await page.locator(`[data-session-id="${child}"] [data-badge]`).innerText(), /^Working · \d/);
});

test('axe-core finds nothing: harness rows, blocked items, an earlier plan, the list, light and dark', async () => {
  const lived = await livedSession('Axe lived');
  const tasks = await newSession('Axe tasks');
  await appendAt(tasks, [['turn/start', {}]]);
  await must('POST', `/sessions/${tasks}/tools/TaskCreate`, { subject: 'One', description: 'First', activeForm: 'Doing one' });
  await must('POST', `/sessions/${tasks}/tools/TaskCreate`, { subject: 'Two', description: 'Second' });
  await must('POST', `/sessions/${tasks}/tools/TaskUpdate`, { taskId: '2', addBlockedBy: ['1'], owner: 'helper' });
  await must('POST', `/sessions/${tasks}/tools/TaskUpdate`, { taskId: '1', status: 'in_progress' });
  await appendAt(tasks, [['turn/end', { reason: 'completed' }], ['turn/start', {}], ['session/end', {}]]);
  const failures = [];
  for (const colorScheme of ['light', 'dark']) {
    const ctx = await browser.newContext({ viewport: { width: 1000, height: 700 }, colorScheme, bypassCSP: true });
    const p = await ctx.newPage();
    await p.goto(`${base}/s/${lived}`);
    await p.locator('li.harness').first().waitFor();
    await p.locator('li.harness summary').first().click();
    failures.push(...(await axe(p)).map((v) => `${colorScheme} lived: ${v}`));
    await p.goto(`${base}/s/${tasks}`);
    await p.locator('[data-plan][data-earlier="true"]').waitFor();
    await p.locator('[data-plan-toggle]').click();
    await p.locator('[data-plan-panel] li[data-blocked="true"]').waitFor();
    failures.push(...(await axe(p)).map((v) => `${colorScheme} tasks: ${v}`));
    await p.goto(base + '/');
    await p.locator('[data-sessions] > li').first().waitFor();
    failures.push(...(await axe(p)).map((v) => `${colorScheme} list: ${v}`));
    await ctx.close();
  }
  assert.deepEqual(failures, []);
});
