// Renders flopsprof's HTML reports in Debian's Chromium (headless, via playwright-core) and checks
// them as a user would: no console errors, the summary equals the JSON, clicking a module zooms
// the icicle to it, sorting by FLOPs puts the largest module first, hostile names stay text, a
// 10,000-module page opens and stays responsive, the memory peak is marked, the roofline chart
// draws its ceilings and modules and selects the one clicked; the diff page colours changed modules
// and keeps names as text; the page formats numbers as the C++ does. Screenshots are left in the output directory.
//   node report_test.mjs <pages generator> <BERT example> <output directory>
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const [generator, bert, out] = process.argv.slice(2);
mkdirSync(out, { recursive: true });
execFileSync(generator, [out], { stdio: 'inherit' });
execFileSync(bert, [`${out}/bert.json`, '--html', `${out}/bert.html`], { stdio: 'ignore' });

let failures = 0;
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures++;
};

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });

// The pages' budgets are CPU seconds of the browser's renderer processes (Chromium's own count),
// not wall time: a loaded machine stretches wall time whatever the page does.
const cdp = await browser.newBrowserCDPSession();
async function rendererCpuSeconds() {
  const { processInfo } = await cdp.send('SystemInfo.getProcessInfo');
  return processInfo.filter((p) => p.type === 'renderer').reduce((sum, p) => sum + p.cpuTime, 0);
}

async function open(name) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors = [], dialogs = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('dialog', async (d) => { dialogs.push(d.message()); await d.dismiss(); });
  page.on('request', (r) => { if (!r.url().startsWith('file:') && !r.url().startsWith('data:')) errors.push('network: ' + r.url()); });
  const t0 = Date.now(), cpu0 = await rendererCpuSeconds();
  await page.goto(`file://${out}/${name}.html`);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 120000 });  // a hang, not a budget
  const loadMs = Date.now() - t0, loadCpu = (await rendererCpuSeconds()) - cpu0;
  const json = JSON.parse(readFileSync(`${out}/${name}.json`, 'utf8'));
  return { page, errors, dialogs, json, loadMs, loadCpu };
}

async function summaryMatches(page, json, name) {
  const shown = await page.$$eval('#summary [data-key]', (els) => els.map((e) => [e.dataset.key, e.dataset.value]));
  check(shown.length > 0, `${name}: the summary shows figures`);
  for (const [key, value] of shown) {
    // a summary key, or a path from the document's top ("machine.peak_bytes_per_s")
    const expected = (key.includes('.') ? key.split('.') : ['summary', key]).reduce((o, k) => (o == null ? undefined : o[k]), json);
    check(Number(value) === Number(expected), `${name}: summary ${key} = ${value} (JSON: ${expected})`);
  }
}

async function zoomsOnClick(page, json, name, target) {
  await page.click(`#icicle .cell[data-name="${target}"]`);
  const zoomed = await page.textContent('#zoomed');
  check(zoomed === target, `${name}: clicking ${target} zooms to it (heading: ${zoomed})`);
  const box = await page.$eval(`#icicle .cell[data-name="${target}"]`, (c) => ({ w: c.getBoundingClientRect().width, top: c.offsetTop, full: c.parentElement.clientWidth }));
  check(box.top === 0 && Math.abs(box.w - box.full) <= 2, `${name}: ${target} spans the whole icicle after the zoom (${box.w} of ${box.full} px)`);
  await page.click('#crumbs a');  // back to the root
  check((await page.textContent('#zoomed')) === '(root)', `${name}: the first crumb zooms out`);
}

async function sortsByFlops(page, json, name) {
  await page.click('#modules th[data-key="flops"]');
  const first = await page.$eval('#modules tbody tr', (tr) => Number(tr.dataset.index));
  const max = Math.max(...json.modules.map((m) => m.flops));
  check(json.modules[first].flops === max, `${name}: sorted by FLOPs, the first row has the most (${json.modules[first].flops} of ${max})`);
  const second = await page.$$eval('#modules tbody tr', (trs) => trs.length > 1 ? Number(trs[1].dataset.index) : -1);
  if (second >= 0) check(json.modules[second].flops <= max, `${name}: descending`);
}

