// A session waiting on its person says what for, heard through the agent's
// real hooks: in its row, in the banner of its page (on the board, without
// an event to reread it by), and in the browser notification.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { axe, base, connected, must, newPage, withBrowser } from './helpers.js';

let browser;
withBrowser((b) => { browser = b; });

const tag = `ny${Date.now().toString(36)}`;

/** Sends one Claude Code hook of the session sid. */
const hook = (sid, event, fields) =>
  must('POST', '/hooks/claude-code', { session_id: sid, hook_event_name: event, cwd: '/work/app', prompt_id: 'p1', ...fields });

test('needs you: the row, the banner and the notification say what for, and stop saying it once the agent moves on', async () => {
  const { context, page } = await newPage(browser, { viewport: { width: 1440, height: 900 }, bypassCSP: true }, async (ctx) => {
    await ctx.grantPermissions(['notifications'], { origin: base });
    await ctx.addInitScript(() => {
      localStorage.setItem('tack.notify', 'on');
      const Real = window.Notification;
      window.__shown = [];
      window.Notification = class extends Real {
        constructor(title, opts) { super(title, opts); window.__shown.push({ title, body: opts?.body, tag: opts?.tag }); }
      };
    });
  });
  try {
    const sid = `${tag}-1`;
    await hook(sid, 'UserPromptSubmit', { prompt: `Clean the build ${tag}` });
    await hook(sid, 'PreToolUse', { tool_name: 'Read', tool_use_id: 'tu0', tool_input: { file_path: '/work/app/Makefile' } });
    const { id } = await must('POST', '/sessions', { externalKey: `claude-code:${sid}` });
    await page.goto(`${base}/s/${id}?q=${tag}`);
    await page.locator('[data-view="session"]').waitFor({ state: 'visible' });
    const row = page.locator(`[data-session-id="${id}"]`);
    await row.waitFor();
    await connected(page);
    assert.equal(await row.locator('[data-needs-you]').count(), 0);

    // A permission prompt: about the pending Bash call, not the answered Read.
    await hook(sid, 'PostToolUse', { tool_name: 'Read', tool_use_id: 'tu0', tool_input: { file_path: '/work/app/Makefile' }, tool_response: 'all:' });
    await hook(sid, 'PreToolUse', { tool_name: 'Bash', tool_use_id: 'tu1', tool_input: { command: 'rm -rf build' } });
    await hook(sid, 'Notification', { notification_type: 'permission_prompt', message: 'Claude needs your permission to use Bash' });
    const needs = row.locator('[data-needs-you="permission"]');
    await needs.waitFor();
    assert.equal(await needs.innerText(), 'Allow Bash: rm -rf build');
    const reason = page.locator('[data-waiting-reason]');
    await reason.waitFor();
    assert.equal(await reason.getAttribute('data-kind'), 'permission');
    assert.equal(await reason.locator('strong').innerText(), 'Permission');
    assert.match(await reason.innerText(), /Claude needs your permission to use Bash/);
    assert.equal(await reason.locator('code').innerText(), 'Bash: rm -rf build');
    await page.waitForFunction(() => window.__shown.length >= 1);
    const [shown] = await page.evaluate(() => window.__shown);
    assert.equal(shown.tag, `${id}:needs_you`);
    assert.equal(shown.body, 'Allow Bash: rm -rf build');
    assert.deepEqual(await axe(page), []);

    // Allowed: the call's result ends the wait, in the row and the banner.
    await hook(sid, 'PostToolUse', { tool_name: 'Bash', tool_use_id: 'tu1', tool_input: { command: 'rm -rf build' }, tool_response: '' });
    await needs.waitFor({ state: 'detached' });
    await page.locator('[data-waiting-banner]').waitFor({ state: 'hidden' });

    // A question: its own call begins the wait, with its options.
    await hook(sid, 'PreToolUse', { tool_name: 'AskUserQuestion', tool_use_id: 'tu2', tool_input: { questions: [{
      question: 'Which target?', header: 'Target', multiSelect: false,
      options: [{ label: 'debug', description: 'fast' }, { label: 'release', description: 'small' }] }] } });
    await row.locator('[data-needs-you="question"]').waitFor();
    assert.equal(await row.locator('[data-needs-you]').innerText(), 'Which target?');
    await page.locator('[data-waiting-reason][data-kind="question"]').waitFor();
    assert.equal(await reason.innerText(), 'Question · Which target?\ndebug · release');
    await page.waitForFunction(() => window.__shown.length >= 2);
    assert.equal((await page.evaluate(() => window.__shown))[1].body, 'Which target?');
  } finally {
    await context.close();
  }
});
