// Drives the web console in headless Chromium: node console.mjs URL OUTDIR [ADMIN_KEY]
//
// Opens URL (…/console), gives the admin key when the page asks, checks the calls table,
// filters it to the failed calls, opens a call (its reply, attempts, the replay command),
// the spend plot, the budgets and the kept conversations (one turn opened), and saves a
// screenshot of each in OUTDIR. Prints one
// JSON line of what it saw; exits 1 on the first thing that is not as expected, and on
// any error the page logs (a Content-Security-Policy violation included).
//
// Chromium: $CHROMIUM, else /usr/bin/chromium (Debian's `apt-get install chromium`).

import { chromium } from 'playwright-core';
import { mkdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const [url, outdir, key] = process.argv.slice(2);
if (!url || !outdir) {
  console.error('usage: node console.mjs URL OUTDIR [ADMIN_KEY]');
  process.exit(2);
}
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
if (!existsSync(executablePath)) {
  console.error(`no Chromium at ${executablePath}: apt-get install -y chromium, or set CHROMIUM`);
  process.exit(3);
}
mkdirSync(outdir, { recursive: true });

const seen = { screenshots: [] };
const problems = [];
const browser = await chromium.launch({
  executablePath,
  headless: true,
  // Root in CI containers has no user namespace for the sandbox.
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});

function expect(ok, what) {
  if (!ok) throw new Error(what);
}

async function shot(page, name) {
  const path = join(outdir, name);
  await page.screenshot({ path, fullPage: false });
  seen.screenshots.push(path);
}

try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    // The first API call answers 401 before the key is given: that is how the page asks.
    const asked = m.text().includes('status of 401') && m.location().url.includes('/console/api/');
    if (!asked) problems.push(`console: ${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (e) => problems.push(`page: ${e.message}`));
  page.setDefaultTimeout(10_000);

  await page.goto(url);
  if (key) {
    await page.waitForSelector('#key-dialog[open]');
    await page.fill('#key-input', key);
    await page.click('#key-form button[type=submit]');
  }
  await page.waitForSelector('#calls tbody tr');
  seen.rows = await page.locator('#calls tbody tr').count();
  seen.source = await page.textContent('#source');
  expect(seen.rows > 0, 'the calls table has no rows');
  const costs = await page.locator('#calls tbody td:nth-child(10)').allTextContents();
  seen.unknownShown = costs.some((c) => c === 'unknown');
  await shot(page, 'console-calls.png');

  // Filter to the failed calls: the page asks the server again.
  await page.selectOption('#filters select[name=status]', 'error');
  await page.waitForFunction(() => location.hash.includes('status=error'));
  await page.waitForFunction(() => [...document.querySelectorAll('#calls tbody tr')]
    .every((tr) => tr.querySelector('td.err')));
  seen.errorRows = await page.locator('#calls tbody tr').count();
  expect(seen.errorRows > 0, 'no failed call after filtering on status=error');
  seen.pageInfo = await page.textContent('#page-info');

  // Sort by cost, then open the dearest call.
  await page.click('#filters button[type=button]');
  await page.waitForFunction(() => !location.hash.includes('status='));
  await page.click('th a[data-sort=cost]');
  await page.waitForFunction(() => location.hash.includes('sort=cost'));
  await page.waitForSelector('#calls tbody tr');
  await page.click('#calls tbody tr:first-child td:first-child a');
  await page.waitForSelector('h1:has-text("Call ")');
  seen.call = await page.textContent('h1');
  seen.reply = await page.textContent('#reply');
  const curl = await page.inputValue('#replay-curl');
  expect(curl.startsWith('curl ') && curl.includes('/v1/'), `the replay command is not a curl command: ${curl}`);
  expect((await page.locator('table.attempts tbody tr').count()) > 0, 'no attempts listed');
  await page.click('#raw summary');
  await page.waitForFunction(() => document.querySelector('#raw pre').textContent !== 'loading…');
  seen.rawBytes = (await page.textContent('#raw pre')).length;
  await page.evaluate(() => window.scrollTo(0, 0));
  await shot(page, 'console-call.png');

  await page.click('nav a[data-tab=spend]');
  await page.waitForSelector('#spend-plot svg rect');
  seen.bars = await page.locator('#spend-plot svg rect').count();
  await shot(page, 'console-spend.png');

  await page.click('nav a[data-tab=budgets]');
  await page.waitForSelector('h1:has-text("Budgets")');
  seen.budgets = await page.textContent('main');
  await shot(page, 'console-budgets.png');

  // The kept conversations, then one turn's JSON.
  await page.click('nav a[data-tab=conversations]');
  await page.waitForSelector('#conversations tbody tr');
  seen.conversations = await page.locator('#conversations tbody tr').count();
  await shot(page, 'console-conversations.png');
  await page.click('#conversations tbody tr:first-child td:nth-child(2) a');
  await page.waitForSelector('#turn');
  seen.turn = await page.textContent('#turn');

  expect(problems.length === 0, `the page logged errors: ${problems.join('; ')}`);
  console.log(JSON.stringify(seen));
  await browser.close();
} catch (e) {
  console.error(`console browser test: ${e.message}`);
  if (problems.length) console.error(problems.join('\n'));
  await browser.close();
  process.exit(1);
}
