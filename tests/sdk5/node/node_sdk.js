// Scenarios run with apache/rocketmq-clients' Node.js SDK (npm rocketmq-client-nodejs 1.0.8) against our
// proxy: `node node_sdk.js <scenario> <proxy endpoint> <topic> [group]`. Exits non-zero with the reason on
// stderr when something is wrong; prints one JSON line on success.
'use strict';

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');
const { TransactionResolution } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');

function fail(msg) {
  process.stderr.write(`FAIL: ${msg}\n`);
  process.exit(1);
}

function check(cond, msg) {
  if (!cond) fail(msg);
}

const sleep = ms => new Promise(r => setTimeout(r, ms));

async function consumeAll(endpoint, topic, group, want, deadlineMs) {
  const c = new SimpleConsumer({
    endpoints: endpoint, sslEnabled: false, consumerGroup: group, awaitDuration: 3000,
    subscriptions: new Map().set(topic, '*'),
  });
  await c.startup();
  const seen = new Map();
  const end = Date.now() + deadlineMs;
  while (Date.now() < end && seen.size < want) {
    for (const m of await c.receive(32, 15000)) {
      seen.set(m.body.toString(), m);
      await c.ack(m);
    }
  }
  await c.shutdown();
  return seen;
}

async function normal(endpoint, topic, group) {
  const p = new Producer({ endpoints: endpoint, sslEnabled: false, topic });
  await p.startup();
  const n = 10;
  const ids = new Map();
  for (let i = 0; i < n; i++) {
    const r = await p.send({
      topic, tag: 'NodeTag', keys: [ `k${i}` ], body: Buffer.from(`node-${i}`),
      properties: new Map().set('seq', String(i)),
    });
    ids.set(`node-${i}`, r.messageId);
  }
  await p.shutdown();
  const seen = await consumeAll(endpoint, topic, group, n, 40000);
  check(seen.size === n, `received ${seen.size} of ${n}: ${[ ...seen.keys() ]}`);
  for (const [ body, m ] of seen) {
    const i = body.split('-')[1];
    check(m.tag === 'NodeTag', `${body}: tag ${m.tag}`);
    check(m.keys.length === 1 && m.keys[0] === `k${i}`, `${body}: keys ${m.keys}`);
    check(m.properties.get('seq') === i, `${body}: properties ${[ ...m.properties ]}`);
    check(m.messageId === ids.get(body), `${body}: id ${m.messageId}, sent as ${ids.get(body)}`);
  }
  console.log(JSON.stringify({ sent: n, received: seen.size }));
}

async function fifo(endpoint, topic, group) {
  const p = new Producer({ endpoints: endpoint, sslEnabled: false, topic });
  await p.startup();
  for (let i = 0; i < 6; i++) {
    for (const g of [ 'na', 'nb', 'nc' ]) {
      await p.send({ topic, messageGroup: g, body: Buffer.from(`${g}:${i}`) });
    }
  }
  await p.shutdown();
  const c = new SimpleConsumer({
    endpoints: endpoint, sslEnabled: false, consumerGroup: group, awaitDuration: 3000,
    subscriptions: new Map().set(topic, '*'),
  });
  await c.startup();
  const order = [];
  const end = Date.now() + 40000;
  while (Date.now() < end && order.length < 18) {
    for (const m of await c.receive(32, 15000)) {
      const [ g, i ] = m.body.toString().split(':');
      check(m.messageGroup === g, `${m.body}: group ${m.messageGroup}`);
      order.push([ g, Number(i) ]);
      await c.ack(m);
    }
  }
  await c.shutdown();
  check(order.length === 18, `received ${order.length} of 18`);
  for (const g of [ 'na', 'nb', 'nc' ]) {
    const seq = order.filter(o => o[0] === g).map(o => o[1]);
    check(JSON.stringify(seq) === JSON.stringify([ 0, 1, 2, 3, 4, 5 ]), `group ${g} arrived as ${seq}`);
  }
  console.log(JSON.stringify({ received: order.length }));
}

async function transaction(endpoint, topic, group) {
  const checked = [];
  const checker = {
    async check(messageView) {
      checked.push(messageView.body.toString());
      return TransactionResolution.COMMIT;
    },
  };
  const p = new Producer({ endpoints: endpoint, sslEnabled: false, topic, checker });
  await p.startup();
  let t = p.beginTransaction();
  await p.send({ topic, body: Buffer.from('node-commit') }, t);
  await t.commit();
  t = p.beginTransaction();
  await p.send({ topic, body: Buffer.from('node-rollback') }, t);
  await t.rollback();
  t = p.beginTransaction();
  await p.send({ topic, body: Buffer.from('node-orphan') }, t);
  const seen = await consumeAll(endpoint, topic, group, 2, 60000);
  const late = await consumeAll(endpoint, topic, group, 1, 3000);
  for (const k of late.keys()) seen.set(k, late.get(k));
  await p.shutdown();
  const got = [ ...seen.keys() ].sort();
  check(JSON.stringify(got) === JSON.stringify([ 'node-commit', 'node-orphan' ]), `received ${got}`);
  check(checked.includes('node-orphan'), `checker asked about ${checked}`);
  console.log(JSON.stringify({ received: got, checked }));
}

const scenarios = { normal, fifo, transaction };
const [ name, ...args ] = process.argv.slice(2);
scenarios[name](...args).then(() => process.exit(0), e => fail(e && e.stack || String(e)));
