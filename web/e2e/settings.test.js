// The settings page, against a Tack in -auth token: one's tokens (make
// one, see it work, revoke it), one's sign-ins, no principals for one who
// is not an admin; and no axe-core violation.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { axe, withBrowser } from './helpers.js';

const base = process.env.TACK_TOKEN_URL ?? '';
const token = process.env.TACK_TOKEN ?? '';
if (!base || !token) throw new Error('TACK_TOKEN_URL and TACK_TOKEN are not set: run these through `go test ./web/`');

let browser;
withBrowser((b) => { browser = b; });

/** GET /me with a bearer token: its status. */
const meWith = async (t) => (await fetch(base + '/me', { headers: { Authorization: `Bearer ${t}` } })).status;

test('settings: make a token for an agent, see it work, revoke it; the sign-ins; no principals for a non-admin', async () => {
  const context = await browser.newContext({ bypassCSP: true });
  const page = await context.newPage();
  try {
    // Not signed in: to /login.
    await page.goto(base + '/settings');
    await page.waitForURL(base + '/login');
    await page.fill('#token', token);
    await Promise.all([page.waitForURL(base + '/'), page.click('button[type=submit]')]);
    // The bar leads to the settings.
    await Promise.all([page.waitForURL(base + '/settings'), page.getByRole('link', { name: 'Settings' }).click()]);
    await page.locator('[data-tokens] tbody tr').first().waitFor();

    await page.fill('[data-token-name]', 'laptop agent');
    await page.click('[data-token-form] button[type=submit]');
    const secret = page.locator('[data-token-secret] code');
    await secret.waitFor();
    const made = await secret.innerText();
    assert.match(made, /^tack_/);
    // It is said to outlive this sign-in and the token it was made with.
    assert.match(await page.locator('[data-token-secret] [data-token-outlives]').innerText(), /after the token you signed in with is revoked/);
    const row = page.locator('[data-tokens] tbody tr', { hasText: 'laptop agent' });
    await row.waitFor();
    assert.equal(await row.locator('td').nth(1).innerText(), 'write');
    // The new token is the signed-in person's: its requests act as them.
    assert.equal(await meWith(made), 200);
    assert.deepEqual(await axe(page), []);

    await row.getByRole('button', { name: 'Revoke laptop agent' }).click();
    await row.waitFor({ state: 'detached' });
    assert.equal(await meWith(made), 401);

    // This browser's sign-in is listed; principals are an admin's only.
    assert.match(await page.locator('[data-signins] tbody tr').first().innerText(), /this browser/);
    assert.ok(await page.locator('[data-principals-section]').isHidden());
  } finally {
    await context.close();
  }
});
