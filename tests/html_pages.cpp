// Writes the HTML report (and its JSON) for synthetic profiles the browser test renders: a module
// and an op with hostile names, a 10,000-module model, and a training profile with a memory
// footprint and a batch-size sweep. Usage: flopsprof_html_pages <output directory>
#include <fstream>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "flopsprof/diff.h"
#include "flopsprof/report.h"

namespace {

using flopsprof::ModuleStats;
using flopsprof::ProfileResult;

ModuleStats module(const std::string& name, const std::string& type, int depth, int parent,
                   uint64_t flops, double latency_s) {
  ModuleStats m;
  m.name = name;
  m.type = type;
  m.depth = depth;
  m.parent = parent;
  m.calls = 1;
  m.flops = flops;
  m.macs = flops / 2;
  m.latency_s = latency_s;
  m.params = flops / 100;
  return m;
}

void finish(ProfileResult& r) {
  for (size_t i = 0; i < r.modules.size(); ++i) {
    if (r.modules[i].parent >= 0) r.modules[r.modules[i].parent].children.push_back(int(i));
  }
  r.flops = r.modules[0].flops;
  r.macs = r.modules[0].macs;
  r.params = r.modules[0].params;
  r.duration_s = r.modules[0].latency_s;
}

void write(const std::string& dir, const std::string& name, const ProfileResult& r,
           const std::vector<flopsprof::BatchSweepRow>& sweep = {}) {
  std::ofstream(dir + "/" + name + ".html") << flopsprof::to_html(r, sweep);
  std::ofstream(dir + "/" + name + ".json") << flopsprof::to_json(r);
}

// Numbers as the C++ formats them (include/flopsprof/format.h), for the browser test to compare
// with the page's script: every unit, both sides of each threshold, integers and fractions,
// negatives, and exact binary ties (1.125: fmt rounds them to the even digit, JavaScript's toFixed
// away from zero; the page's formatters round as fmt does).
void write_formats(const std::string& dir) {
  const double values[] = {
      0,        1,       7,      12.3456, 999,     999.994, 1000,      1234.5678, 8.21e9,
      109.51e6, 4.09e12, 1.5e15, 2.7e18,  -3.3,    -4.2e7,  0.3,       1e-3,      4.2e-4,
      2.5e-7,   0.0123,  1.75,   3599.9,  1e6,     2.5e7,   3.14159e9, 1.125,     1.375,
      2.625,    -1.125,  0.125,  1125,    1179648, 2625e6,  7.875e-3,  1125000,   1135000};
  std::ofstream f(dir + "/formats.json");
  f << "[";
  const char* sep = "";
  for (double v : values) {
    const int64_t b = static_cast<int64_t>(v);
    f << sep
      << fmt::format(
             "{{\"x\": {}, \"num\": \"{}\", \"flops\": \"{}\", \"b\": {}, \"bytes\": \"{}\"", v,
             flopsprof::number_to_string(v), flopsprof::flops_per_second_to_string(v), b,
             flopsprof::bytes_to_string(b));
    if (v >= 0) f << fmt::format(", \"dur\": \"{}\"", flopsprof::duration_to_string(v));
    f << "}";
    sep = ",\n";
  }
  f << "]\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: flopsprof_html_pages <output directory>\n";
    return 2;
  }
  const std::string dir = argv[1];

  // Names that would run script if the page inserted them as markup.
  ProfileResult hostile;
  hostile.modules.push_back(module("", "Net", 0, -1, 3000, 3e-3));
  hostile.modules.push_back(module("</script><script>alert(1)</script>",
                                   "<img src=x onerror=alert(2)>", 1, 0, 2000, 1e-3));
  hostile.modules.push_back(module("fc", "Linear&amp;<!--", 1, 0, 1000, 2e-3));
  flopsprof::OpStats op;
  op.name = "<b onmouseover=alert(3)>op</b>";
  op.phase = "forward";
  op.calls = 1;
  op.latency_s = 1e-3;
  hostile.ops.push_back(op);
  // Two regions, one with a hostile name; every module's share of each (the page's Regions
  // section).
  for (const char* region : {"<img src=x onerror=alert(4)>", "decode"}) {
    flopsprof::RegionStats g;
    g.name = region;
    g.windows = 2;
    g.duration_s = 2e-3;
    g.flops = 1500;
    g.tokens = 8;
    g.tokens_source = "given";
    g.tokens_per_s = 4000;
    g.latency_per_token_s = 2.5e-4;
    g.flops_per_token = 187.5;
    hostile.regions.push_back(g);
  }
  for (ModuleStats& m : hostile.modules) {
    flopsprof::ModuleRegionStats x;
    x.calls = 1;
    x.latency_s = m.latency_s / 2;
    x.flops = m.flops / 2;
    m.regions = {x, x};
  }
  hostile.attention = flopsprof::AttentionConvention::kCausal;  // 500 FLOPs on masked pairs
  hostile.masked_flops = 500;
  // A KV cache and the utilisation: the summary shows each (and the browser test checks each
  // shown value against the JSON).
  hostile.kv_read_bytes = 4096;
  hostile.kv_write_bytes = 1024;
  hostile.mfu = 0.25;
  hostile.hfu = 0.3;
  hostile.mbu = 0.5;
  finish(hostile);
  write(dir, "hostile", hostile);

