// The fleet board: on a wide screen the list and a session side by side,
// the plan in a side panel; the list grouped by state with each row's agent,
// project, item in progress, progress, time in state and owner; filters in
// the URL; the "waiting for you" banner; a phone keeps one column; and no
// axe-core violation, light and dark.

import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { append, axe, base, connected, must, newPage, withBrowser } from './helpers.js';

let browser;
withBrowser((b) => { browser = b; });

const desktop = { viewport: { width: 1440, height: 900 } };
const phone = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true };
/** Where screenshots go when asked for (TACK_BOARD_SHOTS=/tmp). */
const shots = process.env.TACK_BOARD_SHOTS ?? '';

const tag = `B${Date.now()}`;
/** @type {Record<string, string>} */
const ids = {};

/** Creates a session with its agent and working directory. */
const session = async (title, agent, cwd) => (await must('POST', '/sessions', { title: `${title} ${tag}`, agent, cwd })).id;

before(async () => {
  ids.working = await session('fix the parser', 'claude-code', '/home/me/src/tack');
  await append(ids.working, [['turn/start', {}], ['message/user', { text: 'Fix the parser' }], ['message/assistant', { text: 'Reading the parser first.' }]]);
  await must('POST', `/sessions/${ids.working}/tools/TodoWrite`, {
    todos: [
      { content: 'Read the parser', status: 'completed', activeForm: 'Reading the parser' },
      { content: 'Run the tests', status: 'in_progress', activeForm: 'Running the tests' },
      { content: 'Write the docs', status: 'pending', activeForm: 'Writing the docs' },
    ],
  });
  ids.asks = await session('asks before deleting', 'codex', '/home/me/src/other');
  await append(ids.asks, [['turn/start', {}], ['message/user', { text: 'Clean up the migrations' }],
    ['message/assistant', { text: 'Shall I delete the **old migrations**?' }]]);
  ids.idle = await session('quiet one', 'claude-code', '/home/me/src/tack');
  ids.ended = await session('all finished', 'codex', '/srv/api');
  await append(ids.ended, [['turn/start', {}], ['turn/end', { reason: 'completed' }], ['session/end', {}]]);
});

/**
 * Makes the page see some sessions as waiting on their person, and some
 * owned by someone (an admin's view): the server's summaries, altered on
 * their way, as a hook's permission prompt and the owner field would.
 * @param {import('playwright-core').Page} page
 * @param {{waiting?: string[], owners?: Record<string, string>}} how
 */
async function alter(page, { waiting = [], owners = {} }) {
  const fix = (s) => ({
    ...s,
    ...(waiting.includes(s.id) ? { state: 'needs_you', stateSince: s.updatedAt } : {}),
    ...(owners[s.id] ? { owner: owners[s.id] } : {}),
  });
  await page.route((url) => url.pathname === '/sessions' || waiting.some((id) => url.pathname === `/sessions/${id}`), async (route) => {
    const res = await route.fetch();
    const body = await res.json();
    await route.fulfill({ response: res, json: body.sessions ? { ...body, sessions: body.sessions.map(fix) } : fix(body) });
  });
}

/** The rows of the list, top level, in order, by their title without the tag. */
const rowTitles = (page) => page.locator('[data-sessions] > li > .session-head .session-title')
  .evaluateAll((els, t) => els.map((e) => e.textContent.replace(` ${t}`, '')), tag);

/**
 * What of the list's rows does not fit: a title cut short while given less
 * than most of its row (the state and time beside it squeezing it; on a
 * row laid out as one line of columns, less than a fifth of it), or a line
 * wider than the row. Empty when every row reads whole.
 */
const rowsCramped = (page) => page.locator('[data-sessions] > li').evaluateAll((rows) => rows.flatMap((li) => {
  const title = /** @type {HTMLElement} */ (li.querySelector('.session-title'));
  const out = [];
  const cut = title.scrollWidth > title.clientWidth;
  const share = getComputedStyle(li).display === 'grid' ? 0.2 : 0.6;
  if (cut && title.getBoundingClientRect().width < share * li.clientWidth) out.push(`${title.textContent}: title ${Math.round(title.getBoundingClientRect().width)}px of ${li.clientWidth}px`);
  for (const line of li.querySelectorAll(':scope > .session-head, :scope > .session-meta')) {
    if (line.scrollWidth > line.clientWidth + 1) out.push(`${title.textContent}: ${line.className} ${line.scrollWidth}px in ${line.clientWidth}px`);
  }
  return out;
}));

