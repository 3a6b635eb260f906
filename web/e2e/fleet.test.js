// The board for a fleet, on a Tack of its own (TACK_FLEET_URL) holding
// only what this file makes: 25 sessions of two agents in six projects,
// two waiting on their person through the agent's own hooks, working ones
// with a plan, a parent with its subagents, idle and ended ones. At
// 1440×900 at least 20 rows show whole without scrolling, each on one
// line; the pane beside the list answers who needs you and for what, who
// is working on what, and what each said last, live; the keyboard goes
// from the list to it; a phone keeps one column with nothing cut off.

import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { axe, connected, must, newPage, withBrowser } from './helpers.js';

const fleet = process.env.TACK_FLEET_URL ?? '';
if (!fleet) throw new Error('TACK_FLEET_URL is not set: run these through `go test ./web/`');

let browser;
withBrowser((b) => { browser = b; });

const desktop = { viewport: { width: 1440, height: 900 } };
const phone = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true };
/** Where more screenshots go when asked for (TACK_BOARD_SHOTS=/tmp). */
const shots = process.env.TACK_BOARD_SHOTS ?? '';

/** @param {string} method @param {string} path @param {any} [body] */
const api = (method, path, body) => must(method, path, body, fleet);
/** Appends events given as [type, data] pairs. @param {string} id @param {[string, any][]} events */
const append = (id, events) => api('POST', `/sessions/${id}/events`, { events: events.map(([type, data]) => ({ type, data })) });
/** Creates a session. @param {Record<string, string>} fields @returns {Promise<string>} */
const create = async (fields) => (await api('POST', '/sessions', fields)).id;
/** Sends one of Claude Code's hook events for its session sid. @param {string} sid @param {string} event @param {Record<string, any>} fields */
const hook = (sid, event, fields) => api('POST', '/hooks/claude-code', { session_id: sid, hook_event_name: event, transcript_path: `/tmp/${sid}.jsonl`, ...fields });

/** A turn: the person's prompt and the agent's answer. @param {string} prompt @param {string} answer @returns {[string, any][]} */
const turn = (prompt, answer) => [['turn/start', {}], ['message/user', { text: prompt }], ['message/assistant', { text: answer }]];

/** A plan: statuses by letter (c completed, i in progress, p pending) and [content, activeForm] pairs. */
const plan = (states, items) => ({
  todos: items.map(([content, activeForm], i) => ({ content, activeForm, status: { c: 'completed', i: 'in_progress', p: 'pending' }[states[i]] })),
});

/** @type {Record<string, string>} */
const ids = {};

