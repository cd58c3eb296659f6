// The console's pages: a hash router that fetches the JSON API and draws tables and charts.
'use strict';

const main = document.getElementById('main');
let session = { adminEnabled: false, loggedIn: false };
let chartTimer = null;

function esc(v) {
  return String(v ?? '').replace(/[&<>"']/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}

async function api(path, body) {
  const opts = body === undefined ? {} : {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  };
  const resp = await fetch(path, opts);
  let data;
  try { data = await resp.json(); } catch (e) { data = { error: 'HTTP ' + resp.status }; }
  if (!resp.ok) throw new Error(data.error || ('HTTP ' + resp.status));
  return data;
}

function table(id, headers, rows, numeric) {
  const num = new Set(numeric || []);
  const head = headers.map(h => `<th>${esc(h)}</th>`).join('');
  const body = rows.map(r => '<tr>' + r.map((c, i) => {
    const cls = num.has(i) ? ' class="num"' : '';
    return c && c.html !== undefined ? `<td${cls}>${c.html}</td>` : `<td${cls}>${esc(c)}</td>`;
  }).join('') + '</tr>').join('');
  return `<table id="${id}"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

function link(href, text) { return { html: `<a href="${esc(href)}">${esc(text)}</a>` }; }
function fmt(n, digits) { return Number(n || 0).toFixed(digits ?? 0); }
function time(ms) { return ms > 0 ? new Date(ms).toISOString().replace('T', ' ').replace('Z', '') : ''; }
function isSystemTopic(t) {
  return t.startsWith('%RETRY%') || t.startsWith('%DLQ%') || t.startsWith('rmq_sys_') ||
    ['TBW102', 'SCHEDULE_TOPIC_XXXX', 'RMQ_SYS_TRANS_HALF_TOPIC', 'RMQ_SYS_TRANS_OP_HALF_TOPIC',
     'BenchmarkTest', 'OFFSET_MOVED_EVENT', 'SELF_TEST_TOPIC', 'TRANS_CHECK_MAX_TIME_TOPIC'].includes(t);
}

function adminNote() {
  if (!session.adminEnabled) return '<p class="muted">Read-only console: admin actions are disabled (console started without --enableAdmin).</p>';
  if (!session.loggedIn) return '<p class="muted">Log in with an ACL account (top right) to use admin actions.</p>';
  return '';
}

function showResult(el, promise) {
  el.className = 'muted';
  el.textContent = 'working…';
  promise.then(r => { el.className = 'ok'; el.textContent = 'done: ' + JSON.stringify(r); })
    .catch(e => { el.className = 'error'; el.textContent = 'refused: ' + e.message; });
  return promise;
}

// ---- account box
async function refreshSession() {
  session = await api('/api/session');
  const box = document.getElementById('account');
  document.getElementById('footer').textContent = 'name servers: ' + session.namesrv;
  if (!session.adminEnabled) {
    box.innerHTML = '<span class="badge" id="mode">read-only</span>';
  } else if (session.loggedIn) {
    box.innerHTML = `<span id="mode">admin: ${esc(session.accessKey)}</span> <button id="logout">Log out</button>`;
    document.getElementById('logout').onclick = async () => { await api('/api/logout', {}); await refreshSession(); route(); };
  } else {
    box.innerHTML = `<form id="login" class="inline"><input name="accessKey" placeholder="accessKey">
      <input name="secretKey" type="password" placeholder="secretKey"><button>Log in</button>
      <span id="login-result"></span></form>`;
    document.getElementById('login').onsubmit = async ev => {
      ev.preventDefault();
      const f = ev.target;
      try {
        await api('/api/login', { accessKey: f.accessKey.value, secretKey: f.secretKey.value });
        await refreshSession();
        route();
      } catch (e) {
        const r = document.getElementById('login-result');
        r.className = 'error';
        r.textContent = e.message;
      }
    };
  }
}

// ---- pages
async function clusterPage() {
  const data = await api('/api/cluster');
  const rows = data.brokers.map(b => [
    b.clusterName, b.brokerName, b.process, b.brokerId, b.addr, b.role, b.version,
    { html: b.brokerPermission === '4' ? '<span class="badge drained">read-only</span>' : esc(b.brokerPermission ?? '') },
    fmt(b.putTps, 1), fmt(b.getTps, 1), b.msgPutTotalTodayNow, b.msgGetTotalTodayNow,
    b.commitLogDiskRatio === '' ? '' : (Number(b.commitLogDiskRatio) * 100).toFixed(1) + '%',
    { html: b.error ? `<span class="error">${esc(b.error)}</span>` : '' },
  ]);
  const processes = [...new Set(data.brokers.filter(b => b.brokerId === 0).map(b => b.process))];
  const drain = processes.map(p => `<tr><td>${esc(p)}</td><td>
      <button data-drain="${esc(p)}">Drain (wipe write perm)</button>
      <button data-undrain="${esc(p)}">Add write perm</button></td></tr>`).join('');
  main.innerHTML = `<h2>Cluster</h2>
    <p><span id="broker-count">${data.brokers.length}</span> brokers registered (shard-brokers are named &lt;brokerName&gt;-&lt;i&gt;).</p>
    ${table('brokers', ['Cluster', 'Broker', 'Process', 'BID', 'Address', 'Role', 'Version', 'Perm',
      'Put TPS', 'Get TPS', 'Put today', 'Get today', 'Disk used', 'Error'], rows, [3, 8, 9, 10, 11, 12])}
    <h3>Drain a broker process</h3>${adminNote()}
    <table id="drain"><tbody>${drain}</tbody></table><div id="action-result"></div>`;
  const result = document.getElementById('action-result');
  main.querySelectorAll('button[data-drain]').forEach(b => b.onclick = () =>
    showResult(result, api('/api/admin/drain', { process: b.dataset.drain })));
  main.querySelectorAll('button[data-undrain]').forEach(b => b.onclick = () =>
    showResult(result, api('/api/admin/undrain', { process: b.dataset.undrain })));
}

async function topicsPage() {
  const data = await api('/api/topics');
  const all = (data.topicList || []).slice().sort();
  const render = () => {
    const showSys = document.getElementById('show-system').checked;
    const filter = document.getElementById('topic-filter').value;
    const list = all.filter(t => (showSys || !isSystemTopic(t)) && t.includes(filter));
    document.getElementById('topic-table').innerHTML =
      table('topics', ['Topic'], list.map(t => [link('#/topic/' + encodeURIComponent(t), t)]));
  };
  main.innerHTML = `<h2>Topics</h2>
    <form class="inline" onsubmit="return false"><input id="topic-filter" placeholder="filter">
    <label><input type="checkbox" id="show-system"> system topics</label></form>
    <div id="topic-table"></div>
    <h3>Create or update a topic</h3>${adminNote()}
    <form id="create-topic" class="inline"><input name="topic" placeholder="topic">
      <input name="clusterName" placeholder="cluster (all)">
      <label>write queues <input name="writeQueueNums" value="8" size="3"></label>
      <label>read queues <input name="readQueueNums" value="8" size="3"></label>
      <label>perm <input name="perm" value="6" size="2" title="2 write, 4 read, 6 read+write"></label>
      <button>Create / update</button></form><div id="action-result"></div>`;
  document.getElementById('topic-filter').oninput = render;
  document.getElementById('show-system').onchange = render;
  render();
  document.getElementById('create-topic').onsubmit = ev => {
    ev.preventDefault();
    const f = ev.target;
    showResult(document.getElementById('action-result'), api('/api/admin/topic', {
      topic: f.topic.value, clusterName: f.clusterName.value, writeQueueNums: f.writeQueueNums.value,
      readQueueNums: f.readQueueNums.value, perm: f.perm.value,
    })).then(() => {}, () => {});
  };
}

async function topicPage(topic) {
  const data = await api('/api/topic?topic=' + encodeURIComponent(topic));
  const route = data.route || {};
  const routeRows = [];
  for (const b of (route.brokerDatas || [])) {
    const q = (route.queueDatas || []).find(q => q.brokerName === b.brokerName) || {};
    for (const [id, addr] of Object.entries(b.brokerAddrs || {})) {
      routeRows.push([b.brokerName, id, addr, q.readQueueNums, q.writeQueueNums, q.perm]);
    }
  }
  const queues = data.status.queues || [];
  let total = 0;
  const qRows = queues.map(q => { total += q.maxOffset - q.minOffset; return [
    q.brokerName, q.queueId, q.minOffset, q.maxOffset, q.maxOffset - q.minOffset, time(q.lastUpdateTimestamp)]; });
  main.innerHTML = `<h2>Topic <span id="topic-name">${esc(topic)}</span></h2>
    <p>Put TPS (last minute): <b id="topic-tps">${fmt(data.status.topicPutTps, 2)}</b> ·
       messages stored: <b id="topic-total">${total}</b> in ${queues.length} queues</p>
    <h3>Route</h3>${table('route', ['Broker', 'BID', 'Address', 'Read queues', 'Write queues', 'Perm'], routeRows, [1, 3, 4, 5])}
    <h3>Queues</h3>${table('queues', ['Broker', 'Queue', 'Min offset', 'Max offset', 'Messages', 'Last stored'], qRows, [1, 2, 3, 4])}`;
}

async function groupsPage() {
  const data = await api('/api/groups');
  const rows = (data.groups || []).map(g => [link('#/group/' + encodeURIComponent(g.group), g.group),
    g.count, g.consumeType, g.messageModel, fmt(g.consumeTps, 1), g.diffTotal]);
  main.innerHTML = `<h2>Consumer groups</h2>
    ${table('groups', ['Group', 'Online clients', 'Type', 'Model', 'Consume TPS', 'Lag (messages)'], rows, [1, 4, 5])}`;
}

async function groupPage(group) {
  const data = await api('/api/group?group=' + encodeURIComponent(group));
  const p = data.progress || {};
  const conns = (data.connection && data.connection.connectionSet) || [];
  const lagRows = (p.queues || []).map(q => [q.topic, q.brokerName, q.queueId, q.brokerOffset,
    q.consumerOffset, q.diff, time(q.lastTimestamp)]);
  const topics = [...new Set((p.queues || []).map(q => q.topic).filter(t => !t.startsWith('%RETRY%')))];
  main.innerHTML = `<h2>Consumer group <span id="group-name">${esc(group)}</span></h2>
    <p>Lag: <b id="lag-total">${p.diffTotal ?? 0}</b> messages · consume TPS <b id="group-tps">${fmt(p.consumeTps, 2)}</b> ·
       online clients: <b id="client-count">${conns.length}</b></p>
    <h3>Online clients</h3>${table('clients', ['Client id', 'Address', 'Language', 'Version'],
      conns.map(c => [c.clientId, c.clientAddr, c.language, c.version]), [3])}
    <h3>Lag per queue</h3>${table('lag', ['Topic', 'Broker', 'Queue', 'Broker offset', 'Consumer offset', 'Lag', 'Last consumed'], lagRows, [2, 3, 4, 5])}
    <h3>Reset offsets by time</h3>${adminNote()}
    <form id="reset" class="inline"><input name="topic" placeholder="topic" value="${esc(topics[0] || '')}">
      <input name="timestamp" placeholder="epoch ms, now, or yyyy-MM-dd#HH:mm:ss:SSS" size="34">
      <button>Reset</button></form><div id="action-result"></div>`;
  document.getElementById('reset').onsubmit = ev => {
    ev.preventDefault();
    const f = ev.target;
    const ts = /^\d+$/.test(f.timestamp.value) ? Number(f.timestamp.value) : f.timestamp.value;
    showResult(document.getElementById('action-result'),
      api('/api/admin/resetOffset', { group, topic: f.topic.value, timestamp: ts })).then(() => {}, () => {});
  };
}

function messageCard(m) {
  const props = Object.entries(m.properties || {}).map(([k, v]) => [k, v]);
  return `<div class="card message"><b>msgId</b> <span class="msg-id">${esc(m.msgId)}</span>
    · <b>offsetMsgId</b> ${esc(m.offsetMsgId)} · <b>topic</b> ${esc(m.topic)} · queue ${esc(m.queueId)} offset ${esc(m.queueOffset)}
    · stored ${esc(time(m.storeTimestamp))} on ${esc(m.storeHost)} · born ${esc(time(m.bornTimestamp))} on ${esc(m.bornHost)}
    <pre class="body">${esc(m.body)}</pre>
    ${table('props-' + esc(m.offsetMsgId), ['Property', 'Value'], props)}</div>`;
}

function messagesPage() {
  main.innerHTML = `<h2>Message lookup</h2>
    <form id="by-key" class="inline"><b>By key</b><input name="topic" placeholder="topic">
      <input name="key" placeholder="key"><button>Find</button></form>
    <form id="by-id" class="inline"><b>By message id</b><input name="msgId" placeholder="msgId or offsetMsgId" size="36">
      <input name="topic" placeholder="topic (for a client msgId)"><button>Find</button></form>
    <div id="messages"></div>`;
  const out = document.getElementById('messages');
  const show = async path => {
    out.innerHTML = '<p class="muted">searching…</p>';
    try {
      const list = await api(path);
      out.innerHTML = `<p><span id="found-count">${list.length}</span> message(s)</p>` + list.map(messageCard).join('');
    } catch (e) { out.innerHTML = `<p class="error">${esc(e.message)}</p>`; }
  };
  document.getElementById('by-key').onsubmit = ev => {
    ev.preventDefault();
    show(`/api/message/key?topic=${encodeURIComponent(ev.target.topic.value)}&key=${encodeURIComponent(ev.target.key.value)}`);
  };
  document.getElementById('by-id').onsubmit = ev => {
    ev.preventDefault();
    show(`/api/message/id?msgId=${encodeURIComponent(ev.target.msgId.value)}&topic=${encodeURIComponent(ev.target.topic.value)}`);
  };
}

// ---- live charts
const CHART_POINTS = 90;

function drawChart(canvas, series, unit) {
  const ctx = canvas.getContext('2d');
  const w = canvas.width, h = canvas.height, padL = 48, padB = 18;
  ctx.clearRect(0, 0, w, h);
  const max = Math.max(1, ...series.flatMap(s => s.points)) * 1.1;
  ctx.strokeStyle = '#d8dee6'; ctx.fillStyle = '#6b7785'; ctx.font = '11px sans-serif';
  for (let i = 0; i <= 4; i++) {
    const y = (h - padB) * (1 - i / 4) + 0.5;
    ctx.beginPath(); ctx.moveTo(padL, y); ctx.lineTo(w, y); ctx.stroke();
    ctx.fillText((max * i / 4).toFixed(max < 10 ? 2 : max < 100 ? 1 : 0), 2, Math.max(10, y + 4));
  }
  ctx.fillText(unit, padL + 4, h - 4);
  for (const s of series) {
    ctx.strokeStyle = s.color; ctx.lineWidth = 2; ctx.beginPath();
    s.points.forEach((v, i) => {
      const x = padL + (w - padL) * i / (CHART_POINTS - 1);
      const y = (h - padB) * (1 - v / max);
      if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
    });
    ctx.stroke();
  }
}

function quantile(buckets, q) {
  // buckets: [[le, cumulative count]], deltas over the interval; the bound the quantile falls under.
  const total = buckets.length ? buckets[buckets.length - 1][1] : 0;
  if (total <= 0) return 0;
  for (const [le, c] of buckets) if (c >= q * total) return le === '+Inf' ? NaN : le;
  return NaN;
}

function dashboardPage() {
  const charts = [
    { id: 'send-tps', title: 'Send TPS (messages put / s)', unit: 'msg/s', series: [{ name: 'put', color: '#2a9d8f' }] },
    { id: 'consume-tps', title: 'Consume TPS (messages pulled / s)', unit: 'msg/s', series: [{ name: 'pull', color: '#e76f51' }] },
    { id: 'put-latency', title: 'Put latency (ms; p99 as its histogram bucket bound)', unit: 'ms', series: [{ name: 'avg', color: '#264653' }, { name: 'p99 \u2264', color: '#f4a261' }] },
  ];
  main.innerHTML = `<h2>Live charts</h2><p class="muted">From the brokers' Prometheus endpoints, every 2 s
    (<span id="endpoints"></span>).</p><div class="charts">` + charts.map(c => `<div class="chart">
    <span class="title">${c.title}</span><span class="now" id="${c.id}-now"></span>
    <canvas id="${c.id}" width="560" height="200"></canvas></div>`).join('') + '</div>';
  for (const c of charts) for (const s of c.series) s.points = [];
  let prev = null;
  const tick = async () => {
    let data;
    try { data = await api('/api/metrics'); } catch (e) {
      document.getElementById('endpoints').innerHTML = `<span class="error">${esc(e.message)}</span>`; return;
    }
    const ok = data.endpoints.filter(e => e.figures);
    document.getElementById('endpoints').textContent = data.endpoints.map(e => e.process + ' ' + e.endpoint + (e.error ? ' (' + e.error + ')' : '')).join(', ') || 'no broker has a metricsPort';
    const sum = k => ok.reduce((a, e) => a + (e.figures[k] || 0), 0);
    const buckets = new Map();
    for (const e of ok) for (const [le, c] of e.figures.putLatencyBuckets) buckets.set(le, (buckets.get(le) || 0) + c);
    const cur = { t: data.timeMs, put: sum('putMessages'), pull: sum('pullMessages'), latSum: sum('putLatencySum'),
      latCount: sum('putLatencyCount'), buckets: [...buckets.entries()].sort((a, b) => (a[0] === '+Inf') - (b[0] === '+Inf') || a[0] - b[0]) };
    if (prev && cur.t > prev.t) {
      const dt = (cur.t - prev.t) / 1000;
      const dCount = cur.latCount - prev.latCount;
      const deltas = cur.buckets.map(([le, c]) => [le, c - ((prev.buckets.find(b => b[0] === le) || [0, 0])[1])]);
      const values = {
        'send-tps': [Math.max(0, (cur.put - prev.put) / dt)],
        'consume-tps': [Math.max(0, (cur.pull - prev.pull) / dt)],
        'put-latency': [dCount > 0 ? (cur.latSum - prev.latSum) / dCount * 1000 : 0, dCount > 0 ? (quantile(deltas, 0.99) || 0) * 1000 : 0],
      };
      for (const c of charts) {
        c.series.forEach((s, i) => { s.points.push(values[c.id][i]); if (s.points.length > CHART_POINTS) s.points.shift(); });
        document.getElementById(c.id + '-now').textContent = c.series.map((s, i) => s.name + ' ' + values[c.id][i].toFixed(c.unit === 'ms' ? 2 : 1)).join(' · ');
        drawChart(document.getElementById(c.id), c.series, c.unit);
      }
      document.body.dataset.chartPoints = String(charts[0].series[0].points.length);
    }
    prev = cur;
  };
  tick();
  chartTimer = setInterval(tick, 2000);
}

// ---- router
async function route() {
  if (chartTimer) { clearInterval(chartTimer); chartTimer = null; }
  const hash = location.hash || '#/cluster';
  const [, page, arg] = hash.match(/^#\/([^/]*)\/?(.*)$/) || [null, 'cluster', ''];
  const section = page === 'topic' ? 'topics' : page === 'group' ? 'groups' : (page || 'cluster');
  document.querySelectorAll('header nav a').forEach(a => a.classList.toggle('active', a.dataset.page === section));
  main.innerHTML = '<p class="muted">Loading…</p>';
  delete document.body.dataset.ready;
  try {
    const name = decodeURIComponent(arg);
    switch (page) {
      case 'topics': await topicsPage(); break;
      case 'topic': await topicPage(name); break;
      case 'groups': await groupsPage(); break;
      case 'group': await groupPage(name); break;
      case 'messages': messagesPage(); break;
      case 'dashboard': dashboardPage(); break;
      default: await clusterPage();
    }
  } catch (e) {
    main.innerHTML = `<p class="error" id="page-error">${esc(e.message)}</p>`;
  }
  document.body.dataset.ready = page;
}

window.addEventListener('hashchange', route);
refreshSession().then(route, e => { main.innerHTML = `<p class="error">${esc(e.message)}</p>`; });
