// Profiles a small GPT-style decoder's generation (examples/models/gpt.h): the prefill of a prompt
// and then greedy decode steps with a KV cache, in one profile with the two phases named as
// regions, and prints the report: per region tokens, tokens/s, time per token, FLOPs per token,
// time to first token, MFU and MBU, and each module's share of each region.
//   flopsprof_example_gpt_decode [prompt tokens] [decode steps] [batch] [--json FILE]
//   (default 128, 32, 1; --json also writes the profile as JSON: tests/fcm_gpt.py reads it)
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <flopsprof/flopsprof.h>

#include "models/gpt.h"

int main(int argc, char** argv) {
  std::vector<std::string> numbers;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) {
      json = argv[++i];
    } else {
      numbers.push_back(a);
    }
  }
  auto number = [&](size_t k, int64_t fallback) {
    return k < numbers.size() ? std::atoll(numbers[k].c_str()) : fallback;
  };
  const int64_t prompt_len = number(0, 128);
  const int64_t steps = number(1, 32);
  const int64_t batch = number(2, 1);
  models::GptConfig c;  // 4 layers, d_model 256, 8 query heads over 2 K/V heads, vocab 8192
  if (prompt_len < 1 || steps < 0 || batch < 1 || prompt_len + steps > c.max_ctx) {
    std::fprintf(stderr,
                 "usage: %s [prompt tokens] [decode steps] [batch] [--json FILE]: prompt >= 1, "
                 "batch >= 1, prompt + steps <= %lld\n",
                 argv[0], static_cast<long long>(c.max_ctx));
    return 2;
  }
  torch::manual_seed(0);
  models::Gpt gpt(c);
  gpt->eval();
  torch::NoGradGuard no_grad;
  auto prompt = torch::randint(0, c.vocab, {batch, prompt_len}, torch::kLong);
  {  // warm-up: one short generation
    models::KvCache cache;
    gpt->decode(gpt->prefill(prompt, cache), cache);
  }

  flopsprof::ProfilerOptions po;
  po.batch_size = batch;
  flopsprof::FlopsProfiler prof(gpt.ptr(), po);
  models::KvCache cache;
  prof.start_profile();
  torch::Tensor token;
  {
    auto region = prof.region("prefill");  // tokens: the prompt's ids, batch x prompt
    token = gpt->prefill(prompt, cache);
  }
  for (int64_t i = 0; i < steps; ++i) {
    auto region = prof.region("decode");  // one window per step: batch tokens each
    token = gpt->decode(token, cache);
  }
  prof.stop_profile();
  prof.print_model_profile(1, 2, 3);
  if (!json.empty()) prof.save_json(json);
  return 0;
}