before(async () => {
  // Whoever needs you, through Claude Code's hooks: a permission prompt,
  // and a question asked in a session made through the API and then heard
  // from the hooks (the same session, by its key).
  await hook('perm1', 'UserPromptSubmit', { cwd: '/home/ana/src/infra', prompt: 'Clean up the old build artifacts', prompt_id: 'p1' });
  await hook('perm1', 'PreToolUse', { cwd: '/home/ana/src/infra', prompt_id: 'p1', tool_name: 'Bash', tool_use_id: 'tu1', tool_input: { command: 'rm -rf build/ dist/' } });
  await hook('perm1', 'Notification', { cwd: '/home/ana/src/infra', prompt_id: 'p1', notification_type: 'permission_prompt', message: 'Claude needs your permission to use Bash' });
  ids.permission = (await api('POST', '/sessions', { externalKey: 'claude-code:perm1' })).id;

  ids.question = await create({ title: 'Move invoices to the new schema', agent: 'claude-code', cwd: '/home/ana/src/billing-api', externalKey: 'claude-code:q1' });
  await append(ids.question, turn('Move invoices to the new schema', 'The copy is done. Should I **drop** `invoices_v1` now, or keep it for a week?'));
  await hook('q1', 'PreToolUse', { cwd: '/home/ana/src/billing-api', tool_name: 'AskUserQuestion', tool_use_id: 'tq1', tool_input: { questions: [{
    question: 'Drop invoices_v1 now, or keep it for a week?', header: 'invoices_v1', multiSelect: false,
    options: [{ label: 'Drop it now', description: '' }, { label: 'Keep it a week', description: '' }] }] } });

  // Working, each on an item of its plan; one of them with three subagents.
  const working = [
    ['Fix the flaky checkout test', 'claude-code', 'web-shop', 'cip', [['Reproduce the failure', 'Reproducing the failure'], ['Run the checkout tests 50 times', 'Running the checkout tests 50 times'], ['Fix the race', 'Fixing the race']], 'It fails one run in twelve: the cart total is read before the discount lands.'],
    ['Add rate limits to the public API', 'codex', 'billing-api', 'ccip', [['Read the middleware', 'Reading the middleware'], ['Pick a limiter', 'Picking a limiter'], ['Write the limiter', 'Writing the limiter'], ['Document the headers', 'Documenting the headers']], 'A token bucket per key, 100 requests a minute; writing it now.'],
    ['Upgrade Postgres to 17', 'codex', 'infra', 'ip', [['Dump and restore staging', 'Restoring staging from the dump'], ['Switch production', 'Switching production']], 'Staging dump is 41 GB; restoring it takes about 20 minutes.'],
    ['Translate the settings page', 'claude-code', 'mobile-app', 'cci', [['Collect the strings', 'Collecting the strings'], ['German', 'Translating to German'], ['French', 'Translating to French']], 'German is done; French next.'],
    ['Write the release notes for 2.4', 'claude-code', 'docs-site', 'ip', [['Read the merged PRs', 'Reading the merged PRs'], ['Draft the notes', 'Drafting the notes']], 'Going through the 37 PRs merged since 2.3.'],
  ];
  for (const [title, agent, proj, states, items, said] of working) {
    const id = await create({ title, agent, cwd: `/home/ana/src/${proj}` });
    await append(id, turn(title, said));
    await api('POST', `/sessions/${id}/tools/TodoWrite`, plan(states, items));
    ids[title] = id;
  }
  ids.working = ids['Fix the flaky checkout test'];

  ids.parent = await create({ title: 'Audit the dependencies', agent: 'claude-code', cwd: '/home/ana/src/tack' });
  await append(ids.parent, turn('Audit the dependencies', 'Three subagents are checking the Go modules, the npm packages and the Docker images.'));
  await api('POST', `/sessions/${ids.parent}/tools/TodoWrite`, plan('ip', [['Check every dependency', 'Checking every dependency'], ['Write the report', 'Writing the report']]));
  for (const [title, end] of [['Check the Go modules', false], ['Check the npm packages', false], ['Check the Docker images', true]]) {
    const child = await create({ title, agent: 'claude-code', cwd: '/home/ana/src/tack', parentId: ids.parent });
    await append(child, turn(title, 'Looking.'));
    if (end) await append(child, [['turn/end', { reason: 'completed' }], ['session/end', {}]]);
  }

  // Idle: a turn ended, the agent's answer its last words.
  const idle = [
    ['Explain the retry policy', 'codex', 'billing-api', 'Retries back off from 1 s to 30 s, five times, then the job is parked.'],
    ['Rename Customer to Account', 'claude-code', 'web-shop', 'Renamed in 84 files; the tests pass.'],
    ['Why is the nightly build slow?', 'codex', 'infra', 'The cache key includes the date, so nothing is ever reused.'],
    ['Draft the onboarding guide', 'claude-code', 'docs-site', 'The guide is in docs/onboarding.md, five sections.'],
    ['Bump the iOS target to 17', 'claude-code', 'mobile-app', 'Done; two deprecated calls replaced.'],
    ['Profile the list endpoint', 'codex', 'tack', 'Most of the time is JSON encoding; a pooled buffer halves it.'],
    ['Tidy the Makefile', 'codex', 'tack', 'Removed four targets nobody calls.'],
    ['Check the TLS certificates', 'claude-code', 'infra', 'All renew automatically; the oldest expires in 61 days.'],
    ['Summarise the support tickets', 'claude-code', 'web-shop', 'Most tickets are about delivery times.'],
  ];
  for (const [title, agent, proj, said] of idle) {
    const id = await create({ title, agent, cwd: `/home/ana/src/${proj}` });
    await append(id, [...turn(title, said), ['turn/end', { reason: 'completed' }]]);
  }
  ids.stopped = await create({ title: 'Speed up the image resizer', agent: 'codex', cwd: '/home/ana/src/web-shop' });
  await append(ids.stopped, [...turn('Speed up the image resizer', 'Trying libvips instead of ImageMagick.'), ['turn/end', { reason: 'interrupted' }]]);

  // Ended.
  for (const [title, agent, proj] of [['Set up the staging cluster', 'codex', 'infra'], ['Port the CLI to Go', 'claude-code', 'tack'], ['Fix the login redirect', 'claude-code', 'web-shop'], ['Write the API changelog', 'codex', 'docs-site']]) {
    const id = await create({ title, agent, cwd: `/home/ana/src/${proj}` });
    await append(id, [...turn(title, 'Done.'), ['turn/end', { reason: 'completed' }], ['session/end', {}]]);
  }
  const all = await api('GET', '/sessions?limit=100');
  assert.equal(all.sessions.length, 25, 'the fleet: 25 sessions');
});

