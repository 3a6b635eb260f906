// What a person watching agents all day needs: tool rows, Markdown, times,
// the working and idle states, the plan strip's shape, the session list,
// the keyboard, and no axe-core violation anywhere.

import { beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  append, axe, base, call, callEv, connected, newPage, newSession, openSession, resultEv, todoWrite, todos, withBrowser,
} from './helpers.js';

let browser;
let context;
let page;
withBrowser((b) => { browser = b; });
beforeEach(async () => {
  await context?.close();
  ({ context, page } = await newPage(browser, { viewport: { width: 1000, height: 700 } }));
});

test('one row per tool call: its useful argument, status icon, time, readable result, long output folded', async () => {
  const id = await newSession('Tools');
  const long = Array.from({ length: 60 }, (_, i) => `line ${i + 1}`).join('\n');
  await append(id, [
    ['turn/start', {}],
    callEv('c1', 'Bash', { command: 'npm test', description: 'Run the tests', cwd: '/repo' }),
    resultEv('c1', 'Bash', long),
    callEv('c2', 'exec_command', { workdir: '/home/me/repo', cmd: 'go vet ./...' }),
    resultEv('c2', 'exec_command', JSON.stringify({ output: 'vet: bad printf', metadata: { exit_code: 1, duration_seconds: 0.4 } }), true),
    callEv('c3', 'shell', { command: ['bash', '-lc', 'ls -la'], workdir: '/tmp' }),
  ]);
  await openSession(page, id);
  const rows = page.locator('[data-events] > li[data-type="tool"]');
  assert.equal(await rows.count(), 3, 'one row per call, results folded in');
  assert.equal(await page.locator('[data-events] > li[data-type="tool/result"]').count(), 0);

  const bash = rows.nth(0);
  assert.equal(await bash.getAttribute('data-status'), 'ok');
  assert.equal(await bash.locator('.tool-gist').innerText(), 'npm test');
  assert.equal(await bash.locator('.tool-icon').innerText(), '✓');
  assert.match(await bash.locator('.tool-time').innerText(), /\d(\.\d)? s$/);
  await bash.locator('summary').click();
  assert.equal((await bash.locator('.result pre').innerText()).split('\n').length, 20, 'a long result shows its head');
  await bash.getByRole('button', { name: 'Show all 60 lines' }).click();
  assert.equal((await bash.locator('.result pre').innerText()).split('\n').length, 60);

  const codex = rows.nth(1);
  assert.equal(await codex.getAttribute('data-status'), 'error');
  assert.equal(await codex.locator('.tool-gist').innerText(), 'go vet ./...', 'the command, not the working directory');
  assert.equal(await codex.locator('.tool-icon').innerText(), '✕');
  assert.equal(await codex.locator('.tool-failed').innerText(), 'failed', 'failure is said in words, not by red alone');
  await codex.locator('summary').click();
  assert.equal(await codex.locator('.result pre').innerText(), 'vet: bad printf', 'codex output unwrapped');
  assert.match(await codex.locator('.output-label').last().innerText(), /exit 1 · 0.4 s/);

  const shell = rows.nth(2);
  assert.equal(await shell.getAttribute('data-status'), 'running');
  assert.equal(await shell.locator('.tool-gist').innerText(), 'ls -la');
  // The result arrives live and joins its row.
  await connected(page);
  await append(id, [resultEv('c3', 'shell', 'total 0')]);
  await page.waitForFunction(() => document.querySelectorAll('[data-events] > li[data-type="tool"]')[2].dataset.status === 'ok');
  assert.equal(await rows.count(), 3);
});

test('a result whose call is on an older page joins it when that page loads', async () => {
  const id = await newSession('Split');
  await append(id, [['turn/start', {}], callEv('far', 'Read', { file_path: '/repo/main.go' }),
    ...Array.from({ length: 60 }, (_, i) => ['message/user', { text: `Filler ${i}` }]), resultEv('far', 'Read', 'package main')]);
  await openSession(page, id);
  const row = page.locator('li[data-type="tool"]');
  assert.equal(await row.count(), 1);
  assert.equal(await row.locator('.tool-gist').count(), 0, 'the call is not loaded yet');
  await page.locator('[data-scroller]').evaluate((el) => { el.scrollTop = 0; });
  await page.locator('li[data-type="tool"] .tool-gist').waitFor();
  assert.equal(await row.count(), 1, 'still one row');
  assert.equal(await row.locator('.tool-gist').innerText(), '/repo/main.go');
  assert.equal(await row.getAttribute('data-seq'), '2', 'the row sits where the call is');
});

