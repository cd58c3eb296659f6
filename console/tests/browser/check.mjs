// Drives the web console in Debian's Chromium and checks the figures it shows against what the test
// sent (expectations in the JSON file EXPECT names); screenshots go to OUT_DIR. Exits non-zero on the
// first failed check. Run by console/tests/browser.rs, which starts the cluster and the console.
import { chromium } from 'playwright-core';
import { readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const url = process.env.CONSOLE_URL;
const out = process.env.OUT_DIR;
const expect = JSON.parse(readFileSync(process.env.EXPECT, 'utf8'));
let failures = 0;
let passed = 0;

function check(cond, what) {
  if (cond) { passed++; console.log('ok   ' + what); } else { failures++; console.log('FAIL ' + what); }
}

// A fresh profile each run (playwright passes it as Chromium's --user-data-dir).
const context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'console-chromium-')), {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1400, height: 900 },
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const page = context.pages()[0] || await context.newPage();
page.setDefaultTimeout(20000);
page.on('pageerror', e => { failures++; console.log('FAIL page error: ' + e.message); });

async function open(hash, ready) {
  // A full load each time (a new query string), so a page opened twice shows fresh figures.
  await page.goto(`${url}/?load=${Date.now()}${hash}`);
  await page.waitForSelector(`body[data-ready="${ready}"]`);
  const err = await page.$('#page-error');
  check(!err, `${hash} loads without error` + (err ? ': ' + await err.textContent() : ''));
}

async function shot(name) {
  const path = join(out, name + '.png');
  await page.screenshot({ path, fullPage: true });
  console.log('screenshot ' + path);
}

async function tableRows(id) {
  return page.$$eval(`#${id} tbody tr`, trs => trs.map(tr => [...tr.children].map(td => td.textContent.trim())));
}

