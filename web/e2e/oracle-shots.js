// Screenshots of one session as two Tacks show it, side by side for a
// person to compare: the Tack that heard it live and a fresh one it was
// imported into. Not a test (node --test runs *.test.js): run by
// internal/agenttest's oracle tests when TACK_ORACLE_SHOTS=DIR is set.
// TACK_SHOTS is a JSON list of {url, id, name}: for each, the board and the
// session's whole page at 1440×900 and at 390×844 go to DIR/NAME-board-W.png
// and DIR/NAME-session-W.png.

import { launch, newPage } from './helpers.js';

const dir = process.env.TACK_ORACLE_SHOTS;
const shots = JSON.parse(process.env.TACK_SHOTS ?? '[]');
if (!dir || shots.length === 0) throw new Error('TACK_ORACLE_SHOTS and TACK_SHOTS must be set');
const sizes = [{ width: 1440, height: 900 }, { width: 390, height: 844 }];

const browser = await launch();
try {
  for (const { url, id, name } of shots) {
    for (const viewport of sizes) {
      const phone = viewport.width < 600;
      const { context, page } = await newPage(browser, { viewport, isMobile: phone, hasTouch: phone });
      await page.goto(`${url}/`);
      await page.locator(`[data-session-id="${id}"]`).first().waitFor();
      await page.waitForLoadState('networkidle');
      await page.screenshot({ path: `${dir}/${name}-board-${viewport.width}.png`, animations: 'disabled' });
      await page.goto(`${url}/s/${id}`);
      await page.locator('[data-events] li').first().waitFor();
      await page.waitForLoadState('networkidle');
      await page.screenshot({ path: `${dir}/${name}-session-${viewport.width}.png`, animations: 'disabled', fullPage: true });
      await context.close();
    }
  }
} finally {
  await browser.close();
}
