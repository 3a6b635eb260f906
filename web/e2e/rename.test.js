// Renaming a session from its title: keyboard only, on the board, where
// the list beside it hears of the new title through the feed; Escape puts
// the title back; a title the server refuses says why; and an untitled
// session reads from its agent, project and time until its first prompt.

import { beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { append, axe, base, connected, must, newPage, openSession, withBrowser } from './helpers.js';

let browser;
let context;
let page;
withBrowser((b) => { browser = b; });
beforeEach(async () => {
  await context?.close();
  ({ context, page } = await newPage(browser, { viewport: { width: 1440, height: 900 }, bypassCSP: true }));
});

const tag = `R${Date.now()}`;

test('a session is renamed from its title with the keyboard, and the list hears of it', async () => {
  const { id } = await must('POST', '/sessions', { agent: 'claude-code', cwd: `/home/me/src/webapp-${tag}` });
  const before = await must('GET', `/sessions/${id}`);
  assert.ok(before.untitled);
  assert.match(before.title, new RegExp(`^Claude Code · webapp-${tag} · \\d\\d:\\d\\d UTC$`));
  await openSession(page, id);
  await connected(page);
  const row = page.locator(`[data-session-id="${id}"] .session-title`);
  await row.waitFor();
  assert.equal(await row.innerText(), before.title);

  // Tab to the rename button, open the field: the title is selected.
  const button = page.locator('[data-title] [data-rename]');
  await button.focus();
  await page.keyboard.press('Enter');
  const input = page.getByRole('textbox', { name: 'Session title' });
  await input.waitFor();
  assert.ok(await input.evaluate((el) => el === document.activeElement && el.selectionStart === 0 && el.selectionEnd === el.value.length));
  assert.deepEqual(await axe(page), []);

  // Escape gives the title back, and the focus to the button.
  await page.keyboard.press('Escape');
  await button.waitFor();
  assert.ok(await button.evaluate((el) => el === document.activeElement));
  assert.equal(await page.locator('[data-title-text]').innerText(), before.title);

  // A refused title says why, and keeps the field.
  await page.keyboard.press('Enter');
  await input.fill(`evil \u202e ${tag}`);
  await page.keyboard.press('Enter');
  const alert = page.locator('[data-title] [role="alert"]');
  await alert.filter({ hasText: 'bidirectional' }).waitFor();
  assert.ok(await input.isVisible());

  await input.fill(`Release checklist ${tag}`);
  await page.keyboard.press('Enter');
  await page.locator('[data-title-text]', { hasText: `Release checklist ${tag}` }).waitFor();
  assert.equal(await page.title(), `Release checklist ${tag} · Tack`);
  await row.filter({ hasText: `Release checklist ${tag}` }).waitFor();
  const after = await must('GET', `/sessions/${id}`);
  assert.equal(after.title, `Release checklist ${tag}`);
  assert.equal(after.untitled, false);

  // Final: a prompt afterwards leaves the title a person gave.
  await append(id, [['turn/start', {}], ['message/user', { text: 'Something else entirely' }]]);
  assert.equal((await must('GET', `/sessions/${id}`)).title, `Release checklist ${tag}`);
});

test('an untitled session is titled by its first prompt', async () => {
  const { id } = await must('POST', '/sessions', { agent: 'codex', cwd: '/srv/shop' });
  await append(id, [['turn/start', {}], ['message/user', { text: `Ship the cart page ${tag}\nwith tests` }]]);
  await page.goto(`${base}/s/${id}`);
  await page.locator('[data-title-text]', { hasText: `Ship the cart page ${tag}` }).waitFor();
  assert.equal(await page.title(), `Ship the cart page ${tag} · Tack`);
});
