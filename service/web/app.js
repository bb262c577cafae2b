// fabric-medic's repair queue: the queue, an incident's own page, the SLO report. Talks to
// medicd's /api with the bearer token kept in sessionStorage (never in a URL or a cookie).
// No inline script or style anywhere (the page's Content-Security-Policy forbids them).
'use strict';

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = 'medic-token';
const REFRESH_MS = 5000;
let me = null;          // {name, role}
let pending = null;     // the decision being confirmed: {id, verb, needsReason}
let refreshTimer = null;

function esc(s) {
  return String(s ?? '').replace(/[&<>"']/g, (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c]));
}

function say(text, bad) {
  const m = $('msg');
  m.textContent = text;
  m.className = text ? (bad ? 'bad' : 'good') : '';
}

function duration(s) {
  const neg = s < 0;
  s = Math.abs(Math.round(s));
  let out;
  if (s < 90) out = s + ' s';
  else if (s < 5400) out = Math.round(s / 60) + ' min';
  else if (s < 172800) out = (s / 3600).toFixed(1) + ' h';
  else out = (s / 86400).toFixed(1) + ' d';
  return neg ? '-' + out : out;
}

function when(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (isNaN(d.getTime())) return String(iso);  // shown as medicd wrote it, never an exception
  try { return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z'); } catch (e) { return String(iso); }
}

async function api(method, path, body) {
  const headers = {'Authorization': 'Bearer ' + sessionStorage.getItem(TOKEN_KEY)};
  const init = {method, headers};
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  let j = null;
  try { j = await r.json(); } catch (e) { j = {error: 'medicd answered ' + r.status + ' without JSON'}; }
  if (r.status === 401) signOut('Your token was not accepted: ' + (j && j.error));
  return {ok: r.ok, status: r.status, body: j};
}

// ---- signing in ----

function signOut(why) {
  sessionStorage.removeItem(TOKEN_KEY);
  me = null;
  if (refreshTimer) clearInterval(refreshTimer);
  refreshTimer = null;
  $('who').textContent = '';
  $('view').innerHTML = '';
  $('side').hidden = true;
  $('decide').hidden = true;
  $('login').hidden = false;
  say(why || '', !!why);
}

async function signIn() {
  const r = await api('GET', '/api/whoami');
  if (!r.ok) return;
  me = r.body;
  $('login').hidden = true;
  $('who').innerHTML = 'Signed in as <b id="me-name">' + esc(me.name) + '</b> (<span id="me-role">' + esc(me.role) +
      '</span>) <button type="button" id="sign-out">Sign out</button>';
  $('sign-out').addEventListener('click', () => signOut(''));
  await refresh();
  refreshTimer = setInterval(refresh, REFRESH_MS);
}

// ---- what the path shows ----

function route() {
  const p = location.pathname;
  const m = p.match(/^\/incidents\/(\d+)$/);
  if (m) return {view: 'incident', id: Number(m[1])};
  if (p === '/slo') return {view: 'slo'};
  return {view: 'queue'};
}

async function refresh() {
  if (!me) return;
  const r = route();
  try {
    if (r.view === 'incident') await showIncident(r.id);
    else if (r.view === 'slo') await showSlo();
    else await showQueue();
    if (r.view !== 'incident') await showSide();
  } catch (e) {
    say('Could not reach medicd: ' + e.message, true);
  }
}

function budgetCell(b) {
  if (!b) return '<td class="budget none">no target</td>';
  const cls = b.share_left < 0 ? 'late' : (b.share_left < 0.25 ? 'low' : 'ok');
  const text = b.left_s < 0 ? 'late by ' + duration(-b.left_s) : duration(b.left_s) + ' left';
  return '<td class="budget ' + cls + '" title="' + esc(b.stage) + ': target ' + esc(duration(b.target_s)) + '">' +
      esc(b.stage) + ': ' + esc(text) + '</td>';
}

function actionButtons(i) {
  return (i.allowed || []).map((v) =>
    '<button type="button" class="act act-' + esc(v) + '" data-id="' + i.id + '" data-verb="' + esc(v) + '">' +
    esc(v) + '</button>').join(' ');
}

async function showQueue() {
  const r = await api('GET', '/api/queue');
  if (!r.ok) { say(r.body.error, true); return; }
  const rows = r.body.incidents.map((i) => {
    const where = i.link || i.device;
    const suspect = i.suspect ? i.suspect + (i.suspect_port ? ':' + i.suspect_port : '') : '';
    const approvals = i.approvals_needed > 1 || i.approvals.length
      ? i.approvals.length + ' of ' + i.approvals_needed + (i.approvals.length ? ' (' + i.approvals.join(', ') + ')' : '') : '';
    return '<tr data-incident="' + i.id + '"><td><a href="/incidents/' + i.id + '">' + i.id + '</a></td><td>' +
      esc(i.class) + '</td><td class="sev-' + esc(i.severity) + '">' + esc(i.severity) + '</td><td>' + esc(where) +
      '</td><td>' + esc(suspect) + '</td><td>' + esc(duration(i.age_s)) + '</td><td>' + esc(i.state) +
      '</td><td class="waits waits-' + esc(i.waits_for.replace(/ /g, '-')) + '">' + esc(i.waits_for) +
      (i.reason ? '<div class="reason">' + esc(i.reason) + '</div>' : '') + '</td><td>' + esc(approvals) + '</td>' +
      budgetCell(i.slo_budget) + '<td>' + actionButtons(i) + '</td></tr>';
  }).join('');
  $('view').innerHTML = '<h1>Repair queue</h1>' +
    (r.body.breaker_open ? '<p class="alarm">The circuit breaker is open: medicd drains nothing by itself.</p>' : '') +
    '<table id="queue"><thead><tr><th>ID</th><th>Class</th><th>Severity</th><th>Link or device</th><th>Suspect end</th>' +
    '<th>Age</th><th>State</th><th>Waits for</th><th>Approvals</th><th>SLO budget</th><th></th></tr></thead><tbody>' +
    (rows || '<tr><td colspan="11" class="empty">No open incident.</td></tr>') + '</tbody></table>' +
    '<p class="updated">Updated ' + esc(when(r.body.now)) + '; refreshes every ' + REFRESH_MS / 1000 + ' s.</p>';
}

async function showSide() {
  $('side').hidden = false;
  const b = await api('GET', '/api/breaker');
  if (b.ok) {
    const br = b.body;
    $('breaker').className = br.open ? 'open' : 'closed';
    $('breaker').innerHTML = br.open
      ? 'Open since ' + esc(when(br.opened_at)) + ': ' + esc(br.reason) +
        (me.role === 'admin' ? ' <button type="button" class="act" id="breaker-reset" data-verb="breaker-reset">Reset</button>' : '')
      : 'Closed' + (br.reset_by ? ' (last reset by ' + esc(br.reset_by) + ' at ' + esc(when(br.reset_at)) + ')' : '') + '.';
  }
  const m = await api('GET', '/api/maintenance');
  if (m.ok) {
    $('maintenance').innerHTML = m.body.length
      ? '<table><thead><tr><th>#</th><th>Link or device</th><th>From</th><th>Until</th><th>Reason</th><th>By</th><th></th></tr></thead><tbody>' +
        m.body.map((w) => '<tr><td>' + w.id + '</td><td>' + esc(w.link || w.device) + '</td><td>' + esc(when(w.starts_at)) +
          '</td><td>' + esc(when(w.ends_at)) + '</td><td>' + esc(w.reason) + '</td><td>' + esc(w.created_by) + '</td><td>' +
          (me.role !== 'viewer' ? '<button type="button" class="act" data-verb="maintenance-end" data-id="' + w.id + '">End</button>' : '') +
          '</td></tr>').join('') + '</tbody></table>'
      : '<p class="empty">None now or ahead.</p>';
  }
  $('maint-form').hidden = me.role === 'viewer';
}

// ---- an incident's own page ----

function table(headers, rows) {
  return '<table><thead><tr>' + headers.map((h) => '<th>' + esc(h) + '</th>').join('') + '</tr></thead><tbody>' +
    (rows.length ? rows.join('') : '<tr><td colspan="' + headers.length + '" class="empty">None.</td></tr>') + '</tbody></table>';
}

function cells(values) { return '<tr>' + values.map((v) => '<td>' + esc(v) + '</td>').join('') + '</tr>'; }

function pretty(obj) { return '<pre>' + esc(JSON.stringify(obj, null, 2)) + '</pre>'; }

// Markdown as the runbooks use it: headings, paragraphs, lists, tables, code; everything escaped first.
function markdown(md) {
  const inline = (s) => esc(s).replace(/`([^`]+)`/g, '<code>$1</code>').replace(/\*\*([^*]+)\*\*/g, '<b>$1</b>');
  const lines = md.split('\n');
  let out = '', i = 0;
  while (i < lines.length) {
    const l = lines[i];
    if (/^```/.test(l)) {
      let code = '';
      for (i++; i < lines.length && !/^```/.test(lines[i]); i++) code += lines[i] + '\n';
      out += '<pre>' + esc(code) + '</pre>'; i++; continue;
    }
    const h = l.match(/^(#{1,4})\s+(.*)$/);
    if (h) { const n = Math.min(6, h[1].length + 2); out += '<h' + n + '>' + inline(h[2]) + '</h' + n + '>'; i++; continue; }
    if (/^\s*\|/.test(l)) {
      const rows = [];
      for (; i < lines.length && /^\s*\|/.test(lines[i]); i++) {
        if (/^\s*\|[\s:|-]+\|\s*$/.test(lines[i])) continue;
        rows.push(lines[i].trim().replace(/^\||\|$/g, '').split('|').map((c) => c.trim()));
      }
      out += '<table>' + rows.map((r, k) => '<tr>' + r.map((c) => (k ? '<td>' : '<th>') + inline(c) + (k ? '</td>' : '</th>')).join('') + '</tr>').join('') + '</table>';
      continue;
    }
    if (/^\s*([-*]|\d+\.)\s+/.test(l)) {
      const ordered = /^\s*\d+\./.test(l);
      let items = '';
      for (; i < lines.length && /^\s*([-*]|\d+\.)\s+/.test(lines[i]); i++) {
        let item = lines[i].replace(/^\s*([-*]|\d+\.)\s+/, '');
        while (i + 1 < lines.length && /^\s{2,}\S/.test(lines[i + 1]) && !/^\s*([-*]|\d+\.)\s+/.test(lines[i + 1])) item += ' ' + lines[++i].trim();
        items += '<li>' + inline(item) + '</li>';
      }
      out += ordered ? '<ol>' + items + '</ol>' : '<ul>' + items + '</ul>';
      continue;
    }
    if (!l.trim()) { i++; continue; }
    let para = l;
    for (i++; i < lines.length && lines[i].trim() && !/^(#|```|\s*\||\s*([-*]|\d+\.)\s)/.test(lines[i]); i++) para += ' ' + lines[i].trim();
    out += '<p>' + inline(para) + '</p>';
  }
  return out;
}