test('desktop: groups by state, rows say who, where and what; a row opens beside the list, the URL kept', async () => {
  const { context, page } = await newPage(browser, desktop);
  try {
    await alter(page, { waiting: [ids.asks] });
    await page.goto(`${base}/?q=${tag}`);
    await page.locator(`[data-session-id="${ids.ended}"]`).waitFor();
    // Whoever waits on a person first, then working, idle, ended; each group counted.
    assert.deepEqual(await page.locator('[data-session-groups] .group').evaluateAll((els) => els.map((e) => e.dataset.group)),
      ['needs_you', 'working', 'idle', 'ended']);
    assert.deepEqual(await page.locator('.group-head').evaluateAll((els) => els.map((e) => e.textContent)),
      ['Needs you · 1', 'Working · 1', 'Idle · 1', 'Ended · 1']);
    assert.deepEqual(await rowTitles(page), ['asks before deleting', 'fix the parser', 'quiet one', 'all finished']);
    assert.deepEqual(await rowsCramped(page), [], 'every row reads whole beside the board');
    assert.equal(await page.getByLabel('Search by title').inputValue(), tag, 'the search term comes from the URL');

    const row = page.locator(`[data-session-id="${ids.working}"]`);
    assert.equal(await row.locator('[data-agent]').innerText(), 'claude-code');
    assert.equal(await row.locator('[data-project]').innerText(), 'tack');
    assert.equal(await row.locator('[data-project]').getAttribute('title'), '/home/me/src/tack');
    assert.equal(await row.locator('[data-progress]').innerText(), '1/3 done');
    assert.equal(await row.locator('[data-current]').innerText(), 'Run the tests');
    assert.match(await row.locator('[data-badge]').innerText(), /^Working · \d/);
    assert.match(await page.locator(`[data-session-id="${ids.asks}"] [data-badge]`).innerText(), /^Needs you · \d/);
    assert.equal(await row.locator('[data-owner]').count(), 0, 'no owner unless the server gives one');
    // Nothing chosen yet: the board's overview beside the list.
    assert.ok(await page.locator('[data-overview]').isVisible());

    // A row opens its session beside the list, in this same document.
    await page.evaluate(() => { window.sameDocument = true; });
    await row.locator('a.session-title').click();
    await page.waitForURL(`${base}/s/${ids.working}?q=${tag}`);
    await page.locator('[data-view="session"]').waitFor();
    await page.locator('[data-events] li[data-type="message/assistant"]').waitFor();
    assert.equal(await page.evaluate(() => window.sameDocument), true, 'no reload');
    const list = await page.locator('[data-view="list"]').boundingBox();
    const conv = await page.locator('.conversation-wrap').boundingBox();
    const plan = await page.locator('[data-plan]').boundingBox();
    assert.ok(list && conv && plan && list.x + list.width <= conv.x + 1 && conv.x + conv.width <= plan.x + 1, 'list, conversation, plan from left to right');
    assert.equal(await row.locator('a.session-title').getAttribute('aria-current'), 'page');
    assert.equal(await page.locator('[data-title-text]').innerText(), `fix the parser ${tag}`);
    assert.ok(await page.locator('[data-overview]').isHidden());

    // The plan is a side panel, always open: items, the active form.
    assert.ok(await page.locator('[data-plan-panel]').isVisible(), 'open without a click');
    assert.equal(await page.locator('[data-plan-toggle]').getAttribute('aria-disabled'), 'true');
    assert.equal(await page.locator('[data-plan-items] li[data-status="in_progress"] .todo-active').innerText(), 'Running the tests');
    assert.equal(await page.locator('[data-plan-current]').innerText(), 'Running the tests');
    // Inside a turn a message shows no clock: the turn's row has it, the row's title the full time.
    assert.equal(await page.locator('li[data-type="message/assistant"] .who').innerText(), 'AGENT');
    assert.match(await page.locator('li[data-type="turn/start"]').innerText(), /^Turn 1 ·\s*\d\d?:\d\d/);
    assert.match(await page.locator('li[data-type="message/assistant"]').getAttribute('title'), /\d\d:\d\d/);
    if (shots) await page.screenshot({ path: `${shots}/board-1440-session.png` });

    // Another row: the view changes in place, the one before stops listening.
    await connected(page);
    await page.locator(`[data-session-id="${ids.asks}"] a.session-title`).click();
    await page.waitForURL(`${base}/s/${ids.asks}?q=${tag}`);
    await page.locator('[data-waiting-banner]').waitFor();
    assert.equal(await page.locator('[data-view="session"]').count(), 1);
    assert.equal(await page.locator('[data-waiting-words]').innerText(), 'Shall I delete the old migrations?');
    assert.equal(await page.locator('[data-waiting-words] strong').innerText(), 'old migrations');
    assert.ok(await page.locator('[data-working]').isHidden(), 'the banner, not the working line');
    assert.match(await page.locator('[data-session-state]').innerText(), /^Needs you · \d/);
    await append(ids.working, [['message/user', { text: 'Meanwhile elsewhere' }]]);
    await page.waitForTimeout(500);
    assert.equal(await page.getByText('Meanwhile elsewhere').count(), 0, 'the first session\'s events stay out');
    assert.equal(await page.evaluate(() => window.sameDocument), true);
    if (shots) await page.screenshot({ path: `${shots}/board-1440-waiting.png` });

    // Back: the session before, still without a reload; a reload keeps the board.
    await page.goBack();
    await page.waitForURL(`${base}/s/${ids.working}?q=${tag}`);
    await page.locator('[data-title]', { hasText: 'fix the parser' }).waitFor();
    await page.getByText('Meanwhile elsewhere').waitFor();
    assert.equal(await page.evaluate(() => window.sameDocument), true);
    await page.reload();
    await page.locator('[data-view="session"]').waitFor();
    await page.locator(`[data-session-id="${ids.working}"] a[aria-current="page"]`).waitFor();
    assert.deepEqual(await rowTitles(page), ['asks before deleting', 'fix the parser', 'quiet one', 'all finished']);
  } finally {
    await page.unrouteAll({ behavior: 'ignoreErrors' }); // a re-read of the list may be in flight
    await context.close();
  }
});

