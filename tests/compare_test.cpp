// Profiles of real LibTorch models compared (flopsprof/diff.h): a model and a variant with one
// layer widened and one op added; the diff names exactly the modules that changed, with deltas
// derived by hand from the shapes, every other module `same` with delta 0; the saved JSON gives
// the same diff; a batch change is a workload warning.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "flopsprof/diff.h"
#include "flopsprof/flopsprof.h"

namespace {

// forward(x[B,8]) = head(fc2(relu(fc1(x))) [x proj when `extra`]), fc1: 8 -> `width`.
struct NetImpl : torch::nn::Module {
  NetImpl(int64_t width, bool extra) : extra(extra) {
    fc1 = register_module("fc1", torch::nn::Linear(8, width));
    fc2 = register_module("fc2", torch::nn::Linear(width, 4));
    head = register_module("head", torch::nn::Linear(4, 4));
    proj = register_buffer("proj", torch::eye(4));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = fc2(torch::relu(fc1(x)));
    if (extra) y = torch::mm(y, proj);  // the added op: [B,4] x [4,4]
    return head(y);
  }
  bool extra;
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, head{nullptr};
  torch::Tensor proj;
};
TORCH_MODULE(Net);

flopsprof::ModelProfile profile(Net net, int64_t batch) {
  flopsprof::ModelProfileOptions o;
  o.print_profile = false;
  torch::NoGradGuard no_grad;
  return flopsprof::get_model_profile(net, std::vector<int64_t>{batch, 8}, o);
}

TEST(Compare, WidenedLayerAndAddedOpFromTheShapes) {
  const flopsprof::ProfileResult base = profile(Net(16, false), 3).result;
  const flopsprof::ProfileResult next = profile(Net(32, true), 3).result;
  const flopsprof::ProfileDiff d = flopsprof::diff(base, next);
  // Linear(in, out) on [3, in]: 2*3*in*out (addmm) + 3*out (bias) FLOPs, 3*in*out MACs,
  // in*out + out params. relu: 3*width FLOPs.
  //   fc1 8->16: 768 + 48 = 816      fc1 8->32: 1536 + 96 = 1632   (+816 FLOPs, +384 MACs)
  //   fc2 16->4: 384 + 12 = 396      fc2 32->4: 768 + 12 = 780     (+384 FLOPs, +192 MACs)
  //   relu: 48 -> 96 (+48, the root's own); mm [3,4]x[4,4]: 2*3*4*4 = 96 FLOPs, 48 MACs (added)
  const flopsprof::ModuleDiff* fc1 = d.module("fc1");
  const flopsprof::ModuleDiff* fc2 = d.module("fc2");
  const flopsprof::ModuleDiff* root = d.module("");
  ASSERT_TRUE(fc1 && fc2 && root);
  EXPECT_EQ(fc1->status, flopsprof::ModuleDiff::Status::kChanged);
  EXPECT_EQ(fc1->flops.base, 816u);
  EXPECT_EQ(fc1->flops.delta(), 1632 - 816);
  EXPECT_EQ(fc1->macs.delta(), 3 * 8 * 32 - 3 * 8 * 16);
  EXPECT_EQ(fc1->params.delta(), (8 * 32 + 32) - (8 * 16 + 16));
  EXPECT_EQ(fc2->flops.delta(), 780 - 396);
  EXPECT_EQ(fc2->macs.delta(), 3 * 32 * 4 - 3 * 16 * 4);
  EXPECT_EQ(fc2->params.delta(), (32 * 4 + 4) - (16 * 4 + 4));
  EXPECT_EQ(root->flops.delta(), 816 + 384 + 48 + 96);
  EXPECT_EQ(root->macs.delta(), 384 + 192 + 48);
  EXPECT_EQ(root->params.delta(), 144 + 64);
  const flopsprof::ModuleDiff* head = d.module("head");
  EXPECT_EQ(head->status, flopsprof::ModuleDiff::Status::kSame);
  EXPECT_EQ(head->flops.delta(), 0);
  EXPECT_EQ(head->params.delta(), 0);
  EXPECT_EQ(head->calls.delta(), 0);
  int changed = 0;
  for (const flopsprof::ModuleDiff& m : d.modules)
    changed += m.status != flopsprof::ModuleDiff::Status::kSame;
  EXPECT_EQ(changed, 3);  // the root, fc1, fc2
  // The op table: the added mm with its 96 FLOPs.
  bool mm = false;
  for (const flopsprof::OpDiff& op : d.ops) {
    if (op.status == flopsprof::ModuleDiff::Status::kAdded) {
      EXPECT_EQ(op.flops.delta(), 96) << op.name;
      mm = true;
    }
  }
  EXPECT_TRUE(mm);
  // Each module's own ops: every op once across the modules (their FLOPs sum to the model's),
  // and the diff within a module: the root's own mm added, fc1's own op with fc1's delta.
  for (const flopsprof::ProfileResult* r : {&base, &next}) {
    uint64_t own = 0;
    for (const flopsprof::ModuleStats& m : r->modules) {
      for (const flopsprof::OpStats& op : m.ops) own += op.flops;
    }
    EXPECT_EQ(own, r->flops);
  }
  bool root_mm = false;
  for (const flopsprof::OpDiff& op : root->ops) {
    if (op.status == flopsprof::DiffStatus::kAdded) {
      EXPECT_EQ(op.name, "aten::mm");
      EXPECT_EQ(op.flops.next, 2u * 3 * 4 * 4);
      root_mm = true;
    }
  }
  EXPECT_TRUE(root_mm);
  uint64_t fc1_delta = 0;
  for (const flopsprof::OpDiff& op : fc1->ops) {
    EXPECT_NE(op.status, flopsprof::DiffStatus::kAdded) << op.name;  // the same ops, wider
    fc1_delta += op.flops.delta();
  }
  EXPECT_EQ(fc1_delta, 1632u - 816u);
  // Same inputs, threads, versions: no workload warning.
  for (const std::string& w : d.warnings)
    EXPECT_EQ(w.find("workload differs"), std::string::npos) << w;
  // The JSON files give the same diff.
  const flopsprof::ProfileDiff f =
      flopsprof::diff(flopsprof::profile_from_json(flopsprof::to_json(base)),
                      flopsprof::profile_from_json(flopsprof::to_json(next)));
  ASSERT_EQ(f.modules.size(), d.modules.size());
  for (size_t i = 0; i < d.modules.size(); ++i) {
    EXPECT_EQ(f.modules[i].name, d.modules[i].name);
    EXPECT_EQ(f.modules[i].status, d.modules[i].status);
    EXPECT_EQ(f.modules[i].flops.delta(), d.modules[i].flops.delta());
    EXPECT_EQ(f.modules[i].params.delta(), d.modules[i].params.delta());
  }
}

// The command and get_model_profile name a forward argument the same way (public, as the command
// uses it): dtype, sizes, the device off the CPU.
TEST(Compare, AnInputIsDescribedByItsDtypeSizesAndDevice) {
  EXPECT_EQ(flopsprof::describe_input(torch::ones({2, 8})), "fp32[2, 8]");
  EXPECT_EQ(flopsprof::describe_input(torch::zeros({3}, torch::kInt64)), "int64[3]");
  EXPECT_EQ(
      flopsprof::describe_input(torch::ones({1, 4}, torch::TensorOptions().device(torch::kMeta))),
      "fp32[1, 4] on meta");
  EXPECT_EQ(flopsprof::describe_input(torch::Tensor()), "undefined");
}

TEST(Compare, BatchChangeIsAWorkloadMismatch) {
  const flopsprof::ProfileResult b = profile(Net(16, false), 2).result;
  const flopsprof::ProfileResult n = profile(Net(16, false), 4).result;
  EXPECT_EQ(b.workload.inputs, std::vector<std::string>{"fp32[2, 8]"});
  const flopsprof::ProfileDiff d = flopsprof::diff(b, n);
  std::string all;
  for (const std::string& w : d.warnings) all += w + "\n";
  EXPECT_NE(all.find("workload differs: batch_size: 2 (base) vs 4 (new)"), std::string::npos)
      << all;
  EXPECT_NE(all.find("workload differs: inputs: fp32[2, 8] (base) vs fp32[4, 8] (new)"),
            std::string::npos)
      << all;
  // FLOPs double with the batch: 2x every module's.
  for (const flopsprof::ModuleDiff& m : d.modules)
    EXPECT_EQ(m.flops.next, 2 * m.flops.base) << m.name;
}

// Issue 45: start/stop profiles on batch 2 and 4 said "inputs (not recorded); batch 0" and gave
// no warning. They now record what the model was fed (the data its first op read) and say where
// that came from; the diff warns.
flopsprof::ProfileResult start_stop(Net net, int64_t batch) {
  torch::NoGradGuard no_grad;
  flopsprof::FlopsProfiler prof(net);
  prof.start_profile();
  net->forward(torch::randn({batch, 8}));
  prof.stop_profile();
  return prof.result();
}

TEST(Compare, StartStopProfilesRecordTheirInputsAndABatchChangeIsSaid) {
  const flopsprof::ProfileResult b = start_stop(Net(16, false), 2);
  const flopsprof::ProfileResult n = start_stop(Net(16, false), 4);
  EXPECT_EQ(b.workload.inputs, std::vector<std::string>{"fp32[2, 8]"});
  EXPECT_EQ(b.workload.inputs_source, "the model's first op");
  const flopsprof::ProfileDiff d = flopsprof::diff(b, n);
  std::string all;
  for (const std::string& w : d.warnings) all += w + "\n";
  EXPECT_NE(all.find("workload differs: inputs: fp32[2, 8] (base) vs fp32[4, 8] (new)"),
            std::string::npos)
      << all;
  // and read back from their JSON
  const flopsprof::LoadedProfile back = flopsprof::profile_from_json(flopsprof::to_json(b));
  EXPECT_EQ(back.result.workload.inputs_source, "the model's first op");
}

}  // namespace
