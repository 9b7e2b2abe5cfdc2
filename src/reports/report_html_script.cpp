// The HTML report page's script (report_html.h): it reads the profile's JSON embedded in the
// page and draws the summary, icicle, tables, memory footprint, roofline chart and sweep. Its
// number formatters follow include/flopsprof/format.h (the browser test compares them).
#include "reports/report_html.h"

namespace flopsprof::detail {
namespace {

constexpr const char* kScript = R"JS(
(function () {
  'use strict';
  const D = JSON.parse(document.getElementById('flopsprof-data').textContent);
  const SWEEP = JSON.parse(document.getElementById('flopsprof-sweep').textContent);
  const M = D.modules || [];
  const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
  // Numbers as include/flopsprof/format.h writes them (number_to_string with a unit,
  // duration_to_string, bytes_to_string); the browser test compares them with the C++ on one set
  // of values. fixed2 is C's %.2f: toFixed rounds an exact binary tie (an odd multiple of 1/8,
  // such as 1.125) away from zero, fmt to the even digit.
  const fixed2 = (x) => {
    const s = x.toFixed(2);
    const eighths = x * 8;  // exact: a power of two
    if (!Number.isInteger(eighths) || Math.abs(eighths) % 2 !== 1 || Number(s.slice(-1)) % 2 === 0) return s;
    return (Math.sign(x) * (Math.abs(x) - 0.005)).toFixed(2);
  };
  const fixed = (x) => Number.isInteger(x) ? String(x) : fixed2(x);
  const num = (x, unit) => {
    if (x === null || x === undefined || !isFinite(x)) return 'n/a';
    const a = Math.abs(x);
    const scaled = [[1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'K']].find(([k]) => a >= k);
    const s = scaled ? fixed2(x / scaled[0]) + ' ' + scaled[1] : fixed(x) + ' ';
    return (s + (unit || '')).trim();
  };
  const g3 = (x) => {  // C's %.3g above 1e6: "1.5e+06"; an exact tie in the third digit to even
    let [m, e] = x.toExponential(2).split('e');
    const n = Number(e), unit = 10 ** (n - 2);  // the third digit's place value
    if (x % unit === unit / 2 && Number(m.slice(-1)) % 2 === 1) [m] = (x - unit / 2).toExponential(2).split('e');
    return m.replace(/\.?0+$/, '') + 'e' + (n < 0 ? '-' : '+') + String(Math.abs(n)).padStart(2, '0');
  };
  const dur = (s) => !Number.isFinite(s) ? 'n/a' : s >= 1e6 ? g3(s) + ' s' : s >= 1 ? fixed2(s) + ' s' : s >= 1e-3 ? fixed2(s * 1e3) + ' ms' : fixed2(s * 1e6) + ' us';
  const bytes = (b) => { const a = Math.abs(b); return a >= 2 ** 30 ? fixed2(b / 2 ** 30) + ' GiB' : a >= 2 ** 20 ? fixed2(b / 2 ** 20) + ' MiB' : a >= 1024 ? fixed2(b / 1024) + ' KiB' : b + ' B'; };
  window.flopsprofFormat = { num, dur, bytes };
  const label = (m) => m.name === '' ? '(root)' : m.name;

  // Tree.
  const kids = M.map(() => []), byName = new Map(), up = M.map(() => -1);
  M.forEach((m, i) => byName.set(m.name, i));
  M.forEach((m, i) => { if (m.parent !== null && m.parent !== undefined && byName.has(m.parent)) { up[i] = byName.get(m.parent); kids[up[i]].push(i); } });

  // 5. Summary.
  const S = D.summary || {};
  const summary = document.getElementById('summary');
  const items = [
    ['params', 'params', num], ['fwd MACs', 'fwd_macs', (x) => num(x, 'MACs')], ['fwd FLOPs', 'fwd_flops', (x) => num(x, 'FLOPs')],
    ['fwd latency', 'fwd_latency_s', dur], ['fwd FLOP/s', 'fwd_flops_per_s', (x) => num(x, 'FLOPS')],
    ['bwd FLOPs (measured)', 'bwd_flops', (x) => num(x, 'FLOPs')], ['bwd latency', 'bwd_latency_s', dur],
    ['step latency', 'step_latency_s', dur], ['iteration latency', 'iter_latency_s', dur],
    ['time in ops without a formula', 'no_formula_latency_s', dur], ['batch size', 'batch_size', num], ['world size', 'world_size', num],
    ['fwd bytes moved', 'fwd_bytes', (x) => num(x, 'B')], ['fwd intensity', 'fwd_intensity', (x) => x.toFixed(2) + ' FLOP/B'],
    ['KV cache read', 'kv_read_bytes', (x) => num(x, 'B')], ['KV cache written', 'kv_write_bytes', (x) => num(x, 'B')],
    ['MFU (fwd + bwd)', 'mfu', (x) => (100 * x).toFixed(1) + '%' + (S.mfu_above_peak ? '!' : '')],
    ['HFU (as run)', 'hfu', (x) => (100 * x).toFixed(1) + '%' + (S.hfu_above_peak ? '!' : '')],
    ['MBU (fwd + bwd)', 'mbu', (x) => (100 * x).toFixed(1) + '%' + (S.mbu_above_peak ? '!' : '')]];
  const training = S.bwd_latency_s > 0 || S.step_latency_s > 0;
  for (const [k, key, f] of items) {
    if (!(key in S)) continue;
    if ((key === 'batch_size' && !(S[key] > 0)) || (key === 'world_size' && !(S[key] > 1))) continue;
    if ((key === 'no_formula_latency_s' || key === 'step_latency_s') && !(S[key] > 0)) continue;
    if (['kv_read_bytes', 'kv_write_bytes', 'mfu', 'hfu', 'mbu'].includes(key) && !(S[key] > 0)) continue;  // none, or unknown
    if ((key.startsWith('bwd') || key.startsWith('step') || key === 'iter_latency_s') && !training) continue;
    const box = el('div', 'kv');
    box.appendChild(el('span', 'k', k));
    const v = el('span', 'v', f(S[key]));
    v.dataset.key = key;
    v.dataset.value = String(S[key]);
    box.appendChild(v);
    summary.appendChild(box);
  }
  if (D.outside_model && D.outside_model.ops > 0) {
    const box = el('div', 'kv');
    box.appendChild(el('span', 'k', 'outside the model'));
    const v = el('span', 'v', num(D.outside_model.flops, 'FLOPs') + ', ' + dur(D.outside_model.latency_s));
    v.dataset.key = 'outside_flops'; v.dataset.value = String(D.outside_model.flops);
    box.appendChild(v); summary.appendChild(box);
  }
  if (S.attention_convention && (S.attention_convention === 'causal' || S.fwd_flops_dense !== S.fwd_flops_causal)) {
    // Causal masks: which convention the FLOPs use, and the other counts.
    const box = el('div', 'kv');
    box.appendChild(el('span', 'k', 'attention convention (causal masks)'));
    const v = el('span', 'v', S.attention_convention);
    v.dataset.key = 'attention_convention'; v.dataset.value = S.attention_convention;
    box.appendChild(v);
    box.appendChild(el('span', 'k', 'fwd dense ' + num(S.fwd_flops_dense, 'FLOPs') + ', causal ' + num(S.fwd_flops_causal, 'FLOPs') +
      ', as the kernels ran ' + num(S.fwd_flops_kernel, 'FLOPs')));
    summary.appendChild(box);
  }
  const MACH = D.machine || {};
  const peakOf = (m) => {  // the peak FLOP/s of module m's (or the model's) dtype, else fp32's
    const P = MACH.peak_flops_per_s || {};
    let best = null, most = -1;
    for (const [k, v] of Object.entries((m && m.flops_by_dtype) || S.flops_by_dtype || {})) if (v > most) { most = v; best = k; }
    return (best && P[best]) || P.fp32 || 0;
  };
  for (const [k, key, value, f, source] of [['peak FLOP/s', 'machine.peak_flops_per_s', peakOf(null), (x) => num(x, 'FLOPS'), MACH.flops_source],
    ['peak bandwidth', 'machine.peak_bytes_per_s', MACH.peak_bytes_per_s, (x) => num(x, 'B/s'), MACH.bandwidth_source]]) {
    if (!(value > 0)) continue;
    const box = el('div', 'kv');
    box.appendChild(el('span', 'k', k + ' (' + source + ')'));
    const v = el('span', 'v', f(value));
    v.dataset.key = key; v.dataset.value = String(value);
    box.appendChild(v); summary.appendChild(box);
  }
  if (D.gpu && D.gpu.backend) {
    const box = el('div', 'kv');
    box.appendChild(el('span', 'k', 'GPU timing'));
    box.appendChild(el('span', 'v', D.gpu.backend));
    summary.appendChild(box);
  }

  // 1. Icicle.
  let metric = 'flops', zoom = 0;
  const icicle = document.getElementById('icicle'), tip = document.getElementById('tip');
  const rates = M.map((m) => (m.achieved_flops_per_s || 0)).filter((r) => r > 0);
  const lo = rates.length ? Math.log10(Math.min(...rates)) : 0, hi = rates.length ? Math.log10(Math.max(...rates)) : 1;
  const color = (m) => {
    const r = (m.achieved_flops_per_s || 0);
    if (!(r > 0)) return '#d5d9e0';
    const t = hi > lo ? (Math.log10(r) - lo) / (hi - lo) : 0.5;  // slow (red) .. fast (green)
    return 'hsl(' + Math.round(8 + t * 122) + ', 62%, ' + Math.round(72 - t * 12) + '%)';
  };
  // A cell's width: its module's value, or its children's sum when larger (a container that is
  // never called, such as a ModuleList, has no latency of its own but its layers have).
  const widths = (key) => {
    const v = M.map((m) => Math.max(0, m[key] || 0));
    for (let i = M.length - 1; i >= 0; --i) {
      let sum = 0;
      for (const k of kids[i]) sum += v[k];
      v[i] = Math.max(v[i], sum);
    }
    return v;
  };
  let V = widths(metric);
  const tipText = (m) => [label(m) + ' (' + m.type + ')', 'calls ' + m.calls + ', params ' + num(m.params),
    'MACs ' + num(m.macs) + ', FLOPs ' + num(m.flops), 'fwd ' + dur(m.latency_s) + ', bwd ' + dur(m.bwd_latency_s || 0),
    'achieved ' + num((m.achieved_flops_per_s || 0), 'FLOP/s')].join('\n');
  function drawIcicle() {
    icicle.textContent = '';
    const W = icicle.clientWidth || 1000, H = 22;
    let maxDepth = 0, shown = 0;
    const root = M[zoom];
    const place = (i, x, w, row) => {
      if (w < 0.5 || shown > 20000) return;
      const m = M[i];
      const c = el('div', 'cell', label(m) === '(root)' ? m.type : (m.name.split('.').pop() + ': ' + m.type));
      c.style.left = x + 'px'; c.style.top = (row * H) + 'px'; c.style.width = Math.max(1, w) + 'px';
      c.style.background = color(m);
      c.dataset.index = String(i); c.dataset.name = m.name;
      c.addEventListener('click', () => { zoom = i; drawIcicle(); });
      c.addEventListener('mousemove', (ev) => { tip.textContent = tipText(m); tip.style.display = 'block'; tip.style.left = (ev.clientX + 14) + 'px'; tip.style.top = (ev.clientY + 12) + 'px'; });
      c.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
      icicle.appendChild(c);
      shown++;
      maxDepth = Math.max(maxDepth, row);
      const total = V[i];
      if (total <= 0) return;
      let cx = x;
      for (const k of kids[i]) { const cw = w * V[k] / total; place(k, cx, cw, row + 1); cx += cw; }
    };
    if (V[zoom] > 0) place(zoom, 0, W, 0);
    icicle.style.height = ((maxDepth + 1) * H + 2) + 'px';
    const crumbs = document.getElementById('crumbs');
    crumbs.textContent = '';
    const path = [];
    for (let i = zoom; i >= 0; i = up[i]) path.unshift(i);
    path.forEach((i, n) => {
      if (n) crumbs.appendChild(document.createTextNode(' / '));
      const a = el('a', '', label(M[i]));
      a.addEventListener('click', () => { zoom = i; drawIcicle(); });
      crumbs.appendChild(a);
    });
    document.getElementById('zoomed').textContent = label(M[zoom]);
  }
  document.querySelectorAll('button.seg[data-metric]').forEach((b) => b.addEventListener('click', () => {
    metric = b.dataset.metric; V = widths(metric);
    document.querySelectorAll('button.seg[data-metric]').forEach((x) => x.classList.toggle('on', x === b));
    drawIcicle();
  }));
  if (!M.some((m) => m.bwd_latency_s > 0)) document.querySelector('button[data-metric=bwd_latency_s]').style.display = 'none';
  document.getElementById('legend-lo').textContent = num(10 ** lo, 'FLOP/s');
  document.getElementById('legend-hi').textContent = num(10 ** hi, 'FLOP/s');
  window.addEventListener('resize', drawIcicle);

  // 2. Module table.
  const hasMem = M.some((m) => m.fwd_alloc_bytes);
  const hasDev = M.some((m) => m.device_fwd_s !== undefined);
  const cols = [
    ['name', 'module', (m) => label(m), 'l'], ['type', 'type', (m) => m.type, 'l'], ['depth', 'depth', (m) => m.depth],
    ['calls', 'calls', (m) => m.calls], ['params', 'params', (m) => m.params, '', num], ['macs', 'MACs', (m) => m.macs, '', num],
    ['flops', 'FLOPs', (m) => m.flops, '', num], ['latency_s', 'fwd latency', (m) => m.latency_s, '', dur],
    ['rate', 'FLOP/s', (m) => (m.achieved_flops_per_s || 0), '', num]];
  if (M.some((m) => m.bwd_latency_s > 0)) cols.splice(8, 0, ['bwd_latency_s', 'bwd latency', (m) => m.bwd_latency_s || 0, '', dur], ['bwd_flops', 'bwd FLOPs', (m) => m.bwd_flops || 0, '', num]);
  if (hasDev) cols.push(['device_fwd_s', 'device fwd', (m) => m.device_fwd_s || 0, '', dur]);
  const pct = (x) => (x === null || x === undefined) ? 'n/a' : (100 * x).toFixed(1) + '%';
  cols.push(['bytes', 'bytes', (m) => m.bytes || 0, '', (x) => num(x, 'B')], ['intensity', 'FLOP/B', (m) => m.intensity || 0, '', (x) => x.toFixed(2)],
    ['bound', 'bound', (m) => m.bound || '', 'l'], ['roofline_share', 'of roof', (m) => m.roofline_share, '', pct]);
  if (hasMem) cols.push(['fwd_alloc_bytes', 'fwd alloc', (m) => m.fwd_alloc_bytes, '', bytes], ['fwd_held_bytes', 'fwd held', (m) => m.fwd_held_bytes, '', bytes]);
  let sortKey = null, asc = false;
  const thead = document.querySelector('#modules thead tr'), tbody = document.querySelector('#modules tbody');
  cols.forEach(([key, title, , cls]) => {
    const th = el('th', cls || '', title);
    th.dataset.key = key;
    th.addEventListener('click', () => { asc = sortKey === key ? !asc : false; sortKey = key; drawTable(); });
    thead.appendChild(th);
  });
  let selected = -1;
  const maxDepth = Math.max(0, ...M.map((m) => m.depth));
  const depthSel = document.getElementById('depth');
  for (let d = 0; d <= maxDepth; d++) { const o = el('option', '', 'depth <= ' + d); o.value = String(d); depthSel.appendChild(o); }
  const filter = document.getElementById('filter');
  function drawTable() {
    const q = filter.value.toLowerCase(), dl = depthSel.value === 'all' ? Infinity : Number(depthSel.value);
    let idx = M.map((m, i) => i).filter((i) => M[i].depth <= dl && (!q || M[i].name.toLowerCase().includes(q) || M[i].type.toLowerCase().includes(q)));
    if (sortKey) {
      const f = cols.find((c) => c[0] === sortKey)[2];
      idx.sort((a, b) => { const x = f(M[a]), y = f(M[b]); const c = typeof x === 'string' ? x.localeCompare(y) : x - y; return asc ? c : -c; });
    }
    thead.querySelectorAll('th').forEach((th) => { th.classList.toggle('sorted', th.dataset.key === sortKey); th.classList.toggle('asc', th.dataset.key === sortKey && asc); });
    const limit = 1000;
    document.getElementById('shown').textContent = idx.length > limit ? 'showing ' + limit + ' of ' + idx.length + ' modules (filter or limit the depth to see others)' : idx.length + ' modules';
    tbody.textContent = '';
    const frag = document.createDocumentFragment();
    for (const i of idx.slice(0, limit)) {
      const tr = el('tr', i === selected ? 'sel' : '');
      tr.dataset.index = String(i);
      for (const [key, , f, cls, show] of cols) {
        const v = f(M[i]);
        const td = el('td', (cls || '') + (key === 'name' ? ' name' : ''), show ? show(v) : String(v));
        if (key === 'name') { td.style.paddingLeft = (8 + 12 * M[i].depth) + 'px'; td.title = label(M[i]); }
        td.dataset.value = String(v);
        tr.appendChild(td);
      }
      tr.addEventListener('click', () => { zoom = i; drawIcicle(); document.getElementById('icicle-section').scrollIntoView(); });
      frag.appendChild(tr);
    }
    tbody.appendChild(frag);
  }
  filter.addEventListener('input', drawTable);
  depthSel.addEventListener('change', drawTable);

  // 3. Op table.
  const ops = D.ops || [];
  const obody = document.querySelector('#ops tbody');
  for (const o of ops) {
    const tr = el('tr', o.has_formula ? '' : 'na');
    const name = el('td', 'l', o.name);
    if (!o.has_formula) name.appendChild(el('span', 'badge', 'no formula'));
    tr.appendChild(name);
    tr.appendChild(el('td', 'l', o.phase));
    tr.appendChild(el('td', '', String(o.calls)));
    tr.appendChild(el('td', '', o.has_formula ? num(o.flops) : 'n/a'));
    tr.appendChild(el('td', '', dur(o.latency_s)));
    tr.appendChild(el('td', '', o.phase_share != null ? (100 * o.phase_share).toFixed(1) + '%' : ''));
    tr.appendChild(el('td', '', num(o.bytes || 0, 'B') + (o.written_unknown_calls > 0 ? ' (writes unknown)' : '')));
    tr.appendChild(el('td', '', o.has_formula ? (o.intensity || 0).toFixed(2) : 'n/a'));
    tr.appendChild(el('td', 'l', o.bound || ''));
    tr.appendChild(el('td', '', o.bound ? (o.roofline_share == null ? 'n/a' : (100 * o.roofline_share).toFixed(1) + '%') : ''));
    obody.appendChild(tr);
  }
  const na = ops.filter((o) => !o.has_formula);
  document.getElementById('ops-note').textContent = na.length ? na.length + ' op(s) without a formula (highlighted): their time is measured, their FLOPs are n/a, never counted as 0.' : 'Every op has a formula.';

  // 4. Memory footprint and batch-size sweep (SVG).
  const NS = 'http://www.w3.org/2000/svg';
  const svgEl = (tag, attrs) => { const e = document.createElementNS(NS, tag); for (const k in attrs) e.setAttribute(k, attrs[k]); return e; };
  function plot(parent, series, xlab, ylab, fx, fy, mark, xticks) {
    const W = Math.max(400, parent.clientWidth || 900), H = 240, L = 104, B = 30, T = 10, R = 40;
    const svg = svgEl('svg', { viewBox: '0 0 ' + W + ' ' + H, width: W, height: H, role: 'img' });
    const xs = series.flatMap((s) => s.points.map((p) => p[0])), ys = series.flatMap((s) => s.points.map((p) => p[1]));
    const x0 = Math.min(...xs), x1 = Math.max(...xs), y0 = Math.min(0, ...ys), y1 = Math.max(...ys, 1);
    const X = (x) => L + (x1 > x0 ? (x - x0) / (x1 - x0) : 0.5) * (W - L - R), Y = (y) => H - B - (y - y0) / (y1 - y0) * (H - B - T);
    svg.appendChild(svgEl('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#999' }));
    svg.appendChild(svgEl('line', { x1: L, y1: T, x2: L, y2: H - B, stroke: '#999' }));
    for (let k = 0; k <= 4; k++) {
      const yv = y0 + (y1 - y0) * k / 4, t = svgEl('text', { x: L - 6, y: Y(yv) + 4, 'text-anchor': 'end' });
      t.textContent = fy(yv); svg.appendChild(t);
    }
    const xs_ = xticks || [0, 1, 2, 3, 4].map((k) => x0 + (x1 - x0) * k / 4);
    xs_.forEach((xv, k) => {
      const u = svgEl('text', { x: X(xv), y: H - 10, 'text-anchor': k === xs_.length - 1 && xs_.length > 1 ? 'end' : 'middle' });
      u.textContent = fx(xv); svg.appendChild(u);
    });
    const xl = svgEl('text', { x: W - R, y: H - B - 6, 'text-anchor': 'end' }); xl.textContent = xlab; svg.appendChild(xl);
    const yl = svgEl('text', { x: L + 6, y: T + 10 }); yl.textContent = ylab; svg.appendChild(yl);
    for (const s of series) {
      svg.appendChild(svgEl('polyline', { points: s.points.map((p) => X(p[0]).toFixed(1) + ',' + Y(p[1]).toFixed(1)).join(' '), fill: 'none', stroke: s.color, 'stroke-width': 1.6 }));
    }
    if (mark) {
      svg.appendChild(svgEl('circle', { cx: X(mark[0]), cy: Y(mark[1]), r: 5, fill: '#d33' }));
      const t = svgEl('text', { x: X(mark[0]) + 8, y: Y(mark[1]) + 4, id: 'peak-label' }); t.textContent = mark[2]; svg.appendChild(t);
    }
    parent.appendChild(svg);
  }
  const mem = D.memory;
  if (mem && mem.trace && mem.trace.length) {
    document.getElementById('memory-section').hidden = false;
    let step = Math.max(1, Math.floor(mem.trace.length / 4000));
    const pts = mem.trace.filter((p, i) => i % step === 0).map((p) => [p.t_s, p.bytes]);
    let peak = mem.trace[0];
    for (const p of mem.trace) if (p.bytes > peak.bytes) peak = p;
    plot(document.getElementById('memory'), [{ points: pts, color: '#2f6fde' }], 'time', 'bytes in use', dur, bytes,
         [peak.t_s, peak.bytes, 'peak ' + bytes(peak.bytes) + ' at ' + (peak.op || '?') + ' (' + (peak.module || 'root') + ', ' + peak.phase + ')']);
  }
  if (SWEEP.length) {
    document.getElementById('sweep-section').hidden = false;
    const series = [{ points: SWEEP.map((r) => [r.batch_size, r.fwd_peak_bytes]), color: '#2f6fde' }];
    if (SWEEP.some((r) => r.train_peak_bytes > 0)) series.push({ points: SWEEP.map((r) => [r.batch_size, r.train_peak_bytes]), color: '#d9822b' });
    plot(document.getElementById('sweep'), series, 'batch size', 'peak memory (blue: forward, orange: training)', (x) => String(Math.round(x)), bytes, null, SWEEP.map((r) => r.batch_size));
  }

  // 6. Roofline: intensity vs achieved FLOP/s (log-log), the bandwidth and compute ceilings, one
  // point per module of the chosen depth (area: its share of the time), hover for numbers, click
  // to select it in the icicle and the table.
  const roof = document.getElementById('roofline');
  const roofDepth = document.getElementById('roof-depth');
  for (let d = 0; d <= maxDepth; d++) { const o = el('option', '', 'depth ' + d); o.value = String(d); roofDepth.appendChild(o); }
  roofDepth.value = String(Math.min(1, maxDepth));
  let roofPhase = '';
  const hasBwdRoof = M.some((m) => m.bwd_achieved_flops_per_s > 0);
  if (!hasBwdRoof) document.getElementById('roof-bwd').style.display = 'none';
  document.querySelectorAll('button.roofseg').forEach((b) => b.addEventListener('click', () => {
    roofPhase = b.dataset.phase;
    document.querySelectorAll('button.roofseg').forEach((x) => x.classList.toggle('on', x === b));
    drawRoofline();
  }));
  function selectModule(i) {
    selected = i; zoom = i; drawIcicle(); drawTable();
    document.getElementById('roof-selected').textContent = label(M[i]) + ' (' + M[i].type + ')';
    const row = document.querySelector('#modules tbody tr[data-index="' + i + '"]');
    if (row) row.scrollIntoView({ block: 'nearest' });
  }
  function drawRoofline() {
    roof.textContent = '';
    const depth = Number(roofDepth.value), P = roofPhase;
    const lat = (m) => P ? (m.bwd_latency_s || 0) : m.latency_s;
    const pts = [];
    M.forEach((m, i) => { if (m.depth === depth && m[P + 'intensity'] > 0 && m[P + 'achieved_flops_per_s'] > 0) pts.push(i); });
    const peak = peakOf(M[0]), bw = MACH.peak_bytes_per_s || 0, ridge = peak > 0 && bw > 0 ? peak / bw : 0;
    const xs = pts.map((i) => M[i][P + 'intensity']), ys = pts.map((i) => M[i][P + 'achieved_flops_per_s']);
    if (ridge > 0) { xs.push(ridge / 10, ridge * 10); ys.push(peak); }
    const note = document.getElementById('roof-note');
    note.textContent = (pts.length ? pts.length + ' module(s) at depth ' + depth + '. ' : 'No module at depth ' + depth + ' has both FLOPs and bytes. ') +
      (ridge > 0 ? 'Ceilings: ' + num(peak, 'FLOPS') + ' (' + MACH.flops_source + '), ' + num(bw, 'B/s') + ' (' + MACH.bandwidth_source + '); ridge point ' + ridge.toFixed(2) + ' FLOP/B.' : 'The machine\'s peaks are unknown: no ceilings.');
    if (!xs.length) return;
    const lx0 = Math.floor(Math.log10(Math.min(...xs))), lx1 = Math.ceil(Math.log10(Math.max(...xs)));
    const ly0 = Math.floor(Math.log10(Math.min(...ys))), ly1 = Math.ceil(Math.log10(Math.max(...ys)));
    const W = Math.max(500, roof.clientWidth || 900), H = 360, L = 104, B = 34, T = 10, R = 20;
    const X = (x) => L + (Math.log10(x) - lx0) / Math.max(1, lx1 - lx0) * (W - L - R);
    const Y = (y) => H - B - (Math.log10(y) - ly0) / Math.max(1, ly1 - ly0) * (H - B - T);
    const svg = svgEl('svg', { viewBox: '0 0 ' + W + ' ' + H, width: W, height: H, role: 'img' });
    svg.appendChild(svgEl('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#999' }));
    svg.appendChild(svgEl('line', { x1: L, y1: T, x2: L, y2: H - B, stroke: '#999' }));
    for (let k = lx0; k <= lx1; k++) { const t = svgEl('text', { x: X(10 ** k), y: H - 14, 'text-anchor': 'middle' }); t.textContent = num(10 ** k); svg.appendChild(t); }
    for (let k = ly0; k <= ly1; k++) { const t = svgEl('text', { x: L - 6, y: Y(10 ** k) + 4, 'text-anchor': 'end' }); t.textContent = num(10 ** k, 'FLOPS'); svg.appendChild(t); }
    const xl = svgEl('text', { x: W - R, y: H - B - 6, 'text-anchor': 'end' }); xl.textContent = 'arithmetic intensity (FLOP/B)'; svg.appendChild(xl);
    const yl = svgEl('text', { x: L + 6, y: T + 10 }); yl.textContent = 'achieved FLOP/s'; svg.appendChild(yl);
    if (ridge > 0) {
      const x0 = 10 ** lx0, x1 = 10 ** lx1;
      const clipY = (y) => Math.max(T, Math.min(H - B, Y(y)));
      svg.appendChild(svgEl('polyline', { id: 'roof-ceiling-memory', points: X(x0) + ',' + clipY(x0 * bw) + ' ' + X(ridge) + ',' + Y(peak), fill: 'none', stroke: '#2f6fde', 'stroke-width': 2 }));
      svg.appendChild(svgEl('polyline', { id: 'roof-ceiling-compute', points: X(ridge) + ',' + Y(peak) + ' ' + X(x1) + ',' + Y(peak), fill: 'none', stroke: '#d9822b', 'stroke-width': 2 }));
      // the cache-aware roofline: each faster memory level's ceiling, dashed, named
      const levels = MACH.bandwidth_by_level || [];
      for (const lv of levels.slice(0, -1)) {
        const r = peak / lv.bytes_per_s;
        svg.appendChild(svgEl('polyline', { id: 'roof-ceiling-' + lv.name, points: X(x0) + ',' + clipY(x0 * lv.bytes_per_s) + ' ' + X(Math.max(x0, r)) + ',' + clipY(Math.max(x0, r) * lv.bytes_per_s), fill: 'none', stroke: '#2f6fde', 'stroke-width': 1, 'stroke-dasharray': '4 3' }));
        const t = svgEl('text', { x: X(x0) + 4, y: clipY(x0 * lv.bytes_per_s) - 4 }); t.textContent = lv.name; svg.appendChild(t);
      }
    }
    const tmax = Math.max(...pts.map((i) => lat(M[i])), 1e-12);
    for (const i of pts) {
      const m = M[i];
      const c = svgEl('circle', { cx: X(m[P + 'intensity']), cy: Y(m[P + 'achieved_flops_per_s']), r: (3 + 12 * Math.sqrt(Math.max(0, lat(m)) / tmax)).toFixed(1),
        fill: m[P + 'bound'] === 'compute' ? 'rgba(217,130,43,.55)' : 'rgba(47,111,222,.55)', stroke: i === selected ? '#101623' : m[P + 'above_ceiling'] ? '#c0392b' : '#fff', 'stroke-width': i === selected || m[P + 'above_ceiling'] ? 2 : 1, class: 'pt' + (m[P + 'above_ceiling'] ? ' above' : '') });
      c.dataset.name = m.name; c.dataset.index = String(i);
      c.style.cursor = 'pointer';
      c.addEventListener('mousemove', (ev) => { tip.textContent = [label(m) + ' (' + m.type + ')', (P ? 'bwd ' : 'fwd ') + dur(lat(m)) + ', ' + num(m[P + 'achieved_flops_per_s'], 'FLOP/s') + ', ' + num(m[P + 'achieved_bytes_per_s'], 'B/s'),
        'intensity ' + m[P + 'intensity'].toFixed(2) + ' FLOP/B' + (m[P + 'bound'] ? ', ' + m[P + 'bound'] + '-bound' + (m[P + 'ceiling'] ? ' (' + m[P + 'ceiling'] + ')' : '') + ' at ' + (m[P + 'roofline_share'] == null ? 'n/a' : (100 * m[P + 'roofline_share']).toFixed(1) + '%') + ' of its ceiling' + (m[P + 'above_ceiling'] ? ' (above it: see the problems)' : '') : '')].join('\n');
        tip.style.display = 'block'; tip.style.left = (ev.clientX + 14) + 'px'; tip.style.top = (ev.clientY + 12) + 'px'; });
      c.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
      c.addEventListener('click', () => { selectModule(i); drawRoofline(); });
      svg.appendChild(c);
    }
    roof.appendChild(svg);
  }
  roofDepth.addEventListener('change', drawRoofline);

