// Shared by the browser tests: the Tack under test (TACK_URL, started by
// web/e2e_test.go), its API, and Debian's Chromium driven by playwright-core.

import { createRequire } from 'node:module';
import { after, before } from 'node:test';
import { chromium } from 'playwright-core';

export const base = process.env.TACK_URL ?? '';
if (!base) throw new Error('TACK_URL is not set: run these through `go test ./web/`');

/** Starts headless Chromium; never a downloaded browser. */
export function launch() {
  return chromium.launch({
    executablePath: process.env.TACK_CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

/**
 * Launches Chromium before a test file's tests and closes it after them.
 * @param {(browser: import('playwright-core').Browser) => void} set told the browser once launched
 */
export function withBrowser(set) {
  let browser;
  before(async () => {
    browser = await launch();
    set(browser);
  });
  after(async () => {
    await browser?.close();
  });
}

/**
 * A new context and a page in it, its page errors logged.
 * @param {import('playwright-core').Browser} browser
 * @param {import('playwright-core').BrowserContextOptions} options
 * @param {(context: import('playwright-core').BrowserContext) => Promise<void>} [prepare] run before the page opens
 */
export async function newPage(browser, options, prepare) {
  const context = await browser.newContext(options);
  await prepare?.(context);
  const page = await context.newPage();
  page.on('pageerror', (err) => console.error('page error:', err));
  return { context, page };
}

/** A second Tack that allows several todos in progress at once. */
export const parallelBase = process.env.TACK_PARALLEL_URL ?? '';

/**
 * Calls the API and returns [status, body].
 * @param {string} method
 * @param {string} path
 * @param {any} [body]
 * @param {string} [at] the server, base unless told
 */
export async function call(method, path, body, at = base) {
  const res = await fetch(at + path, {
    method,
    headers: { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return [res.status, text ? JSON.parse(text) : null];
}

/** Calls the API and insists on a 2xx. */
export async function must(method, path, body, at = base) {
  const [status, json] = await call(method, path, body, at);
  if (status < 200 || status > 299) throw new Error(`${method} ${path}: ${status} ${JSON.stringify(json)}`);
  return json;
}

/** Creates a session and returns its id. */
export async function newSession(title) {
  return (await must('POST', '/sessions', { title })).id;
}

/**
 * Appends events given as [type, data] pairs.
 * @param {string} id
 * @param {[string, any][]} events
 */
export function append(id, events) {
  return must('POST', `/sessions/${id}/events`, { events: events.map(([type, data]) => ({ type, data })) });
}

/**
 * A todo list from a status letter per item (p, i, c) and the contents.
 * @param {string} states
 * @param {string[]} contents
 */
export function todos(states, contents) {
  const status = { p: 'pending', i: 'in_progress', c: 'completed' };
  return contents.map((content, i) => ({ content, status: status[states[i]] }));
}

/** An assistant message holding one tool call, as an [type, data] pair for append. */
export const callEv = (id, name, args) => ['message/assistant', { text: '', toolCalls: [{ id, name, args }] }];

/** The result of a tool call, as an [type, data] pair for append. */
export const resultEv = (id, name, content, isError = false) => ['tool/result', { callId: id, name, content, isError }];

const axePath = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

/**
 * Runs axe-core (a dev dependency, injected into the page) and returns its
 * violations, one line each. The page's context needs `bypassCSP: true`.
 * @param {import('playwright-core').Page} p
 */
export async function axe(p) {
  await p.addScriptTag({ path: axePath });
  const found = await p.evaluate(async () => (await window.axe.run(document)).violations);
  return found.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

/** Calls the todo_write tool and insists it is accepted. */
export function todoWrite(id, list) {
  return must('POST', `/sessions/${id}/tools/todo_write`, { todos: list });
}

/** Cuts every open connection to the server, as a network drop would. */
export async function dropConnections() {
  await must('POST', '/_test/drop');
}

/** Opens a session's page and waits for its first render. */
export async function openSession(page, id) {
  await page.goto(`${base}/s/${id}`);
  await page.locator('[data-view="session"]').waitFor({ state: 'visible' });
}

/** Waits until the page's live socket is connected. */
export async function connected(page) {
  await page.waitForSelector('body[data-live="connected"]', { state: 'attached' });
}
