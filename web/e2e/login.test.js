// Signing in and out in a real browser, against a Tack in -auth token.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withBrowser } from './helpers.js';

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
withBrowser((b) => { browser = b; });

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

test('"Sign out" looks like the bar\'s other buttons', async () => {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(base + '/login');
    await page.fill('#token', token);
    await Promise.all([page.waitForURL(base + '/'), page.click('button[type=submit]')]);
    const out = page.locator('[data-sign-out]');
    await out.waitFor();
    const look = (sel) => page.locator(sel).evaluate((el) => {
      const c = getComputedStyle(el);
      return { radius: c.borderRadius, border: c.borderTopStyle, bg: c.backgroundColor, size: c.fontSize, padding: c.padding, family: c.fontFamily };
    });
    assert.deepEqual(await look('[data-sign-out]'), await look('[data-notify]'));
  } finally {
    await context.close();
  }
});

test('a sign-in link pasted into a tab already on /login signs in', async () => {
  const code = process.env.TACK_LINK_CODE ?? '';
  assert.ok(code, 'TACK_LINK_CODE is set by go test');
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(base + '/login');
    await page.locator('#token').waitFor();
    // The same document, only the fragment changes: no load happens.
    await Promise.all([page.waitForURL(base + '/'), page.goto(`${base}/login#code=${code}`)]);
    await page.locator('[data-whoami-name]').waitFor();
    assert.equal(await page.locator('[data-whoami-name]').innerText(), 'e2e-alice (write)');
  } finally {
    await context.close();
  }
});

test('a sign-in ended elsewhere sends every open page to /login instead of retrying its socket', async () => {
  const context = await browser.newContext();
  try {
    const [status, sess] = await api('POST', '/sessions', { title: 'Watched in two tabs' });
    assert.equal(status, 201);

    const signIn = await context.newPage();
    await signIn.goto(base + '/login');
    await signIn.fill('#token', token);
    await Promise.all([signIn.waitForURL(base + '/'), signIn.click('button[type=submit]')]);

    // Two tabs of the same sign-in, each with its socket open: the list's
    // feed and a session's live view.
    const list = signIn;
    await list.waitForSelector('body[data-live="connected"]', { state: 'attached' });
    const session = await context.newPage();
    await session.goto(base + '/s/' + sess.id);
    await session.waitForSelector('body[data-live="connected"]', { state: 'attached' });
    // Each page's sockets all hear the sign-out: it goes to /login once,
    // where a second navigation would abort the first.
    /** @type {Record<string, number>} */
    const toLogin = { list: 0, session: 0 };
    for (const [name, p] of [['list', list], ['session', session]]) {
      p.on('request', (r) => { if (r.isNavigationRequest() && new URL(r.url()).pathname === '/login') toLogin[name]++; });
    }

    // A third tab signs out with the cookie, by POST /logout: the server
    // closes the sign-in's sockets with 4401 and both pages go to /login.
    const other = await context.newPage();
    await other.goto(base + '/');
    const out = await other.evaluate(async () =>
      (await fetch('/logout', { method: 'POST', headers: { 'Content-Type': 'application/json' } })).status);
    assert.ok(out >= 200 && out < 300, `POST /logout answered ${out}`);
    await Promise.all([
      list.waitForURL(base + '/login', { timeout: 5000 }),
      session.waitForURL(base + '/login', { timeout: 5000 }),
    ]);
    assert.deepEqual(toLogin, { list: 1, session: 1 });
  } finally {
    await context.close();
  }
});

test('a page whose socket drops while the sign-in ends goes to /login when its retry is refused', async () => {
  const context = await browser.newContext();
  try {
    const [status, sess] = await api('POST', '/sessions', { title: 'Watched through a drop' });
    assert.equal(status, 201);
    // The sockets go through playwright to the real server, so that the
    // test can drop one as a network would: its page side is closed with
    // 1006 while the server side stays open. A retry waits for the test.
    /** @type {import('playwright-core').WebSocketRoute[]} */
    const sockets = [];
    let release = () => {};
    const retried = new Promise((resolve) => { release = resolve; });
    let routed = () => {};
    const first = new Promise((resolve) => { routed = resolve; });
    // Only the session's socket: the list's feed, opened after signing in,
    // goes as it is.
    await context.routeWebSocket((url) => url.pathname === `/sessions/${sess.id}/live`, async (ws) => {
      if (sockets.length > 0) await retried;
      sockets.push(ws);
      ws.connectToServer();
      routed();
    });
    const page = await context.newPage();
    await page.goto(base + '/login');
    await page.fill('#token', token);
    await Promise.all([page.waitForURL(base + '/'), page.click('button[type=submit]')]);
    await page.goto(base + '/s/' + sess.id);
    // The session's socket is open, not only the list's feed beside it.
    await first;
    await page.waitForSelector('body[data-live="connected"]', { state: 'attached' });

    await sockets[0].close({ code: 1006 });
    await page.waitForSelector('body[data-live="reconnecting"]', { state: 'attached' });
    // Meanwhile the sign-in ends: signed out with its cookie, elsewhere.
    const cookie = (await context.cookies(base)).map((c) => `${c.name}=${c.value}`).join('; ');
    const res = await fetch(base + '/logout', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Cookie: cookie, Origin: base },
    });
    assert.ok(res.ok, `POST /logout answered ${res.status}`);
    // The retry's handshake is refused (401, seen by the page as 1006): the
    // page asks /me, learns the sign-in ended and goes to /login.
    release();
    await page.waitForURL(base + '/login', { timeout: 10000 });
  } finally {
    await context.close();
  }
});