  // 10,000 modules: 100 blocks of 99 layers.
  ProfileResult big;
  big.modules.push_back(module("", "Huge", 0, -1, 0, 0));
  for (int b = 0; b < 100; ++b) {
    const int parent = static_cast<int>(big.modules.size());
    big.modules.push_back(module("block" + std::to_string(b), "Block", 1, 0, 0, 0));
    for (int l = 0; l < 99; ++l) {
      big.modules.push_back(module("block" + std::to_string(b) + ".layer" + std::to_string(l),
                                   "Linear", 2, parent, 1000000u * (1 + (l % 7)),
                                   1e-5 * (1 + (l * 13 + b) % 11)));
      big.modules[parent].flops += big.modules.back().flops;
      big.modules[parent].latency_s += big.modules.back().latency_s;
    }
    big.modules[0].flops += big.modules[parent].flops;
    big.modules[0].latency_s += big.modules[parent].latency_s;
  }
  finish(big);
  write(dir, "big", big);

  // Training, with a memory footprint (a peak in the middle) and a batch-size sweep.
  ProfileResult train;
  train.modules.push_back(module("", "Net", 0, -1, 8000, 4e-3));
  train.modules.push_back(module("encoder", "Encoder", 1, 0, 6000, 3e-3));
  train.modules.push_back(module("head", "Linear", 1, 0, 2000, 1e-3));
  train.modules[1].bwd_latency_s = 5e-3;
  train.modules[2].bwd_latency_s = 1e-3;
  train.modules[0].bwd_latency_s = 6e-3;
  finish(train);
  train.has_backward = true;
  train.bwd_latency_s = 6e-3;
  train.bwd_flops = 16000;
  train.memory.tracked = true;
  for (int i = 0; i <= 2000; ++i) {
    flopsprof::MemorySample s;
    s.time_s = i * 1e-5;
    s.bytes = (i <= 1200 ? i : 2400 - i) * 4096;
    s.op = "aten::mm";
    s.module = i < 1000 ? "encoder" : "head";
    s.phase = i < 1200 ? "forward" : "backward";
    train.memory.trace.push_back(s);
  }
  train.memory.peak_bytes = 1200 * 4096;
  std::vector<flopsprof::BatchSweepRow> sweep;
  for (int64_t b : {1, 2, 4, 8})  // batch, fwd peak, train peak, fwd FLOPs, fwd seconds
    sweep.push_back({b, b * 1000000, b * 3000000, static_cast<uint64_t>(b) * 8000, b * 0.001});
  write(dir, "train", train, sweep);

  // A diff: the hostile model against a variant whose `fc` is slower with more FLOPs, a module
  // faster with the same work, one added and one removed (diff.json holds the diff as JSON).
  ProfileResult variant = hostile;
  variant.modules[2].flops = 1500;  // fc: more work, slower
  variant.modules[2].latency_s = 4e-3;
  variant.modules[1].latency_s = 0.5e-3;  // the hostile-named module: faster, same work
  variant.modules.push_back(module("extra", "ReLU", 1, 0, 10, 0.1e-3));
  variant.modules[0].flops = 3510;
  variant.modules[0].latency_s = 5e-3;
  finish(variant);
  ProfileResult removed = hostile;
  removed.modules.push_back(module("gone", "Dropout", 1, 0, 0, 0.2e-3));
  finish(removed);
  const flopsprof::ProfileDiff d = flopsprof::diff(removed, variant);
  std::ofstream(dir + "/diff.html") << flopsprof::diff_to_html(d);
  std::ofstream(dir + "/diff.json") << flopsprof::diff_to_json(d);
  // No time (an exported program counted from its graph): counts and bytes, every latency null.
  ProfileResult untimed;
  untimed.modules.push_back(module("", "Llama", 0, -1, 4000, 0));
  untimed.modules.push_back(module("layers.0", "Block", 1, 0, 3000, 0));
  untimed.modules.push_back(module("output", "Linear", 1, 0, 1000, 0));
  for (ModuleStats& m : untimed.modules) m.bytes = m.flops;
  finish(untimed);
  untimed.timed = false;
  untimed.fwd_bytes = 4000;
  write(dir, "untimed", untimed);
  ProfileResult untimed_more = untimed;  // more work in one module: rows that changed
  untimed_more.modules[2].flops = 2000;
  untimed_more.modules[0].flops = 5000;
  finish(untimed_more);
  const flopsprof::ProfileDiff ud = flopsprof::diff(untimed, untimed_more);
  std::ofstream(dir + "/untimed_diff.html") << flopsprof::diff_to_html(ud);
  std::ofstream(dir + "/untimed_diff.json") << flopsprof::diff_to_json(ud);
  write_formats(dir);
  std::cout << "pages written to " << dir << "\n";
  return 0;
}