/**
 * The list's rows as they lie: each row's own line (its cells, not its
 * children's), whether it is wholly inside the list's visible box, and
 * whether its cells share one line.
 * @param {import('playwright-core').Page} page
 */
const rows = (page) => page.locator('[data-view="list"]').evaluate((list) => {
  const box = list.getBoundingClientRect();
  return [...list.querySelectorAll('li.session-item')].map((li) => {
    const cells = [...li.querySelectorAll(':scope > .session-head > *, :scope > .session-meta > *')]
      .filter((c) => c.getBoundingClientRect().width > 0)
      .map((c) => c.getBoundingClientRect());
    const top = Math.min(...cells.map((r) => r.top));
    const bottom = Math.max(...cells.map((r) => r.bottom));
    const tallest = Math.max(...cells.map((r) => r.height));
    const r = li.getBoundingClientRect();
    const title = /** @type {HTMLElement} */ (li.querySelector('.session-title'));
    return {
      title: title.textContent,
      visible: top >= box.top && bottom <= box.bottom && r.left >= box.left && r.right <= box.right + 1,
      // One line: the cells' span is no taller than the tallest cell (a little slack for alignment).
      oneLine: bottom - top <= tallest + 4,
      titleCut: title.scrollWidth > title.clientWidth,
      wider: [...li.querySelectorAll('.session-name, .session-who, .session-where, .session-plan, .session-doing')]
        .some((c) => c.getBoundingClientRect().right > r.right + 1),
    };
  });
});

test('1440×900: at least 20 sessions show whole without scrolling, each on one line with all it says', async () => {
  const { context, page } = await newPage(browser, desktop);
  try {
    await page.goto(`${fleet}/`);
    await page.locator(`[data-session-id="${ids.stopped}"]`).waitFor();
    assert.equal(await page.locator('[data-view="list"]').evaluate((el) => el.scrollTop), 0);
    const all = await rows(page);
    assert.equal(all.length, 25);
    const seen = all.filter((r) => r.visible);
    assert.ok(seen.length >= 20, `${seen.length} rows show whole without scrolling: ${all.filter((r) => !r.visible).map((r) => r.title).join(', ')}`);
    assert.deepEqual(seen.filter((r) => !r.oneLine).map((r) => r.title), [], 'each row on one line');
    assert.deepEqual(all.filter((r) => r.wider).map((r) => r.title), [], 'nothing past its row');

    // A working row: title, state and time in it, agent, project, progress, the item.
    const row = page.locator(`[data-session-id="${ids.working}"]`);
    assert.equal(await row.locator('.session-title').innerText(), 'Fix the flaky checkout test');
    assert.match(await row.locator('[data-badge]').innerText(), /^Working · \d/);
    assert.equal(await row.locator('[data-agent]').innerText(), 'claude-code');
    assert.equal(await row.locator('[data-project]').innerText(), 'web-shop');
    assert.equal(await row.locator('[data-progress]').innerText(), '1/3 done');
    assert.equal(await row.locator('[data-current]').innerText(), 'Run the checkout tests 50 times');
    // A row waiting on its person says what for.
    const waiting = page.locator(`[data-session-id="${ids.permission}"]`);
    assert.equal(await waiting.evaluate((li) => li.closest('[data-group]')?.getAttribute('data-group')), 'needs_you');
    assert.equal(await waiting.locator('[data-needs-you="permission"]').innerText(), 'Allow Bash: rm -rf build/ dist/');
    assert.equal(await waiting.locator('[data-project]').innerText(), 'infra');
    // The parent's row says its children's states; they sit under it.
    const kids = page.locator(`[data-session-id="${ids.parent}"] > .session-head [data-kids]`);
    assert.equal(await kids.getAttribute('aria-label'), '3 subagents: 2 working, 1 ended');
    assert.equal(await page.locator(`[data-session-id="${ids.parent}"] .session-children > li`).count(), 3);
    assert.ok(await page.locator('[data-overview]').isVisible());
    await page.screenshot({ path: process.env.TACK_SCREENSHOT_BOARD, animations: 'disabled' });
  } finally {
    await context.close();
  }
});