// The roofline: two ceilings, one point per module of the chosen depth (those with FLOPs and bytes),
// the name on hover, a click selects the module in the icicle and the table.
async function roofline(page, json, name) {
  const depth = Number(await page.$eval('#roof-depth', (s) => s.value));
  const expected = json.modules.filter((m) => m.depth === depth && m.intensity > 0 && m.achieved_flops_per_s > 0);
  const points = await page.$$eval('#roofline circle.pt', (cs) => cs.map((c) => c.dataset.name));
  check(points.length === expected.length && points.length > 0, `${name}: the roofline has a point per module of depth ${depth} (${points.length} of ${expected.length})`);
  check((await page.$$('#roof-ceiling-memory')).length === 1 && (await page.$$('#roof-ceiling-compute')).length === 1,
        `${name}: both ceilings are drawn`);
  // the cache-aware roofline: one dashed ceiling per faster memory level, named as the JSON names it
  for (const lv of (json.machine.bandwidth_by_level || []).slice(0, -1)) {
    check((await page.$$(`#roof-ceiling-${lv.name}`)).length === 1, `${name}: the ${lv.name} ceiling is drawn`);
  }
  // every axis label stands whole inside the chart (the y axis's read "00 GFLOPS", clipped)
  const lefts = await page.$$eval('#roofline svg text', (ts) => ts.map((t) => t.getBBox().x));
  check(lefts.length > 0 && Math.min(...lefts) >= 0, `${name}: no axis label starts left of the chart (${Math.min(...lefts).toFixed(1)})`);
  // a point above its ceiling is outlined, and says so
  const above = json.modules.filter((m) => m.depth === depth && m.above_ceiling && m.intensity > 0 && m.achieved_flops_per_s > 0).length;
  check((await page.$$('#roofline circle.pt.above')).length === above, `${name}: ${above} point(s) above their ceiling outlined`);
  const target = expected.reduce((a, b) => (b.latency_s > a.latency_s ? b : a));
  const sel = `#roofline circle.pt[data-name="${target.name}"]`;
  // events dispatched on the point itself: points may overlap, and the mouse would reach the top one
  await page.$eval(sel, (c) => { const b = c.getBoundingClientRect(); c.dispatchEvent(new MouseEvent('mousemove', { bubbles: true, clientX: b.x + b.width / 2, clientY: b.y + b.height / 2 })); });
  const tip = await page.textContent('#tip');
  check(tip.startsWith(target.name + ' (' + target.type + ')'), `${name}: hovering a point names its module (${tip.split('\n')[0]})`);
  check(tip.includes(target.bound + '-bound'), `${name}: the hover says the bound (${target.bound})`);
  // the largest point is the slowest module
  const radius = await page.$eval(sel, (c) => Number(c.getAttribute('r')));
  const radii = await page.$$eval('#roofline circle.pt', (cs) => cs.map((c) => Number(c.getAttribute('r'))));
  check(radius === Math.max(...radii), `${name}: the slowest module has the largest point`);
  await page.$eval(sel, (c) => c.dispatchEvent(new MouseEvent('click', { bubbles: true })));
  check((await page.textContent('#zoomed')) === target.name, `${name}: clicking its point zooms the icicle to ${target.name}`);
  const index = json.modules.indexOf(target);
  check(await page.$eval(`#modules tbody tr[data-index="${index}"]`, (tr) => tr.classList.contains('sel')), `${name}: and marks its row in the table`);
  check((await page.textContent('#roof-selected')).startsWith(target.name), `${name}: the roofline says what is selected`);
  // another depth redraws
  await page.selectOption('#roof-depth', String(depth + 1));
  const deeper = json.modules.filter((m) => m.depth === depth + 1 && m.intensity > 0 && m.achieved_flops_per_s > 0).length;
  check((await page.$$('#roofline circle.pt')).length === deeper, `${name}: depth ${depth + 1} has ${deeper} points`);
  await page.click('#crumbs a');
}