test('todo tools of every dialect render as todo rows only; a rejected write shows the rejected list', async () => {
  const id = await newSession('Dialects');
  const plan = [{ content: 'A', status: 'in_progress', activeForm: 'Doing A' }, { content: 'B', status: 'pending', activeForm: 'Doing B' }];
  await append(id, [
    ['turn/start', {}],
    callEv('t1', 'TodoWrite', { todos: plan }), resultEv('t1', 'TodoWrite', 'Todos have been modified successfully.'),
    ['todo/write', { todos: plan.map(({ content, status }) => ({ content, status })) }],
    callEv('t2', 'update_plan', { plan: [{ step: 'A', status: 'completed' }, { step: 'B', status: 'in_progress' }] }), resultEv('t2', 'update_plan', 'Plan updated'),
    ['todo/write', { todos: todos('ci', ['A', 'B']) }],
    callEv('t3', 'todo_write', { todos: todos('ii', ['A', 'B']) }),
    resultEv('t3', 'todo_write', 'Error: only one todo may be in_progress at a time', true),
    // codex's shape, as the page tells tools.js of it: `plan`, `step`, and
    // its spelling inProgress.
    callEv('t4', 'update_plan', { plan: [{ step: 'C', status: 'inProgress' }, { step: 'D', status: 'inProgress' }] }),
    resultEv('t4', 'update_plan', 'Error: only one step may be in_progress at a time', true),
  ]);
  await openSession(page, id);
  const visible = page.locator('[data-events] > li:visible');
  const types = await visible.evaluateAll((els) => els.map((e) => e.dataset.type));
  assert.deepEqual(types, ['turn/start', 'todo/write', 'todo/write', 'tool', 'tool']);
  for (const [tool, want] of [['todo_write', ['A:in_progress', 'B:in_progress']], ['update_plan', ['C:in_progress', 'D:in_progress']]]) {
    const rejected = page.locator(`li[data-type="tool"][data-tool="${tool}"][data-status="error"]`);
    assert.match(await rejected.locator('summary').innerText(), /^Plan rejected · Error: only one (todo|step) may be in_progress/);
    await rejected.locator('summary').click();
    assert.deepEqual(await rejected.locator('li.todo').evaluateAll((els) => els.map((e) => `${e.querySelector('.todo-text').textContent}:${e.dataset.status}`)),
      want, tool);
  }
});

test('agent messages render Markdown, sanitized', async () => {
  const id = await newSession('Markdown');
  const text = 'This is **bold** and `code`.\n\n```go\nfunc main() {}\n```\n\n- one\n- two\n\n<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>[link](javascript:window.pwned=3)';
  await append(id, [['turn/start', {}], ['message/assistant', { text }]]);
  await openSession(page, id);
  const msg = page.locator('li[data-type="message/assistant"] .markdown');
  assert.equal(await msg.locator('strong').innerText(), 'bold');
  assert.equal((await msg.locator('pre code').innerText()).trim(), 'func main() {}');
  assert.equal(await msg.locator('li').count(), 2);
  assert.equal(await msg.locator('img, script').count(), 0);
  assert.equal(await msg.locator('a[href^="javascript"]').count(), 0);
  assert.ok(!(await msg.innerText()).includes('**'));
  assert.equal(await page.evaluate(() => window.pwned), undefined);
});