function whatIf(w) {
  if (!w) return '<p class="empty">No capacity model for this incident (no link).</p>';
  const groups = w.groups.map((g) => '<tr class="' + (g.breaks_floor ? 'breaks' : '') + '"><td>' + esc(g.name) + '</td><td>' +
    esc(g.kind) + '</td><td>' + g.links_before + ' → ' + g.links_after + ' of ' + g.links + '</td><td>' +
    (100 * g.before).toFixed(1) + '% → ' + (100 * g.after).toFixed(1) + '%</td><td>' + (100 * g.floor).toFixed(1) + '%</td><td>' +
    (g.breaks_floor ? 'breaks the floor' : 'safe') + '</td></tr>');
  const verdict = '<b id="whatif-verdict">' + (w.allowed ? 'allowed' : 'refused') + '</b>';
  return '<p>The link is <b>' + esc(w.link_state) + '</b>. ' +
    (w.out_of_service ? 'Taking it out of service, from the fabric as it is with the link back in: ' : 'Draining it now: ') +
    verdict + (w.problems.length ? ': ' + esc(w.problems.join('; ')) : '') + '.</p>' +
    table(['Capacity group', 'Kind', 'Links in service', 'Capacity', 'Floor', ''], groups) +
    '<p>Drain budget: ' + w.budget.fabric.before + ' → ' + w.budget.fabric.after + ' links drained in the fabric (limit ' +
    w.budget.fabric.limit + ').</p>';
}