  // 7. Regions (FlopsProfiler::region()): the totals per region, and one region's modules.
  const R = D.regions || [];
  if (R.length) {
    document.getElementById('regions-section').hidden = false;
    const pct = (x) => (x === null || x === undefined) ? 'n/a' : (100 * x).toFixed(1) + '%';
    const orNa = (x, f) => (x === null || x === undefined) ? 'n/a' : f(x);
    const body = document.querySelector('#regions tbody');
    for (const g of R) {
      const tr = el('tr');
      const cells = [g.name, String(g.windows), dur(g.duration_s), dur(g.window_spread ? g.window_spread.median_s : g.duration_s),
        orNa(g.tokens, String), orNa(g.tokens_per_s, (x) => num(x)), orNa(g.latency_per_token_s, dur), orNa(g.flops_per_token, (x) => num(x)),
        num(g.flops), num(g.bwd_flops), num(g.bytes, 'B'), num(g.kv_read_bytes || 0, 'B'), num(g.kv_write_bytes || 0, 'B'),
        pct(g.mfu) + (g.mfu_above_peak ? '!' : ''), pct(g.mbu) + (g.mbu_above_peak ? '!' : '')];
      cells.forEach((c, k) => { const td = el('td', k === 0 ? 'l name' : '', c); tr.appendChild(td); });
      tr.dataset.region = g.name;
      body.appendChild(tr);
    }
    const pick = document.getElementById('region-pick');
    for (const g of R) { const o = el('option', '', g.name); o.value = g.name; pick.appendChild(o); }
    const drawRegionModules = () => {
      const tb = document.querySelector('#region-modules tbody');
      tb.textContent = '';
      const name = pick.value;
      const total = (R.find((g) => g.name === name) || {}).flops || 0;
      M.forEach((m) => {
        const x = (m.regions || {})[name];
        if (!x || (x.calls === 0 && x.flops === 0 && x.bytes === 0)) return;
        const tr = el('tr');
        const cells = ['\u00a0'.repeat(2 * m.depth) + label(m), m.type, String(x.calls), dur(x.latency_s), num(x.flops),
          total > 0 ? (100 * x.flops_share).toFixed(1) + '%' : 'n/a', num(x.bytes, 'B'), num(x.kv_read_bytes || 0, 'B'),
          num(x.kv_write_bytes || 0, 'B'), num(x.bwd_flops), pct(x.mfu) + (x.mfu_above_peak ? '!' : ''),
          pct(x.mbu) + (x.mbu_above_peak ? '!' : '')];
        cells.forEach((c, k) => tr.appendChild(el('td', k < 2 ? 'l name' : '', c)));
        tb.appendChild(tr);
      });
    };
    pick.addEventListener('change', drawRegionModules);
    drawRegionModules();
  }

  drawIcicle();
  drawTable();
  drawRoofline();
  document.body.dataset.ready = '1';
})();
)JS";

}  // namespace

const char* html_report_script() { return kScript; }

}  // namespace flopsprof::detail
