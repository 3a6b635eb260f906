// Real transcripts imported with `tack import` (web/e2e_test.go imports
// them before the run): a Claude Code session and a codex rollout as their
// agents lived them, and a Claude Code 2.1 session with the task tools and
// subagents. What a person sees of each, and no axe-core violation.

import { beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { axe, newPage, openSession, withBrowser } from './helpers.js';

const CLAUDE = process.env.TACK_IMPORTED_CLAUDE ?? '';
const CODEX = process.env.TACK_IMPORTED_CODEX ?? '';
const TASKS = process.env.TACK_IMPORTED_TASKS ?? '';

let browser;
let context;
let page;
withBrowser((b) => { browser = b; });
beforeEach(async () => {
  await context?.close();
  ({ context, page } = await newPage(browser, { viewport: { width: 1000, height: 800 }, bypassCSP: true }));
});

test('a real Claude Code session: its first prompt as title, harness lines quiet, the agent\'s durations, edits as diffs, the plan kept', async () => {
  assert.ok(CLAUDE, 'the run imported claude-code-session.jsonl');
  await openSession(page, CLAUDE);
  assert.equal(await page.title(), 'please move the + button to it\'s own button to the right of the search in @apps… · Tack');
  // Harness lines are quiet rows; no prompt row starts with a harness tag.
  assert.ok(await page.locator('li.harness').count() >= 3);
  for (const text of await page.locator('li[data-type="message/user"].user .text').allInnerTexts()) {
    assert.doesNotMatch(text, /^\s*(<command-|<local-command|\[Request interrupted)/, `a harness line shown as a prompt: ${text.slice(0, 60)}`);
  }
  // The agent's own times: turn 2 was interrupted 31 min 5 s after it began, in October 2025.
  const ends = await page.locator('li[data-type="turn/end"]').allInnerTexts();
  assert.match(ends[1], /^Turn 2 interrupted after 31 min 5 s ·\s*24 Oct 2025/);
  assert.match(ends[2], /^Turn 3 completed in 2 min 56 s/);
  // An Edit reads as a diff: lines added and removed, never escaped JSON.
  const edit = page.locator('li[data-type="tool"]', { hasText: 'Edit' }).first();
  assert.match(await edit.innerText(), /\+\d+\s*−\d+/);
  assert.doesNotMatch(await edit.innerText(), /\\"/);
  // The plan stands for the session: shown from an earlier turn, never "Add a plan".
  await page.locator('[data-plan][data-earlier="true"]').waitFor();
  assert.equal(await page.locator('[data-plan-progress]').innerText(), '2/2 done');
  assert.ok(await page.locator('[data-plan-none]').isHidden());
  assert.match(await page.locator('[data-session-state]').innerText(), /^Idle since 24 Oct 2025/);
  assert.deepEqual(await axe(page), []);
});

test('a real codex rollout: the request as title and text, the IDE context folded, the plan\'s clock stopped at rest', async () => {
  assert.ok(CODEX, 'the run imported codex-session.jsonl');
  await openSession(page, CODEX);
  assert.equal(await page.title(), 'Updating a team to assign a lea… · Tack');
  const prompt = page.locator('li[data-type="message/user"].user').first();
  assert.doesNotMatch(await prompt.locator('.text').innerText(), /Context from my IDE setup/);
  assert.match(await prompt.locator('details.prompt-context summary').innerText(), /IDE context/);
  assert.match(await page.locator('li[data-type="turn/end"]').first().innerText(), /^Turn 1 interrupted after 6 min 15 s/);
  await page.locator('[data-plan][data-earlier="true"]').waitFor();
  assert.equal(await page.locator('[data-plan-progress]').innerText(), '1/3 done');
  assert.equal(await page.locator('[data-plan-elapsed]').innerText(), '4 min 48 s', 'not the months since the session ended');
  assert.deepEqual(await axe(page), []);
});

test('Claude Code 2.1 with the task tools: subagents as rows, the active form, a blocked item, the ids kept', async () => {
  assert.ok(TASKS, 'the run imported claude-code-tasks.jsonl');
  await openSession(page, TASKS);
  // The children are read after the session: wait for them, then check.
  await page.locator('[data-children-count]', { hasText: '2' }).waitFor();
  assert.equal(await page.locator('[data-children-count]').innerText(), 'SUBAGENTS · 2');
  const kids = page.locator('[data-children] [data-session-id]');
  // A subagent is titled by the task its parent gave it, else by its prompt.
  assert.deepEqual(await kids.locator('a.session-title').allInnerTexts(), ['Explore: Find the callers', 'Check the docs for parse()']);
  // The item in progress reads as its active form.
  assert.ok(await page.locator('li.todo-row', { hasText: 'Running the tests' }).count() >= 1);
  // A version of the plan with the second task waiting on the first says so.
  const folds = page.locator('li.todo-row details');
  let blocked = '';
  for (let i = 0; i < await folds.count() && !blocked; i++) {
    await folds.nth(i).locator('summary').click();
    const b = folds.nth(i).locator('.todo-blocked');
    if (await b.count()) blocked = await b.first().innerText();
  }
  assert.match(blocked, /^Blocked by #1 Split parse\.go/);
  assert.deepEqual(await axe(page), []);
});
