// Signing in and out in a real browser, against a Tack in -auth token.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { launch } from './helpers.js';

const base = process.env.TACK_TOKEN_URL ?? '';
const token = process.env.TACK_TOKEN ?? '';
if (!base || !token) throw new Error('TACK_TOKEN_URL and TACK_TOKEN are not set: run these through `go test ./web/`');

/** Calls the API as the token's principal. */
async function api(method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return [res.status, await res.json().catch(() => null)];
}

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

test('a browser signs in with a token, sees its sessions live over the cookie, and signs out', async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (err) => errors.push(err));
  page.on('console', (msg) => { if (msg.type() === 'error' && !/401/.test(msg.text())) errors.push(msg.text()); });

  // Not signed in: the page sends the browser to /login.
  await page.goto(base + '/');
  assert.equal(new URL(page.url()).pathname, '/login');

  await page.fill('#token', 'tack_wrong');
  await page.click('button[type=submit]');
  await page.locator('[data-error]').waitFor({ state: 'visible' });

  await page.fill('#token', token);
  await Promise.all([page.waitForURL(base + '/'), page.click('button[type=submit]')]);
  await page.locator('[data-whoami-name]').waitFor();
  assert.equal(await page.locator('[data-whoami-name]').innerText(), 'e2e-alice (write)');
  // The cookie is HttpOnly: no script on the page can read it.
  assert.equal(await page.evaluate(() => document.cookie.includes('tack_signin')), false);

  // The feed socket of the signed-in page is authorized by the cookie: a
  // session the principal's agent creates shows up without a reload.
  await page.waitForSelector('body[data-live="connected"]', { state: 'attached' });
  const [status, sess] = await api('POST', '/sessions', { title: 'Made by the harness' });
  assert.equal(status, 201);
  await page.locator(`[data-session-id="${sess.id}"]`).waitFor();

  // And the session's own socket: an event appended arrives live.
  await page.goto(base + '/s/' + sess.id);
  await page.waitForSelector('body[data-live="connected"]', { state: 'attached' });
  await api('POST', `/sessions/${sess.id}/events`, { events: [{ type: 'message/user', data: { text: 'hello from the harness' } }] });
  await page.getByText('hello from the harness').waitFor();

  // Signing out ends the sign-in: back to /login, and the API refuses.
  await Promise.all([page.waitForURL(base + '/login'), page.click('[data-sign-out]')]);
  const me = await page.evaluate(async () => (await fetch('/me')).status);
  assert.equal(me, 401);
  await page.goto(base + '/');
  assert.equal(new URL(page.url()).pathname, '/login');
  assert.deepEqual(errors, []);
});