test('filters: agent, project, owner and the search term, read from the URL, written to it, back and forward', async () => {
  const { context, page } = await newPage(browser, desktop);
  try {
    await alter(page, { owners: { [ids.working]: 'alice', [ids.idle]: 'bob', [ids.asks]: 'alice' } });
    await page.goto(`${base}/?agent=codex&q=${tag}`);
    await page.locator(`[data-session-id="${ids.ended}"]`).waitFor();
    assert.deepEqual(await rowTitles(page), ['asks before deleting', 'all finished']);
    assert.equal(await page.getByLabel('Agent').inputValue(), 'codex');
    assert.match(await page.locator('[data-search-count]').innerText(), /^2 sessions match/);

    // A choice goes into the URL.
    await page.getByLabel('Project').selectOption('other');
    await page.waitForURL(`${base}/?agent=codex&project=other&q=${tag}`);
    assert.deepEqual(await rowTitles(page), ['asks before deleting']);
    await page.goBack();
    await page.waitForURL(`${base}/?agent=codex&q=${tag}`);
    await page.waitForFunction(() => document.querySelectorAll('[data-sessions] > li').length === 2);
    assert.equal(await page.getByLabel('Project').inputValue(), '');
    await page.goForward();
    await page.waitForFunction(() => document.querySelectorAll('[data-sessions] > li').length === 1);

    // The owner, when the server gives it: shown on the row and filtered by.
    await page.goto(`${base}/?owner=alice&q=${tag}`);
    await page.locator(`[data-session-id="${ids.working}"]`).waitFor();
    assert.deepEqual((await rowTitles(page)).sort(), ['asks before deleting', 'fix the parser']);
    assert.equal(await page.locator(`[data-session-id="${ids.working}"] [data-owner]`).innerText(), 'alice');
    assert.ok(await page.getByLabel('Owner').isVisible());
    await page.getByLabel('Owner').selectOption('');
    await page.waitForURL(`${base}/?q=${tag}`);
    assert.equal((await rowTitles(page)).length, 4);

    // Typing a search keeps the URL in step, without a new history entry per key.
    await page.getByLabel('Search by title').fill(`quiet one ${tag}`);
    await page.waitForURL(`${base}/?q=quiet+one+${tag}`);
    await page.waitForFunction(() => document.querySelectorAll('[data-sessions] > li').length === 1);
    assert.deepEqual(await rowTitles(page), ['quiet one']);
    // A row opened keeps the filters in its URL.
    await page.locator(`[data-session-id="${ids.idle}"] a.session-title`).click();
    await page.waitForURL((u) => u.pathname === `/s/${ids.idle}` && u.searchParams.get('q') === `quiet one ${tag}`);
    if (shots) await page.screenshot({ path: `${shots}/board-1440-filters.png` });
  } finally {
    await page.unrouteAll({ behavior: 'ignoreErrors' }); // a re-read of the list may be in flight
    await context.close();
  }
});

