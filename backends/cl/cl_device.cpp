// The OpenCL backend: devices "CL", "CL:1", ... are the OpenCL devices of every platform the ICD
// loader finds, in order. Kernels are OpenCL C from the C-style renderer (backends/cstyle), built
// by the driver; built programs are cached in memory by their source text (drivers like pocl
// compile slowly), kernels by the lowered kernel's key. One in-order queue per device: launches
// are asynchronous, host copies block (and so wait for the launches before them).
//
// Buffers are cl_mem objects; a launch passes each buffer as (cl_mem, byte offset), so views and
// arena slices need no sub-buffers (whose alignment rules vary by device).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "backends/cl/cl_api.h"
#include "backends/cstyle/cstyle.h"
#include "core/runtime/device.h"
#include "core/util/error.h"

namespace sn {

namespace {

using namespace sn::cl;

// Every OpenCL device of every platform, in platform order.
struct DeviceList {
  std::vector<std::pair<cl_platform_id, cl_device_id>> devices;
  std::string why;  // why there are none
};

DeviceList enumerate() {
  DeviceList out;
  const Api* api = load(&out.why);
  if (!api) return out;
  cl_uint np = 0;
  cl_int err = api->GetPlatformIDs(0, nullptr, &np);
  if (err == CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && np == 0)) {
    out.why = "no OpenCL platform: the ICD loader found no driver (install one, e.g. Debian's pocl-opencl-icd)";
    return out;
  }
  if (err != CL_SUCCESS) {
    out.why = cat("clGetPlatformIDs failed: ", error_name(err));
    return out;
  }
  std::vector<cl_platform_id> platforms(np);
  api->GetPlatformIDs(np, platforms.data(), nullptr);
  for (cl_platform_id p : platforms) {
    cl_uint nd = 0;
    if (api->GetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
    std::vector<cl_device_id> ds(nd);
    api->GetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, ds.data(), nullptr);
    for (cl_device_id d : ds) out.devices.emplace_back(p, d);
  }
  if (out.devices.empty()) out.why = cat("the ", np, " OpenCL platform(s) have no device");
  return out;
}

// Device lists do not change while a process runs: enumerated once.
const DeviceList& devices() {
  static const DeviceList list = enumerate();
  return list;
}

std::string device_string(const Api* api, cl_device_id d, cl_uint what) {
  size_t n = 0;
  if (api->GetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  api->GetDeviceInfo(d, what, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

template <class T>
T device_value(const Api* api, cl_device_id d, cl_uint what) {
  T v{};
  if (api->GetDeviceInfo(d, what, sizeof v, &v, nullptr) != CL_SUCCESS) return T{};
  return v;
}

// A built program, shared by every kernel rendered to the same source.
struct ClProgram {
  const Api* api;
  cl_program program = nullptr;
  ~ClProgram() {
    if (program) api->ReleaseProgram(program);
  }
};

struct ClKernel final : DeviceKernel {
  const Api* api = nullptr;
  std::shared_ptr<ClProgram> program;
  cl_kernel kernel = nullptr;
  mutable std::mutex mu;  // clSetKernelArg + enqueue of one cl_kernel: one thread at a time
  ~ClKernel() override {
    if (kernel) api->ReleaseKernel(kernel);
  }
};

class ClDevice final : public ComputeDevice {
 public:
  ClDevice(std::string name, Target target, const Api* api, cl_platform_id platform, cl_device_id device)
      : ComputeDevice(std::move(name), std::move(target)), api_(api), platform_(platform), device_(device) {
    cl_int err = CL_SUCCESS;
    context_ = api_->CreateContext(nullptr, 1, &device_, nullptr, nullptr, &err);
    check(err, "clCreateContext");
    queue_ = api_->CreateCommandQueue(context_, device_, 0, &err);
    if (err != CL_SUCCESS) api_->ReleaseContext(context_);
    check(err, "clCreateCommandQueue");
    auto fp = device_value<cl_device_fp_config>(api_, device_, CL_DEVICE_SINGLE_FP_CONFIG);
    // Division and sqrt correctly rounded, as on the CPU, where the device can (the default is
    // 2.5 ulp); no fast-math flags ever.
    if (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) build_options_ = "-cl-fp32-correctly-rounded-divide-sqrt ";
    // Generated code compares what it must (a bool with 0, x != x as a NaN test): no warnings.
    build_options_ += "-w";
    max_alloc_ = device_value<cl_ulong>(api_, device_, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  }
  ~ClDevice() override {
    programs_.clear();
    if (queue_) {
      api_->Finish(queue_);
      api_->ReleaseCommandQueue(queue_);
    }
    if (context_) api_->ReleaseContext(context_);
  }

  std::string description() const override {
    size_t n = 0;
    std::string platform;
    if (api_->GetPlatformInfo(platform_, CL_PLATFORM_NAME, 0, nullptr, &n) == CL_SUCCESS && n > 0) {
      platform.resize(n);
      api_->GetPlatformInfo(platform_, CL_PLATFORM_NAME, n, platform.data(), nullptr);
      while (!platform.empty() && platform.back() == '\0') platform.pop_back();
    }
    return cat(device_string(api_, device_, CL_DEVICE_NAME), " (", platform, ", ",
               device_string(api_, device_, CL_DEVICE_VERSION), ")");
  }

  // ---- memory ---------------------------------------------------------------------------------
  std::shared_ptr<Storage> allocate(size_t bytes) override {
    if (max_alloc_ && bytes > max_alloc_)
      fail(Code::OutOfMemory, name(), ": cannot allocate ", bytes, " bytes (the device allows ", max_alloc_,
           " per buffer)");
    cl_int err = CL_SUCCESS;
    // A 0-byte buffer still gets an object (OpenCL has no empty buffers).
    cl_mem m =
        api_->CreateBuffer(context_, CL_MEM_READ_WRITE, std::max<size_t>(bytes, kBufferAlignment), nullptr, &err);
    if (err != CL_SUCCESS || !m)
      fail(Code::OutOfMemory, name(), ": cannot allocate ", bytes, " bytes: ", error_name(err));
    const Api* api = api_;
    return std::make_shared<Storage>(shared_from_this(), m, bytes,
                                     [api](void* p) { api->ReleaseMemObject(static_cast<cl_mem>(p)); });
  }
  void copy_in(Storage& dst, size_t offset, const void* src, size_t bytes) override {
    check(api_->EnqueueWriteBuffer(queue_, mem(dst), CL_TRUE, offset, bytes, src, 0, nullptr, nullptr),
          "clEnqueueWriteBuffer");
  }
  void copy_out(const Storage& src, size_t offset, void* dst, size_t bytes) override {
    check(api_->EnqueueReadBuffer(queue_, mem(src), CL_TRUE, offset, bytes, dst, 0, nullptr, nullptr),
          "clEnqueueReadBuffer");
  }
  void copy(Storage& dst, size_t dst_offset, const Storage& src, size_t src_offset, size_t bytes) override {
    check(api_->EnqueueCopyBuffer(queue_, mem(src), mem(dst), src_offset, dst_offset, bytes, 0, nullptr, nullptr),
          "clEnqueueCopyBuffer");
  }

  // ---- compiler -------------------------------------------------------------------------------
  std::shared_ptr<const DeviceKernel> find(uint64_t key) const override { return cache_.find(key); }
  std::shared_ptr<const DeviceKernel> compile(const LoweredKernel& lk) override {
    return cache_.get(lk, [this](const LoweredKernel& k) { return build_kernel(k); });
  }

  // ---- queue ----------------------------------------------------------------------------------
  void launch(const DeviceKernel& dk, std::span<const DevicePtr> bufs, std::span<const int64_t> vars,
              const LaunchSize& size) override {
    const auto& k = static_cast<const ClKernel&>(dk);
    if (!launch_fits(k, size)) return;
    size_t global[3], local[3];
    for (size_t d = 0; d < 3; d++) {
      global[d] = size_t(size.global[d]) * size_t(size.local[d]);
      local[d] = size_t(size.local[d]);
    }
    std::lock_guard<std::mutex> lk(k.mu);
    cl_uint arg = 0;
    for (const KernelParam& p : k.params) {
      if (size_t(p.slot) >= bufs.size()) fail(Code::Internal, name(), ": ", k.name, " has no buffer for slot ", p.slot);
      cl_mem m = static_cast<cl_mem>(bufs[size_t(p.slot)].base);
      cl_ulong off = bufs[size_t(p.slot)].offset;
      check(api_->SetKernelArg(k.kernel, arg++, sizeof m, &m), "clSetKernelArg");
      check(api_->SetKernelArg(k.kernel, arg++, sizeof off, &off), "clSetKernelArg");
    }
    for (int64_t v : vars) {
      int64_t x = v;
      check(api_->SetKernelArg(k.kernel, arg++, sizeof x, &x), "clSetKernelArg");
    }
    check(api_->EnqueueNDRangeKernel(queue_, k.kernel, 3, nullptr, global, local, 0, nullptr, nullptr),
          cat("launching ", k.name).c_str());
    api_->Flush(queue_);
  }
  void synchronize() override { check(api_->Finish(queue_), "clFinish"); }

  Stats stats() const override { return cache_.stats(); }

 private:
  // The OpenCL C of a lowered kernel, built (or found built: programs are cached by their source
  // text, so two kernels that render alike build once).
  std::shared_ptr<const ClKernel> build_kernel(const LoweredKernel& k) {
    std::string fname = c_identifier(k.name);
    CKernel ck = render_c(k, kOpenCL, fname);
    std::string source = c_prelude(kOpenCL, ck.helpers, ck.uses_double) + ck.function;
    auto t0 = std::chrono::steady_clock::now();
    std::shared_ptr<ClProgram>& program = programs_[source];
    if (!program) {
      auto built = std::make_shared<ClProgram>();
      built->api = api_;
      try {
        built->program = build(source);
      } catch (...) {
        programs_.erase(source);
        throw;
      }
      program = built;
    }
    auto kernel = std::make_shared<ClKernel>();
    kernel->describe(k);
    kernel->source = source;
    kernel->api = api_;
    kernel->program = program;
    cl_int err = CL_SUCCESS;
    kernel->kernel = api_->CreateKernel(program->program, fname.c_str(), &err);
    check(err, "clCreateKernel");
    size_t max_items = 0;
    check(api_->GetKernelWorkGroupInfo(kernel->kernel, device_, CL_KERNEL_WORK_GROUP_SIZE, sizeof max_items, &max_items,
                                       nullptr),
          "clGetKernelWorkGroupInfo");
    if (k.dims.local_items() > int64_t(max_items))
      fail(Code::Compile, name(), ": kernel ", k.name, " needs ", k.dims.local_items(),
           " work-items per group, the driver allows ", max_items, " for it");
    kernel->compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return kernel;
  }

  static cl_mem mem(const Storage& s) { return static_cast<cl_mem>(s.ptr()); }

  void check(cl_int err, const char* what) const {
    if (err == CL_SUCCESS) return;
    Code code = err == -4 || err == -5 || err == -6 ? Code::OutOfMemory : Code::Device;
    fail(code, name(), ": ", what, " failed: ", error_name(err));
  }

  cl_program build(const std::string& source) {
    const char* text = source.c_str();
    size_t len = source.size();
    cl_int err = CL_SUCCESS;
    cl_program p = api_->CreateProgramWithSource(context_, 1, &text, &len, &err);
    check(err, "clCreateProgramWithSource");
    err = api_->BuildProgram(p, 1, &device_, build_options_.c_str(), nullptr, nullptr);
    if (err != CL_SUCCESS) {
      size_t n = 0;
      std::string log;
      if (api_->GetProgramBuildInfo(p, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) == CL_SUCCESS && n > 0) {
        log.resize(n);
        api_->GetProgramBuildInfo(p, device_, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
      }
      api_->ReleaseProgram(p);
      fail(Code::Compile, name(), ": the OpenCL compiler rejected a kernel (", error_name(err), "):\n", log, "\n",
           source);
    }
    return p;
  }

  const Api* api_;
  cl_platform_id platform_;
  cl_device_id device_;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  std::string build_options_;
  cl_ulong max_alloc_ = 0;
  KernelCache cache_;  // (its lock also guards programs_: builds run inside it)
  std::unordered_map<std::string, std::shared_ptr<ClProgram>> programs_;
};

// What the optimizer and the renderer may assume about an OpenCL device.
Target cl_target(const Api* api, cl_device_id d) {
  Target t;
  t.renderer = "CL";
  t.arch = device_string(api, d, CL_DEVICE_NAME) + " / " + device_string(api, d, CL_DEVICE_VERSION);
  t.features = device_string(api, d, CL_DEVICE_EXTENSIONS);
  t.has_local = true;
  t.local_memory_bytes = int64_t(device_value<cl_ulong>(api, d, CL_DEVICE_LOCAL_MEM_SIZE));
  t.has_shared = t.local_memory_bytes > 0;
  t.max_local_total = int64_t(device_value<size_t>(api, d, CL_DEVICE_MAX_WORK_GROUP_SIZE));
  t.compute_units = int(device_value<cl_uint>(api, d, CL_DEVICE_MAX_COMPUTE_UNITS));
  size_t sizes[3] = {1, 1, 1};
  cl_uint dims = device_value<cl_uint>(api, d, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS);
  if (dims >= 3) api->GetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof sizes, sizes, nullptr);
  for (size_t i = 0; i < 3; i++) t.max_local_size[i] = int64_t(sizes[i]);
  t.max_global_size = {int64_t(INT32_MAX), int64_t(INT32_MAX), int64_t(INT32_MAX)};
  t.vector_bits = 0;  // scalar code: the driver vectorizes across work-items
  bool fp64 = device_value<cl_device_fp_config>(api, d, CL_DEVICE_DOUBLE_FP_CONFIG) != 0 ||
              t.features.find("cl_khr_fp64") != std::string::npos;
  if (!fp64) t.drop(Scalar::Float64);
  return t;
}

[[maybe_unused]] const bool registered = register_backend(Backend{
    "CL", 10,
    [](std::string* why) {
      const DeviceList& list = devices();
      if (list.devices.empty() && why) *why = list.why;
      return int(list.devices.size());
    },
    [](const std::string& name, int index, const DeviceOptions&) -> std::shared_ptr<ComputeDevice> {
      const DeviceList& list = devices();
      if (list.devices.empty()) fail(Code::Device, "device '", name, "' is not available: ", list.why);
      if (size_t(index) >= list.devices.size())
        fail(Code::Device, "device '", name, "' is not available: there are ", list.devices.size(),
             " OpenCL devices (CL", list.devices.size() > 1 ? cat(" .. CL:", list.devices.size() - 1) : "", ")");
      const Api* api = load(nullptr);
      auto [platform, device] = list.devices[size_t(index)];
      return std::make_shared<ClDevice>(name, cl_target(api, device), api, platform, device);
    }});

}  // namespace

}  // namespace sn
