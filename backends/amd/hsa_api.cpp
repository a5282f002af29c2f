// Loading the HSA runtime (backends/amd/hsa_api.h).
#include "backends/amd/hsa_api.h"

#include <cstdio>

#include "core/util/dynlib.h"

namespace sn::hsa {

const Api* load(std::string* why) {
  return load_once<Api>(why, [](Api& api) -> std::string {
    static DynLib lib("libhsa-runtime64.so.1");
    lib.sym(api.init, "hsa_init");
    lib.sym(api.status_string, "hsa_status_string");
    lib.sym(api.iterate_agents, "hsa_iterate_agents");
    lib.sym(api.agent_get_info, "hsa_agent_get_info");
    lib.sym(api.agent_iterate_memory_pools, "hsa_amd_agent_iterate_memory_pools");
    lib.sym(api.memory_pool_get_info, "hsa_amd_memory_pool_get_info");
    lib.sym(api.memory_pool_allocate, "hsa_amd_memory_pool_allocate");
    lib.sym(api.memory_pool_free, "hsa_amd_memory_pool_free");
    lib.sym(api.agents_allow_access, "hsa_amd_agents_allow_access");
    lib.sym(api.memory_async_copy, "hsa_amd_memory_async_copy");
    lib.sym(api.signal_create, "hsa_signal_create");
    lib.sym(api.signal_destroy, "hsa_signal_destroy");
    lib.sym(api.signal_store_screlease, "hsa_signal_store_screlease");
    lib.sym(api.signal_add_relaxed, "hsa_signal_add_relaxed");
    lib.sym(api.signal_wait_scacquire, "hsa_signal_wait_scacquire");
    lib.sym(api.queue_create, "hsa_queue_create");
    lib.sym(api.queue_destroy, "hsa_queue_destroy");
    lib.sym(api.queue_add_write_index_screlease, "hsa_queue_add_write_index_screlease");
    lib.sym(api.queue_load_read_index_scacquire, "hsa_queue_load_read_index_scacquire");
    lib.sym(api.code_object_reader_create_from_memory, "hsa_code_object_reader_create_from_memory");
    lib.sym(api.code_object_reader_destroy, "hsa_code_object_reader_destroy");
    lib.sym(api.executable_create_alt, "hsa_executable_create_alt");
    lib.sym(api.executable_load_agent_code_object, "hsa_executable_load_agent_code_object");
    lib.sym(api.executable_freeze, "hsa_executable_freeze");
    lib.sym(api.executable_get_symbol_by_name, "hsa_executable_get_symbol_by_name");
    lib.sym(api.executable_symbol_get_info, "hsa_executable_symbol_get_info");
    lib.sym(api.executable_destroy, "hsa_executable_destroy");
    if (!lib.ok()) return cat(lib.error(), " (the ROCm runtime is not installed, e.g. Debian's libhsa-runtime64-1)");
    // Initialized for the whole process (never shut down: devices come and go, the runtime stays).
    if (Status s = api.init(); s != kSuccess)
      return cat("HSA runtime found no GPU agent: hsa_init failed: ", status_name(&api, s));
    return "";
  });
}

std::string status_name(const Api* api, Status s) {
  const char* text = nullptr;
  if (api && api->status_string(s, &text) == kSuccess && text) return text;
  char buf[32];
  std::snprintf(buf, sizeof buf, "HSA status 0x%x", unsigned(s));
  return buf;
}

}  // namespace sn::hsa
