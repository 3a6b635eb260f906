// A person steering the plan in a real browser: every gesture by mouse and
// by keyboard, each one PUT against the version shown; a conflict with an
// agent write in flight losing nothing; the edit row; the history view; and
// no axe-core violation on any of it, light and dark.

import { beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { append, axe, base, call, connected, must, newPage, newSession, openSession, todos, withBrowser } from './helpers.js';

const PLAN = ['Reproduce the bug', 'Fix the handler', 'Run the test suite'];

let browser;
let context;
let page;
/** Every PUT the page sent: its body and content type. */
let puts;
withBrowser((b) => { browser = b; });
beforeEach(async () => {
  await context?.close();
  ({ context, page } = await newPage(browser, { viewport: { width: 1000, height: 800 } },
    (c) => c.addInitScript(() => localStorage.setItem('tack.plan.expanded', 'true'))));
  puts = [];
  page.on('request', (req) => {
    if (req.method() === 'PUT') puts.push({ body: JSON.parse(req.postData() ?? 'null'), type: req.headers()['content-type'] });
  });
});

/** The current list as the API has it: [version, "content:status" each]. */
async function current(id) {
  const view = await must('GET', `/sessions/${id}/todos`);
  return [view.version, view.todos.map((t) => `${t.content}:${t.status}`)];
}

/** The agent's todo_write; told of an edit it had not seen, it writes again (as a model would). */
async function agentWrites(id, list) {
  let [status, body] = await call('POST', `/sessions/${id}/tools/todo_write`, { todos: list });
  if (status === 409) [status, body] = await call('POST', `/sessions/${id}/tools/todo_write`, { todos: list });
  assert.equal(status, 200, JSON.stringify(body));
}

/** A session with an open turn and a plan the agent wrote; the page open on it. */
async function planSession(states = 'ipp', items = PLAN) {
  const id = await newSession('Steer');
  await append(id, [['turn/start', {}], ['message/user', { text: 'Fix the bug.' }]]);
  await agentWrites(id, todos(states, items));
  await openSession(page, id);
  await connected(page);
  await page.locator('[data-plan-items] li').first().waitFor();
  return id;
}

const item = (content) => page.locator('li.editable').filter({ has: page.locator('.todo-text', { hasText: new RegExp(`^${content}$`) }) });
const stripItems = () => page.locator('[data-plan-panel] li.editable').evaluateAll((els) => els.map((e) => `${e.dataset.content}:${e.dataset.status}`));
const focused = () => page.evaluate(() => {
  const a = document.activeElement;
  return `${a?.closest('li.editable')?.dataset.content || a?.id || a?.tagName}:${a?.dataset.act ?? ''}`;
});

/**
 * Waits for the one PUT a gesture sends and checks it: JSON, against the
 * version shown before it, and the list it sent is what Tack now has.
 */
async function onePut(id, versionBefore, gesture) {
  const n = puts.length;
  const answered = page.waitForResponse((r) => r.request().method() === 'PUT');
  await gesture();
  const res = await answered;
  assert.equal(res.status(), 200, await res.text());
  await page.waitForTimeout(50);
  assert.equal(puts.length, n + 1, 'one gesture, one PUT');
  const put = puts[n];
  assert.equal(put.type, 'application/json');
  assert.equal(put.body.baseVersion, versionBefore, 'the PUT names the version shown');
  const [version, list] = await current(id);
  assert.deepEqual(list, put.body.todos.map((t) => `${t.content}:${t.status}`));
  // The strip shows the version Tack has.
  await page.waitForFunction((v) => document.querySelector('[data-plan]').dataset.version === String(v), version);
  return version;
}

describe('editing the plan', () => {
  test('by mouse: cycle a status, edit a text, add, reorder, delete, clear', async () => {
    const id = await planSession('ipp');
    let [v] = await current(id);

    // Status: in progress → completed (it folds into "1 done").
    v = await onePut(id, v, () => item('Reproduce the bug').locator('[data-act="status"]').click());
    assert.deepEqual(await stripItems(), ['Reproduce the bug:completed', 'Fix the handler:pending', 'Run the test suite:pending']);
    // pending → in progress.
    v = await onePut(id, v, () => item('Fix the handler').locator('[data-act="status"]').click());
    assert.equal(await page.locator('[data-plan-current]').innerText(), 'Fix the handler');

    // Text: click it, type, click away.
    await item('Run the test suite').locator('[data-act="edit"]').click();
    const input = page.locator('li.editable input');
    assert.equal(await input.inputValue(), 'Run the test suite');
    await input.fill('Run the whole test suite');
    v = await onePut(id, v, () => page.locator('[data-scroller]').click({ position: { x: 5, y: 5 } }));
    assert.deepEqual((await current(id))[1], ['Reproduce the bug:completed', 'Fix the handler:in_progress', 'Run the whole test suite:pending']);

    // Add.
    await page.getByLabel('New item').fill('Write the changelog');
    v = await onePut(id, v, () => page.getByRole('button', { name: 'Add', exact: true }).click());
    assert.deepEqual(await stripItems(), ['Reproduce the bug:completed', 'Fix the handler:in_progress', 'Run the whole test suite:pending', 'Write the changelog:pending']);

    // Reorder: the changelog up, past the suite.
    v = await onePut(id, v, () => page.getByRole('button', { name: 'Move “Write the changelog” up' }).click());
    assert.deepEqual((await current(id))[1].slice(2), ['Write the changelog:pending', 'Run the whole test suite:pending']);
    v = await onePut(id, v, () => page.getByRole('button', { name: 'Move “Write the changelog” down' }).click());
    assert.deepEqual((await current(id))[1].slice(2), ['Run the whole test suite:pending', 'Write the changelog:pending']);

    // Delete.
    v = await onePut(id, v, () => page.getByRole('button', { name: 'Delete “Write the changelog”' }).click());
    assert.equal((await current(id))[1].length, 3);

    // Clear, after saying yes.
    await page.getByRole('button', { name: 'Clear plan' }).click();
    assert.equal(await page.locator('[data-plan-clear-confirm] [data-label]').innerText(), 'Clear all 3 items?');
    v = await onePut(id, v, () => page.getByRole('button', { name: 'Clear', exact: true }).click());
    assert.deepEqual((await current(id))[1], []);
    await page.locator('[data-plan]').waitFor({ state: 'hidden' });
    // With no plan, one can be begun.
    await page.getByRole('button', { name: 'Add a plan' }).click();
    await page.getByLabel('New item').fill('Start over');
    await onePut(id, v, () => page.getByRole('button', { name: 'Add', exact: true }).click());
    assert.deepEqual((await current(id))[1], ['Start over:pending']);
    assert.equal(puts.length, 9, 'nine gestures, nine PUTs');
  });

  test('by keyboard: Space cycles, Enter edits, Escape cancels, Alt+↑/↓ move, Delete deletes, focus stays put', async () => {
    const id = await planSession('ppp');
    let [v] = await current(id);

    // Reach the items with Tab, as a keyboard user would.
    const first = item('Reproduce the bug').locator('[data-act="status"]');
    for (let i = 0; i < 30 && !(await first.evaluate((el) => el === document.activeElement)); i++) await page.keyboard.press('Tab');
    assert.equal(await focused(), 'Reproduce the bug:status');
    v = await onePut(id, v, () => page.keyboard.press('Space'));
    assert.equal((await current(id))[1][0], 'Reproduce the bug:in_progress');
    assert.equal(await focused(), 'Reproduce the bug:status', 'focus stays on the item');
    assert.match(await page.locator('[data-announce]').innerText(), /“Reproduce the bug” is in progress/);

    // Enter edits; Escape cancels and sends nothing.
    await page.keyboard.press('Tab');
    assert.equal(await focused(), 'Reproduce the bug:edit');
    await page.keyboard.press('Enter');
    await page.keyboard.type(' now');
    await page.keyboard.press('Escape');
    assert.equal(await focused(), 'Reproduce the bug:edit');
    assert.equal(await page.locator('li.editable input').count(), 0);
    // Enter edits; Enter saves.
    await page.keyboard.press('Enter');
    await page.keyboard.press('End');
    await page.keyboard.type(' first');
    v = await onePut(id, v, () => page.keyboard.press('Enter'));
    assert.equal((await current(id))[1][0], 'Reproduce the bug first:in_progress');
    await page.waitForFunction(() => document.activeElement?.closest('li')?.dataset.content === 'Reproduce the bug first');
    assert.equal(await focused(), 'Reproduce the bug first:edit', 'focus is on the renamed item');

    // ↓ goes to the next item; Alt+↑ and Alt+↓ move it, focus following.
    await page.keyboard.press('ArrowDown');
    assert.equal(await focused(), 'Fix the handler:edit');
    v = await onePut(id, v, () => page.keyboard.press('Alt+ArrowDown'));
    assert.deepEqual((await current(id))[1].map((s) => s.split(':')[0]), ['Reproduce the bug first', 'Run the test suite', 'Fix the handler']);
    assert.equal(await focused(), 'Fix the handler:edit');
    v = await onePut(id, v, () => page.keyboard.press('Alt+ArrowUp'));
    assert.deepEqual((await current(id))[1].map((s) => s.split(':')[0]), ['Reproduce the bug first', 'Fix the handler', 'Run the test suite']);
    assert.equal(await focused(), 'Fix the handler:edit');

    // Delete deletes; focus goes on to the item in its place.
    v = await onePut(id, v, () => page.keyboard.press('Delete'));
    assert.deepEqual((await current(id))[1].map((s) => s.split(':')[0]), ['Reproduce the bug first', 'Run the test suite']);
    assert.equal(await focused(), 'Run the test suite:edit');
    assert.match(await page.locator('[data-announce]').innerText(), /Deleted “Fix the handler”/);

    // Add: type and Enter; focus stays in the field for the next one.
    await page.getByLabel('New item').focus();
    await page.keyboard.type('Open the PR');
    v = await onePut(id, v, () => page.keyboard.press('Enter'));
    assert.equal(await focused(), 'plan-add-input:');
    assert.equal(await page.getByLabel('New item').inputValue(), '');

    // Clear: Tab to it, Enter, then Enter on "Clear" (Escape keeps the plan).
    await page.getByRole('button', { name: 'Clear plan' }).focus();
    await page.keyboard.press('Enter');
    assert.equal(await focused(), 'BUTTON:clear-yes');
    await page.keyboard.press('Escape');
    assert.equal(await page.getByRole('button', { name: 'Clear plan' }).evaluate((el) => el === document.activeElement), true);
    await page.keyboard.press('Enter');
    await onePut(id, v, () => page.keyboard.press('Enter'));
    assert.deepEqual((await current(id))[1], []);
    assert.equal(await focused(), 'BUTTON:', 'focus lands on "Add a plan"');
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Add a plan');
    assert.equal(puts.length, 7);
  });

  test('a refused edit keeps what was typed, with the reason', async () => {
    const id = await planSession('ipp');
    await item('Fix the handler').locator('[data-act="edit"]').click();
    await page.locator('li.editable input').fill('Reproduce the bug');
    await page.keyboard.press('Enter');
    const error = page.locator('[data-plan-error]');
    await error.waitFor();
    assert.match(await error.innerText(), /duplicate content "Reproduce the bug"/);
    const input = page.locator('li.editable input');
    assert.equal(await input.inputValue(), 'Reproduce the bug', 'the text typed is still there');
    assert.equal(await input.getAttribute('aria-invalid'), 'true');
    assert.ok(await input.evaluate((el) => el === document.activeElement));
    assert.deepEqual((await current(id))[1].map((s) => s.split(':')[0]), PLAN);
  });
});

describe('conflicts', () => {
  test('an agent write in flight: the agent’s list is shown, the person’s change kept and applied again', async () => {
    const id = await planSession('ipp');
    const [v0] = await current(id);
    // The agent's write lands while the person's PUT is on its way.
    let held = true;
    await page.route('**/sessions/*/todos', async (route) => {
      if (route.request().method() === 'PUT' && held) {
        held = false;
        await agentWrites(id, todos('cip', PLAN));
      }
      await route.continue();
    });
    await item('Run the test suite').locator('[data-act="edit"]').click();
    await page.locator('li.editable input').fill('Run the whole test suite');
    const conflict = page.waitForResponse((r) => r.request().method() === 'PUT');
    await page.keyboard.press('Enter');
    assert.equal((await conflict).status(), 409);

    // The agent's list, and the change kept.
    const box = page.locator('[data-plan-held]');
    await box.waitFor();
    assert.match(await box.innerText(), /your change is kept: rename “Run the test suite” to “Run the whole test suite”/);
    await page.waitForFunction(() => document.querySelector('[data-plan-progress]').textContent === '1/3 done');
    assert.deepEqual(await stripItems(), ['Reproduce the bug:completed', 'Fix the handler:in_progress', 'Run the test suite:pending']);
    assert.ok(await page.getByRole('button', { name: 'Apply again' }).evaluate((el) => el === document.activeElement), 'focus is on "Apply again"');
    assert.match(await page.locator('[data-announce]').innerText(), /Apply again/);
    const [v1] = await current(id);
    assert.ok(v1 > v0);
    await page.screenshot({ path: process.env.TACK_SCREENSHOT_EDIT, animations: 'disabled' });

    await page.keyboard.press('Enter');
    await box.waitFor({ state: 'hidden' });
    assert.deepEqual((await current(id))[1], ['Reproduce the bug:completed', 'Fix the handler:in_progress', 'Run the whole test suite:pending'],
      'the agent’s change and the person’s, both');
    assert.deepEqual(puts.map((p) => p.body.baseVersion), [v0, v1], 'again against the version now shown');
  });

  test('the agent writes while an item’s text is being typed: the field stays, nothing typed is lost', async () => {
    const id = await planSession('ipp');
    await item('Fix the handler').locator('[data-act="edit"]').click();
    const input = page.locator('li.editable input');
    await input.fill('Fix the handler and its caller');
    const [seen] = await current(id);
    await agentWrites(id, todos('cip', PLAN));
    // The socket brings the agent's write; the field is left alone, and the
    // rows wait for it to close.
    await page.waitForFunction(() => document.querySelectorAll('li[data-type="todo/write"]').length === 2);
    assert.equal(await input.inputValue(), 'Fix the handler and its caller');
    assert.equal(await page.locator('[data-plan]').getAttribute('data-version'), String(seen));
    assert.ok(await input.evaluate((el) => el === document.activeElement));

    // Saved against the version the person saw: a conflict, then applied again.
    await page.keyboard.press('Enter');
    await page.locator('[data-plan-held]').waitFor();
    assert.deepEqual(await stripItems(), ['Reproduce the bug:completed', 'Fix the handler:in_progress', 'Run the test suite:pending']);
    await page.getByRole('button', { name: 'Apply again' }).click();
    await page.locator('[data-plan-held]').waitFor({ state: 'hidden' });
    assert.deepEqual((await current(id))[1], ['Reproduce the bug:completed', 'Fix the handler and its caller:in_progress', 'Run the test suite:pending']);
  });

  test('"Discard my change" drops it and sends nothing', async () => {
    const id = await planSession('ipp');
    await page.route('**/sessions/*/todos', async (route) => {
      if (route.request().method() === 'PUT') await agentWrites(id, todos('cip', PLAN));
      await route.continue();
    });
    await page.getByRole('button', { name: 'Delete “Run the test suite”' }).click();
    await page.locator('[data-plan-held]').waitFor();
    await page.getByRole('button', { name: 'Discard my change' }).click();
    await page.locator('[data-plan-held]').waitFor({ state: 'hidden' });
    assert.equal(puts.length, 1);
    assert.equal((await current(id))[1].length, 3);
  });
});

test('edits are rows of their own in the conversation: "You edited the plan", another person by name', async () => {
  const id = await planSession('ipp');
  await item('Reproduce the bug').locator('[data-act="status"]').click();
  const row = page.locator('[data-events] > li[data-type="todo/edit"]');
  await row.waitFor();
  assert.match(await row.locator('summary').innerText(), /^You edited the plan · 1\/3 done · next: Fix the handler · \d\d:\d\d( [AP]M)?$/);
  assert.equal(await row.getAttribute('data-by'), 'local');
  await row.locator('summary').click();
  assert.deepEqual(await row.locator('li.todo').evaluateAll((els) => els.map((e) => e.dataset.status)), ['completed', 'pending', 'pending']);
  // The agent's write after it is a row of its own, as before.
  await agentWrites(id, todos('cip', PLAN));
  await page.locator('[data-events] > li[data-type="todo/write"]').nth(1).waitFor();

  // Read by someone else (the page's GET /me answered for another principal),
  // the same edit names its author.
  await page.route('**/me', (route) => route.fulfill({ json: { principal: { id: 'prn_x', name: 'bob' }, scope: 'read', via: 'cookie', auth: 'token' } }));
  await page.reload();
  await row.waitFor();
  assert.match(await row.locator('summary').innerText(), /^local edited the plan · /);
});

test('edits in a row are one row: "You edited the plan 3 times"', async () => {
  const id = await planSession('ppp');
  // Started, done, the next started: three edits, nothing between them.
  for (const content of [PLAN[0], PLAN[0], PLAN[1]]) {
    const [version] = await current(id);
    await onePut(id, version, () => item(content).locator('[data-act="status"]').click());
  }
  const rows = page.locator('[data-events] > li[data-type="todo/edit"]');
  await page.waitForFunction(() => document.querySelector('[data-events] > li[data-type="todo/edit"]')?.dataset.count === '3');
  assert.equal(await rows.count(), 1);
  assert.match(await rows.locator('summary').innerText(), /^You edited the plan 3 times · 1\/3 done · Fix the handler · \d\d:\d\d( [AP]M)?$/);
  await rows.locator('summary').click();
  assert.deepEqual(await rows.locator('li.todo').evaluateAll((els) => els.map((e) => e.dataset.status)), ['completed', 'in_progress', 'pending'], 'the last list');
  // Read again from the log: still one row.
  await page.reload();
  await rows.first().waitFor();
  assert.equal(await rows.count(), 1);
  assert.equal(await rows.getAttribute('data-count'), '3');
  // Something else in between starts a new row.
  await connected(page);
  await agentWrites(id, todos('cpp', PLAN));
  await page.locator('[data-events] > li[data-type="todo/write"]').nth(1).waitFor();
  await page.waitForFunction(() => document.querySelector('[data-plan-progress]').textContent === '1/3 done'
    && !document.querySelector('[data-plan-items] li[data-status="in_progress"]'));
  const [version] = await current(id);
  await onePut(id, version, () => item('Fix the handler').locator('[data-act="status"]').click());
  await page.waitForFunction(() => document.querySelectorAll('[data-events] > li[data-type="todo/edit"]').length === 2);
  assert.match(await rows.nth(1).locator('summary').innerText(), /^You edited the plan · /);
});

test('the history view: versions newest first, who, what changed, each item’s time queued, in progress and done', async () => {
  const id = await planSession('ppp');
  await onePut(id, (await current(id))[0], () => item('Reproduce the bug').locator('[data-act="status"]').click());
  await agentWrites(id, todos('cip', PLAN));
  await page.waitForFunction(() => document.querySelector('[data-plan-progress]').textContent === '1/3 done');

  await page.getByRole('button', { name: 'History', exact: true }).click();
  const dialog = page.getByRole('dialog', { name: 'Plan history' });
  await dialog.locator('li.version').nth(2).waitFor();
  const versions = dialog.locator('li.version');
  assert.deepEqual(await versions.evaluateAll((els) => els.map((e) => e.dataset.by)), ['agent', 'local', 'agent']);
  // Numbered 1…n, the oldest 1: not by the log's sequence numbers.
  assert.match(await versions.nth(0).locator('summary').innerText(), /^Version 3 · \d\d:\d\d( [AP]M)? · Agent · 2 changes$/);
  assert.match(await versions.nth(1).locator('summary').innerText(), /^Version 2 · \d\d:\d\d( [AP]M)? · You · 1 change$/);
  assert.match(await versions.nth(2).locator('summary').innerText(), /^Version 1 · /);
  // The newest is open: its changes and its items with their times.
  assert.deepEqual(await versions.nth(0).locator('.change').allInnerTexts(),
    ['“Reproduce the bug”: in progress → completed', '“Fix the handler”: pending → in progress']);
  const rows = versions.nth(0).locator('tbody tr');
  assert.deepEqual(await versions.nth(0).locator('thead th').allInnerTexts(), ['Item', 'Status', 'Queued', 'In progress', 'Done']);
  const cells = await rows.evaluateAll((trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent)));
  const t = /^\d+(\.\d)? s$/;
  assert.equal(cells[0][0], 'Reproduce the bug');
  assert.match(cells[0][2], t, 'queued until it started');
  assert.match(cells[0][3], t, 'in progress until done');
  assert.match(cells[0][4], t, 'done since');
  assert.match(cells[1][3], t, 'in progress so far');
  assert.equal(cells[1][4], '—', 'not done');
  assert.equal(cells[2][3], '—', 'never started');
  // An older version opens to its own changes.
  await versions.nth(2).locator('summary').click();
  assert.deepEqual(await versions.nth(2).locator('.change').allInnerTexts(), PLAN.map((c) => `Added “${c}”`));

  // Escape closes it and focus is back on the button that opened it.
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'hidden' });
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'History');
});