async function showIncident(id) {
  const r = await api('GET', '/api/incidents/' + id);
  if (!r.ok) { $('view').innerHTML = '<h1>Incident ' + id + '</h1><p class="bad">' + esc(r.body.error) + '</p>'; return; }
  const i = r.body;
  const timeline = i.timeline.map((t) => t.kind === 'stage'
    ? cells([when(t.at), 'medicd', t.state, t.note])
    : cells([when(t.at), t.who + ' (' + t.role + ')', t.what, (t.reason || '') + (t.source ? ' — ' + t.source : '')]));
  const findings = i.findings.map((f) => '<tr><td>' + esc(when(f.observed_at)) + '</td><td>' + esc(f.kind) + '</td><td>' +
    esc(f.severity) + '</td><td>' + esc(f.port || f.device) + '</td><td>' + esc(f.summary) +
    (f.note ? ' <i>(' + esc(f.note) + ')</i>' : '') + '<details><summary>evidence</summary>' + pretty(f.evidence) + '</details></td></tr>');
  const actions = i.actions.map((a) => cells([a.id, a.kind, a.state, when(a.intent_at), when(a.result_at), a.reason]));
  const snaps = i.snapshots.map((s) => cells([s.id, when(s.taken_at), s.scope, s.reason, s.ports + ' ports']));
  const diffs = i.diffs.map((d) => '<details class="diff" open><summary>Snapshot ' + d.from + ' → ' + d.to + '</summary><pre>' +
    esc(d.text) + '</pre></details>').join('');
  const where = i.link || i.device;
  $('view').innerHTML = '<p><a href="/">← Repair queue</a></p>' +
    '<h1>Incident ' + i.id + ': ' + esc(i.class) + ' on ' + esc(where) + '</h1>' +
    '<table class="facts"><tr><th>State</th><td id="inc-state">' + esc(i.state) + '</td><th>Severity</th><td>' + esc(i.severity) +
    '</td></tr><tr><th>Waits for</th><td>' + esc(i.waits_for) + (i.reason ? ' — ' + esc(i.reason) : '') + '</td><th>Suspect end</th><td>' +
    esc(i.suspect ? i.suspect + (i.suspect_port ? ':' + i.suspect_port : '') : 'unknown') + '</td></tr><tr><th>Approvals</th><td>' +
    i.approvals.length + ' of ' + i.approvals_needed + (i.approvals.length ? ' (' + esc(i.approvals.join(', ')) + ')' : '') +
    '</td><th>Age</th><td>' + esc(duration(i.age_s)) + '</td></tr><tr><th>SLO budget</th>' + budgetCell(i.slo_budget) +
    '<th>Summary</th><td>' + esc(i.summary) + '</td></tr></table>' +
    '<div id="actions">' + actionButtons(i) + '</div>' +
    '<h2>Timeline</h2>' + table(['When', 'Who', 'What', 'Note'], timeline) +
    '<h2>Findings and their evidence</h2>' + table(['Observed', 'Kind', 'Severity', 'Port', 'Summary'], findings) +
    '<h2>Actions</h2>' + table(['#', 'Kind', 'State', 'Intent', 'Result', 'Reason'], actions) +
    '<h2>Snapshots</h2>' + table(['#', 'Taken', 'Scope', 'Why', 'Size'], snaps) +
    '<div id="diffs">' + (diffs || '<p class="empty">No pair of snapshots to compare yet.</p>') + '</div>' +
    '<h2>Capacity of the groups its link belongs to (what-if)</h2><div id="whatif">' + whatIf(i.what_if) + '</div>' +
    '<h2>Runbook</h2><div id="runbook" class="runbook">' +
    (i.runbook ? markdown(i.runbook) : '<p class="empty">No runbook for this class.</p>') + '</div>';
}

