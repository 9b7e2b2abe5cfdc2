// Example: data-parallel training over c10d on one machine, profiled on every rank, one report.
// N processes (forked here), c10d::TCPStore on 127.0.0.1, ProcessGroupGloo, gradients all-reduced
// by hand after backward() (LibTorch's C++ frontend has no DistributedDataParallel). Each rank
// profiles iteration 2; gather_profile() combines the ranks on rank 0, which prints the report
// (per rank, per module across ranks, stragglers). Every rank writes its JSON and its trace
// (kineto's format: Holistic Trace Analysis and Perfetto load them) into --out.
//
//   flopsprof_example_train_ddp [--world-size N] [--steps S] [--out DIR]
//                               [--slow-rank R --slow-ms MS]    rank R sleeps in block.forward
//                               [--mismatch-rank R]             rank R names a module otherwise
//                               [--skip-gather-rank R]          rank R never gathers
//                               [--timeout-ms T]                gather timeout
//                               [--all-ranks 1]                 every rank gets the report
//                               [--late-rank R --late-ms MS]    rank R starts the profiled
//                                                               iteration MS later
//                               [--allreduce-in-backward 1]     all-reduce each gradient from a
//                                                               hook, inside backward (as DDP)
//                               [--store-host-dies 1]           rank 0 (the TCPStore's host) is
//                                                               killed while the others gather
// Each rank writes the wall-clock time (ns since the epoch) just before its profiled iteration
// starts (the profile starts) to DIR/rankR.start_ns, and just after to DIR/rankR.started_ns: the
// profile's own start lies between the two.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include <flopsprof/distributed.h>
#include <flopsprof/flopsprof.h>

#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO  // the header's contents are behind it; Debian's LibTorch has Gloo
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

