// backends/amd/hsa_api.h against ROCm's hsa.h and hsa_ext_amd.h, where they are installed: every
// function pointer of sn::hsa::Api has the parameters and result of the runtime symbol it is loaded
// from (enums and ints of one size count as the same, as do handle structs of one size and
// alignment, and callbacks whose own parameters match), every constant has the headers' value,
// and the queue and dispatch packet structs have their fields at the headers' offsets. The checks
// are static_asserts: this program builds only if they hold, and running it reports them.
#include <hsa.h>
#include <hsa_ext_amd.h>

#include <cstddef>
#include <cstdio>
#include <type_traits>

#include "backends/amd/hsa_api.h"

namespace {

template <class A, class B>
struct SameAbi;

template <class A, class B>
constexpr bool same_abi() {
  return SameAbi<std::remove_cv_t<A>, std::remove_cv_t<B>>::value;
}

template <class A, class B>
struct SameAbi {
  static constexpr bool value = [] {
    if constexpr (std::is_same_v<A, B>)
      return true;
    else if constexpr (std::is_pointer_v<A> && std::is_pointer_v<B>)
      return std::is_const_v<std::remove_pointer_t<A>> == std::is_const_v<std::remove_pointer_t<B>> &&
             same_abi<std::remove_pointer_t<A>, std::remove_pointer_t<B>>();
    else if constexpr ((std::is_enum_v<A> || std::is_integral_v<A>)&&(std::is_enum_v<B> || std::is_integral_v<B>))
      return sizeof(A) == sizeof(B);
    else if constexpr (std::is_class_v<A> && std::is_class_v<B>)
      return sizeof(A) == sizeof(B) && alignof(A) == alignof(B);
    else
      return false;
  }();
};

// Function types (a callback parameter): the same result and parameters.
template <class R1, class... A1, class R2, class... A2>
struct SameAbi<R1(A1...), R2(A2...)> {
  static constexpr bool value = [] {
    if constexpr (sizeof...(A1) != sizeof...(A2))
      return false;
    else
      return same_abi<R1, R2>() && (same_abi<A1, A2>() && ...);
  }();
};

template <class F1, class F2>
constexpr bool same_function(F1*, F2*) {
  return same_abi<F1, F2>();
}

int checked = 0;
#define SN_CHECK_FUNCTION(member, symbol)                                                                \
  static_assert(same_function(decltype(sn::hsa::Api::member){}, &::symbol), #member " is not " #symbol); \
  checked++;
#define SN_CHECK_CONSTANT(ours, theirs)                                               \
  static_assert(int64_t(sn::hsa::ours) == int64_t(theirs), #ours " is not " #theirs); \
  checked++;
#define SN_CHECK_FIELD(ours, theirs, field)                                                    \
  static_assert(offsetof(sn::hsa::ours, field) == offsetof(theirs, field), #ours "::" #field); \
  checked++;

}  // namespace

int main() {
  SN_CHECK_FUNCTION(init, hsa_init)
  SN_CHECK_FUNCTION(status_string, hsa_status_string)
  SN_CHECK_FUNCTION(iterate_agents, hsa_iterate_agents)
  SN_CHECK_FUNCTION(agent_get_info, hsa_agent_get_info)
  SN_CHECK_FUNCTION(agent_iterate_memory_pools, hsa_amd_agent_iterate_memory_pools)
  SN_CHECK_FUNCTION(memory_pool_get_info, hsa_amd_memory_pool_get_info)
  SN_CHECK_FUNCTION(memory_pool_allocate, hsa_amd_memory_pool_allocate)
  SN_CHECK_FUNCTION(memory_pool_free, hsa_amd_memory_pool_free)
  SN_CHECK_FUNCTION(agents_allow_access, hsa_amd_agents_allow_access)
  SN_CHECK_FUNCTION(memory_async_copy, hsa_amd_memory_async_copy)
  SN_CHECK_FUNCTION(signal_create, hsa_signal_create)
  SN_CHECK_FUNCTION(signal_destroy, hsa_signal_destroy)
  SN_CHECK_FUNCTION(signal_store_screlease, hsa_signal_store_screlease)
  SN_CHECK_FUNCTION(signal_add_relaxed, hsa_signal_add_relaxed)
  SN_CHECK_FUNCTION(signal_wait_scacquire, hsa_signal_wait_scacquire)
  SN_CHECK_FUNCTION(queue_create, hsa_queue_create)
  SN_CHECK_FUNCTION(queue_destroy, hsa_queue_destroy)
  SN_CHECK_FUNCTION(queue_add_write_index_screlease, hsa_queue_add_write_index_screlease)
  SN_CHECK_FUNCTION(queue_load_read_index_scacquire, hsa_queue_load_read_index_scacquire)
  SN_CHECK_FUNCTION(code_object_reader_create_from_memory, hsa_code_object_reader_create_from_memory)
  SN_CHECK_FUNCTION(code_object_reader_destroy, hsa_code_object_reader_destroy)
  SN_CHECK_FUNCTION(executable_create_alt, hsa_executable_create_alt)
  SN_CHECK_FUNCTION(executable_load_agent_code_object, hsa_executable_load_agent_code_object)
  SN_CHECK_FUNCTION(executable_freeze, hsa_executable_freeze)
  SN_CHECK_FUNCTION(executable_get_symbol_by_name, hsa_executable_get_symbol_by_name)
  SN_CHECK_FUNCTION(executable_symbol_get_info, hsa_executable_symbol_get_info)
  SN_CHECK_FUNCTION(executable_destroy, hsa_executable_destroy)

  SN_CHECK_CONSTANT(kSuccess, HSA_STATUS_SUCCESS)
  SN_CHECK_CONSTANT(kInfoBreak, HSA_STATUS_INFO_BREAK)
  SN_CHECK_CONSTANT(kOutOfResources, HSA_STATUS_ERROR_OUT_OF_RESOURCES)
  SN_CHECK_CONSTANT(kAgentInfoName, HSA_AGENT_INFO_NAME)
  SN_CHECK_CONSTANT(kAgentInfoWavefrontSize, HSA_AGENT_INFO_WAVEFRONT_SIZE)
  SN_CHECK_CONSTANT(kAgentInfoWorkgroupMaxDim, HSA_AGENT_INFO_WORKGROUP_MAX_DIM)
  SN_CHECK_CONSTANT(kAgentInfoWorkgroupMaxSize, HSA_AGENT_INFO_WORKGROUP_MAX_SIZE)
  SN_CHECK_CONSTANT(kAgentInfoQueueMaxSize, HSA_AGENT_INFO_QUEUE_MAX_SIZE)
  SN_CHECK_CONSTANT(kAgentInfoDevice, HSA_AGENT_INFO_DEVICE)
  SN_CHECK_CONSTANT(kAmdAgentInfoComputeUnitCount, HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT)
  SN_CHECK_CONSTANT(kAmdAgentInfoProductName, HSA_AMD_AGENT_INFO_PRODUCT_NAME)
  SN_CHECK_CONSTANT(kDeviceTypeCpu, HSA_DEVICE_TYPE_CPU)
  SN_CHECK_CONSTANT(kDeviceTypeGpu, HSA_DEVICE_TYPE_GPU)
  SN_CHECK_CONSTANT(kPoolInfoSegment, HSA_AMD_MEMORY_POOL_INFO_SEGMENT)
  SN_CHECK_CONSTANT(kPoolInfoGlobalFlags, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS)
  SN_CHECK_CONSTANT(kPoolInfoRuntimeAllocAllowed, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED)
  SN_CHECK_CONSTANT(kSegmentGlobal, HSA_AMD_SEGMENT_GLOBAL)
  SN_CHECK_CONSTANT(kPoolFlagKernargInit, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT)
  SN_CHECK_CONSTANT(kPoolFlagFineGrained, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED)
  SN_CHECK_CONSTANT(kPoolFlagCoarseGrained, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED)
  SN_CHECK_CONSTANT(kSymbolKernelKernargSegmentSize, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE)
  SN_CHECK_CONSTANT(kSymbolKernelGroupSegmentSize, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE)
  SN_CHECK_CONSTANT(kSymbolKernelPrivateSegmentSize, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE)
  SN_CHECK_CONSTANT(kSymbolKernelObject, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT)
  SN_CHECK_CONSTANT(kPacketTypeKernelDispatch, HSA_PACKET_TYPE_KERNEL_DISPATCH)
  SN_CHECK_CONSTANT(kHeaderType, HSA_PACKET_HEADER_TYPE)
  SN_CHECK_CONSTANT(kHeaderBarrier, HSA_PACKET_HEADER_BARRIER)
  SN_CHECK_CONSTANT(kHeaderAcquireScope, HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE)
  SN_CHECK_CONSTANT(kHeaderReleaseScope, HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE)
  SN_CHECK_CONSTANT(kFenceScopeSystem, HSA_FENCE_SCOPE_SYSTEM)
  SN_CHECK_CONSTANT(kSetupDimensions, HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS)
  SN_CHECK_CONSTANT(kQueueTypeMulti, HSA_QUEUE_TYPE_MULTI)
  SN_CHECK_CONSTANT(kSignalConditionEq, HSA_SIGNAL_CONDITION_EQ)
  SN_CHECK_CONSTANT(kSignalConditionLt, HSA_SIGNAL_CONDITION_LT)
  SN_CHECK_CONSTANT(kWaitStateBlocked, HSA_WAIT_STATE_BLOCKED)
  SN_CHECK_CONSTANT(kProfileFull, HSA_PROFILE_FULL)
  SN_CHECK_CONSTANT(kRoundingDefault, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT)

  static_assert(sizeof(sn::hsa::Queue) == sizeof(hsa_queue_t));
  SN_CHECK_FIELD(Queue, hsa_queue_t, base_address)
  SN_CHECK_FIELD(Queue, hsa_queue_t, doorbell_signal)
  SN_CHECK_FIELD(Queue, hsa_queue_t, size)
  SN_CHECK_FIELD(Queue, hsa_queue_t, id)
  static_assert(sizeof(sn::hsa::KernelDispatchPacket) == sizeof(hsa_kernel_dispatch_packet_t));
  SN_CHECK_FIELD(KernelDispatchPacket, hsa_kernel_dispatch_packet_t, setup)
  SN_CHECK_FIELD(KernelDispatchPacket, hsa_kernel_dispatch_packet_t, workgroup_size_x)
  SN_CHECK_FIELD(KernelDispatchPacket, hsa_kernel_dispatch_packet_t, grid_size_x)
  SN_CHECK_FIELD(KernelDispatchPacket, hsa_kernel_dispatch_packet_t, private_segment_size)
  SN_CHECK_FIELD(KernelDispatchPacket, hsa_kernel_dispatch_packet_t, group_segment_size)
  SN_CHECK_FIELD(KernelDispatchPacket, hsa_kernel_dispatch_packet_t, kernel_object)
  SN_CHECK_FIELD(KernelDispatchPacket, hsa_kernel_dispatch_packet_t, kernarg_address)
  SN_CHECK_FIELD(KernelDispatchPacket, hsa_kernel_dispatch_packet_t, completion_signal)
  std::printf("%d declarations of backends/amd/hsa_api.h match %s and hsa.h\n", checked, SN_DECLS_HEADER);
  return 0;
}