test('the overview answers who needs you and for what, who works on what, what each said last, live', async () => {
  const { context, page } = await newPage(browser, desktop);
  try {
    await page.goto(`${fleet}/`);
    const overview = page.locator('[data-overview]');
    const item = (id) => overview.locator(`[data-overview-session="${id}"]`);
    await item(ids.working).locator('[data-said]').waitFor();
    assert.equal(await overview.locator('h2').innerText(), 'Overview');
    assert.equal(await overview.locator('[data-overview-counts]').innerText(), '2 needs you · 6 working · 10 idle · 4 ended');
    assert.deepEqual(await overview.locator('[data-overview-group]').evaluateAll((els) => els.map((e) => e.getAttribute('data-overview-group'))),
      ['needs_you', 'working', 'idle']);

    // Who needs me, and for what: the hook's reason and the call it is about.
    const needs = overview.locator('[data-overview-group="needs_you"]');
    assert.equal(await needs.locator('h3').innerText(), 'NEEDS YOU · 2');
    const perm = item(ids.permission);
    assert.equal(await perm.locator('a').innerText(), 'Clean up the old build artifacts');
    assert.equal(await perm.locator('[data-need]').innerText(), 'Needs Allow Bash: rm -rf build/ dist/');
    const question = item(ids.question);
    assert.equal(await question.locator('[data-need]').innerText(), 'Needs Drop invoices_v1 now, or keep it for a week?');
    assert.equal(await question.locator('code').innerText(), 'Drop it now · Keep it a week', 'its options');
    await question.locator('[data-said]').waitFor();
    assert.equal(await question.locator('[data-said]').innerText(), 'Said The copy is done. Should I drop invoices_v1 now, or keep it for a week?', 'its last words, Markdown read as text');

    // Who is working on what: the item as the agent put it, and its last words.
    const work = item(ids.working);
    assert.equal(await work.evaluate((li) => li.closest('[data-overview-group]')?.getAttribute('data-overview-group')), 'working');
    await work.locator('[data-doing]', { hasText: 'Running' }).waitFor();
    assert.equal(await work.locator('[data-doing]').innerText(), 'Now Running the checkout tests 50 times');
    assert.equal(await work.locator('[data-said]').innerText(), 'Said It fails one run in twelve: the cart total is read before the discount lands.');
    assert.match(await work.locator('.overview-where').innerText(), /^claude-code · web-shop · 1\/3 done$/);
    // An idle one: what it said last.
    const stopped = item(ids.stopped);
    await stopped.locator('[data-said]').waitFor();
    assert.equal(await stopped.locator('[data-said]').innerText(), 'Said Trying libvips instead of ImageMagick.');

    // Live: the agent says more and moves on in its plan; another session
    // comes to need its person.
    await connected(page);
    await append(ids.working, [['message/assistant', { text: 'Found it: the discount is applied after the total is cached.' }]]);
    await api('POST', `/sessions/${ids.working}/tools/TodoWrite`, plan('cci', [['Reproduce the failure', 'Reproducing the failure'], ['Run the checkout tests 50 times', 'Running the checkout tests 50 times'], ['Fix the race', 'Fixing the race']]));
    await work.locator('[data-said]', { hasText: 'Found it' }).waitFor();
    await work.locator('[data-doing]', { hasText: 'Fixing the race' }).waitFor();
    await hook('perm2', 'UserPromptSubmit', { cwd: '/home/ana/src/infra', prompt: 'Restart the queue workers', prompt_id: 'p2' });
    await hook('perm2', 'Notification', { cwd: '/home/ana/src/infra', prompt_id: 'p2', notification_type: 'permission_prompt', message: 'Claude needs your permission to use Bash' });
    const restart = (await api('POST', '/sessions', { externalKey: 'claude-code:perm2' })).id;
    await item(restart).waitFor();
    assert.equal(await item(restart).evaluate((li) => li.closest('[data-overview-group]')?.getAttribute('data-overview-group')), 'needs_you');
    await needs.locator('h3', { hasText: 'NEEDS YOU · 3' }).waitFor();

    // The keyboard: past the list's last row, the overview's first link;
    // Enter opens that session beside the list.
    const last = page.locator('[data-view="list"] a.session-title').last();
    await last.focus();
    await page.keyboard.press('Tab');
    const first = await overview.locator('a').first().getAttribute('href');
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('href')), first);
    await page.keyboard.press('Enter');
    await page.waitForURL((u) => u.pathname === first);
    await page.locator('[data-view="session"]').waitFor();
    assert.ok(await overview.isHidden(), 'a session chosen takes the overview\'s place');
    await page.waitForFunction((href) => document.activeElement?.matches(`[data-view="list"] a.session-title[href="${href}"][aria-current="page"]`), first);
    if (shots) await page.screenshot({ path: `${shots}/fleet-1440-session.png` });
    await page.goBack();
    await overview.waitFor();
  } finally {
    await context.close();
  }
});

