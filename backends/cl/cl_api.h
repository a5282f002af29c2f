// The part of the OpenCL 1.2 API the OpenCL backend uses, declared by hand (Sinter needs no OpenCL
// headers to build) and loaded at run time from the ICD loader, libOpenCL.so.1 (so one build runs
// on machines without OpenCL and says why when asked for a "CL" device).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace sn::cl {

using cl_int = int32_t;
using cl_uint = uint32_t;
using cl_ulong = uint64_t;
using cl_bitfield = cl_ulong;
using cl_bool = cl_uint;
using cl_device_type = cl_bitfield;
using cl_mem_flags = cl_bitfield;
using cl_command_queue_properties = cl_bitfield;
using cl_device_fp_config = cl_bitfield;
using cl_context_properties = intptr_t;
using cl_platform_id = struct _cl_platform_id*;
using cl_device_id = struct _cl_device_id*;
using cl_context = struct _cl_context*;
using cl_command_queue = struct _cl_command_queue*;
using cl_mem = struct _cl_mem*;
using cl_program = struct _cl_program*;
using cl_kernel = struct _cl_kernel*;
using cl_event = struct _cl_event*;

inline constexpr cl_int CL_SUCCESS = 0;
inline constexpr cl_int CL_DEVICE_NOT_FOUND = -1;
inline constexpr cl_int CL_PLATFORM_NOT_FOUND_KHR = -1001;
inline constexpr cl_bool CL_TRUE = 1;
inline constexpr cl_device_type CL_DEVICE_TYPE_ALL = 0xFFFFFFFF;
inline constexpr cl_uint CL_PLATFORM_VERSION = 0x0901;
inline constexpr cl_uint CL_PLATFORM_NAME = 0x0902;
inline constexpr cl_uint CL_DEVICE_MAX_COMPUTE_UNITS = 0x1002;
inline constexpr cl_uint CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS = 0x1003;
inline constexpr cl_uint CL_DEVICE_MAX_WORK_GROUP_SIZE = 0x1004;
inline constexpr cl_uint CL_DEVICE_MAX_WORK_ITEM_SIZES = 0x1005;
inline constexpr cl_uint CL_DEVICE_MAX_MEM_ALLOC_SIZE = 0x1010;
inline constexpr cl_uint CL_DEVICE_SINGLE_FP_CONFIG = 0x101B;
inline constexpr cl_uint CL_DEVICE_LOCAL_MEM_SIZE = 0x1023;
inline constexpr cl_uint CL_DEVICE_NAME = 0x102B;
inline constexpr cl_uint CL_DEVICE_VERSION = 0x102F;
inline constexpr cl_uint CL_DEVICE_EXTENSIONS = 0x1030;
inline constexpr cl_uint CL_DEVICE_DOUBLE_FP_CONFIG = 0x1032;
inline constexpr cl_device_fp_config CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT = 1 << 7;
inline constexpr cl_mem_flags CL_MEM_READ_WRITE = 1 << 0;
inline constexpr cl_uint CL_PROGRAM_BUILD_LOG = 0x1183;
inline constexpr cl_uint CL_KERNEL_WORK_GROUP_SIZE = 0x11B0;

// Function pointers, filled by load().
struct Api {
  cl_int (*GetPlatformIDs)(cl_uint, cl_platform_id*, cl_uint*);
  cl_int (*GetPlatformInfo)(cl_platform_id, cl_uint, size_t, void*, size_t*);
  cl_int (*GetDeviceIDs)(cl_platform_id, cl_device_type, cl_uint, cl_device_id*, cl_uint*);
  cl_int (*GetDeviceInfo)(cl_device_id, cl_uint, size_t, void*, size_t*);
  cl_context (*CreateContext)(const cl_context_properties*, cl_uint, const cl_device_id*,
                              void (*)(const char*, const void*, size_t, void*), void*, cl_int*);
  cl_int (*ReleaseContext)(cl_context);
  cl_command_queue (*CreateCommandQueue)(cl_context, cl_device_id, cl_command_queue_properties, cl_int*);
  cl_int (*ReleaseCommandQueue)(cl_command_queue);
  cl_mem (*CreateBuffer)(cl_context, cl_mem_flags, size_t, void*, cl_int*);
  cl_int (*ReleaseMemObject)(cl_mem);
  cl_int (*EnqueueReadBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void*, cl_uint, const cl_event*,
                              cl_event*);
  cl_int (*EnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void*, cl_uint, const cl_event*,
                               cl_event*);
  cl_int (*EnqueueCopyBuffer)(cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t, cl_uint, const cl_event*,
                              cl_event*);
  cl_program (*CreateProgramWithSource)(cl_context, cl_uint, const char**, const size_t*, cl_int*);
  cl_int (*BuildProgram)(cl_program, cl_uint, const cl_device_id*, const char*, void (*)(cl_program, void*), void*);
  cl_int (*GetProgramBuildInfo)(cl_program, cl_device_id, cl_uint, size_t, void*, size_t*);
  cl_int (*ReleaseProgram)(cl_program);
  cl_kernel (*CreateKernel)(cl_program, const char*, cl_int*);
  cl_int (*GetKernelWorkGroupInfo)(cl_kernel, cl_device_id, cl_uint, size_t, void*, size_t*);
  cl_int (*ReleaseKernel)(cl_kernel);
  cl_int (*SetKernelArg)(cl_kernel, cl_uint, size_t, const void*);
  cl_int (*EnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint, const size_t*, const size_t*, const size_t*,
                                 cl_uint, const cl_event*, cl_event*);
  cl_int (*Flush)(cl_command_queue);
  cl_int (*Finish)(cl_command_queue);
};

// The API of the ICD loader ($SN_OPENCL_LIBRARY, default libOpenCL.so.1), loaded once per process
// and kept; nullptr with the reason in *why when the library or a function is missing.
const Api* load(std::string* why);

// "CL_OUT_OF_RESOURCES (-5)".
std::string error_name(cl_int code);

}  // namespace sn::cl