try {
  // Cluster: every shard-broker listed, with its role and version.
  await open('#/cluster', 'cluster');
  const brokers = await tableRows('brokers');
  for (const name of expect.brokers) {
    const row = brokers.find(r => r[1] === name);
    check(row && row[5].endsWith('MASTER') && row[6].startsWith('V'), `cluster lists ${name} as a master with a version`);
  }
  check(brokers.every(r => r[13] === ''), 'no broker shows an error');
  await shot('cluster');

  // Topic: the stored messages and each queue's max offset equal what was sent.
  await open('#/topic/' + encodeURIComponent(expect.topic), 'topic');
  check(await page.textContent('#topic-total') === String(expect.sent), `topic ${expect.topic} shows ${expect.sent} messages`);
  const queues = await tableRows('queues');
  for (const q of expect.queues) {
    const row = queues.find(r => r[0] === q.brokerName && r[1] === String(q.queueId));
    check(row && row[3] === String(q.maxOffset), `queue ${q.brokerName}/${q.queueId} max offset ${q.maxOffset} (shown ${row && row[3]})`);
  }
  const route = await tableRows('route');
  check(expect.brokers.every(b => route.some(r => r[0] === b)), 'route lists every shard-broker');
  await shot('topic');

  // Consumer groups: the group's lag equals the messages not consumed.
  await open('#/groups', 'groups');
  const groups = await tableRows('groups');
  const g = groups.find(r => r[0] === expect.group);
  check(g && g[5] === String(expect.lag), `groups list ${expect.group} with lag ${expect.lag} (shown ${g && g[5]})`);
  check(g && Number(g[1]) >= 1, `${expect.group} has an online client`);
  await shot('groups');
  await open('#/group/' + encodeURIComponent(expect.group), 'group');
  check(await page.textContent('#lag-total') === String(expect.lag), `group page lag ${expect.lag}`);
  check(Number(await page.textContent('#client-count')) >= 1, 'group page lists the online client');
  const lag = await tableRows('lag');
  const lagSum = lag.filter(r => r[0] === expect.topic).reduce((a, r) => a + Number(r[5]), 0);
  check(lagSum === expect.lag, `lag per queue adds up to ${expect.lag} (${lagSum})`);
  await shot('group');

  // Messages: by key shows the body and properties; by id finds the same message.
  await open('#/messages', 'messages');
  await page.fill('#by-key input[name=topic]', expect.topic);
  await page.fill('#by-key input[name=key]', expect.key);
  await page.click('#by-key button');
  await page.waitForSelector('.message pre.body');
  check((await page.textContent('.message pre.body')) === expect.keyBody, `message by key ${expect.key} shows its body`);
  const props = await page.$$eval('.message table tbody tr', trs => trs.map(tr => [...tr.children].map(td => td.textContent)));
  check(props.some(p => p[0] === 'KEYS' && p[1] === expect.key), 'its properties show KEYS');
  await shot('message-by-key');
  await page.fill('#by-id input[name=msgId]', expect.msgId);
  await page.fill('#by-id input[name=topic]', expect.topic);
  await page.click('#by-id button');
  await page.waitForFunction(id => [...document.querySelectorAll('.msg-id')].some(e => e.textContent === id) &&
    document.querySelectorAll('.message').length === 1, expect.msgId);
  check((await page.textContent('.message pre.body')) === expect.msgIdBody, `message by id ${expect.msgId} shows its body`);

  // Live charts: a few points from the metrics endpoints, with the background load visible.
  await open('#/dashboard', 'dashboard');
  await page.waitForFunction(() => Number(document.body.dataset.chartPoints || 0) >= 6, null, { timeout: 30000 });
  const sendNow = await page.textContent('#send-tps-now');
  check(/put [1-9]/.test(sendNow), `send TPS chart shows the load (${sendNow})`);
  const consumeNow = await page.textContent('#consume-tps-now');
  check(/pull [1-9]/.test(consumeNow), `consume TPS chart shows the load (${consumeNow})`);
  const latency = await page.textContent('#put-latency-now');
  check(/avg [0-9.]+/.test(latency), `latency chart has a figure (${latency})`);
  await shot('charts');

  // Admin: refused before login, refused for a wrong secret and for a non-admin account, done as admin.
  await open('#/topics', 'topics');
  await page.fill('#create-topic input[name=topic]', expect.newTopic);
  await page.click('#create-topic button');
  await page.waitForSelector('#action-result.error');
  const refused = await page.textContent('#action-result');
  check(refused.includes('log in'), `create topic without login is refused (${refused})`);
  await shot('refused-without-login');

  await page.fill('#login input[name=accessKey]', expect.admin.accessKey);
  await page.fill('#login input[name=secretKey]', 'wrong-' + expect.admin.secretKey);
  await page.click('#login button');
  await page.waitForSelector('#login-result.error');
  const badLogin = await page.textContent('#login-result');
  check(badLogin.includes('signature'), `login with a wrong secret is refused by the broker (${badLogin})`);

  await page.fill('#login input[name=accessKey]', expect.reader.accessKey);
  await page.fill('#login input[name=secretKey]', expect.reader.secretKey);
  await page.click('#login button');
  await page.waitForSelector('#logout');
  await page.fill('#create-topic input[name=topic]', expect.newTopic);
  await page.click('#create-topic button');
  await page.waitForSelector('#action-result.error');
  const notAdmin = await page.textContent('#action-result');
  check(notAdmin.includes('Need admin permission'), `a non-admin account is refused by the broker (${notAdmin})`);
  await page.click('#logout');
  await page.waitForSelector('#login');

  await page.fill('#login input[name=accessKey]', expect.admin.accessKey);
  await page.fill('#login input[name=secretKey]', expect.admin.secretKey);
  await page.click('#login button');
  await page.waitForSelector('#logout');
  check((await page.textContent('#mode')).includes(expect.admin.accessKey), 'logged in as the admin account');
  await page.fill('#create-topic input[name=topic]', expect.newTopic);
  await page.fill('#create-topic input[name=writeQueueNums]', '2');
  await page.fill('#create-topic input[name=readQueueNums]', '2');
  await page.click('#create-topic button');
  await page.waitForSelector('#action-result.ok');
  const created = await page.textContent('#action-result');
  check(created.includes(expect.newTopic), `admin creates topic ${expect.newTopic} (${created})`);
  await shot('topic-created');

  // Drain the broker process: its shard-brokers show read-only, then get write permission back.
  await open('#/cluster', 'cluster');
  await page.click(`button[data-drain="${expect.process}"]`);
  await page.waitForSelector('#action-result.ok');
  await open('#/cluster', 'cluster');
  const drained = await tableRows('brokers');
  check(expect.brokers.every(b => drained.find(r => r[1] === b)?.[7] === 'read-only'), 'drained shard-brokers show read-only');
  await shot('drained');
  await page.click(`button[data-undrain="${expect.process}"]`);
  await page.waitForSelector('#action-result.ok');
  await open('#/cluster', 'cluster');
  const back = await tableRows('brokers');
  check(expect.brokers.every(b => back.find(r => r[1] === b)?.[7] === '6'), 'write permission back (perm 6)');
} catch (e) {
  failures++;
  console.log('FAIL ' + e.stack);
  try { await shot('failure'); } catch (_) { /* the page may be gone */ }
} finally {
  await context.close();
}
console.log(`${passed} passed, ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
