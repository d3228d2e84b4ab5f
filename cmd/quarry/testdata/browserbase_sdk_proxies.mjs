// Creates Wallcrawler sessions with proxies through the stock Browserbase
// SDK, as TestBrowserbaseSDKProxies (cmd/quarry/sdk_uploads_test.go) runs
// it: proxies: true is refused (BadRequestError), a session with an
// external proxy loads a page through it (Playwright). Environment: KEY,
// BASE_URL, PROJECT, PAGE_URL, PROXY (host:port of the tenant's proxy),
// PROXY_PASSWORD and PEERS_DIR. Prints one JSON line; a failing step is
// reported in "error" (with "step").
import { createRequire } from 'node:module';
import path from 'node:path';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const require = createRequire(path.join(env('PEERS_DIR'), 'package.json'));
const { chromium } = require('playwright-core');
const sdk = require('@browserbasehq/sdk');
const Browserbase = sdk.Browserbase ?? sdk.default ?? sdk;

const KEY = env('KEY'), BASE_URL = env('BASE_URL'), PROJECT = env('PROJECT'), PAGE_URL = env('PAGE_URL');
const PROXY = env('PROXY'), PROXY_PASSWORD = env('PROXY_PASSWORD');
const out = {};
let step = 'start';
let browser;
const errText = (e) => (e && (e.stack || e.message)) || String(e);

try {
  const bb = new Browserbase({ apiKey: KEY, baseURL: BASE_URL, maxRetries: 0, timeout: 60_000 });

  step = 'sessions.create proxies: true';
  try {
    await bb.sessions.create({ projectId: PROJECT, proxies: true });
    out.poolRefused = { threw: false };
  } catch (e) {
    out.poolRefused = { threw: true, isBadRequest: e instanceof Browserbase.BadRequestError, status: e.status, message: String(e.message) };
  }

  step = 'sessions.create proxies: [external]';
  const s = await bb.sessions.create({
    projectId: PROJECT,
    proxies: [{ type: 'external', server: `http://${PROXY}`, username: 'tenant', password: PROXY_PASSWORD, domainPattern: '127\\.0\\.0\\.1' }],
  });
  out.sessionId = s.id;
  out.sessionJson = JSON.stringify(await bb.sessions.retrieve(s.id));

  step = 'goto through the proxy';
  browser = await chromium.connectOverCDP(s.connectUrl, { timeout: 30_000 });
  const context = browser.contexts()[0];
  const page = context.pages()[0] ?? (await context.newPage());
  await page.goto(PAGE_URL, { waitUntil: 'load', timeout: 30_000 });
  out.body = await page.evaluate(() => document.body.innerText);

  step = 'browser.close';
  await browser.close();
  browser = undefined;
  await bb.sessions.update(s.id, { status: 'REQUEST_RELEASE', projectId: PROJECT });
  step = 'done';
} catch (e) {
  out.step = step;
  out.error = errText(e);
}
if (browser) await browser.close().catch(() => {});
console.log(JSON.stringify(out));
