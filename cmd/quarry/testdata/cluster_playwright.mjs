// Drives one Wallcrawler session with Playwright through several quarry
// nodes in turn, as TestClusterWallcrawler (cmd/quarry/
// cluster_wallcrawler_test.go) runs it. Environment: CONNECT_URLS (the
// session's connectUrl rewritten to each node's address, comma-separated),
// PAGE_URL, and PEERS_DIR (where playwright-core is installed). Prints one
// JSON line: for each URL {via, title, value, path} or {via, error}.
import { createRequire } from 'node:module';
import path from 'node:path';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const require = createRequire(path.join(env('PEERS_DIR'), 'package.json'));
const { chromium } = require('playwright-core');

const results = [];
for (const [i, url] of env('CONNECT_URLS').split(',').entries()) {
  const via = new URL(url).host;
  let browser;
  try {
    browser = await chromium.connectOverCDP(url, { timeout: 30_000 });
    const context = browser.contexts()[0];
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`${env('PAGE_URL')}/hop-${i}`, { timeout: 30_000 });
    results.push({
      via,
      title: await page.title(),
      value: await page.textContent('#value'),
      path: await page.evaluate(() => location.pathname),
    });
  } catch (e) {
    results.push({ via, error: (e && (e.stack || e.message)) || String(e) });
  } finally {
    // A connectOverCDP browser's close only disconnects: the session
    // stays up for the next node.
    if (browser) await browser.close().catch(() => {});
  }
}
console.log(JSON.stringify(results));
