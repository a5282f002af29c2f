// The part of the HSA runtime (ROCm's libhsa-runtime64.so.1, dlopen'ed) the AMD backend uses:
// hand-written declarations, so neither building nor running Sinter needs ROCm's headers. Types,
// values and layouts follow hsa.h and hsa_ext_amd.h of the 64-bit ("large") model; the layouts are
// checked by static_asserts here and, where ROCm's headers are installed, against them
// (tests/fake_hsa/hsa_decls.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace sn::hsa {

using Status = int;  // hsa_status_t
constexpr Status kSuccess = 0x0;
constexpr Status kInfoBreak = 0x1;  // an iteration callback stops the walk
constexpr Status kOutOfResources = 0x1008;

struct Agent {
  uint64_t handle;
};
struct Signal {
  uint64_t handle;
};
struct MemoryPool {
  uint64_t handle;
};
struct Executable {
  uint64_t handle;
};
struct ExecutableSymbol {
  uint64_t handle;
};
struct CodeObjectReader {
  uint64_t handle;
};
struct LoadedCodeObject {
  uint64_t handle;
};

// hsa_queue_t: a ring of `size` 64-byte AQL packets at base_address; writing a packet's index to the
// doorbell signal hands it to the packet processor.
struct Queue {
  uint32_t type;
  uint32_t features;
  void* base_address;
  Signal doorbell_signal;
  uint32_t size;
  uint32_t reserved1;
  uint64_t id;
};
static_assert(sizeof(Queue) == 40);

// hsa_kernel_dispatch_packet_t. The header (with setup, one 32-bit store) is written last, with
// release order: until then the packet processor sees an invalid packet and waits.
struct KernelDispatchPacket {
  uint16_t header;
  uint16_t setup;
  uint16_t workgroup_size_x, workgroup_size_y, workgroup_size_z;
  uint16_t reserved0;
  uint32_t grid_size_x, grid_size_y, grid_size_z;  // work-items, not work-groups
  uint32_t private_segment_size;
  uint32_t group_segment_size;
  uint64_t kernel_object;
  void* kernarg_address;
  uint64_t reserved2;
  Signal completion_signal;  // decremented by 1 when the dispatch completes
};
static_assert(sizeof(KernelDispatchPacket) == 64 && offsetof(KernelDispatchPacket, kernel_object) == 32 &&
              offsetof(KernelDispatchPacket, completion_signal) == 56);

// hsa_agent_info_t (and hsa_amd_agent_info_t)
constexpr int kAgentInfoName = 0;                      // char[64]
constexpr int kAgentInfoWavefrontSize = 6;             // uint32_t
constexpr int kAgentInfoWorkgroupMaxDim = 7;           // uint16_t[3]
constexpr int kAgentInfoWorkgroupMaxSize = 8;          // uint32_t
constexpr int kAgentInfoQueueMaxSize = 14;             // uint32_t
constexpr int kAgentInfoDevice = 17;                   // hsa_device_type_t
constexpr int kAmdAgentInfoComputeUnitCount = 0xA002;  // uint32_t
constexpr int kAmdAgentInfoProductName = 0xA009;       // char[64]
constexpr int kDeviceTypeCpu = 0, kDeviceTypeGpu = 1;

// hsa_amd_memory_pool_info_t, hsa_amd_segment_t, hsa_amd_memory_pool_global_flag_t
constexpr int kPoolInfoSegment = 0;
constexpr int kPoolInfoGlobalFlags = 1;
constexpr int kPoolInfoRuntimeAllocAllowed = 5;  // bool
constexpr int kSegmentGlobal = 0;
constexpr uint32_t kPoolFlagKernargInit = 1, kPoolFlagFineGrained = 2, kPoolFlagCoarseGrained = 4;

// hsa_executable_symbol_info_t
constexpr int kSymbolKernelKernargSegmentSize = 11;  // uint32_t
constexpr int kSymbolKernelGroupSegmentSize = 13;    // uint32_t
constexpr int kSymbolKernelPrivateSegmentSize = 14;  // uint32_t
constexpr int kSymbolKernelObject = 22;              // uint64_t

// AQL packet header fields and values
constexpr int kPacketTypeKernelDispatch = 2;
constexpr int kHeaderType = 0, kHeaderBarrier = 8, kHeaderAcquireScope = 9, kHeaderReleaseScope = 11;
constexpr int kFenceScopeSystem = 2;
constexpr int kSetupDimensions = 0;

constexpr int kQueueTypeMulti = 0;
constexpr int kSignalConditionEq = 0, kSignalConditionLt = 2;
constexpr int kWaitStateBlocked = 0;
constexpr int kProfileFull = 1;
constexpr int kRoundingDefault = 0;

struct Api {
  Status (*init)();
  Status (*status_string)(Status, const char**);
  Status (*iterate_agents)(Status (*)(Agent, void*), void*);
  Status (*agent_get_info)(Agent, int attribute, void* value);
  Status (*agent_iterate_memory_pools)(Agent, Status (*)(MemoryPool, void*), void*);    // hsa_amd_
  Status (*memory_pool_get_info)(MemoryPool, int attribute, void* value);               // hsa_amd_
  Status (*memory_pool_allocate)(MemoryPool, size_t size, uint32_t flags, void** ptr);  // hsa_amd_
  Status (*memory_pool_free)(void* ptr);                                                // hsa_amd_
  Status (*agents_allow_access)(uint32_t n, const Agent* agents, const uint32_t* flags, const void* ptr);
  Status (*memory_async_copy)(void* dst, Agent dst_agent, const void* src, Agent src_agent, size_t size,
                              uint32_t num_deps, const Signal* deps, Signal completion);  // hsa_amd_
  Status (*signal_create)(int64_t initial, uint32_t num_consumers, const Agent* consumers, Signal* signal);
  Status (*signal_destroy)(Signal);
  void (*signal_store_screlease)(Signal, int64_t);
  void (*signal_add_relaxed)(Signal, int64_t);
  int64_t (*signal_wait_scacquire)(Signal, int condition, int64_t compare, uint64_t timeout_hint, int wait_state);
  Status (*queue_create)(Agent, uint32_t size, int type, void (*callback)(Status, Queue*, void*), void* data,
                         uint32_t private_segment_size, uint32_t group_segment_size, Queue** queue);
  Status (*queue_destroy)(Queue*);
  uint64_t (*queue_add_write_index_screlease)(const Queue*, uint64_t value);
  uint64_t (*queue_load_read_index_scacquire)(const Queue*);
  Status (*code_object_reader_create_from_memory)(const void* code, size_t size, CodeObjectReader* reader);
  Status (*code_object_reader_destroy)(CodeObjectReader);
  Status (*executable_create_alt)(int profile, int rounding, const char* options, Executable* executable);
  Status (*executable_load_agent_code_object)(Executable, Agent, CodeObjectReader, const char* options,
                                              LoadedCodeObject* loaded);
  Status (*executable_freeze)(Executable, const char* options);
  Status (*executable_get_symbol_by_name)(Executable, const char* name, const Agent* agent, ExecutableSymbol* symbol);
  Status (*executable_symbol_get_info)(ExecutableSymbol, int attribute, void* value);
  Status (*executable_destroy)(Executable);
};

// The runtime, loaded and initialized (hsa_init) once per process; nullptr with the reason in *why
// when the library, a symbol or hsa_init is missing or fails.
const Api* load(std::string* why);

// "HSA_STATUS_ERROR_OUT_OF_RESOURCES: ..." (the runtime's own text), or the number.
std::string status_name(const Api* api, Status s);

}  // namespace sn::hsa
