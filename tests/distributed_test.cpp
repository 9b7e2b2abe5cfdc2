// Multi-rank pieces on one process: gather_profile's error paths against a store that fails as a
// lost TCPStore does, the world size on a rank that does not combine, c10d collectives recorded
// per module, and the trace's shared time base and step annotation.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <thread>

#include <ATen/record_function.h>
#include <c10/util/Exception.h>
#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "aggregation/ranks.h"
#include "flopsprof/distributed.h"
#include "flopsprof/flopsprof.h"
#include "models/mlp.h"

namespace {

using flopsprof::Error;
using flopsprof::FlopsProfiler;
using json = nlohmann::json;

// An in-memory store whose calls fail on demand, as c10d's do: with a c10::Error whose what()
// carries LibTorch's C++ backtrace after the first line.
class FakeStore : public c10d::Store {
 public:
  std::map<std::string, std::vector<uint8_t>> data;
  bool fail_set = false, fail_wait = false, fail_check = false;
  const char* message = "Connection closed by peer";
  std::function<void(const std::string&)> on_set;  // e.g. another rank's reply

  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    if (fail_set) fail();
    data[key] = value;
    if (on_set) on_set(key);
  }
  std::vector<uint8_t> get(const std::string& key) override { return data.at(key); }
  int64_t add(const std::string&, int64_t) override { return 0; }
  bool deleteKey(const std::string& key) override { return data.erase(key) > 0; }
  bool check(const std::vector<std::string>& keys) override {
    if (fail_check) fail();
    for (const auto& k : keys) {
      if (data.count(k) == 0) return false;
    }
    return true;
  }
  int64_t getNumKeys() override { return static_cast<int64_t>(data.size()); }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds&) override {
    if (fail_wait || !check(keys)) fail();
  }

 private:
  [[noreturn]] void fail() const { TORCH_CHECK(false, message); }
};

// A stopped profile of a small MLP (forward and backward).
struct Profiled {
  models::Mlp model;
  std::unique_ptr<FlopsProfiler> prof;
  Profiled() : model(8, 16, 4, 2) {
    prof = std::make_unique<FlopsProfiler>(model);
    prof->start_profile();
    model->forward(torch::randn({3, 8})).sum().backward();
    prof->stop_profile();
  }
};

// Runs gather_profile, returning the flopsprof::Error's message and how long it took ("" if none;
// any other exception fails the test).
std::string gather_error(Profiled& p, FakeStore& store, int rank, int world, double* seconds,
                         std::chrono::milliseconds timeout = std::chrono::milliseconds(60000)) {
  flopsprof::GatherOptions o;
  o.timeout = timeout;
  const auto t0 = std::chrono::steady_clock::now();
  std::string what;
  try {
    flopsprof::gather_profile(*p.prof, store, rank, world, o);
  } catch (const Error& e) {
    what = e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a flopsprof::Error: " << e.what();
  }
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return what;
}

TEST(GatherProfile, ALostStoreWhenSendingIsAFlopsprofErrorNamingTheStore) {
  Profiled p;
  FakeStore store;
  store.fail_set = true;
  store.message = "Broken pipe";
  double s = 0;
  const std::string what = gather_error(p, store, 1, 3, &s);
  EXPECT_NE(what.find("store connection lost on rank 1 while sending its header: Broken pipe."),
            std::string::npos)
      << what;
  EXPECT_EQ(what.find('\n'), std::string::npos) << "one paragraph, no backtrace: " << what;
}

TEST(GatherProfile, AStoreLostWhileWaitingIsNotATimeout) {
  Profiled p;
  FakeStore store;
  store.fail_wait = store.fail_check = true;  // the host is gone: every call fails at once
  double s = 0;
  const std::string what = gather_error(p, store, 0, 3, &s);
  EXPECT_NE(what.find("store connection lost on rank 0 while waiting for the ranks' headers: "
                      "Connection closed by peer."),
            std::string::npos)
      << what;
  EXPECT_EQ(what.find("did not send"), std::string::npos) << what;
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  EXPECT_LT(s, 30.0) << "at once, not after the 60 s timeout";
}

