// A plan the agent proposes (Claude Code's ExitPlanMode), heard through its
// hooks: a "Proposed plan" card in the conversation and, while no list
// stands, in the place of the plan, which then says why there is none; the
// approved plan's steps become the list.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { append, axe, base, connected, must, newPage, openSession, withBrowser } from './helpers.js';

let browser;
withBrowser((b) => { browser = b; });

const tag = `pp${Date.now().toString(36)}`;
const plan = '# Fix the flaky test\n\nIt fails one run in ten.\n\n1. Reproduce it\n2. Fix the race\n3. Run it a hundred times\n';

/** Sends one hook of the session sid. */
const hook = (agent, sid, event, fields) =>
  must('POST', `/hooks/${agent}`, { session_id: sid, hook_event_name: event, cwd: '/work/app', prompt_id: 'p1', ...fields });

test('proposed plan: a card in the conversation and the plan panel, then the list it becomes', async () => {
  const { context, page } = await newPage(browser, { viewport: { width: 1440, height: 900 }, bypassCSP: true });
  try {
    const sid = `${tag}-1`;
    await hook('claude-code', sid, 'UserPromptSubmit', { prompt: `Plan the fix ${tag}` });
    const { id } = await must('POST', '/sessions', { externalKey: `claude-code:${sid}` });
    await page.goto(`${base}/s/${id}`);
    await page.locator('[data-view="session"]').waitFor({ state: 'visible' });
    await connected(page);
    const none = page.locator('[data-plan-none]');
    await none.waitFor();
    assert.equal(await none.locator('[data-plan-why]').innerText(), 'No plan yet');
    assert.ok(await none.locator('[data-plan-proposal]').isHidden());

    // Proposed, waiting on the person.
    await hook('claude-code', sid, 'PreToolUse', { tool_name: 'ExitPlanMode', tool_use_id: 'tu1', tool_input: { plan } });
    const card = page.locator('li.proposal-row .proposal');
    await card.waitFor();
    assert.equal(await card.locator('.proposal-title').innerText(), 'PROPOSED PLAN');
    assert.equal(await card.locator('.proposal-state').innerText(), 'Awaiting approval');
    assert.equal(await card.locator('h1').innerText(), 'Fix the flaky test');
    assert.deepEqual(await card.locator('ol > li').allInnerTexts(), ['Reproduce it', 'Fix the race', 'Run it a hundred times']);
    const panel = none.locator('[data-plan-proposal]');
    await panel.waitFor();
    assert.deepEqual(await panel.locator('ol > li').allInnerTexts(), ['Reproduce it', 'Fix the race', 'Run it a hundred times']);
    assert.deepEqual(await axe(page), []);

    // Approved: its steps are the list, and the card says so.
    await hook('claude-code', sid, 'PostToolUse', { tool_name: 'ExitPlanMode', tool_use_id: 'tu1', tool_input: { plan }, tool_response: { plan, isAgent: false } });
    await card.locator('.proposal-state', { hasText: 'Approved' }).waitFor();
    await none.waitFor({ state: 'hidden' });
    const items = page.locator('[data-plan] [data-plan-items] .todo');
    await page.waitForFunction(() => document.querySelectorAll('[data-plan] [data-plan-items] .todo').length === 3);
    assert.match(await items.first().innerText(), /Reproduce it/);
    const history = await must('GET', `/sessions/${id}/todos/history`);
    assert.equal(history.versions[0].by, 'plan');
  } finally {
    await context.close();
  }
});

test('no plan: a codex session Tack never heard says it is not connected, until a hook is heard', async () => {
  const { context, page } = await newPage(browser, { viewport: { width: 1440, height: 900 }, bypassCSP: true });
  try {
    const sid = `${tag}-2`;
    const { id } = await must('POST', '/sessions', { externalKey: `codex:${sid}`, agent: 'codex', cwd: '/work/app' });
    await page.goto(`${base}/s/${id}`);
    await page.locator('[data-view="session"]').waitFor({ state: 'visible' });
    await connected(page);
    const why = page.locator('[data-plan-none] [data-plan-why]');
    await why.waitFor();
    assert.equal(await why.innerText(), 'This agent has no todo tool and Tack is not connected for it — tack connect');
    assert.equal(await why.locator('code').innerText(), 'tack connect');
    assert.deepEqual(await axe(page), []);

    // Heard by its hooks: connected, so there is simply no plan yet.
    await hook('codex', sid, 'UserPromptSubmit', { turn_id: 't1', prompt: 'Go' });
    await page.waitForFunction(() => document.querySelector('[data-plan-none] [data-plan-why]')?.textContent === 'No plan yet');

    // Claude Code on its current models has no todo tool either.
    const claude = await must('POST', '/sessions', { externalKey: `claude-code:${sid}`, agent: 'claude-code', cwd: '/work/app' });
    await page.goto(`${base}/s/${claude.id}`);
    await page.locator('[data-view="session"]').waitFor({ state: 'visible' });
    await why.waitFor();
    assert.equal(await why.innerText(), 'This agent has no todo tool and Tack is not connected for it — tack connect');
  } finally {
    await context.close();
  }
});

