#include "backends/cl/cl_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "core/util/error.h"

namespace sn::cl {

const Api* load(std::string* why) {
  static std::once_flag once;
  static Api api;
  static const Api* loaded = nullptr;
  static std::string error;
  std::call_once(once, [] {
    const char* env = std::getenv("SN_OPENCL_LIBRARY");
    std::string name = env && *env ? env : "libOpenCL.so.1";
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      error = cat("cannot load the OpenCL ICD loader ", name, " (", e ? e : "unknown error",
                  "); install one, e.g. Debian's ocl-icd-libopencl1 with a driver such as pocl-opencl-icd");
      return;
    }
    bool ok = true;
    auto sym = [&](auto& fn, const char* n) {
      void* p = dlsym(lib, n);
      if (!p) {
        error = cat(name, " has no ", n);
        ok = false;
      }
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
    sym(api.GetPlatformIDs, "clGetPlatformIDs");
    sym(api.GetPlatformInfo, "clGetPlatformInfo");
    sym(api.GetDeviceIDs, "clGetDeviceIDs");
    sym(api.GetDeviceInfo, "clGetDeviceInfo");
    sym(api.CreateContext, "clCreateContext");
    sym(api.ReleaseContext, "clReleaseContext");
    sym(api.CreateCommandQueue, "clCreateCommandQueue");
    sym(api.ReleaseCommandQueue, "clReleaseCommandQueue");
    sym(api.CreateBuffer, "clCreateBuffer");
    sym(api.ReleaseMemObject, "clReleaseMemObject");
    sym(api.EnqueueReadBuffer, "clEnqueueReadBuffer");
    sym(api.EnqueueWriteBuffer, "clEnqueueWriteBuffer");
    sym(api.EnqueueCopyBuffer, "clEnqueueCopyBuffer");
    sym(api.CreateProgramWithSource, "clCreateProgramWithSource");
    sym(api.BuildProgram, "clBuildProgram");
    sym(api.GetProgramBuildInfo, "clGetProgramBuildInfo");
    sym(api.ReleaseProgram, "clReleaseProgram");
    sym(api.CreateKernel, "clCreateKernel");
    sym(api.GetKernelWorkGroupInfo, "clGetKernelWorkGroupInfo");
    sym(api.ReleaseKernel, "clReleaseKernel");
    sym(api.SetKernelArg, "clSetKernelArg");
    sym(api.EnqueueNDRangeKernel, "clEnqueueNDRangeKernel");
    sym(api.Flush, "clFlush");
    sym(api.Finish, "clFinish");
    if (ok) loaded = &api;  // the library stays loaded for the process: kernels may outlive any context
  });
  if (!loaded && why) *why = error;
  return loaded;
}

std::string error_name(cl_int code) {
  static const std::pair<cl_int, const char*> names[] = {
      {0, "CL_SUCCESS"},
      {-1, "CL_DEVICE_NOT_FOUND"},
      {-2, "CL_DEVICE_NOT_AVAILABLE"},
      {-3, "CL_COMPILER_NOT_AVAILABLE"},
      {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
      {-5, "CL_OUT_OF_RESOURCES"},
      {-6, "CL_OUT_OF_HOST_MEMORY"},
      {-11, "CL_BUILD_PROGRAM_FAILURE"},
      {-30, "CL_INVALID_VALUE"},
      {-33, "CL_INVALID_DEVICE"},
      {-34, "CL_INVALID_CONTEXT"},
      {-36, "CL_INVALID_COMMAND_QUEUE"},
      {-38, "CL_INVALID_MEM_OBJECT"},
      {-43, "CL_INVALID_BUILD_OPTIONS"},
      {-44, "CL_INVALID_PROGRAM"},
      {-46, "CL_INVALID_KERNEL_NAME"},
      {-48, "CL_INVALID_KERNEL"},
      {-49, "CL_INVALID_ARG_INDEX"},
      {-50, "CL_INVALID_ARG_VALUE"},
      {-51, "CL_INVALID_ARG_SIZE"},
      {-52, "CL_INVALID_KERNEL_ARGS"},
      {-53, "CL_INVALID_WORK_DIMENSION"},
      {-54, "CL_INVALID_WORK_GROUP_SIZE"},
      {-55, "CL_INVALID_WORK_ITEM_SIZE"},
      {-56, "CL_INVALID_GLOBAL_OFFSET"},
      {-61, "CL_INVALID_BUFFER_SIZE"},
      {-63, "CL_INVALID_GLOBAL_WORK_SIZE"},
      {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
  };
  for (const auto& [c, n] : names)
    if (c == code) return cat(n, " (", code, ")");
  return cat("OpenCL error ", code);
}

}  // namespace sn::cl
