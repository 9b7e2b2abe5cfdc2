// Profiles a small GPT-style decoder's generation (examples/models/gpt.h): the prefill of a prompt
// and then greedy decode steps with a KV cache, each phase its own profile, and prints per phase
// the report (depth 2), tokens/s and FLOPs per token.
//   flopsprof_example_gpt_decode [prompt tokens] [decode steps]     (default 128 and 32)
#include <cstdio>
#include <cstdlib>

#include <flopsprof/flopsprof.h>

#include "models/gpt.h"

int main(int argc, char** argv) {
  const int64_t prompt_len = argc > 1 ? std::atoll(argv[1]) : 128;
  const int64_t steps = argc > 2 ? std::atoll(argv[2]) : 32;
  models::GptConfig c;  // 4 layers, d_model 256, 8 query heads over 2 K/V heads, vocab 8192
  torch::manual_seed(0);
  models::Gpt gpt(c);
  gpt->eval();
  torch::NoGradGuard no_grad;
  auto prompt = torch::randint(0, c.vocab, {1, prompt_len}, torch::kLong);
  {  // warm-up: one short generation
    models::KvCache cache;
    gpt->decode(gpt->prefill(prompt, cache), cache);
  }

  models::KvCache cache;
  flopsprof::ProfilerOptions po;
  po.batch_size = 1;
  flopsprof::FlopsProfiler prefill(gpt.ptr(), po);
  prefill.start_profile();
  auto token = gpt->prefill(prompt, cache);
  prefill.stop_profile();

  flopsprof::FlopsProfiler decode(gpt.ptr(), po);
  decode.start_profile();
  for (int64_t i = 0; i < steps; ++i) token = gpt->decode(token, cache);
  decode.stop_profile();

  prefill.print_model_profile(1, 2, 3);
  decode.print_model_profile(1, 2, 3);
  const flopsprof::ProfileResult& p = prefill.result();
  const flopsprof::ProfileResult& d = decode.result();
  std::printf("prefill: %lld tokens in %.3f ms: %.1f tokens/s, %.1f MFLOPs per token\n",
              static_cast<long long>(prompt_len), p.duration_s * 1e3, prompt_len / p.duration_s,
              static_cast<double>(p.flops) / prompt_len / 1e6);
  std::printf(
      "decode:  %lld tokens in %.3f ms: %.1f tokens/s, %.1f MFLOPs per token, %.3f ms per token\n",
      static_cast<long long>(steps), d.duration_s * 1e3, steps / d.duration_s,
      static_cast<double>(d.flops) / steps / 1e6, d.duration_s * 1e3 / steps);
  return 0;
}