test('times and durations: turns, messages, the working indicator, then idle', async () => {
  await context.clock.install();
  const id = await newSession('Timing');
  await append(id, [['message/user', { text: 'Before any turn' }], ['turn/start', {}], ['message/user', { text: 'Go' }],
    ['turn/end', { reason: 'interrupted' }], ['turn/start', {}]]);
  await todoWrite(id, todos('ci', ['Plan it', 'Do it']));
  await openSession(page, id);
  assert.match(await page.locator('li[data-type="turn/end"]').innerText(), /^Turn 1 interrupted after \d+\.\d s ·\s*\d\d:\d\d/);
  // A message in a turn leaves the clock to the turn's row (its own time on
  // hover); one outside any turn shows it.
  const [outside, inside] = [page.locator('li[data-type="message/user"]').nth(0), page.locator('li[data-type="message/user"]').nth(1)];
  assert.match(await outside.locator('.who').innerText(), /^YOU · \d\d:\d\d/i);
  assert.equal(await inside.locator('.who').innerText(), 'YOU');
  assert.match(await inside.getAttribute('title'), /\d\d:\d\d/);
  assert.match(await page.locator('li[data-type="turn/start"]').first().innerText(), /^Turn 1 ·\s*\d\d:\d\d/);
  const working = page.locator('[data-working]');
  assert.match(await working.innerText(), /^Working · \d/);
  assert.equal(await working.getAttribute('data-state'), 'working');
  assert.match(await page.locator('[data-plan-elapsed]').innerText(), /\d/, 'the plan shows its elapsed time');
  await page.locator('[data-plan-toggle]').click();
  assert.match(await page.locator('[data-plan-items] li[data-status="in_progress"] [data-item-time]').innerText(), /\d s$/);

  // Silent past the server's idle-after: the page says idle itself.
  await page.clock.fastForward('11:00');
  await page.waitForFunction(() => document.querySelector('[data-working]').hidden);
  assert.match(await page.locator('[data-session-state]').innerText(), /^Idle since \d\d:\d\d/);
});

test('the plan strip: a label, a bar, done items folded, the running item in view on a phone; a finished plan is not current', async () => {
  await context.close();
  ({ context, page } = await newPage(browser, { viewport: { width: 390, height: 700 }, isMobile: true }));
  const id = await newSession('Twelve');
  const items = Array.from({ length: 12 }, (_, i) => `Item ${i + 1} of a long plan with a fairly long description`);
  await append(id, [['turn/start', {}]]);
  await todoWrite(id, todos('cccccccccipp', items));
  await page.addInitScript(() => localStorage.setItem('tack.plan.expanded', 'true'));
  await openSession(page, id);
  assert.equal(await page.locator('.plan-label').innerText(), 'PLAN');
  assert.equal(await page.locator('[data-plan-bar]').evaluate((b) => `${b.value}/${b.max}`), '9/12');
  assert.equal(await page.locator('[data-plan-done-count]').innerText(), '9 done');
  const running = page.locator('[data-plan-items] li[data-status="in_progress"]');
  assert.ok(await running.isVisible());
  const inPanel = await running.evaluate((li) => {
    const p = document.querySelector('[data-plan-panel]').getBoundingClientRect();
    const r = li.getBoundingClientRect();
    return r.top >= p.top && r.bottom <= p.bottom;
  });
  assert.ok(inPanel, 'the item in progress is inside the visible part of the panel');

  await connected(page);
  await todoWrite(id, todos('cccccccccccc', items));
  await page.waitForFunction(() => document.querySelector('[data-plan]').dataset.state === 'done');
  assert.equal(await page.locator('[data-plan-current]').innerText(), 'all done');
  // Its ✓ stands upright with the strip open (the chevron it replaces turns; it does not).
  assert.equal(await page.locator('[data-plan]').getAttribute('data-expanded'), 'true');
  assert.equal(await page.locator('[data-plan-current]').evaluate((el) => getComputedStyle(el, '::before').content), '"✓"');
  // (after the chevron's short turn back, when the plan was running a moment ago)
  await page.waitForFunction(() => getComputedStyle(document.querySelector('[data-plan-current]'), '::before').transform === 'none', null, { timeout: 2000 });
  assert.equal(await page.locator('[data-plan-items] li').count(), 0, 'nothing reads as current');
});

