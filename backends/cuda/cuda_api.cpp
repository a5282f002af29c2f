// Loading the CUDA driver (backends/cuda/cuda_api.h).
#include "backends/cuda/cuda_api.h"

#include "core/util/dynlib.h"

namespace sn::cu {

const Api* load(std::string* why) {
  return load_once<Api>(why, [](Api& api) -> std::string {
    static DynLib lib("libcuda.so.1");
    lib.sym(api.Init, "cuInit");
    lib.sym(api.GetErrorName, "cuGetErrorName");
    lib.sym(api.GetErrorString, "cuGetErrorString");
    lib.sym(api.DeviceGetCount, "cuDeviceGetCount");
    lib.sym(api.DeviceGet, "cuDeviceGet");
    lib.sym(api.DeviceGetName, "cuDeviceGetName");
    lib.sym(api.DeviceGetAttribute, "cuDeviceGetAttribute");
    lib.sym(api.DeviceTotalMem, "cuDeviceTotalMem_v2");
    lib.sym(api.DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    lib.sym(api.DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    lib.sym(api.CtxSetCurrent, "cuCtxSetCurrent");
    lib.sym(api.StreamCreate, "cuStreamCreate");
    lib.sym(api.StreamDestroy, "cuStreamDestroy_v2");
    lib.sym(api.StreamSynchronize, "cuStreamSynchronize");
    lib.sym(api.MemAlloc, "cuMemAlloc_v2");
    lib.sym(api.MemFree, "cuMemFree_v2");
    lib.sym(api.MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    lib.sym(api.MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    lib.sym(api.MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
    lib.sym(api.ModuleLoadDataEx, "cuModuleLoadDataEx");
    lib.sym(api.ModuleUnload, "cuModuleUnload");
    lib.sym(api.ModuleGetFunction, "cuModuleGetFunction");
    lib.sym(api.FuncGetAttribute, "cuFuncGetAttribute");
    lib.sym(api.LaunchKernel, "cuLaunchKernel");
    lib.sym(api.EventCreate, "cuEventCreate");
    lib.sym(api.EventDestroy, "cuEventDestroy_v2");
    lib.sym(api.EventRecord, "cuEventRecord");
    lib.sym(api.EventSynchronize, "cuEventSynchronize");
    lib.sym(api.EventElapsedTime, "cuEventElapsedTime");
    lib.optional_sym(api.StreamBeginCapture, "cuStreamBeginCapture_v2");
    lib.optional_sym(api.StreamEndCapture, "cuStreamEndCapture");
    lib.optional_sym(api.GraphInstantiate, "cuGraphInstantiateWithFlags");
    lib.optional_sym(api.GraphLaunch, "cuGraphLaunch");
    lib.optional_sym(api.GraphExecDestroy, "cuGraphExecDestroy");
    lib.optional_sym(api.GraphDestroy, "cuGraphDestroy");
    if (!lib.ok()) return cat(lib.error(), " (the NVIDIA driver is not installed)");
    if (CUresult r = api.Init(0); r != CUDA_SUCCESS) return cat("cuInit failed: ", error_name(&api, r));
    return "";
  });
}

std::string error_name(const Api* api, CUresult r) {
  const char *name = nullptr, *text = nullptr;
  if (!api || api->GetErrorName(r, &name) != CUDA_SUCCESS || !name) return cat("CUDA error ", r);
  if (api->GetErrorString(r, &text) != CUDA_SUCCESS || !text) return name;
  return cat(name, " (", text, ")");
}

}  // namespace sn::cu