test('phone: one column, groups first, a row is a plain link to its page, the plan a strip', async () => {
  const { context, page } = await newPage(browser, phone);
  try {
    await alter(page, { waiting: [ids.asks] });
    await page.goto(`${base}/?q=${tag}`);
    await page.locator(`[data-session-id="${ids.ended}"]`).waitFor();
    assert.deepEqual(await page.locator('[data-session-groups] .group').evaluateAll((els) => els.map((e) => e.dataset.group)),
      ['needs_you', 'working', 'idle', 'ended']);
    const list = await page.locator('[data-view="list"]').boundingBox();
    assert.ok(list && list.width >= 380, 'the list takes the width');
    assert.ok(await page.locator('[data-overview]').isHidden());
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(wide <= 390, `nothing wider than the phone (${wide}px)`);
    assert.deepEqual(await rowsCramped(page), [], 'every row reads whole on a phone');
    if (shots) await page.screenshot({ path: `${shots}/board-390-list.png` });

    await Promise.all([page.waitForEvent('load'), page.locator(`[data-session-id="${ids.working}"] a.session-title`).click()]);
    await page.locator('[data-view="session"]').waitFor();
    assert.ok(await page.locator('[data-view="list"]').isHidden(), 'the session alone');
    // Its title is in the bar, a line to itself, not squeezed out by the state.
    const title = await page.locator('[data-title]').boundingBox();
    assert.ok(title && title.width >= 300, `the bar's title has the width (${title?.width}px)`);
    assert.match(await page.locator('[data-title]').innerText(), /^fix the parser/);
    assert.equal(await page.locator('[data-plan-toggle]').getAttribute('aria-disabled'), null, 'the strip folds as before');
    const strip = await page.locator('[data-plan]').boundingBox();
    assert.ok(strip && strip.y + strip.height >= 844 - 2 && strip.width >= 380, 'the strip docked at the bottom');
    if (shots) {
      await page.locator('[data-plan-toggle]').click();
      await page.screenshot({ path: `${shots}/board-390-session.png` });
    }

    // A session waiting on its person says so on a phone too.
    await page.goto(`${base}/s/${ids.asks}`);
    await page.locator('[data-waiting-banner]').waitFor();
    assert.equal(await page.locator('[data-waiting-words]').innerText(), 'Shall I delete the old migrations?');
  } finally {
    await page.unrouteAll({ behavior: 'ignoreErrors' }); // a re-read of the list may be in flight
    await context.close();
  }
});

test('the waiting banner: the agent\'s last words, or the harness\'s notice when that is the latest', async () => {
  const { context, page } = await newPage(browser, { viewport: { width: 1000, height: 700 } });
  try {
    const id = await session('waits on a notice', 'claude-code', '/home/me/src/tack');
    await append(id, [
      ['turn/start', {}], ['message/assistant', { text: 'Starting the build.' }],
      ['message/user', { text: '<task-notification>\n<task-id>b77</task-id>\n<status>failed</status>\n<summary>Background command "make" failed with exit code 2</summary>\n</task-notification>', source: 'harness', kind: 'task-notification' }],
    ]);
    await alter(page, { waiting: [id] });
    await page.goto(`${base}/s/${id}`);
    await page.locator('[data-waiting-banner]').waitFor();
    assert.equal(await page.locator('[data-waiting-head]').innerText(), 'WAITING FOR YOU');
    assert.equal(await page.locator('[data-waiting-words]').innerText(), 'Background task b77 failed (exit 2)');
    // Not waiting: no banner.
    await page.unrouteAll({ behavior: 'wait' });
    await page.reload();
    await page.locator('[data-view="session"]').waitFor();
    assert.ok(await page.locator('[data-waiting-banner]').isHidden());
  } finally {
    await context.close();
  }
});