test('the session list: state badges, current item, labelled progress, server search by title, paging past 100', async () => {
  const mk = async (title, events) => {
    const id = await newSession(title);
    if (events.length) await append(id, events);
    return id;
  };
  const tag = `L${Date.now()}`;
  // The oldest of all, well past the first page: only the server can find it.
  const ancient = await mk(`${tag} ancient Ünicode`, []);
  // More than a page of sessions that share a word, and more than a page in all.
  for (let i = 0; i < 105; i++) await newSession(`${tag} filler ${i}`);
  const working = await mk(`${tag} working`, [['turn/start', {}]]);
  await todoWrite(working, todos('cip', ['Read', 'Patch the parser', 'Test']));
  const ended = await mk(`${tag} ended`, [['turn/start', {}], ['turn/end', { reason: 'completed' }]]);
  const interrupted = await mk(`${tag} interrupted`, [['turn/start', {}], ['turn/end', { reason: 'interrupted' }]]);
  const errored = await mk(`${tag} error`, [['turn/start', {}], ['turn/end', { reason: 'error' }]]);

  const requests = [];
  page.on('request', (r) => requests.push(new URL(r.url())));
  await page.goto(base + '/');
  const item = (id) => page.locator(`[data-session-id="${id}"]`);
  await item(working).waitFor();
  // Everything a row shows comes with the summaries: no request per session.
  assert.equal(await item(working).locator('[data-current]').innerText(), 'Patch the parser');
  assert.equal(await item(working).locator('progress').getAttribute('aria-label'), `${tag} working: 1 of 3 todos done`);
  assert.match(await item(working).locator('[data-badge]').innerText(), /^Working · \d/);
  assert.match(await item(errored).locator('[data-badge]').innerText(), /^Idle since \d\d?:\d\d(\s?[AP]M)? · error$/);
  assert.equal(await item(errored).locator('[data-badge]').getAttribute('data-turn-end'), 'error');
  assert.match(await item(ended).locator('[data-badge]').innerText(), /^Idle since \d\d?:\d\d(\s?[AP]M)?$/);
  assert.match(await item(interrupted).locator('[data-badge]').innerText(), /^Idle since \d\d?:\d\d(\s?[AP]M)? · interrupted$/);
  assert.deepEqual(requests.filter((u) => u.pathname.match(/^\/sessions\/[^/]+\/history$/)).map((u) => u.pathname), [], 'no history request from the list');

  const rows = page.locator('[data-sessions] > li');
  const ids = () => rows.evaluateAll((els) => els.map((e) => e.dataset.sessionId));
  assert.equal(await rows.count(), 100);
  await page.getByRole('button', { name: 'Load older sessions' }).click();
  await page.waitForFunction(() => document.querySelectorAll('[data-sessions] > li').length > 100);

  // Search asks the server, once the typing pauses.
  const searches = () => requests.filter((u) => u.pathname === '/sessions' && u.searchParams.has('q'));
  const search = page.getByLabel('Search by title');
  await search.pressSequentially(`${tag} INTER`, { delay: 20 });
  await page.waitForFunction((want) => [...document.querySelectorAll('[data-sessions] > li')].map((e) => e.dataset.sessionId).join() === want, interrupted);
  assert.equal(await page.locator('[data-search-count]').innerText(), '1 session matches');
  assert.ok(searches().length <= 2, `typing ${tag.length + 6} characters sent ${searches().length} searches`);
  assert.equal(searches().at(-1).searchParams.get('q'), `${tag} INTER`);

  // The server finds what the browser never loaded, whatever the case.
  await search.fill(`${tag} ANCIENT üNICODE`);
  await page.waitForFunction((want) => [...document.querySelectorAll('[data-sessions] > li')].map((e) => e.dataset.sessionId).join() === want, ancient);

  // A search pages past 100 with the cursor.
  await search.fill(`${tag} filler`);
  await page.waitForFunction(() => document.querySelectorAll('[data-sessions] > li').length === 100);
  const more = page.getByRole('button', { name: 'Load older sessions' });
  assert.ok(await more.isVisible());
  await more.click();
  await page.waitForFunction(() => document.querySelectorAll('[data-sessions] > li').length === 105);
  assert.ok(await more.isHidden());
  assert.equal(await page.locator('[data-search-count]').innerText(), '105 sessions match');
  const cursorSearches = searches().filter((u) => u.searchParams.get('q') === `${tag} filler` && u.searchParams.has('cursor'));
  assert.ok(cursorSearches.length >= 1, 'the second page is asked with q and the cursor');
  assert.ok((await ids()).every((id) => id !== working));

  // Nothing matches: the list says so.
  await search.fill(`${tag} no such title`);
  await page.locator('[data-search-count]', { hasText: 'No session matches' }).waitFor();
  assert.equal(await rows.count(), 0);
  assert.ok(await page.locator('[data-empty]').isHidden());

  // Clearing the search shows the list again.
  await search.fill('');
  await page.waitForFunction(() => document.querySelectorAll('[data-sessions] > li').length >= 100);
  assert.equal(await page.locator('[data-search-count]').innerText(), '');
  assert.deepEqual(requests.filter((u) => u.pathname.match(/^\/sessions\/[^/]+\/history$/)).map((u) => u.pathname), [], 'no history request from the list');
});

