// The session view in a real browser: conversation, paging, the plan strip.

import { beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  append, base, connected, dropConnections, must, newPage, newSession, openSession, parallelBase, todoWrite, todos, withBrowser,
} from './helpers.js';

const PLAN = ['Reproduce the bug', 'Fix the handler', 'Run the test suite'];

let browser;
let context;
let page;
withBrowser((b) => { browser = b; });
beforeEach(async () => {
  await context?.close();
  ({ context, page } = await newPage(browser, { viewport: { width: 900, height: 700 } }));
});

/** A session with an open turn and a standing plan. */
async function sessionWithPlan(states = 'cip') {
  const id = await newSession('Plan session');
  await append(id, [['turn/start', {}], ['message/user', { text: 'Please fix the bug.' }]]);
  await todoWrite(id, todos(states, PLAN));
  return id;
}

const stripText = (page) => page.locator('[data-plan-toggle]').innerText();

describe('session view', () => {
  test('first render takes the plan from the snapshot when the todo/write is far above the tail page', async () => {
    const id = await sessionWithPlan('cip');
    const filler = Array.from({ length: 120 }, (_, i) => ['message/assistant', { text: `Working on it, step ${i + 1}.` }]);
    await append(id, filler);

    await openSession(page, id);
    await page.locator('[data-plan]').waitFor({ state: 'visible' });
    assert.equal(await page.locator('[data-plan-progress]').innerText(), '1/3 done');
    assert.equal(await page.locator('[data-plan-current]').innerText(), 'Fix the handler');
    assert.equal(await page.locator('[data-events] > li').count(), 50, 'only the tail page is loaded');
    assert.equal(await page.locator('[data-events] > li[data-type="todo/write"]').count(), 0, 'the todo/write is outside the tail page');
    // The newest event is in view: the page opens at the bottom.
    assert.ok(await page.locator('[data-events] > li').last().isVisible());
  });

  test('older pages load as the reader scrolls up, keeping their place', async () => {
    const id = await newSession('Long session');
    await append(id, [['turn/start', {}], ...Array.from({ length: 129 }, (_, i) => ['message/user', { text: `Message ${i + 2}` }])]);
    await openSession(page, id);
    const items = page.locator('[data-events] > li');
    assert.equal(await items.count(), 50);
    assert.equal(await items.first().getAttribute('data-seq'), '81');

    const scroller = page.locator('[data-scroller]');
    await scroller.evaluate((el) => { el.scrollTop = 0; });
    await page.waitForFunction(() => document.querySelectorAll('[data-events] > li').length === 100);
    // What was at the top is still where the reader left it, not pushed away.
    const drift = await page.evaluate(() => {
      const scroller = document.querySelector('[data-scroller]');
      const li = document.querySelector('[data-events] > li[data-seq="81"]');
      return li.getBoundingClientRect().top - scroller.getBoundingClientRect().top;
    });
    assert.ok(drift > -5 && drift < 150, `seq 81 moved to ${drift}px from the top`);

    await scroller.evaluate((el) => { el.scrollTop = 0; });
    await page.locator('[data-events] > li[data-seq="1"]').waitFor({ state: 'attached' });
    assert.equal(await items.count(), 130);
    const seqs = await items.evaluateAll((els) => els.map((e) => Number(e.dataset.seq)));
    assert.deepEqual(seqs, Array.from({ length: 130 }, (_, i) => i + 1), 'oldest to newest, no gaps or repeats');
  });

  test('a todo_write through the API shows in the strip and as a todo row without a reload', async () => {
    const id = await newSession('Live plan');
    await append(id, [['turn/start', {}], ['message/user', { text: 'Go.' }]]);
    await openSession(page, id);
    await connected(page);
    assert.ok(await page.locator('[data-plan]').isHidden(), 'no plan stands yet');

    await todoWrite(id, todos('ipp', PLAN));
    await page.locator('[data-plan]').waitFor({ state: 'visible' });
    assert.equal(await page.locator('[data-plan-progress]').innerText(), '0/3 done');
    const row = page.locator('[data-events] > li[data-type="todo/write"]');
    await row.waitFor();
    assert.equal(await row.locator('summary').innerText(), 'Plan updated · 0/3 done · Reproduce the bug');

    await todoWrite(id, todos('cci', PLAN));
    await page.waitForFunction(() => document.querySelector('[data-plan-progress]').textContent === '2/3 done');
    assert.equal(await page.locator('[data-plan-current]').innerText(), 'Run the test suite');
    assert.equal(await row.count(), 2);
    const last = row.last();
    assert.equal(await last.locator('summary').innerText(), 'Plan updated · 2/3 done · Run the test suite');
    // The row expands to the list it wrote, each item with its state.
    await last.locator('summary').click();
    const states = await last.locator('li.todo').evaluateAll((els) => els.map((e) => e.dataset.status));
    assert.deepEqual(states, ['completed', 'completed', 'in_progress']);
    assert.equal(await last.locator('li.todo s').count(), 2, 'completed items are struck through');
    // Screen readers hear the change.
    assert.match(await page.locator('[data-announce]').innerText(), /2 of 3 done/);
  });

  test('on turn/start the strip folds to the plan from an earlier turn, and the next write stands', async () => {
    const id = await sessionWithPlan('cip');
    await openSession(page, id);
    await connected(page);
    await page.locator('[data-plan]').waitFor({ state: 'visible' });

    await append(id, [['turn/end', { reason: 'completed' }], ['turn/start', {}]]);
    await page.locator('[data-plan][data-earlier="true"]').waitFor();
    assert.equal(await page.locator('.plan-label').innerText(), 'PLAN FROM AN EARLIER TURN');
    assert.equal(await page.locator('[data-plan-progress]').innerText(), '1/3 done');
    assert.ok(await page.locator('[data-plan-none]').isHidden(), 'no "Add a plan" beside a list the API reports');

    await todoWrite(id, todos('ip', ['Write the changelog', 'Open the PR']));
    await page.locator('[data-plan][data-earlier="false"]').waitFor();
    assert.equal(await page.locator('[data-plan-progress]').innerText(), '0/2 done');
    assert.equal(await page.locator('[data-plan-current]').innerText(), 'Write the changelog');

    // After a reload the snapshot agrees.
    await page.reload();
    await page.locator('[data-plan]').waitFor({ state: 'visible' });
    assert.equal(await page.locator('[data-plan-progress]').innerText(), '0/2 done');
  });

  test('collapse and expand survive a reload', async () => {
    const id = await sessionWithPlan('cip');
    await openSession(page, id);
    const toggle = page.locator('[data-plan-toggle]');
    const items = page.locator('[data-plan-items]');
    const panel = page.locator('[data-plan-panel]');
    await toggle.waitFor();
    assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
    assert.ok(await panel.isHidden());

    await toggle.click();
    assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
    assert.deepEqual(await items.locator('li').evaluateAll((els) => els.map((e) => e.dataset.status)), ['in_progress', 'pending']);
    assert.equal(await page.locator('[data-plan-done-count]').innerText(), '1 done', 'done items fold into "n done"');

    await page.reload();
    await toggle.waitFor();
    assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
    assert.ok(await panel.isVisible());

    await toggle.click();
    await page.reload();
    await toggle.waitFor();
    assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
    assert.ok(await panel.isHidden());
  });

  test('the toggle works from the keyboard', async () => {
    // Several items in progress need a Tack that allows it.
    const { id } = await must('POST', '/sessions', { title: 'Parallel' }, parallelBase);
    await must('POST', `/sessions/${id}/events`, { events: [{ type: 'turn/start', data: {} }] }, parallelBase);
    await must('POST', `/sessions/${id}/tools/todo_write`, { todos: todos('ici', PLAN) }, parallelBase);
    await page.goto(`${parallelBase}/s/${id}`);
    const toggle = page.locator('[data-plan-toggle]');
    await toggle.waitFor();
    assert.equal(await page.locator('[data-plan-current]').innerText(), 'Reproduce the bug +1', 'several in progress: the first and +n');

    // Tab until the toggle has focus, as a keyboard user would.
    for (let i = 0; i < 20 && !(await toggle.evaluate((el) => el === document.activeElement)); i++) {
      await page.keyboard.press('Tab');
    }
    assert.ok(await toggle.evaluate((el) => el === document.activeElement), 'the toggle is reachable with Tab');
    await page.keyboard.press('Enter');
    assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
    assert.ok(await page.locator('[data-plan-panel]').isVisible());
    await page.keyboard.press('Space');
    assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
    assert.ok(await page.locator('[data-plan-panel]').isHidden());
  });

  test('after the server drops the socket it reconnects and resumes from the last seq', async () => {
    const id = await sessionWithPlan('ipp');
    await openSession(page, id);
    await connected(page);
    const before = await page.locator('[data-events] > li').count();

    const away = page.locator('[data-conn]').waitFor({ state: 'visible' });
    await dropConnections();
    await away;
    // Written while the page is away: it must arrive once, in order.
    await append(id, [['message/assistant', { text: 'Written while you were away.' }]]);
    await todoWrite(id, todos('cip', PLAN));

    await page.locator('[data-conn]').waitFor({ state: 'hidden' });
    await page.locator('li[data-type="message/assistant"]', { hasText: 'Written while you were away.' }).waitFor();
    await page.waitForFunction(() => document.querySelector('[data-plan-progress]').textContent === '1/3 done');
    const seqs = await page.locator('[data-events] > li').evaluateAll((els) => els.map((e) => Number(e.dataset.seq)));
    assert.equal(seqs.length, before + 2);
    assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b));
    assert.equal(new Set(seqs).size, seqs.length, 'no event shown twice');
  });

  test('the running item spins, unless the reader prefers reduced motion', async () => {
    const id = await sessionWithPlan('cip');
    const animation = async () => {
      await openSession(page, id);
      return page.locator('[data-plan-items] li[data-status="in_progress"] .todo-mark')
        .evaluate((el) => getComputedStyle(el).animationName);
    };
    assert.equal(await animation(), 'spin');
    await page.emulateMedia({ reducedMotion: 'reduce' });
    assert.equal(await animation(), 'none');
  });

  test('screenshot of a session at work, plan expanded', async () => {
    const id = process.env.TACK_DEMO_SESSION;
    assert.ok(id, 'TACK_DEMO_SESSION is set by the Go test');
    await context.close();
    ({ context, page } = await newPage(browser, { viewport: { width: 1000, height: 760 }, colorScheme: 'light' }));
    await openSession(page, id);
    const toggle = page.locator('[data-plan-toggle]');
    await toggle.waitFor();
    if ((await toggle.getAttribute('aria-expanded')) !== 'true') await toggle.click();
    // Open the rejected write, the story's turning point.
    await page.locator('li.tool[data-status="error"] summary').first().click();
    await page.locator('[data-scroller]').evaluate((el) => { el.scrollTop = el.scrollHeight; });
    await page.screenshot({ path: process.env.TACK_SCREENSHOT, animations: 'disabled' });

    // And on a phone, dark, the plan expanded.
    await context.close();
    ({ context, page } = await newPage(browser, { viewport: { width: 390, height: 760 }, deviceScaleFactor: 2, isMobile: true, colorScheme: 'dark' }));
    await page.addInitScript(() => localStorage.setItem('tack.plan.expanded', 'true'));
    await openSession(page, id);
    await page.locator('[data-plan-toggle]').waitFor();
    await page.screenshot({ path: process.env.TACK_SCREENSHOT_PHONE, animations: 'disabled' });
  });
});

