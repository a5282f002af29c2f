// backends/cuda/cuda_api.h against the CUDA toolkit's cuda.h, where one is installed: every
// function pointer of sn::cu::Api has the parameters and result of the driver symbol it is loaded
// from (enums and ints of one size count as the same), and every constant has cuda.h's value. The
// checks are static_asserts: this program builds only if they hold, and running it reports them.
#include <cuda.h>

#include <cstdio>
#include <type_traits>

#include "backends/cuda/cuda_api.h"

namespace {

template <class A, class B>
constexpr bool same_abi() {
  if constexpr (std::is_same_v<A, B>)
    return true;
  else if constexpr (std::is_pointer_v<A> && std::is_pointer_v<B>)
    return std::is_const_v<std::remove_pointer_t<A>> == std::is_const_v<std::remove_pointer_t<B>> &&
           same_abi<std::remove_cv_t<std::remove_pointer_t<A>>, std::remove_cv_t<std::remove_pointer_t<B>>>();
  else if constexpr ((std::is_enum_v<A> || std::is_integral_v<A>)&&(std::is_enum_v<B> || std::is_integral_v<B>))
    return sizeof(A) == sizeof(B);
  else
    return false;
}

template <class R1, class... A1, class R2, class... A2>
constexpr bool same_function(R1 (*)(A1...), R2 (*)(A2...)) {
  if constexpr (sizeof...(A1) != sizeof...(A2))
    return false;
  else
    return same_abi<R1, R2>() && (same_abi<A1, A2>() && ...);
}

int checked = 0;
#define SN_CHECK_FUNCTION(member, symbol)                                                               \
  static_assert(same_function(decltype(sn::cu::Api::member){}, &::symbol), #member " is not " #symbol); \
  checked++;
#define SN_CHECK_CONSTANT(name)                                   \
  static_assert(sn::cu::name == static_cast<int>(::name), #name); \
  checked++;

}  // namespace

int main() {
  SN_CHECK_FUNCTION(Init, cuInit)
  SN_CHECK_FUNCTION(GetErrorName, cuGetErrorName)
  SN_CHECK_FUNCTION(GetErrorString, cuGetErrorString)
  SN_CHECK_FUNCTION(DeviceGetCount, cuDeviceGetCount)
  SN_CHECK_FUNCTION(DeviceGet, cuDeviceGet)
  SN_CHECK_FUNCTION(DeviceGetName, cuDeviceGetName)
  SN_CHECK_FUNCTION(DeviceGetAttribute, cuDeviceGetAttribute)
  SN_CHECK_FUNCTION(DeviceTotalMem, cuDeviceTotalMem_v2)
  SN_CHECK_FUNCTION(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain)
  SN_CHECK_FUNCTION(DevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2)
  SN_CHECK_FUNCTION(CtxSetCurrent, cuCtxSetCurrent)
  SN_CHECK_FUNCTION(StreamCreate, cuStreamCreate)
  SN_CHECK_FUNCTION(StreamDestroy, cuStreamDestroy_v2)
  SN_CHECK_FUNCTION(StreamSynchronize, cuStreamSynchronize)
  SN_CHECK_FUNCTION(MemAlloc, cuMemAlloc_v2)
  SN_CHECK_FUNCTION(MemFree, cuMemFree_v2)
  SN_CHECK_FUNCTION(MemcpyHtoDAsync, cuMemcpyHtoDAsync_v2)
  SN_CHECK_FUNCTION(MemcpyDtoHAsync, cuMemcpyDtoHAsync_v2)
  SN_CHECK_FUNCTION(MemcpyDtoDAsync, cuMemcpyDtoDAsync_v2)
  SN_CHECK_FUNCTION(ModuleLoadDataEx, cuModuleLoadDataEx)
  SN_CHECK_FUNCTION(ModuleUnload, cuModuleUnload)
  SN_CHECK_FUNCTION(ModuleGetFunction, cuModuleGetFunction)
  SN_CHECK_FUNCTION(FuncGetAttribute, cuFuncGetAttribute)
  SN_CHECK_FUNCTION(LaunchKernel, cuLaunchKernel)
  SN_CHECK_FUNCTION(EventCreate, cuEventCreate)
  SN_CHECK_FUNCTION(EventDestroy, cuEventDestroy_v2)
  SN_CHECK_FUNCTION(EventRecord, cuEventRecord)
  SN_CHECK_FUNCTION(EventSynchronize, cuEventSynchronize)
  SN_CHECK_FUNCTION(EventElapsedTime, cuEventElapsedTime)
  SN_CHECK_FUNCTION(StreamBeginCapture, cuStreamBeginCapture_v2)
  SN_CHECK_FUNCTION(StreamEndCapture, cuStreamEndCapture)
  SN_CHECK_FUNCTION(GraphInstantiate, cuGraphInstantiateWithFlags)
  SN_CHECK_FUNCTION(GraphLaunch, cuGraphLaunch)
  SN_CHECK_FUNCTION(GraphExecDestroy, cuGraphExecDestroy)
  SN_CHECK_FUNCTION(GraphDestroy, cuGraphDestroy)
  SN_CHECK_CONSTANT(CUDA_SUCCESS)
  SN_CHECK_CONSTANT(CUDA_ERROR_OUT_OF_MEMORY)
  SN_CHECK_CONSTANT(CUDA_ERROR_NO_DEVICE)
  SN_CHECK_CONSTANT(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
  SN_CHECK_CONSTANT(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)
  SN_CHECK_CONSTANT(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)
  SN_CHECK_CONSTANT(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)
  SN_CHECK_CONSTANT(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)
  SN_CHECK_CONSTANT(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)
  SN_CHECK_CONSTANT(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)
  SN_CHECK_CONSTANT(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)
  SN_CHECK_CONSTANT(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
  SN_CHECK_CONSTANT(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
  SN_CHECK_CONSTANT(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
  SN_CHECK_CONSTANT(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
  SN_CHECK_CONSTANT(CU_JIT_ERROR_LOG_BUFFER)
  SN_CHECK_CONSTANT(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
  SN_CHECK_CONSTANT(CU_STREAM_NON_BLOCKING)
  SN_CHECK_CONSTANT(CU_EVENT_DEFAULT)
  SN_CHECK_CONSTANT(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
  std::printf("%d declarations of backends/cuda/cuda_api.h match %s\n", checked, SN_DECLS_HEADER);
  return checked == 55 ? 0 : 1;
}