TEST(GatherProfile, ATimeoutNamesOnlyTheMissingRanksInOneParagraph) {
  Profiled p;
  FakeStore store;  // nobody else ever sends: the wait fails as TCPStore's does on its timeout
  store.message = "Socket Timeout";
  double s = 0;
  const std::string what = gather_error(p, store, 0, 3, &s, std::chrono::milliseconds(50));
  EXPECT_NE(what.find("rank(s) 1, 2 did not send their header within 50 ms"), std::string::npos)
      << what;
  EXPECT_NE(what.find("(Socket Timeout)"), std::string::npos) << what;
  EXPECT_EQ(what.find('\n'), std::string::npos) << "one paragraph, no backtrace: " << what;
  EXPECT_LT(what.size(), 400u) << what;
}

TEST(GatherProfile, ARankThatDoesNotCombineShowsTheWorldSize) {
  Profiled p;
  FakeStore store;
  // Rank 0 answers rank 1's header with its own (same model, same calls).
  const std::string header = flopsprof::detail::encode_header(
      flopsprof::detail::make_rank_profile(p.prof->result(), 0, 2, "host", 1));
  store.on_set = [&](const std::string& key) {
    const std::string suffix = "/header/1";
    if (key.size() > suffix.size() &&
        key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0) {
      store.data[key.substr(0, key.size() - 1) + "0"] = {header.begin(), header.end()};
    }
  };
  flopsprof::gather_profile(*p.prof, store, 1, 2);
  const json j = json::parse(p.prof->to_json());
  EXPECT_EQ(j["summary"]["world_size"].get<int>(), 2);
  EXPECT_FALSE(j.contains("ranks")) << "rank 0 combines";
}

TEST(GatherProfile, FirstLineKeepsOnlyTheCause) {
  EXPECT_EQ(flopsprof::detail::first_line("Socket Timeout\nException raised from recvBytes at"),
            "Socket Timeout");
  EXPECT_EQ(flopsprof::detail::first_line("no newline  "), "no newline");
  EXPECT_EQ(flopsprof::detail::first_line(""), "");
}

// A process group's work, as ProcessGroup::Work records it: an async USER_SCOPE record named
// "<backend>:<collective>" with the input tensors, ended by the thread that completes the work.
void fake_all_reduce(const torch::Tensor& grad) {
  auto rf = std::make_shared<at::RecordFunction>(at::RecordScope::USER_SCOPE);
  if (rf->isActive()) {
    rf->_setAsync();
    std::vector<c10::IValue> inputs{grad};
    rf->before("gloo:all_reduce", c10::ArrayRef<const c10::IValue>(inputs.data(), inputs.size()));
  }
  std::thread([rf] { rf->end(); }).join();
}

