// Multi-rank pieces on one process: gather_profile's error paths against a store that fails as a
// lost TCPStore does, and the world size on a rank that does not combine.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>

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

}  // namespace