// BERT-base, the main job's model.
{
  const { page, errors, json, loadMs } = await open('bert');
  const size = readFileSync(`${out}/bert.html`).length;
  check(size < 1024 * 1024, `bert: page size ${size} bytes < 1 MB`);
  await summaryMatches(page, json, 'bert');
  check(json.machine.flops_source.startsWith('measured') && json.machine.peak_bytes_per_s > 0, `bert: the peaks were measured (${json.machine.flops_source})`);
  await roofline(page, json, 'bert');
  await zoomsOnClick(page, json, 'bert', 'bert.encoder');
  await sortsByFlops(page, json, 'bert');
  await page.click('button[data-metric="latency_s"]');
  check((await page.$$('#icicle .cell')).length > 10, 'bert: the latency view draws');
  // the encoder's layers sit under a ModuleList that is never called (no latency of its own):
  // they are drawn all the same, whatever the timings
  check((await page.$$('#icicle .cell[data-name^="bert.encoder.layer."]')).length >= 12,
        'bert: the latency view draws the layers under the never-called ModuleList');
  await page.fill('#filter', 'attention.self');
  const rows = await page.$$eval('#modules tbody tr td.name', (tds) => tds.map((t) => t.title));
  check(rows.length > 0 && rows.every((r) => r.includes('attention.self')), `bert: the filter keeps matching modules (${rows.length})`);
  await page.fill('#filter', '');
  await page.selectOption('#depth', '1');
  const depths = await page.$$eval('#modules tbody tr', (trs) => trs.length);
  check(depths === json.modules.filter((m) => m.depth <= 1).length, `bert: the depth limit (${depths} rows)`);
  await page.screenshot({ path: `${out}/bert.png`, fullPage: true });
  check(errors.length === 0, `bert: no console errors ${errors.join('; ')}`);
  console.log(`     bert: ready in ${loadMs} ms`);
}

// Hostile names: shown as text, no script runs.
{
  const { page, errors, dialogs, json } = await open('hostile');
  const name = json.modules[1].name;
  const cells = await page.$$eval('#icicle .cell', (cs) => cs.map((c) => c.textContent));
  check(cells.some((t) => t.includes('<img src=x onerror=alert(2)>')), 'hostile: the type is shown as text');
  const row = await page.$$eval('#modules tbody td.name', (tds) => tds.map((t) => t.textContent));
  check(row.includes(name), 'hostile: the name is shown as text in the table');
  const op = await page.$$eval('#ops tbody td', (tds) => tds.map((t) => t.textContent));
  check(op.some((t) => t.startsWith('<b onmouseover=alert(3)>op</b>')), 'hostile: the op name is text');
  check((await page.$$('img')).length === 0 && (await page.$$('#ops b')).length === 0, 'hostile: no element was created from a name');
  const html = readFileSync(`${out}/hostile.html`, 'utf8');
  check(!html.includes('</script><script>alert(1)'), 'hostile: the file never contains the name raw');
  for (const key of ['kv_read_bytes', 'kv_write_bytes', 'mfu', 'hfu', 'mbu']) {
    check((await page.$$(`#summary [data-key="${key}"]`)).length === 1, `hostile: the summary shows ${key}`);
  }
  const conv = await page.$eval('[data-key=attention_convention]', (e) => e.parentElement.textContent);
  check(conv.includes('causal') && conv.includes('dense 3.50 KFLOPs') && conv.includes('causal 3.00 KFLOPs'), `hostile: the attention convention and the dense count (${conv})`);
  // Regions: the table lists both, names as text; the module table follows the picked region.
  check(await page.$eval('#regions-section', (s) => !s.hidden), 'hostile: the regions section is shown');
  const regions = await page.$$eval('#regions tbody tr td:first-child', (tds) => tds.map((t) => t.textContent));
  check(regions.length === 2 && regions[0] === '<img src=x onerror=alert(4)>', `hostile: the regions, names as text (${regions})`);
  const shares = await page.$$eval('#region-modules tbody tr', (trs) => trs.length);
  check(shares === 3, `hostile: the first region's 3 modules (${shares})`);
  await page.selectOption('#region-pick', 'decode');
  const decodeNames = await page.$$eval('#region-modules tbody td.name', (tds) => tds.map((t) => t.textContent.trim()));
  check(decodeNames.some((t) => t.includes('</script><script>alert(1)</script>')), 'hostile: a region\'s module names are text');
  await page.hover('#ops tbody tr');
  check(dialogs.length === 0, `hostile: no dialog opened ${dialogs.join('; ')}`);
  await page.screenshot({ path: `${out}/hostile.png`, fullPage: true });
  check(errors.length === 0, `hostile: no console errors ${errors.join('; ')}`);
}