// ---- the SLO report ----
// medicd renders it (GET /api/slo?format=html-body: the body of the file `medic slo report
// --format html` writes); the page shows it with the report's own stylesheet, and offers the
// other formats as downloads. It is fetched again when its parameters change or after a
// minute, not on every refresh.

const SLO_PARAMS = ['window', 'month', 'from', 'to', 'class', 'by'];
let sloShown = {key: '', at: 0};

function sloQuery() {
  const here = new URLSearchParams(location.search);
  const q = new URLSearchParams();
  for (const k of SLO_PARAMS) if (here.get(k)) q.set(k, here.get(k));
  return q;
}

async function sloFetch(format) {
  const q = sloQuery();
  q.set('format', format);
  const r = await fetch('/api/slo?' + q.toString(),
                        {headers: {'Authorization': 'Bearer ' + sessionStorage.getItem(TOKEN_KEY)}});
  const text = await r.text();
  if (r.status === 401) signOut('Your token was not accepted');
  return {ok: r.ok, text};
}

async function sloDownload(format) {
  const r = await sloFetch(format);
  if (!r.ok) { say(JSON.parse(r.text).error, true); return; }
  const types = {json: 'application/json', csv: 'text/csv', md: 'text/markdown', html: 'text/html'};
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([r.text], {type: types[format]}));
  a.download = 'slo-report.' + format;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

