// Scenarios run with apache/rocketmq-clients' Node.js SDK (npm rocketmq-client-nodejs 1.0.8) against our
// proxy: `node node_sdk.js <scenario> <proxy endpoint> <topic> [group]`. Exits non-zero with the reason on
// stderr when something is wrong; prints one JSON line on success.
'use strict';

const fs = require('fs');
const { ConsumeResult, Producer, PushConsumer, SimpleConsumer } = require('rocketmq-client-nodejs');
const { TransactionResolution } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');

function fail(msg) {
  process.stderr.write(`FAIL: ${msg}\n`);
  process.exit(1);
}

function check(cond, msg) {
  if (!cond) fail(msg);
}

// SDK5_TLS=1: connect with TLS (grpc-js checks the proxy's certificate against GRPC_DEFAULT_SSL_ROOTS_FILE_PATH).
const SSL = process.env.SDK5_TLS === '1';

const sleep = ms => new Promise(r => setTimeout(r, ms));

async function consumeAll(endpoint, topic, group, want, deadlineMs) {
  const c = new SimpleConsumer({
    endpoints: endpoint, sslEnabled: SSL, consumerGroup: group, awaitDuration: 3000,
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
  const p = new Producer({ endpoints: endpoint, sslEnabled: SSL, topic });
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

function simpleConsumer(endpoint, topic, group) {
  return new SimpleConsumer({
    endpoints: endpoint, sslEnabled: SSL, consumerGroup: group, awaitDuration: 3000,
    subscriptions: new Map().set(topic, '*'),
  });
}

// 6 messages in each of 4 message groups; two consumers of one orderly group receive them one at a time
// (invisible 2 s) and ack each, except the first delivery of `node-0:0`. Prints the delivery log, which
// run.py checks (send order per group, no gap, the held message back once and holding its group), and
// whether a PushConsumer of the group was told by the proxy's settings to consume in FIFO order.
async function fifo(endpoint, topic, group) {
  const p = new Producer({ endpoints: endpoint, sslEnabled: SSL, topic });
  await p.startup();
  const groups = [ 0, 1, 2, 3 ].map(g => `node-${g}`);
  for (let i = 0; i < 6; i++) {
    for (const g of groups) {
      await p.send({ topic, messageGroup: g, body: Buffer.from(`${g}:${i}`) });
    }
  }
  await p.shutdown();
  const consumers = [ simpleConsumer(endpoint, topic, group), simpleConsumer(endpoint, topic, group) ];
  for (const c of consumers) await c.startup();
  const log = [];
  let acked = 0;
  let held = false;
  const end = Date.now() + 60000;
  while (Date.now() < end && acked < 24) {
    for (const [ n, c ] of consumers.entries()) {
      for (const m of await c.receive(1, 2000)) {
        const body = m.body.toString();
        const ack = held || body !== 'node-0:0';
        if (body === 'node-0:0') held = true;
        log.push({ c: n, body, group: m.messageGroup, attempt: m.deliveryAttempt, ack });
        if (ack) {
          await c.ack(m);
          acked++;
        }
      }
    }
  }
  for (const c of consumers) await c.shutdown();
  const push = new PushConsumer({
    endpoints: endpoint, sslEnabled: SSL, consumerGroup: group,
    subscriptions: new Map().set(topic, '*'),
    messageListener: { consume: () => ConsumeResult.SUCCESS },
  });
  // Startup returns once the proxy answered the settings. No shutdown: it would wait out a long poll.
  await push.startup();
  console.log(JSON.stringify({ log, pushFifo: push.getPushConsumerSettings().isFifo() }));
}

// receive, ack, changeInvisibleDuration and redelivery after the invisible time.
async function redelivery(endpoint, topic, group) {
  const p = new Producer({ endpoints: endpoint, sslEnabled: SSL, topic });
  await p.startup();
  await p.send({ topic, body: Buffer.from('redeliver-me') });
  await p.send({ topic, body: Buffer.from('keep-invisible') });
  await p.send({ topic, body: Buffer.from('ack-me') });
  await p.shutdown();
  const c = simpleConsumer(endpoint, topic, group);
  await c.startup();
  const first = new Map();
  let end = Date.now() + 30000;
  while (Date.now() < end && first.size < 3) {
    for (const m of await c.receive(32, 2000)) first.set(m.body.toString(), m);
  }
  check(first.size === 3, `first receive: ${[ ...first.keys() ]}`);
  for (const m of first.values()) check(m.deliveryAttempt === 1, `${m.body}: attempt ${m.deliveryAttempt}`);
  await c.ack(first.get('ack-me'));
  // Extended: must not come back with the one left alone.
  const kept = first.get('keep-invisible');
  await c.changeInvisibleDuration(kept, 30000);
  const t0 = Date.now();
  const again = new Map();
  end = Date.now() + 30000;
  while (Date.now() < end && again.size < 1) {
    for (const m of await c.receive(32, 10000)) again.set(m.body.toString(), m);
  }
  const waited = Date.now() - t0;
  check(JSON.stringify([ ...again.keys() ]) === JSON.stringify([ 'redeliver-me' ]), `after the invisible time: ${[ ...again.keys() ]}`);
  const m = again.get('redeliver-me');
  check(m.deliveryAttempt === 2, `redelivered with attempt ${m.deliveryAttempt}`);
  await c.ack(m);
  // Acked with the handle the change renewed.
  await c.ack(kept);
  const later = [];
  end = Date.now() + 5000;
  while (Date.now() < end) {
    for (const x of await c.receive(32, 10000)) later.push(x.body.toString());
  }
  check(later.length === 0, `acked messages came back: ${later}`);
  await c.shutdown();
  console.log(JSON.stringify({ redeliveredAfterMs: waited, attempt: m.deliveryAttempt }));
}

// A PushConsumer (QueryAssignment, ReceiveMessage, AckMessage) consumes every message exactly once.
async function push(endpoint, topic, group) {
  const n = 12;
  const p = new Producer({ endpoints: endpoint, sslEnabled: SSL, topic });
  await p.startup();
  for (let i = 0; i < n; i++) await p.send({ topic, body: Buffer.from(`push-${i}`) });
  await p.shutdown();
  const got = [];
  const c = new PushConsumer({
    endpoints: endpoint, sslEnabled: SSL, consumerGroup: group,
    subscriptions: new Map().set(topic, '*'),
    messageListener: {
      consume(m) {
        got.push([ m.body.toString(), m.deliveryAttempt ]);
        return ConsumeResult.SUCCESS;
      },
    },
  });
  await c.startup();
  const end = Date.now() + 45000;
  while (Date.now() < end && new Set(got.map(g => g[0])).size < n) await sleep(200);
  await sleep(2000);
  await c.shutdown();
  const bodies = [ ...new Set(got.map(g => g[0])) ].sort();
  const want = [ ...Array(n).keys() ].map(i => `push-${i}`).sort();
  check(JSON.stringify(bodies) === JSON.stringify(want), `consumed ${bodies}`);
  check(got.length === n, `consumed ${got.length} times for ${n} messages (acks lost?)`);
  console.log(JSON.stringify({ consumed: got.length, fifo: c.getPushConsumerSettings().isFifo() }));
}

async function transaction(endpoint, topic, group) {
  const checked = [];
  const checker = {
    async check(messageView) {
      checked.push(messageView.body.toString());
      return TransactionResolution.COMMIT;
    },
  };
  const p = new Producer({ endpoints: endpoint, sslEnabled: SSL, topic, checker });
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

// Never acked: after `attempts` deliveries (the group's retryMaxTimes + 1) it goes to %DLQ%group, which
// run.py checks; no delivery after the last attempt.
async function dlq(endpoint, topic, group, attempts) {
  attempts = Number(attempts);
  const p = new Producer({ endpoints: endpoint, sslEnabled: SSL, topic });
  await p.startup();
  await p.send({ topic, body: Buffer.from('poison') });
  await p.shutdown();
  const c = simpleConsumer(endpoint, topic, group);
  await c.startup();
  const seen = [];
  let end = Date.now() + 60000;
  while (Date.now() < end && seen.length < attempts) {
    for (const m of await c.receive(32, 1000)) seen.push(m.deliveryAttempt);
  }
  const want = [ ...Array(attempts).keys() ].map(i => i + 1);
  check(JSON.stringify(seen) === JSON.stringify(want), `delivery attempts ${seen}, want ${want}`);
  const more = [];
  end = Date.now() + 6000;
  while (Date.now() < end) {
    for (const m of await c.receive(32, 1000)) more.push(m.deliveryAttempt);
  }
  check(more.length === 0, `delivered again after the last attempt: attempts ${more}`);
  await c.shutdown();
  console.log(JSON.stringify({ attempts: seen }));
}

// Sends `count` messages one by one, appending the body of each acknowledged send to outPath and
// ignoring failures: the broker is killed meanwhile.
async function produce_acked(endpoint, topic, count, outPath) {
  count = Number(count);
  const p = new Producer({ endpoints: endpoint, sslEnabled: SSL, topic });
  await p.startup();
  const fd = fs.openSync(outPath, 'w');
  let ok = 0;
  for (let i = 0; i < count; i++) {
    try {
      await p.send({ topic, body: Buffer.from(`acked-${i}`) });
      fs.writeSync(fd, `acked-${i}\n`);
      ok++;
    } catch (e) {
      await sleep(50);
    }
  }
  fs.closeSync(fd);
  await p.shutdown();
  console.log(JSON.stringify({ acked: ok, tried: count }));
}

// Every body listed in ackedPath is received (and acked).
async function consume_all(endpoint, topic, group, ackedPath) {
  const want = new Set(fs.readFileSync(ackedPath, 'utf8').split('\n').filter(l => l));
  const seen = await consumeAll(endpoint, topic, group, want.size, 90000);
  const missing = [ ...want ].filter(b => !seen.has(b));
  check(missing.length === 0, `${missing.length} acknowledged messages lost: ${missing.slice(0, 20)}`);
  console.log(JSON.stringify({ acked: want.size, received: seen.size }));
}

const scenarios = { normal, fifo, redelivery, push, transaction, dlq, produce_acked, consume_all };
const [ name, ...args ] = process.argv.slice(2);
scenarios[name](...args).then(() => process.exit(0), e => fail(e && e.stack || String(e)));