// 10,000 modules: opens, and stays responsive (in CPU time, see rendererCpuSeconds).
{
  const { page, errors, json, loadMs, loadCpu } = await open('big');
  check(json.modules.length === 10001, 'big: 10,001 modules');
  check(loadCpu < 10, `big: ready in ${loadCpu.toFixed(2)} s of CPU (< 10 s; ${loadMs} ms of wall time)`);
  const t0 = Date.now(), cpu0 = await rendererCpuSeconds();
  await page.click('#icicle .cell[data-name="block7"]');
  await page.click('#modules th[data-key="flops"]');
  const took = Date.now() - t0, tookCpu = (await rendererCpuSeconds()) - cpu0;
  check(tookCpu < 3, `big: a zoom and a sort take ${tookCpu.toFixed(2)} s of CPU (< 3 s; ${took} ms of wall time)`);
  check((await page.textContent('#shown')).startsWith('showing 1000 of 10001'), 'big: the table says how many it shows');
  check(errors.length === 0, `big: no console errors ${errors.join('; ')}`);
  await page.screenshot({ path: `${out}/big.png` });
}

// Training with memory and a sweep.
{
  const { page, errors, json } = await open('train');
  await summaryMatches(page, json, 'train');
  check(await page.isVisible('#memory svg polyline'), 'train: the memory footprint is drawn');
  const peak = await page.textContent('#peak-label');
  check(peak.startsWith('peak 4.69 MiB'), `train: the peak is marked (${peak})`);
  check((await page.$$('#sweep svg polyline')).length === 2, 'train: the sweep plots forward and training peaks');
  check((await page.$$('#modules th[data-key="bwd_latency_s"]')).length === 1, 'train: a bwd latency column');
  await page.screenshot({ path: `${out}/train.png`, fullPage: true });
  check(errors.length === 0, `train: no console errors ${errors.join('; ')}`);
}