async function showSlo() {
  const key = sloQuery().toString();
  if (sloShown.key === key && Date.now() - sloShown.at < 60000 && $('slo-report')) return;
  const r = await sloFetch('html-body');
  if (!r.ok) {
    let why = r.text;
    try { why = JSON.parse(r.text).error; } catch (e) { /* not JSON */ }
    say(why, true);
    return;
  }
  const doc = new DOMParser().parseFromString(r.text, 'text/html');
  const report = doc.querySelector('article.slo-report');
  const windows = ['7d', '28d', '90d'].map((w) => '<a href="/slo?window=' + w + '">' + w + '</a>').join(' ');
  const view = $('view');
  view.innerHTML = '<div class="slo-tools">Window: ' + windows +
    ' &middot; Download: <button type="button" data-fmt="html">HTML</button> <button type="button" data-fmt="md">Markdown</button> ' +
    '<button type="button" data-fmt="csv">CSV</button> <button type="button" data-fmt="json">JSON</button></div>' +
    '<div id="slo-report"></div>';
  for (const b of view.querySelectorAll('.slo-tools button')) b.addEventListener('click', () => sloDownload(b.dataset.fmt));
  if (report) $('slo-report').appendChild(document.adoptNode(report));
  sloShown = {key, at: Date.now()};
}

// ---- deciding ----

const VERBS = {
  approve: {title: 'Approve the drain of incident', reason: false, what: 'medicd drains its link once enough operators approved and the capacity allows it.'},
  reject: {title: 'Reject the drain of incident', reason: true, what: 'The drain is refused and the incident dismissed.'},
  dismiss: {title: 'Dismiss incident', reason: true, what: 'Not a fault: dismissed; its link is put back if drained.'},
  repaired: {title: 'Mark repaired: incident', reason: false, what: 'medicd validates the link and puts it back in service.'},
  'breaker-reset': {title: 'Reset the circuit breaker', reason: true, what: 'Automatic drains resume.'},
  'maintenance-end': {title: 'End maintenance window', reason: false, what: 'Findings on it are acted on again.'},
};

function ask(verb, id) {
  const v = VERBS[verb];
  pending = {verb, id};
  $('decide-title').textContent = v.title + (id ? ' ' + id : '');
  $('decide-what').textContent = v.what + (v.reason ? ' A reason is required.' : '');
  $('decide-reason').value = '';
  $('decide-reason').required = v.reason;
  $('decide').hidden = false;
  $('decide-reason').focus();
}

async function confirmDecision() {
  if (!pending) return;
  const {verb, id} = pending;
  const reason = $('decide-reason').value.trim();
  let r;
  if (verb === 'breaker-reset') r = await api('POST', '/api/breaker/reset', {reason});
  else if (verb === 'maintenance-end') r = await api('POST', '/api/maintenance/' + id + '/end');
  else r = await api('POST', '/api/incidents/' + id + '/' + verb, reason ? {reason} : {});
  if (!r.ok) { say(r.body.error, true); return; }
  pending = null;
  $('decide').hidden = true;
  say(r.body.message || 'Done.', false);
  await refresh();
}

async function declareMaintenance() {
  const target = $('maint-target').value.trim();
  const body = {until: $('maint-until').value.trim(), reason: $('maint-reason').value.trim()};
  body[$('maint-kind').value] = target;
  const r = await api('POST', '/api/maintenance', body);
  if (!r.ok) { say(r.body.error, true); return; }
  say('Maintenance #' + r.body.id + ' on ' + (r.body.link || r.body.device) + ' until ' + when(r.body.ends_at) + '.', false);
  $('maint-form').reset();
  await refresh();
}

document.addEventListener('DOMContentLoaded', () => {
  $('login-form').addEventListener('submit', (e) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $('token').value.trim());
    $('token').value = '';
    signIn();
  });
  $('decide-form').addEventListener('submit', (e) => { e.preventDefault(); confirmDecision(); });
  $('decide-cancel').addEventListener('click', () => { pending = null; $('decide').hidden = true; });
  $('maint-form').addEventListener('submit', (e) => { e.preventDefault(); declareMaintenance(); });
  // Buttons are drawn again at every refresh: one listener for all of them.
  document.body.addEventListener('click', (e) => {
    const b = e.target.closest('button.act');
    if (b) ask(b.dataset.verb, b.dataset.id ? Number(b.dataset.id) : null);
  });
  if (sessionStorage.getItem(TOKEN_KEY)) signIn();
  else signOut('');
});
