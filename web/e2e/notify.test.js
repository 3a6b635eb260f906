// Browser notifications: opted into from the open app, granted through the
// browser's own permission, shown when a turn ends, a plan completes or a
// turn fails in a session the person is not looking at.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { append, axe, base, connected, newPage, newSession, todos, todoWrite, withBrowser } from './helpers.js';

let browser;
withBrowser((b) => { browser = b; });

test('notifications: off until asked, then a turn\'s end, a finished plan and a failure each shown once', async () => {
  const { context, page } = await newPage(browser, { viewport: { width: 1200, height: 800 }, bypassCSP: true }, async (ctx) => {
    await ctx.grantPermissions(['notifications'], { origin: base });
    // Record what is shown, and still show it.
    await ctx.addInitScript(() => {
      const Real = window.Notification;
      window.__shown = [];
      window.Notification = class extends Real {
        constructor(title, opts) { super(title, opts); window.__shown.push({ title, body: opts?.body, tag: opts?.tag }); }
      };
    });
  });
  try {
    const id = await newSession('Notify session');
    await append(id, [['turn/start', {}]]);
    await todoWrite(id, todos('ip', ['Read', 'Patch']));
    await page.goto(base + '/');
    await page.locator(`[data-session-id="${id}"]`).waitFor();
    await connected(page);
    const button = page.locator('[data-notify]');
    assert.equal(await button.innerText(), 'Notify me');
    assert.equal(await button.getAttribute('aria-pressed'), 'false');

    // Off: a turn's end shows nothing.
    await append(id, [['turn/end', { reason: 'completed' }], ['turn/start', {}]]);
    await page.waitForFunction((sel) => document.querySelector(sel)?.textContent.startsWith('Working'), `[data-session-id="${id}"] [data-badge]`);
    assert.deepEqual(await page.evaluate(() => window.__shown), []);

    await button.click();
    await page.waitForFunction(() => document.querySelector('[data-notify]').getAttribute('aria-pressed') === 'true');
    assert.equal(await button.innerText(), 'Notifications on');

    // Each moment as the feed tells it (it sends a session's newest summary).
    await todoWrite(id, todos('cc', ['Read', 'Patch']));
    await page.waitForFunction(() => window.__shown.length >= 1);
    await append(id, [['turn/end', { reason: 'completed' }]]);
    await page.waitForFunction(() => window.__shown.length >= 2);
    await append(id, [['turn/start', {}], ['turn/end', { reason: 'error' }]]);
    await page.waitForFunction(() => window.__shown.length >= 3);
    const shown = await page.evaluate(() => window.__shown);
    assert.deepEqual(shown.map((n) => n.tag.split(':')[1]), ['plan_completed', 'turn_ended', 'turn_failed']);
    assert.equal(shown[0].title, 'Notify session: plan done');
    assert.equal(shown[2].title, 'Notify session: turn 3 failed');
    assert.ok(shown.every((n) => n.tag.startsWith(id + ':')));

    // The choice is kept; turned off, nothing more is shown.
    await page.reload();
    await page.locator(`[data-session-id="${id}"]`).waitFor();
    assert.equal(await page.locator('[data-notify]').innerText(), 'Notifications on');
    assert.deepEqual(await axe(page), []);
    await page.locator('[data-notify]').click();
    assert.equal(await page.locator('[data-notify]').innerText(), 'Notify me');
    await connected(page);
    await append(id, [['turn/start', {}], ['turn/end', { reason: 'completed' }]]);
    await page.waitForFunction((sel) => document.querySelector(sel)?.textContent.startsWith('Idle'), `[data-session-id="${id}"] [data-badge]`);
    assert.deepEqual(await page.evaluate(() => window.__shown), []);
  } finally {
    await context.close();
  }
});