// A profile diff: changed rows coloured by direction, added and removed marked, names as text.
{
  const { page, errors, dialogs, json } = await open('diff');
  const rows = await page.$$eval('#modules tr[data-name]', (trs) => trs.map((tr) => ({
    name: tr.dataset.name, status: tr.dataset.status, cls: tr.className,
    bg: getComputedStyle(tr.querySelector('td.latency')).backgroundColor,
    flopsBg: getComputedStyle(tr.querySelector('td.flops')).backgroundColor,
    deco: getComputedStyle(tr.querySelector('td.name')).textDecorationLine,
  })));
  check(rows.length === json.modules.length, `diff: one row per module (${rows.length})`);
  const by = Object.fromEntries(rows.map((r) => [r.name, r]));
  const white = 'rgba(0, 0, 0, 0)';
  for (const m of json.modules) {
    check(by[m.name] && by[m.name].status === m.status, `diff: '${m.name}' is ${m.status} on the page`);
  }
  check(by.fc.cls.includes('slower') && by.fc.bg !== white, `diff: fc (slower) is coloured (${by.fc.bg})`);
  check(by.fc.flopsBg !== white && by.fc.flopsBg !== by.fc.bg, `diff: fc's FLOPs cell shows more work (${by.fc.flopsBg})`);
  const hostile = json.modules[1].name;
  check(by[hostile].cls.includes('faster') && by[hostile].bg !== by.fc.bg && by[hostile].bg !== white,
        `diff: the faster module is coloured apart from the slower (${by[hostile].bg})`);
  check(by.extra.status === 'added' && by.extra.bg !== white, 'diff: the added module is marked');
  check(by.gone.status === 'removed' && by.gone.deco === 'line-through', 'diff: the removed module is struck through');
  const names = await page.$$eval('#modules td.name', (tds) => tds.map((t) => t.textContent));
  check(names.some((t) => t.includes(hostile)), 'diff: the hostile name is shown as text');
  check((await page.$$('img')).length === 0 && dialogs.length === 0, 'diff: no element or dialog from a name');
  check((await page.$$('#warnings li')).length === json.warnings.length, 'diff: every warning is listed');
  await page.screenshot({ path: `${out}/diff.png`, fullPage: true });
  check(errors.length === 0, `diff: no console errors ${errors.join('; ')}`);
}

// No time (an exported program): latencies say n/a, never 0; counts as in the JSON.
{
  const { page, errors, json } = await open('untimed');
  check(json.summary.timed === false && json.summary.fwd_latency_s === null, 'untimed: the JSON has null latencies');
  const lat = await page.$eval('#summary [data-key=fwd_latency_s]', (e) => e.textContent);
  check(lat === 'n/a', `untimed: the summary's fwd latency is n/a (${lat})`);
  const flops = await page.$eval('#summary [data-key=fwd_flops]', (e) => e.dataset.value);
  check(Number(flops) === json.summary.fwd_flops, `untimed: the summary's FLOPs (${flops})`);
  const cells = await page.$$eval('#modules tbody tr', (trs) => trs.map((tr) => tr.textContent));
  check(cells.length === 3 && cells.every((t) => t.includes('n/a') && !t.includes('0.00 us')), `untimed: every module's latency is n/a (${cells})`);
  check(errors.length === 0, `untimed: no console errors ${errors.join('; ')}`);
  const d = await open('untimed_diff');
  check(d.errors.length === 0, `untimed diff: no console errors ${d.errors.join('; ')}`);
  const rows = await d.page.$$eval('#modules tr[data-name]', (trs) => trs.map((tr) => tr.textContent));
  check(rows.length === 3 && rows.every((t) => t.includes('n/a') && !t.includes(' us')),
        `untimed diff: no latency shown, n/a instead (${rows})`);
}

// The page formats numbers as the C++ does (include/flopsprof/format.h): the generator wrote the
// C++'s strings for each value; the page's own formatters must give the same.
{
  const { page } = await open('hostile');
  const cases = JSON.parse(readFileSync(`${out}/formats.json`, 'utf8'));
  const got = await page.evaluate((cs) => cs.map((c) => ({
    num: window.flopsprofFormat.num(c.x), flops: window.flopsprofFormat.num(c.x, 'FLOPS'),
    bytes: window.flopsprofFormat.bytes(c.b), dur: c.dur === undefined ? undefined : window.flopsprofFormat.dur(c.x),
  })), cases);
  check(cases.length >= 20, `formats: ${cases.length} values`);
  cases.forEach((c, i) => {
    for (const k of ['num', 'flops', 'bytes', 'dur'])
      if (c[k] !== undefined) check(got[i][k] === c[k], `formats: ${k}(${k === 'bytes' ? c.b : c.x}) is "${got[i][k]}" on the page, "${c[k]}" in C++`);
  });
}

await browser.close();
console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
process.exit(failures ? 1 : 0);