namespace {

// LibTorch 2.4+ TCPStore defaults to its libuv backend, and a LibTorch built without libuv
// (Debian's 2.6) then fails with "use_libuv was requested but PyTorch was build without libuv
// support". Older releases have no such option. Detected from the struct itself, so this compiles
// against both.
template <typename T, typename = void>
struct HasUseLibUV : std::false_type {};
template <typename T>
struct HasUseLibUV<T, std::void_t<decltype(std::declval<T&>().useLibUV)>> : std::true_type {};

template <typename Options>
void use_classic_tcp_store(Options& options) {
  if constexpr (HasUseLibUV<Options>::value) options.useLibUV = false;
}

// One line on stderr in one write(2): ranks print at the same time, and a pipe keeps a write of
// up to PIPE_BUF bytes whole, so two ranks' lines never interleave.
void say(const std::string& line) {
  const std::string s = line + "\n";
  for (size_t done = 0; done < s.size();) {
    const ssize_t n = ::write(STDERR_FILENO, s.data() + done, s.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

struct Args {
  int world_size = 2, steps = 3, slow_rank = -1, slow_ms = 0, mismatch_rank = -1;
  int skip_gather_rank = -1, timeout_ms = 30000, all_ranks = 0;
  int late_rank = -1, late_ms = 0, allreduce_in_backward = 0, store_host_dies = 0;
  std::string out = "ddp_profile";
};

// A scoped block (FLOPSPROF_MODULE): the rank told to be slow sleeps inside it.
struct BlockImpl : torch::nn::Module {
  BlockImpl(int64_t width, int sleep_ms)
      : fc(register_module("fc", torch::nn::Linear(width, width))), sleep_ms(sleep_ms) {}
  torch::Tensor forward(const torch::Tensor& x) {
    FLOPSPROF_MODULE();
    if (sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    return torch::relu(fc(x));
  }
  torch::nn::Linear fc;
  int sleep_ms;
};
TORCH_MODULE(Block);

struct NetImpl : torch::nn::Module {
  NetImpl(int64_t width, int sleep_ms, const std::string& head_name = "head")
      : fc1(register_module("fc1", torch::nn::Linear(32, width))),
        block(register_module("block", Block(width, sleep_ms))),
        head(register_module(head_name, torch::nn::Linear(width, 1))) {}
  torch::Tensor forward(const torch::Tensor& x) { return head(block(torch::relu(fc1(x)))); }
  torch::nn::Linear fc1;
  Block block;
  torch::nn::Linear head;
};
TORCH_MODULE(Net);

int worker(const Args& a, int rank, uint16_t port) {
  c10d::TCPStoreOptions so;
  so.port = port;
  so.isServer = rank == 0;
  so.numWorkers = a.world_size;
  so.timeout = std::chrono::milliseconds(60000);
  use_classic_tcp_store(so);  // works whether or not this LibTorch was built with libuv
  auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", so);
  auto options = c10d::ProcessGroupGloo::Options::create();
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, a.world_size, options);

  torch::manual_seed(0);  // the same initial weights on every rank
  // (a "different model" with the same shapes, so that the all-reduce itself still works)
  Net model(64, rank == a.slow_rank ? a.slow_ms : 0, rank == a.mismatch_rank ? "output" : "head");
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01));
  flopsprof::ProfilerOptions po;
  po.profile_step = 2;
  po.batch_size = 16;
  flopsprof::FlopsProfiler prof(model, po);

  // The data-parallel all-reduce of one gradient (averaged over the ranks).
  auto allreduce = [&](const torch::Tensor& grad) {
    std::vector<torch::Tensor> grads{grad};
    pg->allreduce(grads)->wait();
    return grads[0].div_(a.world_size);
  };
  if (a.allreduce_in_backward != 0) {  // inside backward, as DistributedDataParallel does
    for (torch::Tensor& p : model->parameters()) {
      p.register_hook([&](torch::Tensor g) { return allreduce(g.clone()); });
    }
  }
  std::filesystem::create_directories(a.out);
  torch::manual_seed(100 + rank);  // each rank its own shard of the data
  auto wall_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  for (int step = 1; step <= a.steps; ++step) {
    int64_t before = 0;
    if (step == po.profile_step) {
      if (rank == a.late_rank) std::this_thread::sleep_for(std::chrono::milliseconds(a.late_ms));
      before = wall_ns();
    }
    auto iteration = prof.iteration();
    if (step == po.profile_step) {
      const int64_t after = wall_ns();
      std::ofstream(a.out + "/rank" + std::to_string(rank) + ".start_ns") << before;
      std::ofstream(a.out + "/rank" + std::to_string(rank) + ".started_ns") << after;
    }
    optimizer.zero_grad();
    torch::Tensor x = torch::randn({16, 32});
    torch::Tensor y = x.sum(1, /*keepdim=*/true);
    torch::Tensor loss = torch::mse_loss(model->forward(x), y);
    loss.backward();
    if (a.allreduce_in_backward == 0) {
      for (torch::Tensor& p : model->parameters()) allreduce(p.grad());
    }
    {
      auto s = prof.step_scope();
      optimizer.step();
    }
    if (rank == 0) std::cout << "step " << step << " loss " << loss.item<double>() << "\n";
  }
  if (rank == a.skip_gather_rank) return 0;  // a rank that never gathers (for the tests)
  if (a.store_host_dies != 0 && rank == 0) {
    // The store's host dies once every other rank has sent its header (so they are gathering):
    // flopsprof's keys are <prefix>/<round>/header/<rank>, round 0 here.
    std::vector<std::string> keys;
    for (int r = 1; r < a.world_size; ++r)
      keys.push_back("flopsprof/0/header/" + std::to_string(r));
    while (!store->check(keys)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::cout.flush();
    raise(SIGKILL);
  }
  flopsprof::GatherOptions go;
  go.timeout = std::chrono::milliseconds(a.timeout_ms);
  go.backend = pg->getBackendName();
  go.all_ranks = a.all_ranks != 0;
  const auto gather_start = std::chrono::steady_clock::now();
  try {
    flopsprof::gather_profile(prof, *store, rank, a.world_size, go);
  } catch (const flopsprof::Error& e) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - gather_start)
                        .count();
    say("rank " + std::to_string(rank) + " (flopsprof::Error after " + std::to_string(ms) +
        " ms): " + e.what());
    // the message alone, for tests (other ranks' and LibTorch's lines share stderr)
    std::ofstream(a.out + "/rank" + std::to_string(rank) + ".error") << e.what();
    return 3;
  }
  const std::string base = a.out + "/rank" + std::to_string(rank);
  prof.save_json(base + ".json");
  prof.export_chrome_trace(base + ".pt.trace.json");
  if (rank == 0) prof.print_model_profile(/*header_step=*/2, /*module_depth=*/-1, 1, false);
  return 0;
}

// A free TCP port on 127.0.0.1 for the store (the OS picks it; parallel jobs do not collide).
uint16_t free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::runtime_error("no free port on 127.0.0.1");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--world-size")
      a.world_size = std::stoi(v);
    else if (k == "--steps")
      a.steps = std::stoi(v);
    else if (k == "--slow-rank")
      a.slow_rank = std::stoi(v);
    else if (k == "--slow-ms")
      a.slow_ms = std::stoi(v);
    else if (k == "--mismatch-rank")
      a.mismatch_rank = std::stoi(v);
    else if (k == "--skip-gather-rank")
      a.skip_gather_rank = std::stoi(v);
    else if (k == "--timeout-ms")
      a.timeout_ms = std::stoi(v);
    else if (k == "--all-ranks")
      a.all_ranks = std::stoi(v);
    else if (k == "--late-rank")
      a.late_rank = std::stoi(v);
    else if (k == "--late-ms")
      a.late_ms = std::stoi(v);
    else if (k == "--allreduce-in-backward")
      a.allreduce_in_backward = std::stoi(v);
    else if (k == "--store-host-dies")
      a.store_host_dies = std::stoi(v);
    else if (k == "--out")
      a.out = v;
    else {
      std::cerr << "unknown option " << k << "\n";
      return 2;
    }
  }
  // Fork before any LibTorch work (its thread pools do not survive fork).
  const uint16_t port = free_port();
  std::vector<pid_t> pids;
  for (int rank = 0; rank < a.world_size; ++rank) {
    pid_t pid = fork();
    if (pid == 0) {
      int code = 1;
      try {
        code = worker(a, rank, port);
      } catch (const std::exception& e) {
        say("rank " + std::to_string(rank) + ": " + e.what());
      }
      std::cout.flush();
      std::cerr.flush();
      _exit(code);  // no teardown of the process group while other ranks may be gone
    }
    pids.push_back(pid);
  }
  int failed = 0;
  for (int rank = 0; rank < a.world_size; ++rank) {
    int status = 0;
    waitpid(pids[rank], &status, 0);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::cout << "rank " << rank << " exit " << code << "\n";
    failed += code != 0;
  }
  return failed == 0 ? 0 : 1;
}