test('the board is live only while both its sockets are: the list\'s feed back does not hide the session\'s away', async () => {
  // Every socket goes through playwright to the real server, so that the
  // test can drop one as a network would and hold the session's retry.
  /** @type {Record<string, import('playwright-core').WebSocketRoute[]>} */
  const sockets = { feed: [], session: [] };
  let release = () => {};
  const held = new Promise((resolve) => { release = resolve; });
  const { context, page } = await newPage(browser, desktop, (c) => c.routeWebSocket(/\/live/, async (ws) => {
    const which = new URL(ws.url()).pathname === '/live' ? 'feed' : 'session';
    if (which === 'session' && sockets.session.length > 0) await held;
    sockets[which].push(ws);
    ws.connectToServer();
  }));
  try {
    await page.goto(`${base}/s/${ids.working}`);
    await page.locator('[data-view="session"]').waitFor({ state: 'visible' });
    await page.waitForFunction(() => document.body.dataset.live === 'connected');
    assert.equal(sockets.session.length, 1);
    // The list's feed, and the session's subagents' (which tells nothing).
    const feeds = sockets.feed.length;
    assert.ok(feeds >= 1);

    // The session's socket drops and its retry is held: the page is away.
    await sockets.session[0].close({ code: 1006 });
    await page.locator('[data-conn]').waitFor({ state: 'visible' });
    // The list's feed drops too and comes back at once: the session's is
    // still away, and the page says so.
    // (The list's feed reads the list again once it is open: a request
    // made from now, not the answer to one made before.)
    const reread = page.waitForRequest((r) => {
      const u = new URL(r.url());
      return u.pathname === '/sessions' && !u.searchParams.has('parent');
    });
    await Promise.all(sockets.feed.map((ws) => ws.close({ code: 1006 })));
    await (await reread).response();
    assert.ok(sockets.feed.length > feeds);
    assert.equal(await page.evaluate(() => document.body.dataset.live), 'reconnecting');
    assert.ok(await page.locator('[data-conn]').isVisible(), 'the indicator stays while the session is away');

    // The session's retry goes through: the page is live again.
    release();
    await page.locator('[data-conn]').waitFor({ state: 'hidden' });
    assert.equal(await page.evaluate(() => document.body.dataset.live), 'connected');
    assert.equal(sockets.session.length, 2);
  } finally {
    await context.close();
  }
});

test('axe-core finds nothing on the board and the phone list, a session waiting, light and dark', async () => {
  const failures = [];
  for (const colorScheme of ['light', 'dark']) {
    for (const [name, opts] of [['desktop', desktop], ['phone', phone]]) {
      const { context, page } = await newPage(browser, { ...opts, colorScheme, bypassCSP: true });
      await alter(page, { waiting: [ids.asks], owners: { [ids.working]: 'alice' } });
      await page.goto(`${base}/?q=${tag}`);
      await page.locator(`[data-session-id="${ids.ended}"]`).waitFor();
      failures.push(...(await axe(page)).map((v) => `${colorScheme} ${name} list: ${v}`));
      for (const id of [ids.working, ids.asks]) {
        await page.goto(`${base}/s/${id}?q=${tag}`);
        await page.locator('[data-view="session"] [data-events] li').first().waitFor();
        failures.push(...(await axe(page)).map((v) => `${colorScheme} ${name} session: ${v}`));
      }
      if (shots && name === 'desktop') await page.screenshot({ path: `${shots}/board-1440-${colorScheme}.png` });
      await page.unrouteAll({ behavior: 'ignoreErrors' }); // a re-read of the list may be in flight
      await context.close();
    }
  }
  assert.deepEqual(failures, []);
});
