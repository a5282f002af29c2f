// The part of the CUDA Driver API the CUDA backend uses, declared by hand (Sinter needs no CUDA
// toolkit to build) and loaded at run time from the driver, libcuda.so.1 (so one build runs on
// machines without NVIDIA's driver and says why when asked for a "CUDA" device).
//
// Functions are taken under the symbols that cuda.h maps its names to (cuMemAlloc is
// cuMemAlloc_v2: the unversioned symbols are the old 32-bit-pointer ABI). Handle types are the
// same incomplete structs cuda.h names, so tests/unit/test_cuda_api.cpp can check every
// declaration against the toolkit's header where one is installed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

// cuda.h's handle structs (global, as there; never defined).
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;

namespace sn::cu {

using CUresult = int;  // cuda.h: enum cudaError_enum (int-sized)
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = ::CUctx_st*;
using CUmodule = ::CUmod_st*;
using CUfunction = ::CUfunc_st*;
using CUstream = ::CUstream_st*;
using CUevent = ::CUevent_st*;
using CUgraph = ::CUgraph_st*;
using CUgraphExec = ::CUgraphExec_st*;
using CUstreamCaptureMode = int;  // enum CUstreamCaptureMode_enum
using CUjit_option = int;         // enum CUjit_option_enum
using CUdevice_attribute = int;   // enum CUdevice_attribute_enum
using CUfunction_attribute = int;

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
inline constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER = 5;
inline constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
inline constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
inline constexpr unsigned CU_EVENT_DEFAULT = 0;
inline constexpr CUstreamCaptureMode CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;

// Function pointers, filled by load(); each names its driver symbol.
struct Api {
  CUresult (*Init)(unsigned);                                               // cuInit
  CUresult (*GetErrorName)(CUresult, const char**);                         // cuGetErrorName
  CUresult (*GetErrorString)(CUresult, const char**);                       // cuGetErrorString
  CUresult (*DeviceGetCount)(int*);                                         // cuDeviceGetCount
  CUresult (*DeviceGet)(CUdevice*, int);                                    // cuDeviceGet
  CUresult (*DeviceGetName)(char*, int, CUdevice);                          // cuDeviceGetName
  CUresult (*DeviceGetAttribute)(int*, CUdevice_attribute, CUdevice);       // cuDeviceGetAttribute
  CUresult (*DeviceTotalMem)(size_t*, CUdevice);                            // cuDeviceTotalMem_v2
  CUresult (*DevicePrimaryCtxRetain)(CUcontext*, CUdevice);                 // cuDevicePrimaryCtxRetain
  CUresult (*DevicePrimaryCtxRelease)(CUdevice);                            // cuDevicePrimaryCtxRelease_v2
  CUresult (*CtxSetCurrent)(CUcontext);                                     // cuCtxSetCurrent
  CUresult (*StreamCreate)(CUstream*, unsigned);                            // cuStreamCreate
  CUresult (*StreamDestroy)(CUstream);                                      // cuStreamDestroy_v2
  CUresult (*StreamSynchronize)(CUstream);                                  // cuStreamSynchronize
  CUresult (*MemAlloc)(CUdeviceptr*, size_t);                               // cuMemAlloc_v2
  CUresult (*MemFree)(CUdeviceptr);                                         // cuMemFree_v2
  CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);  // cuMemcpyHtoDAsync_v2
  CUresult (*MemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream);        // cuMemcpyDtoHAsync_v2
  CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);  // cuMemcpyDtoDAsync_v2
  CUresult (*ModuleLoadDataEx)(CUmodule*, const void*, unsigned, CUjit_option*, void**);  // cuModuleLoadDataEx
  CUresult (*ModuleUnload)(CUmodule);                                                     // cuModuleUnload
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*);                      // cuModuleGetFunction
  CUresult (*FuncGetAttribute)(int*, CUfunction_attribute, CUfunction);                   // cuFuncGetAttribute
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                           void**, void**);                // cuLaunchKernel
  CUresult (*EventCreate)(CUevent*, unsigned);             // cuEventCreate
  CUresult (*EventDestroy)(CUevent);                       // cuEventDestroy_v2
  CUresult (*EventRecord)(CUevent, CUstream);              // cuEventRecord
  CUresult (*EventSynchronize)(CUevent);                   // cuEventSynchronize
  CUresult (*EventElapsedTime)(float*, CUevent, CUevent);  // cuEventElapsedTime
  // CUDA graphs (stream capture); null on a driver older than CUDA 11.4, which then runs launch by launch.
  CUresult (*StreamBeginCapture)(CUstream, CUstreamCaptureMode);            // cuStreamBeginCapture_v2
  CUresult (*StreamEndCapture)(CUstream, CUgraph*);                         // cuStreamEndCapture
  CUresult (*GraphInstantiate)(CUgraphExec*, CUgraph, unsigned long long);  // cuGraphInstantiateWithFlags
  CUresult (*GraphLaunch)(CUgraphExec, CUstream);                           // cuGraphLaunch
  CUresult (*GraphExecDestroy)(CUgraphExec);                                // cuGraphExecDestroy
  CUresult (*GraphDestroy)(CUgraph);                                        // cuGraphDestroy
  bool has_graphs() const {
    return StreamBeginCapture && StreamEndCapture && GraphInstantiate && GraphLaunch && GraphExecDestroy &&
           GraphDestroy;
  }
};

// The driver, loaded and initialized (cuInit) once per process; nullptr when libcuda.so.1 or one
// of its functions is missing or cuInit fails, with the reason in *why.
const Api* load(std::string* why);

// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for a result code.
std::string error_name(const Api* api, CUresult r);

}  // namespace sn::cu
