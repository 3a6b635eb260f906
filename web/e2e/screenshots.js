// Screenshots of one session at 1440×900: the board with nothing chosen (its
// top 280 pixels, where the rows are) and the session's page from the top,
// its first Bash call opened. Not a test (node --test runs *.test.js): run by
// internal/agenttest's TestLiveScreenshots (scripts/screenshots-live),
// which sets TACK_URL, TACK_SHOT_SESSION (the session's id) and
// TACK_SHOT_BOARD and TACK_SHOT_PAGE (where the two PNGs go).

import { base, launch, newPage } from './helpers.js';

const id = process.env.TACK_SHOT_SESSION;
const boardPath = process.env.TACK_SHOT_BOARD;
const pagePath = process.env.TACK_SHOT_PAGE;
if (!id || !boardPath || !pagePath) throw new Error('TACK_SHOT_SESSION, TACK_SHOT_BOARD and TACK_SHOT_PAGE must be set');

const browser = await launch();
try {
  const { context, page } = await newPage(browser, { viewport: { width: 1440, height: 900 } });
  await page.goto(`${base}/`);
  await page.locator(`[data-session-id="${id}"]`).first().waitFor();
  // The rows, not the empty space under them.
  await page.screenshot({ path: boardPath, animations: 'disabled', clip: { x: 0, y: 0, width: 1440, height: 280 } });

  await page.goto(`${base}/s/${id}`);
  await page.locator('[data-events] li').first().waitFor();
  // Every event the page asked for drawn: the log is read page by page.
  await page.waitForLoadState('networkidle');
  // The first Bash call open, its output shown as the page shows it.
  await page.locator('li[data-type="tool"]', { hasText: 'Bash' }).first().locator('summary').click();
  // From the top, the title and the first prompt in view (the page keeps
  // a finished session scrolled to its end).
  await page.evaluate(() => {
    for (const el of document.querySelectorAll('*')) if (el.scrollTop > 0) el.scrollTop = 0;
  });
  await page.screenshot({ path: pagePath, animations: 'disabled' });
  await context.close();
} finally {
  await browser.close();
}
