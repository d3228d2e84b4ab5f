// Uploads a file to a Wallcrawler session with the stock Browserbase SDK
// (sessions.uploads.create) and hands it to a page's file input with
// Playwright, as TestBrowserbaseSDKUploads (cmd/quarry/sdk_uploads_test.go)
// runs it: by the path Browserbase documents (/tmp/.uploads/<name>, through
// a CDP session's DOM.setFileInputFiles); host paths outside the session's
// directories are refused. (Playwright's own setInputFiles over
// connectOverCDP reads the client's file and sends its content, no path:
// it never needs the upload directory.) Environment: KEY,
// BASE_URL, PROJECT, PAGE_URL (a page with <input type=file id=f>),
// UPLOAD_FILE (the local file to upload), BROWSER_ROOT (quarry's browser
// directory, whose browsers/ holds every session's work dir) and
// PEERS_DIR. Prints one JSON line; a failing step is
// reported in "error" (with "step").
import { createRequire } from 'node:module';
import fs from 'node:fs';
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
const UPLOAD_FILE = env('UPLOAD_FILE'), BROWSER_ROOT = env('BROWSER_ROOT');
const name = path.basename(UPLOAD_FILE);
const out = {};
let step = 'start';
let browser;
const errText = (e) => (e && (e.stack || e.message)) || String(e);
const readInput = (page) => page.evaluate(async () => {
  const f = document.getElementById('f').files[0];
  return f ? `${f.name}:${await f.text()}` : '';
});

try {
  const bb = new Browserbase({ apiKey: KEY, baseURL: BASE_URL, maxRetries: 0, timeout: 60_000 });

  step = 'sessions.create';
  const s = await bb.sessions.create({ projectId: PROJECT });
  out.sessionId = s.id;

  step = 'sessions.uploads.create';
  const up = await bb.sessions.uploads.create(s.id, { file: fs.createReadStream(UPLOAD_FILE) });
  out.uploadMessage = up.message;
  out.uploadPath = up.path;

  step = 'connectOverCDP';
  browser = await chromium.connectOverCDP(s.connectUrl, { timeout: 30_000 });
  const context = browser.contexts()[0];
  const page = context.pages()[0] ?? (await context.newPage());
  await page.goto(PAGE_URL, { waitUntil: 'load', timeout: 30_000 });

  step = 'DOM.setFileInputFiles /tmp/.uploads';
  const cdp = await context.newCDPSession(page);
  const { root } = await cdp.send('DOM.getDocument');
  const { nodeId } = await cdp.send('DOM.querySelector', { nodeId: root.nodeId, selector: '#f' });
  await cdp.send('DOM.setFileInputFiles', { nodeId, files: [`/tmp/.uploads/${name}`] });
  out.viaBrowserbasePath = await readInput(page);

  step = 'DOM.setFileInputFiles outside';
  await page.evaluate(() => { document.getElementById('f').value = ''; });
  out.refused = [];
  for (const p of ['/etc/hostname', '/tmp/.uploads/../../../../../../etc/hostname', `${BROWSER_ROOT}/browsers`]) {
    try {
      await cdp.send('DOM.setFileInputFiles', { nodeId, files: [p] });
      out.refused.push({ path: p, threw: false });
    } catch (e) {
      out.refused.push({ path: p, threw: true, message: String(e.message) });
    }
  }
  out.afterRefusals = await readInput(page);

  step = 'browser.close';
  await browser.close();
  browser = undefined;

  step = 'sessions.update';
  await bb.sessions.update(s.id, { status: 'REQUEST_RELEASE', projectId: PROJECT });
  step = 'done';
} catch (e) {
  out.step = step;
  out.error = errText(e);
}
if (browser) await browser.close().catch(() => {});
console.log(JSON.stringify(out));
