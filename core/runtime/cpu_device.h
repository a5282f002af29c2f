// The CPU device: host memory (64-byte aligned), kernels lowered for the host CPU, compiled by the
// LLVM backend (backends/cpu) and run on its thread pool. Only available when the CPU backend is
// built (SN_BACKEND_CPU); otherwise opening it is an Error(Device).
#pragma once
#include <memory>

#include "core/runtime/device.h"

namespace sn {

// True when this build has the CPU backend.
bool cpu_backend_available();
// A new CPU device for the canonical name "CPU" (throws Error(Device) when the backend is not
// built in, or for another name such as "CPU:1": there is one CPU device).
std::shared_ptr<ComputeDevice> make_cpu_device(const std::string& name, const DeviceOptions& options);

}  // namespace sn
