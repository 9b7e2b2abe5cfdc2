// The main job: profile one forward of a C++ BERT-base masked LM (1 x 128 tokens) and print the
// full report. Usage: flopsprof_example_bert_mlm [json_output_path] [--html report.html]
#include <iostream>
#include <string>

#include <torch/torch.h>

#include <flopsprof/flopsprof.h>

#include "models/bert.h"

int main(int argc, char** argv) {
  torch::manual_seed(0);
  models::BertForMaskedLM model;
  model->eval();
  torch::NoGradGuard no_grad;
  torch::Tensor input_ids = torch::randint(0, 30522, {1, 128}, torch::kLong);

  model->forward(input_ids);  // warm-up: first-call allocations are not what we want to measure

  flopsprof::FlopsProfiler prof(model);
  prof.start_profile();
  torch::Tensor logits = model->forward(input_ids);
  prof.stop_profile();

  prof.print_model_profile(/*header_step=*/1, /*module_depth=*/-1, /*top_modules=*/3,
                           /*detailed=*/true);
  std::cout << "logits: " << logits.sizes() << "\n";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--html" && i + 1 < argc) {
      prof.save_html(argv[++i]);
      std::cout << "HTML report written to " << argv[i] << "\n";
    } else {
      prof.save_json(arg);
      std::cout << "JSON profile written to " << arg << "\n";
    }
  }
  prof.end_profile();
  return 0;
}