test('a working session silent for long turns idle in the list', async () => {
  await context.clock.install();
  const id = await newSession('Goes quiet');
  await append(id, [['turn/start', {}]]);
  await page.goto(base + '/');
  const badge = page.locator(`[data-session-id="${id}"] [data-badge]`);
  assert.match(await badge.innerText(), /^Working · \d/);
  await page.clock.fastForward('11:00');
  await page.waitForFunction((sel) => document.querySelector(sel)?.textContent.startsWith('Idle since'), `[data-session-id="${id}"] [data-badge]`);
});

test('keyboard: a shortcut and a skip link to the plan, a focusable conversation, the way back from an unknown session', async () => {
  const id = await newSession('Keys');
  await append(id, [['turn/start', {}], ...Array.from({ length: 60 }, (_, i) => ['message/user', { text: `Line ${i}` }])]);
  await todoWrite(id, todos('ip', ['One', 'Two']));
  await openSession(page, id);
  const scroller = page.locator('[data-scroller]');
  for (let i = 0; i < 5 && !(await scroller.evaluate((el) => el === document.activeElement)); i++) await page.keyboard.press('Tab');
  assert.ok(await scroller.evaluate((el) => el === document.activeElement), 'the conversation is an early tab stop');
  const top = await scroller.evaluate((el) => el.scrollTop);
  await page.keyboard.press('PageUp');
  await page.waitForFunction((t) => document.querySelector('[data-scroller]').scrollTop < t - 100, top);

  await page.keyboard.press('Alt+Shift+P');
  assert.ok(await page.locator('[data-plan-toggle]').evaluate((el) => el === document.activeElement), 'Alt+Shift+P focuses the plan');
  // The ring is drawn inside the toggle, where nothing clips it.
  assert.match(await page.locator('[data-plan-toggle]').evaluate((el) => getComputedStyle(el).outlineOffset), /^-/);

  await page.reload();
  await page.locator('[data-plan]').waitFor();
  // The skip link comes before everything else.
  await page.locator('.brand').focus();
  await page.keyboard.press('Shift+Tab');
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to plan (Alt+Shift+P)');
  await page.keyboard.press('Enter');
  assert.ok(await page.locator('[data-plan-toggle]').evaluate((el) => el === document.activeElement), 'the skip link reaches the plan');

  await page.goto(`${base}/s/ses_nosuchsession`);
  const back = page.getByRole('link', { name: 'Back to all sessions' });
  await back.waitFor();
  await back.click();
  await page.waitForURL(`${base}/`);
});

test('axe-core finds nothing: the list, a short and a long session, light and dark, plan collapsed and expanded', async () => {
  const short = await newSession('Axe short');
  await append(short, [['turn/start', {}], ['message/user', { text: 'Hi' }], ['message/assistant', { text: 'Hello **there**.' }]]);
  await todoWrite(short, todos('ip', ['One', 'Two']));
  const long = await newSession('Axe long');
  const many = Array.from({ length: 14 }, (_, i) => `Step ${i + 1}`);
  await append(long, [['turn/start', {}], ...Array.from({ length: 40 }, (_, i) => (i % 2
    ? ['message/assistant', { text: `Working on **step ${i}**.`, toolCalls: [{ id: `k${i}`, name: 'Bash', args: { command: `make step${i}` } }] }]
    : ['tool/result', { callId: `k${i - 1}`, name: 'Bash', content: 'ok', isError: i % 4 === 0 }]))]);
  await todoWrite(long, todos('cccccccipppppp', many));
  const failures = [];
  for (const colorScheme of ['light', 'dark']) {
    const ctx = await browser.newContext({ viewport: { width: 1000, height: 600 }, colorScheme, bypassCSP: true });
    const p = await ctx.newPage();
    await p.goto(base + '/');
    await p.locator('[data-sessions] > li').first().waitFor();
    failures.push(...(await axe(p)).map((v) => `${colorScheme} list: ${v}`));
    for (const [name, id] of [['short', short], ['long', long]]) {
      for (const expanded of [false, true]) {
        await p.addInitScript((e) => localStorage.setItem('tack.plan.expanded', String(e)), expanded);
        await p.goto(`${base}/s/${id}`);
        await p.locator('[data-plan]').waitFor();
        if (expanded && name === 'long') await p.locator('li[data-type="tool"] summary').first().click();
        failures.push(...(await axe(p)).map((v) => `${colorScheme} ${name} ${expanded ? 'expanded' : 'collapsed'}: ${v}`));
      }
    }
    await ctx.close();
  }
  assert.deepEqual(failures, []);
});
