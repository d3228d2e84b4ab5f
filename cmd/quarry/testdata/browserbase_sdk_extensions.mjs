// Uploads a browser extension with the stock Browserbase SDK
// (extensions.create, retrieve, delete) and starts a session with its
// extensionId, as TestBrowserbaseSDKExtensions (cmd/quarry/sdk_test.go's
// sibling sdk_extensions_test.go) runs it: the extension's content script
// sets the title of a page on loopback. Another project's key must not see
// the extension, nor start a session with it; an extension asking for the
// proxy permission is refused. Environment: KEY, OTHER_KEY, BASE_URL,
// PROJECT, OTHER_PROJECT, PAGE_URL, EXT_ZIP (the extension), BAD_ZIP (one
// asking for "proxy") and PEERS_DIR. Prints one JSON line; a failing step
// is reported in "error" (with "step").
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

const BASE_URL = env('BASE_URL'), PROJECT = env('PROJECT'), OTHER_PROJECT = env('OTHER_PROJECT');
const out = {};
let step = 'start';
let browser;
const errText = (e) => (e && (e.stack || e.message)) || String(e);
// refusal runs f and returns the SDK error's status and message.
const refusal = async (f) => {
  try {
    await f();
    return { status: 0 };
  } catch (e) {
    return { status: e.status ?? -1, message: String(e.error?.message ?? e.message) };
  }
};

try {
  const bb = new Browserbase({ apiKey: env('KEY'), baseURL: BASE_URL, maxRetries: 0, timeout: 60_000 });
  const other = new Browserbase({ apiKey: env('OTHER_KEY'), baseURL: BASE_URL, maxRetries: 0, timeout: 60_000 });

  step = 'extensions.create';
  const ext = await bb.extensions.create({ file: fs.createReadStream(env('EXT_ZIP')) });
  out.created = ext;

  step = 'extensions.create refused';
  out.refusedUpload = await refusal(() => bb.extensions.create({ file: fs.createReadStream(env('BAD_ZIP')) }));

  step = 'extensions.retrieve';
  out.retrieved = await bb.extensions.retrieve(ext.id);

  step = 'other project';
  out.otherRetrieve = await refusal(() => other.extensions.retrieve(ext.id));
  out.otherDelete = await refusal(() => other.extensions.delete(ext.id));
  out.otherSession = await refusal(() => other.sessions.create({ projectId: OTHER_PROJECT, extensionId: ext.id }));

  step = 'sessions.create';
  const s = await bb.sessions.create({ projectId: PROJECT, extensionId: ext.id });
  out.sessionId = s.id;

  step = 'connectOverCDP';
  browser = await chromium.connectOverCDP(s.connectUrl, { timeout: 30_000 });
  const context = browser.contexts()[0];
  const page = context.pages()[0] ?? (await context.newPage());
  await page.goto(env('PAGE_URL'), { waitUntil: 'load', timeout: 30_000 });
  step = 'content script';
  await page.waitForFunction(() => document.title.startsWith('extension was here'), null, { timeout: 20_000 });
  out.title = await page.title();

  step = 'browser.close';
  await browser.close();
  browser = undefined;
  await bb.sessions.update(s.id, { status: 'REQUEST_RELEASE', projectId: PROJECT });

  step = 'extensions.delete';
  await bb.extensions.delete(ext.id);
  out.afterDelete = await refusal(() => bb.extensions.retrieve(ext.id));
  out.sessionAfterDelete = await refusal(() => bb.sessions.create({ projectId: PROJECT, extensionId: ext.id }));
  step = 'done';
} catch (e) {
  out.step = step;
  out.error = errText(e);
}
if (browser) await browser.close().catch(() => {});
console.log(JSON.stringify(out));
