// Loading the optional CUDA plugin, and choosing how a profile times the device:
// CUPTI -> device events -> host clock, with the reason shown once in the report.
#include "capture/gpu_backend.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#include <ATen/Context.h>
#include <c10/core/DeviceType.h>

#include "capture/device_events.h"
#include "flopsprof/config.h"

namespace flopsprof::detail {

namespace {

constexpr const char* kPluginName = "libflopsprof_cuda.so." FLOPSPROF_CUDA_PLUGIN_SOVERSION;

struct Loaded {
  std::once_flag once;
  const GpuPluginV1* plugin = nullptr;
  std::string why;
};
Loaded g_loaded;

const GpuPluginV1* open_plugin(const std::string& path, std::string* error) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = dlerror();
    *error = e ? e : path + ": cannot be loaded";
    return nullptr;
  }
  using Entry = const GpuPluginV1* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, "flopsprof_gpu_plugin_v1"));
  const GpuPluginV1* p = entry ? entry() : nullptr;
  if (p == nullptr || p->abi != kGpuPluginAbi) {
    *error = path + ": not a flopsprof CUDA plugin of this version (ABI " +
             std::to_string(kGpuPluginAbi) + ")";
    dlclose(handle);
    return nullptr;
  }
  return p;  // kept loaded for the life of the process
}

bool cuda_elapsed(void* from, void* to, c10::DeviceIndex, double* ms, std::string* error) {
  float value = 0;
  char text[256] = {0};
  if (!g_loaded.plugin->cuda_event_elapsed_ms(from, to, &value, text, sizeof text)) {
    *error = text;
    return false;
  }
  *ms = value;
  return true;
}

}  // namespace

const GpuPluginV1* load_gpu_plugin(std::string* why) {
  std::call_once(g_loaded.once, [] {
    std::vector<std::string> tried;
    std::string error;
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("FLOPSPROF_CUDA_PLUGIN"); env && *env) {
      candidates.push_back(env);
    } else {
      candidates.push_back(kPluginName);  // already loaded, RUNPATH, LD_LIBRARY_PATH
      candidates.push_back(std::string(FLOPSPROF_INSTALL_LIBDIR) + "/" + kPluginName);
    }
    for (const std::string& c : candidates) {
      if ((g_loaded.plugin = open_plugin(c, &error)) != nullptr) break;
      tried.push_back(error);
    }
    if (g_loaded.plugin != nullptr) {
      set_event_elapsed(c10::DeviceType::CUDA, cuda_elapsed);
    } else {
      g_loaded.why = "the CUDA plugin " + std::string(kPluginName) +
                     " was not found (build it: flopsprof configured with FLOPSPROF_WITH_CUDA=ON "
                     "(the default where the CUDA toolkit is found), then cmake --build build "
                     "--target flopsprof_cuda, or all; or set FLOPSPROF_CUDA_PLUGIN to its "
                     "path); last error: " +
                     (tried.empty() ? std::string("none") : tried.back());
    }
  });
  if (g_loaded.plugin == nullptr) *why = g_loaded.why;
  return g_loaded.plugin;
}

GpuSelection select_gpu_timing(const GpuTimingRequest& request) {
  GpuSelection sel;
  if (request.device_type < 0) return sel;
  sel.device_type = request.device_type;
  sel.device_index = request.device_index;
  const auto type = static_cast<c10::DeviceType>(request.device_type);
  std::string why_cupti, why_events, why_plugin;
  const GpuPluginV1* plugin = nullptr;
  // A CUDA device's name and ceilings, through the plugin, whatever times it.
  const GpuPluginV1* cuda_plugin =
      type == c10::DeviceType::CUDA ? load_gpu_plugin(&why_plugin) : nullptr;
  if (cuda_plugin != nullptr) {
    char name[256] = {0};
    if (cuda_plugin->cuda_device_name(request.device_index, name, sizeof name)) sel.device = name;
    GpuDeviceProperties props;
    if (cuda_plugin->cuda_device_properties(request.device_index, &props)) {
      sel.properties = props;
    }
  }
  if (type == c10::DeviceType::CUDA) {
    sel.tf32.convolutions = at::globalContext().allowTF32CuDNN();
    sel.tf32.matmuls = at::globalContext().allowTF32CuBLAS();
  }
  if (!request.try_cupti) {
    why_cupti = "not tried (ProfilerOptions::device_timing)";
  } else if (type == c10::DeviceType::CUDA) {
    plugin = cuda_plugin;
    why_cupti = why_plugin;
    if (plugin != nullptr) {
      std::unique_ptr<GpuBackend> cupti(plugin->make_cupti_backend(request.cupti_limits));
      if (cupti->start(&why_cupti)) {
        sel.cupti = std::move(cupti);
        sel.timing = "cupti";
        return sel;
      }
    }
  } else {
    why_cupti = "CUPTI times CUDA devices only";
  }
  sel.reason = "CUPTI unavailable: " + why_cupti;
  if (!request.try_events) {
    sel.timing = "host clock";
    sel.reason = "device timing off (ProfilerOptions::device_timing is kHostClock)";
    return sel;
  }
  if (device_events_available(type, &why_events)) {
    sel.events = true;
    sel.timing = c10::DeviceTypeName(type, /*lower_case=*/true) + " events";
    return sel;
  }
  sel.timing = "host clock";
  sel.reason += "; device events unavailable: " + why_events;
  return sel;
}

}  // namespace flopsprof::detail