TEST(Collectives, AnAllReduceInAGradientHookIsThatModulesBackward) {
  torch::manual_seed(0);
  models::Mlp model(8, 16, 4, 2);
  model->named_parameters()["head.weight"].register_hook([](torch::Tensor g) {
    fake_all_reduce(g);
    return g;
  });
  FlopsProfiler prof(model);
  prof.start_profile();
  {
    RECORD_USER_SCOPE("my.scope");  // a user scope that is no collective: not recorded
    model->forward(torch::randn({3, 8})).sum().backward();
  }
  prof.stop_profile();
  const auto& cs = prof.result().collectives;
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(cs[0].name, "gloo:all_reduce");
  EXPECT_EQ(cs[0].module, "head");
  EXPECT_EQ(cs[0].phase, "backward");
  EXPECT_EQ(cs[0].calls, 1u);
  EXPECT_EQ(cs[0].numel, 4u * 16);
  EXPECT_EQ(cs[0].bytes, 4u * 16 * 4);
  EXPECT_EQ(cs[0].incomplete, 0u) << "completed on another thread";

  const json j = json::parse(prof.to_json());
  ASSERT_EQ(j["collectives"].size(), 1u);
  EXPECT_EQ(j["collectives"][0]["module"], "head");
  EXPECT_EQ(j["collectives"][0]["bytes"].get<uint64_t>(), 256u);

  const std::string text = prof.model_profile_string();
  EXPECT_NE(text.find("Collectives (c10d)"), std::string::npos) << text;
  EXPECT_NE(text.find("head                        backward  gloo:all_reduce"), std::string::npos)
      << text;

  const json t = json::parse(prof.chrome_trace());
  int found = 0;
  for (const json& e : t["traceEvents"]) {
    if (e.value("name", "") == "my.scope") ADD_FAILURE() << "a user scope that is no collective";
    if (e.value("name", "") != "gloo:all_reduce") continue;
    ++found;
    EXPECT_EQ(e["cat"], "user_annotation");
    EXPECT_EQ(e["args"]["Collective name"], "all_reduce");
    EXPECT_EQ(e["args"]["In msg nelems"].get<uint64_t>(), 64u);
    EXPECT_EQ(e["args"]["Input Dims"], json::parse("[[4, 16]]"));
    EXPECT_EQ(e["args"]["module"], "head");
  }
  EXPECT_EQ(found, 1);
}

// A hook on an activation runs before its node's own record opens: on the dispatch capture the
// engine runs it between two nodes' records (LibTorch 2.x does so for a leaf's hooks too);
// RecordFunction shows it inside the engine's wrapper of that node. Both paths place its
// collective in that node's module: the activation's grad_fn is the ReLU's.
struct HookedImpl : torch::nn::Module {
  HookedImpl()
      : fc1(register_module("fc1", torch::nn::Linear(8, 16))),
        act(register_module("act", torch::nn::ReLU())),
        fc2(register_module("fc2", torch::nn::Linear(16, 4))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor h = act(fc1(x));
    h.register_hook([](torch::Tensor g) {
      fake_all_reduce(g);
      return g;
    });
    return fc2(h);
  }
  torch::nn::Linear fc1;
  torch::nn::ReLU act;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Hooked);

TEST(Collectives, AnActivationsHookIsTheBackwardOfItsNodesModule) {
  torch::manual_seed(0);
  Hooked model;
  FlopsProfiler prof(model);
  prof.start_profile();
  model->forward(torch::randn({3, 8})).sum().backward();
  prof.stop_profile();
  const auto& cs = prof.result().collectives;
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(cs[0].module, "act");
  EXPECT_EQ(cs[0].phase, "backward");
  EXPECT_EQ(cs[0].numel, 3u * 16) << "the activation's gradient";
}

TEST(ChromeTrace, TimestampsAreWallClockSinceKinetosBaseWithAProfilerStep) {
  auto wall_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  torch::manual_seed(0);
  models::Mlp model(8, 16, 4, 2);
  FlopsProfiler prof(model);
  const int64_t before = wall_ns();
  prof.start_profile();
  model->forward(torch::randn({3, 8}));
  prof.stop_profile();
  const int64_t after = wall_ns();
  const json t = json::parse(prof.chrome_trace());
  const int64_t base = t["baseTimeNanoseconds"].get<int64_t>();
  EXPECT_EQ(base % (int64_t{7889238} * 1000000000), 0) << "kineto's: three-month multiples";
  EXPECT_LE(base, before);
  bool step = false;
  for (const json& e : t["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    const double ns = base + e["ts"].get<double>() * 1e3;
    EXPECT_GE(ns, static_cast<double>(before) - 1e3) << e.dump();
    EXPECT_LE(ns, static_cast<double>(after) + 1e3) << e.dump();
    if (e["name"] == "ProfilerStep#0") {
      step = true;
      EXPECT_EQ(e["cat"], "user_annotation");
    }
  }
  EXPECT_TRUE(step) << "kineto's step annotation (HTA finds iterations by it)";
}

}  // namespace