test('a session page reloads onto the same session, loading nothing from elsewhere', async () => {
  const id = await newSession('Reload me');
  const requested = [];
  page.on('request', (req) => requested.push(req.url()));
  page.on('websocket', (ws) => requested.push(ws.url()));
  await page.goto(`${base}/s/${id}`);
  await page.locator('[data-title]', { hasText: 'Reload me' }).waitFor();
  await page.reload();
  await page.locator('[data-title]', { hasText: 'Reload me' }).waitFor();
  await connected(page);
  assert.equal(new URL(page.url()).pathname, `/s/${id}`);
  const host = new URL(base).host;
  const elsewhere = requested.filter((u) => new URL(u).host !== host);
  assert.deepEqual(elsewhere, []);
  assert.ok(requested.some((u) => u.startsWith(`ws://${host}/sessions/${id}/live?after=`)), 'the session socket resumes after a seq');
});

test('an unknown session says so', async () => {
  await page.goto(`${base}/s/ses_doesnotexist`);
  const error = page.locator('[data-error]');
  await error.waitFor();
  assert.match(await error.innerText(), /not found/);
});

test('a line Tack heard of after its turn ended shows in its turn, before the end, live and on reload', async () => {
  const id = await newSession('Late lines');
  await append(id, [['turn/start', {}], ['message/user', { text: 'Fix it.' }], ['turn/end', { reason: 'completed' }], ['session/end', {}]]);
  await openSession(page, id);
  await page.locator('[data-events] > li[data-type="session/end"]').waitFor();
  await must('POST', `/sessions/${id}/events`, { events: [{ type: 'message/assistant', data: { text: 'Said before the end.' }, late: true }] });
  const order = () => page.locator('[data-events] > li').evaluateAll((lis) => lis.map((li) => li.dataset.type));
  const want = ['turn/start', 'message/user', 'message/assistant', 'turn/end', 'session/end'];
  await page.waitForFunction(() => document.querySelector('[data-events] > li[data-type="message/assistant"]'));
  assert.deepEqual(await order(), want, 'live');
  await page.reload();
  await page.locator('[data-events] > li[data-type="message/assistant"]').waitFor();
  assert.deepEqual(await order(), want, 'after a reload');
  const session = await must('GET', `/sessions/${id}`);
  assert.equal(session.state, 'ended');
});