test('390×844: one column, nothing cut off or wider than the phone', async () => {
  const { context, page } = await newPage(browser, phone);
  try {
    await page.goto(`${fleet}/`);
    await page.locator(`[data-session-id="${ids.stopped}"]`).waitFor();
    assert.ok(await page.locator('[data-overview]').isHidden(), 'the list alone');
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(wide <= 390, `nothing wider than the phone (${wide}px)`);
    const all = await rows(page);
    assert.deepEqual(all.filter((r) => r.wider).map((r) => r.title), [], 'no cell past its row');
    // Each row's title has a line of its own, the rest under it.
    // Measured in the page, on the element as it is then: the list may draw
    // its rows again meanwhile (the live socket's first read), and a box
    // asked of a row being replaced is none.
    const width = await page.locator(`[data-session-id="${ids.working}"] .session-name`).evaluate((e) => e.getBoundingClientRect().width);
    assert.ok(width >= 340, `a title's line has the width (${width}px)`);
    assert.equal(await page.locator(`[data-session-id="${ids.permission}"] [data-needs-you]`).innerText(), 'Allow Bash: rm -rf build/ dist/');
    await page.locator(`[data-session-id="${ids.parent}"] [data-kids]`).waitFor();
    if (shots) await page.screenshot({ path: `${shots}/fleet-390.png`, fullPage: true });
  } finally {
    await context.close();
  }
});

test('axe-core finds nothing on the fleet\'s board and its phone list, light and dark', async () => {
  const failures = [];
  for (const colorScheme of ['light', 'dark']) {
    for (const [name, opts] of [['desktop', desktop], ['phone', phone]]) {
      const { context, page } = await newPage(browser, { ...opts, colorScheme, bypassCSP: true });
        await page.goto(`${fleet}/`);
      await page.locator(`[data-session-id="${ids.stopped}"]`).waitFor();
      if (name === 'desktop') await page.locator(`[data-overview-session="${ids.working}"] [data-said]`).waitFor();
      failures.push(...(await axe(page)).map((v) => `${colorScheme} ${name}: ${v}`));
        await context.close();
    }
  }
  assert.deepEqual(failures, []);
});
