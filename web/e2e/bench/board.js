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
//                               until stdin closes; prints "open" once all show rows

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
  page.on('pageerror', (e) => console.error('board.js: page error:', e.message));
  await page.goto(url, { waitUntil: 'commit' });
  await page.waitForSelector('[data-session-id] .session-name', { timeout: 60_000 });
  const at = await page.evaluate(() => performance.now());
  const fcp = await page.evaluate(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1);
  const rows = await page.evaluate(() => document.querySelectorAll('[data-session-id]').length);
  return { context, fcp, rows: at, count: rows };
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
  await Promise.all(browsers.map(open));
  console.log('open');
  process.stdin.resume();
  await new Promise((resolve) => process.stdin.on('end', resolve));
  await Promise.all(browsers.map((b) => b.close()));
} else {
  console.error('usage: node board.js paint|hold URL N');
  process.exit(2);
}