test('the history pages: "Load older versions" past the first 20', async () => {
  const id = await newSession('Many versions');
  await append(id, [['turn/start', {}]]);
  for (let i = 0; i < 22; i++) await agentWrites(id, todos('p', [`Step ${i}`]));
  await openSession(page, id);
  await page.getByRole('button', { name: 'History', exact: true }).click();
  const versions = page.locator('[data-history] li.version');
  await versions.nth(19).waitFor();
  assert.equal(await versions.count(), 20);
  await page.getByRole('button', { name: 'Load older versions' }).click();
  await versions.nth(21).waitFor();
  assert.ok(await page.getByRole('button', { name: 'Load older versions' }).isHidden());
  const nums = await versions.evaluateAll((els) => els.map((e) => Number(e.dataset.version)));
  assert.deepEqual(nums, [...nums].sort((a, b) => b - a), 'newest first, no repeats');
  assert.equal(new Set(nums).size, 22);
  // More than a page: counted aside, then numbered 22 down to 1.
  await page.waitForFunction(() => document.querySelector('[data-history] li.version .version-n')?.textContent === 'Version 22');
  assert.deepEqual(await versions.locator('.version-n').allInnerTexts(), Array.from({ length: 22 }, (_, i) => `Version ${22 - i}`));
});

test('axe-core finds nothing on the edited views: the strip editing, a kept change, edit rows, the history; light and dark', async () => {
  const id = await newSession('Axe edits');
  await append(id, [['turn/start', {}], ['message/user', { text: 'Go.' }]]);
  await agentWrites(id, todos('cip', PLAN));
  const [v] = await current(id);
  await must('PUT', `/sessions/${id}/todos`, { todos: todos('cipp', [...PLAN, 'Write the changelog']), baseVersion: v });
  await must('PUT', `/sessions/${id}/todos`, { todos: [], baseVersion: (await current(id))[0] });
  await agentWrites(id, todos('cip', PLAN));
  const failures = [];
  for (const colorScheme of ['light', 'dark']) {
    const ctx = await browser.newContext({ viewport: { width: 1000, height: 800 }, colorScheme, bypassCSP: true });
    await ctx.addInitScript(() => localStorage.setItem('tack.plan.expanded', 'true'));
    const p = await ctx.newPage();
    const check = async (what) => {
      failures.push(...(await axe(p)).map((v) => `${colorScheme} ${what}: ${v}`));
    };
    await p.goto(`${base}/s/${id}`);
    await p.locator('[data-plan-items] li').first().waitFor();
    await p.locator('li[data-type="todo/edit"] summary').first().click();
    // An item's text being edited, and a change kept after a conflict.
    await p.route('**/sessions/*/todos', async (route) => {
      if (route.request().method() === 'PUT') await agentWrites(id, todos('cci', PLAN));
      await route.continue();
    });
    await p.getByRole('button', { name: 'Delete “Run the test suite”' }).click();
    await p.locator('[data-plan-held]').waitFor();
    await p.locator('[data-plan-items] li.editable [data-act="edit"]').first().click();
    await check('editing, a change kept');
    await p.keyboard.press('Escape');
    await p.getByRole('button', { name: 'Discard my change' }).click();
    await p.getByRole('button', { name: 'History', exact: true }).click();
    await p.locator('[data-history] li.version').nth(3).waitFor();
    await p.locator('[data-history] li.version summary').nth(1).click();
    await check('history');
    await ctx.close();
  }
  assert.deepEqual(failures, []);
});