test("codex's proposed plan: its <proposed_plan> block is a card between what it says, and shows in the plan's place", async () => {
  const { context, page } = await newPage(browser, { viewport: { width: 1440, height: 900 }, bypassCSP: true });
  try {
    const { id } = await must('POST', '/sessions', { title: `codex plan ${tag}`, agent: 'codex' });
    await append(id, [['turn/start', {}], ['message/user', { text: 'Plan it' }],
      ['message/assistant', { text: 'Here is the plan.\n\n<proposed_plan>\n# Ship it\n\n- [ ] Build\n- [ ] Release\n</proposed_plan>\n\nSay go.' }]]);
    await openSession(page, id);
    const msg = page.locator('li.msg.assistant');
    await msg.locator('.proposal').waitFor();
    assert.deepEqual(await msg.locator('.text > p').allInnerTexts(), ['Here is the plan.', 'Say go.']);
    assert.equal(await msg.locator('.proposal .proposal-state').count(), 0);
    assert.equal(await msg.locator('.proposal h1').innerText(), 'Ship it');
    assert.doesNotMatch(await msg.innerText(), /proposed_plan/);
    const panel = page.locator('[data-plan-none] [data-plan-proposal]');
    await panel.waitFor();
    assert.deepEqual(await panel.locator('li').allInnerTexts(), ['Build', 'Release']);
    assert.deepEqual(await axe(page), []);
  } finally {
    await context.close();
  }
});

test('goal: above the plan and in the board\'s row, and what became of it', async () => {
  const { context, page } = await newPage(browser, { viewport: { width: 1440, height: 900 }, bypassCSP: true });
  try {
    const sid = `${tag}-3`;
    await hook('claude-code', sid, 'UserPromptSubmit', { prompt: `/goal All tests pass ${tag}` });
    const { id } = await must('POST', '/sessions', { externalKey: `claude-code:${sid}` });
    await page.goto(`${base}/s/${id}?q=${tag}`);
    await page.locator('[data-view="session"]').waitFor({ state: 'visible' });
    await connected(page);
    const want = `Goal: All tests pass ${tag}`;
    const noneGoal = page.locator('[data-plan-none] [data-goal-line]');
    await noneGoal.waitFor();
    assert.equal(await noneGoal.innerText(), want);
    const row = page.locator(`[data-session-id="${id}"]`);
    await row.locator('[data-goal]').waitFor();
    assert.equal(await row.locator('[data-goal]').innerText(), want);

    // With a list, above its items.
    const todos = [{ content: 'Fix the race', status: 'in_progress', activeForm: 'Fixing the race' }];
    await hook('claude-code', sid, 'PostToolUse', { tool_name: 'TodoWrite', tool_use_id: 'tw1', tool_input: { todos }, tool_response: {} });
    const planGoal = page.locator('section[data-plan] [data-goal-line]');
    await planGoal.waitFor();
    assert.equal(await planGoal.innerText(), want);
    const [goalBox, itemsBox] = await Promise.all([planGoal.boundingBox(), page.locator('[data-plan] [data-plan-items]').boundingBox()]);
    assert.ok(goalBox && itemsBox && goalBox.y < itemsBox.y, 'the goal is above the plan');
    assert.deepEqual(await axe(page), []);

    // Cleared: it says so, in both places.
    await hook('claude-code', sid, 'UserPromptSubmit', { prompt_id: 'p2', prompt: '/goal clear' });
    await page.locator('section[data-plan] [data-goal-line][data-status="cleared"]').waitFor();
    assert.equal(await planGoal.innerText(), `Goal cleared: All tests pass ${tag}`);
    await row.locator('[data-goal]', { hasText: 'Goal cleared' }).waitFor();
  } finally {
    await context.close();
  }
});
