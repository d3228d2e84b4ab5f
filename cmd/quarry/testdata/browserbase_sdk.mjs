// Drives quarry's Wallcrawler with the stock Browserbase SDK and Playwright,
// as TestBrowserbaseSDK (cmd/quarry/sdk_test.go) runs it. Environment:
// KEY, BASE_URL, PROJECT, PAGE_URL, and PEERS_DIR (where @browserbasehq/sdk
// and playwright-core are installed). Prints one JSON line of results; a
// failing step is reported in "error" (with "step") instead of throwing.
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
const out = {};
let step = 'start';
let browser;
const errText = (e) => (e && (e.stack || e.message)) || String(e);

try {
  const bb = new Browserbase({ apiKey: KEY, baseURL: BASE_URL, maxRetries: 0, timeout: 60_000 });

  step = 'sessions.create';
  const s = await bb.sessions.create({ projectId: PROJECT });
  out.sessionId = s.id;
  out.createStatus = s.status;
  out.hasConnectUrl = typeof s.connectUrl === 'string' && s.connectUrl.startsWith('ws');

  step = 'connectOverCDP';
  browser = await chromium.connectOverCDP(s.connectUrl, { timeout: 30_000 });
  const context = browser.contexts()[0];
  out.contexts = browser.contexts().length;
  const page = context.pages()[0] ?? (await context.newPage());

  step = 'goto';
  const resp = await page.goto(PAGE_URL, { waitUntil: 'load', timeout: 30_000 });
  out.gotoStatus = resp ? resp.status() : null;
  out.title = await page.title();

  step = 'sessions.debug';
  const dbg = await bb.sessions.debug(s.id);
  out.debugPageUrls = (dbg.pages ?? []).map((p) => p.url);
  out.debugHasPage = out.debugPageUrls.includes(PAGE_URL);
  out.debugHasWsUrl = typeof dbg.wsUrl === 'string' && dbg.wsUrl.length > 0;

  step = 'browser.close';
  await browser.close();
  browser = undefined;

  step = 'sessions.update';
  const upd = await bb.sessions.update(s.id, { status: 'REQUEST_RELEASE', projectId: PROJECT });
  out.updateStatus = upd.status;

  step = 'sessions.retrieve';
  const got = await bb.sessions.retrieve(s.id);
  out.retrieveStatus = got.status;
  out.endedAt = got.endedAt ?? null;

  step = 'sessions.list';
  const list = await bb.sessions.list({ status: 'COMPLETED' });
  out.listCompletedHasSession = Array.isArray(list) && list.some((x) => x.id === s.id);

  step = 'sessions.logs.list';
  const logs = await bb.sessions.logs.list(s.id);
  out.logCount = Array.isArray(logs) ? logs.length : -1;
  out.logMethods = Array.isArray(logs) ? [...new Set(logs.map((l) => l.method))].slice(0, 10) : [];

  step = 'sessions.recording.retrieve';
  const rec = await bb.sessions.recording.retrieve(s.id);
  out.recordingFrames = Array.isArray(rec) ? rec.filter((e) => e.type === 5 && e.data?.tag === 'quarry/frame' && e.sessionId === s.id && typeof e.data?.payload?.data === 'string').length : -1;

  step = 'sessions.replays.retrieve';
  try {
    await bb.sessions.replays.retrieve(s.id);
    out.replays = { threw: false };
  } catch (e) {
    out.replays = { threw: true, isNotFound: e instanceof Browserbase.NotFoundError, status: e?.status ?? null, message: e?.message ?? String(e) };
  }

  step = 'projects.usage';
  const usage = await bb.projects.usage(PROJECT);
  out.proxyBytes = usage.proxyBytes;
  out.browserMinutes = usage.browserMinutes;

  step = 'wrong key';
  const bad = new Browserbase({ apiKey: 'wc_not-a-real-key', baseURL: BASE_URL, maxRetries: 0 });
  try {
    await bad.sessions.create({ projectId: PROJECT });
    out.wrongKey = { threw: false };
  } catch (e) {
    out.wrongKey = {
      threw: true,
      name: e?.constructor?.name ?? null,
      isAuthenticationError: e instanceof Browserbase.AuthenticationError,
      status: e?.status ?? null,
      message: e?.message ?? String(e),
    };
  }
  step = 'done';
} catch (e) {
  out.step = step;
  out.error = errText(e);
} finally {
  if (browser) await browser.close().catch(() => {});
}
console.log(JSON.stringify(out));
