// Following the agent: the newest event stays in view while the reader is at
// the bottom, whatever the plan strip does; scrolled up, it stays put and
// offers a way down.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { append, connected, newSession, openSession, todoWrite, todos, withBrowser } from './helpers.js';

let browser;
withBrowser((b) => { browser = b; });

/** Whether the newest event of the conversation is wholly inside the scroller. */
const newestInView = (page) => page.evaluate(() => {
  const scroller = document.querySelector('[data-scroller]').getBoundingClientRect();
  const items = [...document.querySelectorAll('[data-events] > li')].filter((li) => li.offsetParent !== null);
  const last = items[items.length - 1].getBoundingClientRect();
  return last.bottom <= scroller.bottom + 1 && last.top >= scroller.top - 1;
});

/** Appends a message and waits until the page shows it. */
async function say(page, id, text) {
  await append(id, [['message/assistant', { text }]]);
  await page.locator('li[data-type="message/assistant"]', { hasText: text }).waitFor();
  // Let a resize observer or a frame run before judging.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

const viewports = {
  desktop: { viewport: { width: 1000, height: 700 } },
  phone: { viewport: { width: 390, height: 700 }, isMobile: true, hasTouch: true },
};

for (const [name, opts] of Object.entries(viewports)) {
  test(`${name}: the view follows the agent as the plan strip appears and grows, until the reader scrolls up`, async () => {
    const context = await browser.newContext(opts);
    const page = await context.newPage();
    page.on('pageerror', (err) => console.error('page error:', err));
    // The strip opens expanded, so every longer plan makes it taller.
    await page.addInitScript(() => localStorage.setItem('tack.plan.expanded', 'true'));
    const id = await newSession(`Follow ${name}`);
    await append(id, [['turn/start', {}], ...Array.from({ length: 60 }, (_, i) => ['message/assistant', { text: `Step ${i + 1} of a long session.` }])]);
    await openSession(page, id);
    await connected(page);
    assert.ok(await newestInView(page), 'opens at the bottom');

    // The strip appears mid-turn, then grows, with events in between.
    await todoWrite(id, todos('ip', ['Read the code', 'Write the fix']));
    await page.locator('[data-plan]').waitFor({ state: 'visible' });
    await say(page, id, 'After the plan appeared.');
    assert.ok(await newestInView(page), 'in view after the strip appeared');

    await todoWrite(id, todos('cippp', ['Read the code', 'Write the fix', 'Test it', 'Document it', 'Ship it']));
    await page.waitForFunction(() => document.querySelectorAll('[data-plan-items] li').length >= 4);
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    assert.ok(await newestInView(page), 'in view right after the strip grew');
    await say(page, id, 'After the plan grew.');
    assert.ok(await newestInView(page), 'in view after the strip grew');

    // Scrolled up, the reader keeps their place and is offered the way down.
    // The page learns of a scroll from its scroll event, a frame later: the
    // next event must not arrive before it, as it could if we did not wait.
    const scroller = page.locator('[data-scroller]');
    await scroller.evaluate((el) => new Promise((resolve) => {
      el.addEventListener('scroll', () => resolve(), { once: true });
      el.scrollTop = el.scrollHeight - el.clientHeight - 600;
    }));
    const top = await scroller.evaluate((el) => el.scrollTop);
    await say(page, id, 'While the reader is away.');
    assert.ok(!(await newestInView(page)), 'not dragged down');
    assert.ok(Math.abs((await scroller.evaluate((el) => el.scrollTop)) - top) < 2, 'place kept');
    const jump = page.locator('[data-new-events]');
    await jump.waitFor({ state: 'visible' });
    await jump.click();
    await page.waitForFunction(() => {
      const el = document.querySelector('[data-scroller]');
      return el.scrollHeight - el.scrollTop - el.clientHeight < 2;
    });
    assert.ok(await newestInView(page), 'back at the newest event');
    await jump.waitFor({ state: 'hidden' });
    await say(page, id, 'Following again.');
    assert.ok(await newestInView(page), 'following again');
    await context.close();
  });
}
