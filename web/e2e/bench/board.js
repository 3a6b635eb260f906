// The browser's half of `tackbench fleet` (internal/bench/fleet.go), in
// Debian's Chromium driven by playwright-core, never a downloaded browser.
//
//   node board.js paint URL N   loads the board N times, each in a fresh
//                               context (nothing cached), and prints one JSON
//                               line per load: {"fcp": ms, "rows": ms, "count": n},
//                               the first contentful paint and the moment the
//                               first session rows show, from navigation start
//   node board.js hold URL N    opens the board in N browsers (a Chromium
//                               each) and keeps them open, following live,
//                               until stdin closes; prints "open" once all show rows,
//                               then answers each "mark" line on stdin with one JSON
//                               line: the pages' main-thread time so far, summed
//                               over the browsers, in ms ({"task", "script",
//                               "layout", "style"}: Chromium's TaskDuration,
//                               ScriptDuration, LayoutDuration, RecalcStyleDuration),
//                               the websocket messages they have heard ("messages")
//                               and the sockets they have opened ("sockets": one a
//                               page, and one more each time it reconnected)

import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';

const [mode, url, n] = process.argv.slice(2);
const count = Number(n || 1);

function launch() {
  return chromium.launch({
    executablePath: process.env.TACK_CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

/** Opens the board in a fresh context and waits for its first rows. @param {import('playwright-core').Browser} browser */
async function open(browser) {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  page.on('websocket', (ws) => {
    sockets++;
    ws.on('framereceived', () => { heard++; });
  });
  page.on('pageerror', (e) => console.error('board.js: page error:', e.message));
  await page.goto(url, { waitUntil: 'commit' });
  await page.waitForSelector('[data-session-id] .session-name', { timeout: 60_000 });
  const at = await page.evaluate(() => performance.now());
  const fcp = await page.evaluate(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1);
  const rows = await page.evaluate(() => document.querySelectorAll('[data-session-id]').length);
  return { context, page, fcp, rows: at, count: rows };
}

/** The websocket messages the pages have heard, and the sockets they have opened. */
let heard = 0;
let sockets = 0;

const METRICS = { task: 'TaskDuration', script: 'ScriptDuration', layout: 'LayoutDuration', style: 'RecalcStyleDuration' };

/**
 * The main-thread time the pages have spent since they opened, summed, in ms.
 * @param {import('playwright-core').CDPSession[]} sessions
 */
async function mainThread(sessions) {
  const sum = Object.fromEntries([...Object.keys(METRICS).map((k) => [k, 0]), ['messages', heard], ['sockets', sockets]]);
  for (const cdp of sessions) {
    const { metrics } = await cdp.send('Performance.getMetrics');
    for (const [k, name] of Object.entries(METRICS)) sum[k] += 1000 * (metrics.find((m) => m.name === name)?.value ?? 0);
  }
  return sum;
}

if (mode === 'paint') {
  const browser = await launch();
  // One load first, not counted: Chromium's own start-up costs land there.
  (await open(browser)).context.close();
  for (let i = 0; i < count; i++) {
    const r = await open(browser);
    console.log(JSON.stringify({ fcp: r.fcp, rows: r.rows, count: r.count }));
    await r.context.close();
  }
  await browser.close();
} else if (mode === 'hold') {
  const browsers = await Promise.all(Array.from({ length: count }, launch));
  const opened = await Promise.all(browsers.map(open));
  const sessions = await Promise.all(opened.map(async ({ context, page }) => {
    const cdp = await context.newCDPSession(page);
    await cdp.send('Performance.enable', { timeDomain: 'threadTicks' });
    return cdp;
  }));
  console.log('open');
  for await (const line of createInterface({ input: process.stdin })) {
    if (line.trim() === 'mark') console.log(JSON.stringify(await mainThread(sessions)));
  }
  await Promise.all(browsers.map((b) => b.close()));
} else {
  console.error('usage: node board.js paint|hold URL N');
  process.exit(2);
}
