// Package test: profiles a Linear through the installed flopsprof and checks the count. With
// --expect-plugin, also that the CUDA plugin is found as the library looks for it at run time.
#include <dlfcn.h>

#include <cstring>
#include <iostream>

#include <torch/torch.h>

#include <flopsprof/flopsprof.h>

namespace {

// The library dlopens the plugin by its soname from code linked into this program (the static
// libflopsprof), so the search is this program's: its RUNPATH, LD_LIBRARY_PATH, the system's.
bool plugin_found() {
  const char* name = "libflopsprof_cuda.so." FLOPSPROF_CUDA_PLUGIN_SOVERSION;
  void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    std::cerr << name << " not found: " << dlerror() << "\n";
    return false;
  }
  bool entry = dlsym(handle, "flopsprof_gpu_plugin_v1") != nullptr;
  if (!entry) std::cerr << name << " has no flopsprof_gpu_plugin_v1\n";
  dlclose(handle);
  return entry;
}

}  // namespace

int main(int argc, char** argv) {
  torch::nn::Linear fc(16, 8);
  torch::NoGradGuard no_grad;
  torch::Tensor x = torch::randn({4, 16});
  flopsprof::ModelProfileOptions options;
  options.print_profile = false;
  flopsprof::ModelProfile p = flopsprof::get_model_profile(fc, std::make_tuple(x), options);
  // addmm: 2 * 4*8*16 + 4*8 = 1056
  std::cout << "flopsprof " << FLOPSPROF_VERSION << ": " << p.flops << " FLOPs\n";
  if (p.flops != 1056) return 1;
  if (argc > 1 && std::strcmp(argv[1], "--expect-plugin") == 0) {
    if (!plugin_found()) return 2;
    std::cout << "the CUDA plugin is found at run time\n";
  }
  return 0;
}
