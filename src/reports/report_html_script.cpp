// The HTML report page's script (report_html.h): it reads the profile's JSON embedded in the
// page and draws the summary, icicle, tables, memory footprint, roofline chart and sweep. Its
// number formatters follow include/flopsprof/format.h (the browser test compares them).
#include "reports/report_html.h"

namespace flopsprof::detail {
namespace {

constexpr const char* kScript = R"JS(
(function () {
  'use strict';
  const D = JSON.parse(document.getElementById('flopsprof-page').textContent);
  const M = D.modules;
  const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
  // The data's numbers come formatted (report_html_data.cpp); these format the charts' axis
  // ticks only, as include/flopsprof/format.h writes numbers (number_to_string with a unit,
  // duration_to_string, bytes_to_string): the browser test compares them with the C++ on one set
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
  document.getElementById('model-name').textContent = D.title;

  // Tree.
  const kids = M.map(() => []);
  M.forEach((m, i) => { if (m.parent >= 0) kids[m.parent].push(i); });

  // 5. Summary: each box's value and text as the data gives them.
  const summary = document.getElementById('summary');
  for (const it of D.summary) {
    const box = el('div', 'kv');
    box.appendChild(el('span', 'k', it.label));
    const v = el('span', 'v', it.text);
    if (it.key) { v.dataset.key = it.key; v.dataset.value = String(it.value); }
    box.appendChild(v);
    if (it.note) box.appendChild(el('span', 'k', it.note));
    summary.appendChild(box);
  }

  // 1. Icicle.
  let metric = 'flops', zoom = 0;
  const icicle = document.getElementById('icicle'), tip = document.getElementById('tip');
  const rates = M.map((m) => m.rate).filter((r) => r > 0);
  const lo = rates.length ? Math.log10(Math.min(...rates)) : 0, hi = rates.length ? Math.log10(Math.max(...rates)) : 1;
  const color = (m) => {
    const r = m.rate;
    if (!(r > 0)) return '#d5d9e0';
    const t = hi > lo ? (Math.log10(r) - lo) / (hi - lo) : 0.5;  // slow (red) .. fast (green)
    return 'hsl(' + Math.round(8 + t * 122) + ', 62%, ' + Math.round(72 - t * 12) + '%)';
  };
  // A cell's width: its module's value, or its children's sum when larger (a container that is
  // never called, such as a ModuleList, has no latency of its own but its layers have).
  const widths = (key) => {
    const v = M.map((m) => Math.max(0, m.size[key] || 0));
    for (let i = M.length - 1; i >= 0; --i) {
      let sum = 0;
      for (const k of kids[i]) sum += v[k];
      v[i] = Math.max(v[i], sum);
    }
    return v;
  };
  let V = widths(metric);
  function drawIcicle() {
    icicle.textContent = '';
    if (!M.length) return;  // a profile of no module
    const W = icicle.clientWidth || 1000, H = 22;
    let maxDepth = 0, shown = 0;
    const root = M[zoom];
    const place = (i, x, w, row) => {
      if (w < 0.5 || shown > 20000) return;
      const m = M[i];
      const c = el('div', 'cell', m.parent < 0 ? m.type : (m.name.split('.').pop() + ': ' + m.type));
      c.style.left = x + 'px'; c.style.top = (row * H) + 'px'; c.style.width = Math.max(1, w) + 'px';
      c.style.background = color(m);
      c.dataset.index = String(i); c.dataset.name = m.name;
      c.addEventListener('click', () => { zoom = i; drawIcicle(); });
      c.addEventListener('mousemove', (ev) => { tip.textContent = m.tip; tip.style.display = 'block'; tip.style.left = (ev.clientX + 14) + 'px'; tip.style.top = (ev.clientY + 12) + 'px'; });
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
    for (let i = zoom; i >= 0; i = M[i].parent) path.unshift(i);
    path.forEach((i, n) => {
      if (n) crumbs.appendChild(document.createTextNode(' / '));
      const a = el('a', '', M[i].label);
      a.addEventListener('click', () => { zoom = i; drawIcicle(); });
      crumbs.appendChild(a);
    });
    document.getElementById('zoomed').textContent = M[zoom].label;
  }
  document.querySelectorAll('button.seg[data-metric]').forEach((b) => b.addEventListener('click', () => {
    metric = b.dataset.metric; V = widths(metric);
    document.querySelectorAll('button.seg[data-metric]').forEach((x) => x.classList.toggle('on', x === b));
    drawIcicle();
  }));
  if (!D.has_bwd) document.querySelector('button[data-metric=bwd_latency_s]').style.display = 'none';
  document.getElementById('legend-lo').textContent = num(10 ** lo, 'FLOP/s');
  document.getElementById('legend-hi').textContent = num(10 ** hi, 'FLOP/s');
  window.addEventListener('resize', drawIcicle);

  // 2. Module table: the data's columns, each cell a value to sort by and its text.
  const cols = D.columns;
  let sortKey = null, asc = false;
  const thead = document.querySelector('#modules thead tr'), tbody = document.querySelector('#modules tbody');
  cols.forEach((c) => {
    const th = el('th', c.left ? 'l' : '', c.title);
    th.dataset.key = c.id;
    th.addEventListener('click', () => { asc = sortKey === c.id ? !asc : false; sortKey = c.id; drawTable(); });
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
      const k = cols.findIndex((c) => c.id === sortKey);
      idx.sort((a, b) => { const x = M[a].cells[k][0], y = M[b].cells[k][0]; const c = typeof x === 'string' ? x.localeCompare(y) : x - y; return asc ? c : -c; });
    }
    thead.querySelectorAll('th').forEach((th) => { th.classList.toggle('sorted', th.dataset.key === sortKey); th.classList.toggle('asc', th.dataset.key === sortKey && asc); });
    const limit = 1000;
    document.getElementById('shown').textContent = idx.length > limit ? 'showing ' + limit + ' of ' + idx.length + ' modules (filter or limit the depth to see others)' : idx.length + ' modules';
    tbody.textContent = '';
    const frag = document.createDocumentFragment();
    for (const i of idx.slice(0, limit)) {
      const tr = el('tr', i === selected ? 'sel' : '');
      tr.dataset.index = String(i);
      cols.forEach((c, k) => {
        const [v, text] = M[i].cells[k];
        const td = el('td', (c.left ? 'l' : '') + (c.id === 'name' ? ' name' : ''), text);
        if (c.id === 'name') { td.style.paddingLeft = (8 + 12 * M[i].depth) + 'px'; td.title = M[i].label; }
        td.dataset.value = String(v);
        tr.appendChild(td);
      });
      tr.addEventListener('click', () => { zoom = i; drawIcicle(); document.getElementById('icicle-section').scrollIntoView(); });
      frag.appendChild(tr);
    }
    tbody.appendChild(frag);
  }
  filter.addEventListener('input', drawTable);
  depthSel.addEventListener('change', drawTable);

  // 3. Op table.
  const obody = document.querySelector('#ops tbody');
  for (const o of D.ops) {
    const tr = el('tr', o.na ? 'na' : '');
    o.cells.forEach((text, k) => {
      const td = el('td', k === 0 || k === 1 || k === 8 ? 'l' : '', text);
      if (k === 0 && o.na) td.appendChild(el('span', 'badge', 'no formula'));
      tr.appendChild(td);
    });
    obody.appendChild(tr);
  }
  document.getElementById('ops-note').textContent = D.ops_note;

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
  if (mem) {
    document.getElementById('memory-section').hidden = false;
    plot(document.getElementById('memory'), [{ points: mem.points, color: '#2f6fde' }], 'time', 'bytes in use', dur, bytes,
         [mem.peak_t, mem.peak_bytes, mem.peak_label]);
  }
  const SWEEP = D.sweep;  // [batch size, forward peak, training peak]
  if (SWEEP.length) {
    document.getElementById('sweep-section').hidden = false;
    const series = [{ points: SWEEP.map((r) => [r[0], r[1]]), color: '#2f6fde' }];
    if (SWEEP.some((r) => r[2] > 0)) series.push({ points: SWEEP.map((r) => [r[0], r[2]]), color: '#d9822b' });
    plot(document.getElementById('sweep'), series, 'batch size', 'peak memory (blue: forward, orange: training)', (x) => String(Math.round(x)), bytes, null, SWEEP.map((r) => r[0]));
  }

  // 6. Roofline: intensity vs achieved FLOP/s (log-log), the bandwidth and compute ceilings, one
  // point per module of the chosen depth (area: its share of the time), hover for numbers, click
  // to select it in the icicle and the table.
  const roof = document.getElementById('roofline');
  const roofDepth = document.getElementById('roof-depth');
  for (let d = 0; d <= maxDepth; d++) { const o = el('option', '', 'depth ' + d); o.value = String(d); roofDepth.appendChild(o); }
  roofDepth.value = String(Math.min(1, maxDepth));
  const RF = D.roofline;
  let roofPhase = 0;
  if (!RF.phases[1].length) document.getElementById('roof-bwd').style.display = 'none';
  document.querySelectorAll('button.roofseg').forEach((b) => b.addEventListener('click', () => {
    roofPhase = Number(b.dataset.phase);
    document.querySelectorAll('button.roofseg').forEach((x) => x.classList.toggle('on', x === b));
    drawRoofline();
  }));
  function selectModule(i) {
    selected = i; zoom = i; drawIcicle(); drawTable();
    document.getElementById('roof-selected').textContent = M[i].label + ' (' + M[i].type + ')';
    const row = document.querySelector('#modules tbody tr[data-index="' + i + '"]');
    if (row) row.scrollIntoView({ block: 'nearest' });
  }
  function drawRoofline() {
    roof.textContent = '';
    const depth = Number(roofDepth.value);
    const pts = RF.phases[roofPhase].filter((p) => M[p.m].depth === depth);
    const peak = RF.peak, bw = RF.bandwidth, ridge = RF.ridge;
    const xs = pts.map((p) => p.x), ys = pts.map((p) => p.y);
    if (ridge > 0) { xs.push(ridge / 10, ridge * 10); ys.push(peak); }
    const note = document.getElementById('roof-note');
    note.textContent = (pts.length ? pts.length + ' module(s) at depth ' + depth + '. ' : 'No module at depth ' + depth + ' has both FLOPs and bytes. ') + RF.ceilings;
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
      for (const lv of RF.levels) {
        const r = lv.ridge;
        svg.appendChild(svgEl('polyline', { id: 'roof-ceiling-' + lv.name, points: X(x0) + ',' + clipY(x0 * lv.bytes_per_s) + ' ' + X(Math.max(x0, r)) + ',' + clipY(Math.max(x0, r) * lv.bytes_per_s), fill: 'none', stroke: '#2f6fde', 'stroke-width': 1, 'stroke-dasharray': '4 3' }));
        const t = svgEl('text', { x: X(x0) + 4, y: clipY(x0 * lv.bytes_per_s) - 4 }); t.textContent = lv.name; svg.appendChild(t);
      }
    }
    const tmax = Math.max(...pts.map((p) => p.t), 1e-12);
    for (const p of pts) {
      const i = p.m;
      const c = svgEl('circle', { cx: X(p.x), cy: Y(p.y), r: (3 + 12 * Math.sqrt(Math.max(0, p.t) / tmax)).toFixed(1),
        fill: p.compute ? 'rgba(217,130,43,.55)' : 'rgba(47,111,222,.55)', stroke: i === selected ? '#101623' : p.above ? '#c0392b' : '#fff', 'stroke-width': i === selected || p.above ? 2 : 1, class: 'pt' + (p.above ? ' above' : '') });
      c.dataset.name = M[i].name; c.dataset.index = String(i);
      c.style.cursor = 'pointer';
      c.addEventListener('mousemove', (ev) => { tip.textContent = p.tip; tip.style.display = 'block'; tip.style.left = (ev.clientX + 14) + 'px'; tip.style.top = (ev.clientY + 12) + 'px'; });
      c.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
      c.addEventListener('click', () => { selectModule(i); drawRoofline(); });
      svg.appendChild(c);
    }
    roof.appendChild(svg);
  }
  roofDepth.addEventListener('change', drawRoofline);

  // 7. Regions (FlopsProfiler::region()): the totals per region, and one region's modules.
  const R = D.regions;
  if (R.length) {
    document.getElementById('regions-section').hidden = false;
    const body = document.querySelector('#regions tbody');
    for (const g of R) {
      const tr = el('tr');
      g.cells.forEach((c, k) => tr.appendChild(el('td', k === 0 ? 'l name' : '', c)));
      tr.dataset.region = g.name;
      body.appendChild(tr);
    }
    const pick = document.getElementById('region-pick');
    R.forEach((g, k) => { const o = el('option', '', g.name); o.value = String(k); pick.appendChild(o); });
    const drawRegionModules = () => {
      const tb = document.querySelector('#region-modules tbody');
      tb.textContent = '';
      for (const cells of R[Number(pick.value)].modules) {
        const tr = el('tr');
        cells.forEach((c, k) => tr.appendChild(el('td', k < 2 ? 'l name' : '', c)));
        tb.appendChild(tr);
      }
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
