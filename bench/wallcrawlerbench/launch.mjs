// bench/wallcrawlerbench/launch.mjs — Playwright's chromium.launch on the
// machine's Chromium, timed to a usable page (wallcrawlerbench -peers).
//
//   node bench/wallcrawlerbench/launch.mjs URL TITLE N EXECUTABLE
//
// playwright-core is loaded from $PEERS_DIR (scripts/test-deps.sh installs
// it there, outside the repository). Cold: N times chromium.launch →
// newPage → goto(URL) → title, then close. Warm: one browser launched
// first, then N times newContext → newPage → goto(URL) → title, then the
// context closed. Prints one JSON line {version, cold: [ms…], warm: [ms…]}.
// URL must be on 127.0.0.1: nothing else is loaded.
import { createRequire } from 'node:module';
import path from 'node:path';

const [url, title, nArg, executablePath] = process.argv.slice(2);
const n = Number(nArg);
if (!url || !title || !(n > 0) || !executablePath) {
	console.error('usage: launch.mjs URL TITLE N EXECUTABLE');
	process.exit(2);
}
if (new URL(url).hostname !== '127.0.0.1') {
	console.error('launch.mjs: only 127.0.0.1 URLs');
	process.exit(2);
}
const peers = process.env.PEERS_DIR;
if (!peers) {
	console.error('launch.mjs: PEERS_DIR is not set');
	process.exit(2);
}
const require = createRequire(path.join(peers, 'node_modules', '.package-lock.json'));
const { chromium } = require('playwright-core');
const version = require('playwright-core/package.json').version;

async function usable(page) {
	await page.goto(url, { waitUntil: 'load' });
	const got = await page.title();
	if (got !== title) throw new Error(`title ${JSON.stringify(got)}, want ${JSON.stringify(title)}`);
}

const cold = [];
for (let i = 0; i < n; i++) {
	const t0 = performance.now();
	const browser = await chromium.launch({ executablePath });
	const page = await browser.newPage();
	await usable(page);
	cold.push(performance.now() - t0);
	await browser.close();
}
const warm = [];
const browser = await chromium.launch({ executablePath });
for (let i = 0; i < n; i++) {
	const t0 = performance.now();
	const ctx = await browser.newContext();
	const page = await ctx.newPage();
	await usable(page);
	warm.push(performance.now() - t0);
	await ctx.close();
}
await browser.close();
console.log(JSON.stringify({ version, cold, warm }));
