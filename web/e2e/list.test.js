// The session list in a real browser.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { append, base, dropConnections, newSession, todoWrite, todos, withBrowser } from './helpers.js';

let browser;
withBrowser((b) => { browser = b; });

test('the list shows title and progress, updates live, and opens a session by its URL', async () => {
  // Narrower than the board: the list alone (the board's overview reads
  // the tails of a few sessions, fleet.test.js).
  const page = await browser.newPage({ viewport: { width: 1000, height: 720 } });
  page.on('pageerror', (err) => console.error('page error:', err));
  const id = await newSession('Listed session');
  await append(id, [['turn/start', {}]]);
  await todoWrite(id, todos('cp', ['One', 'Two']));

  const history = [];
  page.on('request', (r) => { if (new URL(r.url()).pathname.match(/^\/sessions\/[^/]+\/history$/)) history.push(r.url()); });
  await page.goto(base + '/');
  const item = page.locator(`[data-session-id="${id}"]`);
  await item.waitFor();
  assert.equal(await item.locator('.session-title').innerText(), 'Listed session');
  assert.equal(await item.locator('[data-progress]').innerText(), '1/2 done');
  await page.waitForSelector('body[data-live="connected"]', { state: 'attached' });

  // A change elsewhere arrives without a reload; a new session comes first
  // in its group (idle: no turn yet), the groups in their order.
  await todoWrite(id, todos('cc', ['One', 'Two']));
  await page.waitForFunction((sel) => document.querySelector(sel)?.textContent === '2/2 done', `[data-session-id="${id}"] [data-progress]`);
  const other = await newSession('Brand new session');
  await page.locator(`[data-session-id="${other}"]`).waitFor();
  assert.equal(await page.locator('[data-group="idle"] [data-sessions] > li').first().getAttribute('data-session-id'), other);
  assert.equal(await item.evaluate((li) => li.closest('[data-group]').dataset.group), 'working');
  const order = await page.locator('[data-session-groups] > .group').evaluateAll((els) => els.map((e) => e.dataset.group));
  assert.deepEqual(order, ['needs_you', 'working', 'idle', 'ended'].filter((g) => order.includes(g)));

  // How a turn ended and the item in progress arrive with the summary.
  await todoWrite(id, todos('ci', ['One', 'Two']));
  await page.waitForFunction((sel) => document.querySelector(sel)?.textContent === 'Two', `[data-session-id="${id}"] [data-current]`);
  await append(id, [['turn/end', { reason: 'interrupted' }]]);
  await page.waitForFunction((sel) => document.querySelector(sel)?.textContent.endsWith(' · interrupted'), `[data-session-id="${id}"] [data-badge]`);
  await append(id, [['turn/start', {}]]);
  await page.waitForFunction((sel) => document.querySelector(sel)?.textContent.startsWith('Working'), `[data-session-id="${id}"] [data-badge]`);

  // A session created while the socket is away shows once it is back.
  const away = page.locator('[data-conn]').waitFor({ state: 'visible' });
  await dropConnections();
  await away;
  const missed = await newSession('Created while away');
  await page.locator('[data-conn]').waitFor({ state: 'hidden' });
  await page.locator(`[data-session-id="${missed}"]`).waitFor();

  assert.deepEqual(history, [], 'the list reads no session history');
  await item.locator('a').click();
  await page.waitForURL(`${base}/s/${id}`);
  await page.locator('[data-title]', { hasText: 'Listed session' }).waitFor();
  await page.close();
});

test('a live summary remakes its own row only: the others stay the elements they were', async () => {
  const page = await browser.newPage({ viewport: { width: 1000, height: 720 } });
  page.on('pageerror', (err) => console.error('page error:', err));
  // Two idle sessions (no turn yet), whose rows read the same from one
  // render to the next ("Idle since 14:02", "just now"), and a working one
  // (whose "Working · 12 s" moves with the clock).
  const busy = await newSession('Row that moves');
  const still = await newSession('Row that stays');
  const other = await newSession('A row of its own');
  await append(busy, [['turn/start', {}]]);
  await page.goto(base + '/');
  await page.locator(`[data-session-id="${busy}"]`).waitFor();
  await page.waitForSelector('body[data-live="connected"]', { state: 'attached' });

  // Each row and section is marked; a summary of one session arrives.
  const mark = () => page.evaluate(() => {
    document.querySelectorAll('[data-session-id], [data-group]').forEach((el) => { el.marked = true; });
  });
  const marked = (sel) => page.evaluate((sel) => document.querySelector(sel)?.marked === true, sel);
  const row = (id) => `[data-session-id="${id}"]`;
  await mark();
  await todoWrite(busy, todos('ip', ['One', 'Two']));
  await page.waitForFunction((sel) => document.querySelector(sel)?.textContent === '0/2 done', `${row(busy)} [data-progress]`);
  assert.equal(await marked(row(busy)), false, 'the row whose session changed is made anew');
  assert.equal(await marked(row(still)), true, 'a row whose session did not change is the same element');
  assert.equal(await marked(row(other)), true);
  assert.equal(await marked('[data-group="idle"]'), true, 'the section stays');

  // A session leaving its group takes its row along, to the top of its new
  // one; the others stay, and each group's count says what it holds.
  await mark();
  await append(still, [['turn/start', {}]]);
  await page.waitForFunction((sel) => document.querySelector(sel)?.closest('[data-group]')?.dataset.group === 'working', row(still));
  assert.equal(await page.locator('[data-group="working"] [data-sessions] > li').first().getAttribute('data-session-id'), still);
  assert.equal(await page.locator(`[data-group="idle"] ${row(still)}`).count(), 0);
  assert.equal(await marked(row(other)), true);
  const counts = await page.locator('[data-group] .group-head').evaluateAll((hs) => hs.map((h) => [h.closest('[data-group]').dataset.group, h.textContent]));
  for (const [state, text] of counts) {
    const n = await page.locator(`[data-group="${state}"] [data-sessions] > li`).count();
    assert.ok(text.endsWith(` · ${n}`), `${state}: "${text}" says ${n}`);
  }
  await page.close();
});
