#include "core/runtime/device.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>

#include "core/util/error.h"

namespace sn {

void DeviceKernel::describe(const LoweredKernel& k) {
  name = k.name;
  params = k.params;
  vars = k.vars;
  threads = k.threads;
  dims = k.dims;
  features = k.features;
  opts = k.opts;
  stage_ms = k.stage_ms;
}

std::string DeviceKernel::launch_shape() const {
  if (dims.local_items() == 1 && dims.global[0].is_const() && dims.global[0].eval(nullptr) == 1 &&
      dims.global[1].is_const() && dims.global[2].is_const() && dims.global[1].eval(nullptr) == 1 &&
      dims.global[2].eval(nullptr) == 1)
    return cat("threads ", threads);
  return cat("grid ", dims.global[0].str(vars), "x", dims.global[1].str(vars), "x", dims.global[2].str(vars), " of ",
             dims.local[0], "x", dims.local[1], "x", dims.local[2]);
}

bool ComputeDevice::launch_fits(const DeviceKernel& k, const LaunchSize& size) const {
  for (size_t d = 0; d < 3; d++)
    if (size.global[d] <= 0) return false;
  for (size_t d = 0; d < 3; d++)
    if (size.global[d] > target_.max_global_size[d] || size.local[d] > target_.max_local_size[d])
      fail(Code::InvalidArg, name_, ": ", k.name, " launches ", size.global[0], "x", size.global[1], "x",
           size.global[2], " work-groups of ", size.local[0], "x", size.local[1], "x", size.local[2],
           " work-items, over the device's limits");
  return true;
}

double ComputeDevice::time_launch(const DeviceKernel& k, std::span<const DevicePtr> bufs, std::span<const int64_t> vars,
                                  const LaunchSize& size) {
  auto t0 = std::chrono::steady_clock::now();
  launch(k, bufs, vars, size);
  synchronize();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void ComputeDevice::copy(Storage& dst, size_t dst_offset, const Storage& src, size_t src_offset, size_t bytes) {
  std::vector<char> host(bytes);
  copy_out(src, src_offset, host.data(), bytes);
  copy_in(dst, dst_offset, host.data(), bytes);
}

std::string ComputeDevice::export_c(const Program&, const std::string&) const {
  fail(Code::Unsupported, "export_c: the program is compiled for ", name_,
       "; compile it for device \"C\" to export it as C source");
}

void copy_buffer(Buffer& dst, const Buffer& src) {
  if (dst.dtype() != src.dtype() || dst.numel() != src.numel())
    fail(Code::InvalidArg, "buffer copy: ", src.str(), " does not fit ", dst.str(), " (same dtype and size needed)");
  if (src.nbytes() == 0) return;
  if (&dst.device() == &src.device()) {
    if (dst.overlaps(src)) fail(Code::InvalidArg, "buffer copy: ", src.str(), " overlaps the destination");
    dst.device().copy(*dst.storage(), dst.byte_offset(), *src.storage(), src.byte_offset(), src.nbytes());
    return;
  }
  std::vector<char> host(src.nbytes());
  src.copy_out(host.data(), host.size());
  dst.copy_in(host.data(), host.size());
}

std::shared_ptr<const DeviceKernel> KernelCache::find(uint64_t key) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = kernels_.find(key);
  return it == kernels_.end() ? nullptr : it->second;
}

std::shared_ptr<const DeviceKernel> KernelCache::get(const LoweredKernel& k, const Compiler& compile) {
  std::lock_guard<std::mutex> one_compile(compile_mu_);
  if (auto hit = find(k.key)) {
    std::lock_guard<std::mutex> lk(mu_);
    stats_.cache_hits++;
    return hit;
  }
  std::shared_ptr<const DeviceKernel> kernel = compile(k);
  std::lock_guard<std::mutex> lk(mu_);
  stats_.compiled++;
  stats_.compile_ms += kernel->compile_ms;
  kernels_.emplace(k.key, kernel);
  return kernel;
}

ComputeDevice::Stats KernelCache::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  return stats_;
}

// ---- backends -----------------------------------------------------------------------------------

namespace {

// Written only while static initializers run (register_backend), read afterwards.
std::vector<Backend>& backend_list() {
  static std::vector<Backend> list;
  return list;
}
std::mutex& backend_mu() {
  static std::mutex mu;
  return mu;
}

void insert_sorted(std::vector<Backend>& list, Backend b) {
  list.erase(std::remove_if(list.begin(), list.end(), [&](const Backend& x) { return x.name == b.name; }), list.end());
  auto at = std::upper_bound(list.begin(), list.end(), b.preference,
                             [](int p, const Backend& x) { return p < x.preference; });
  list.insert(at, std::move(b));
}

}  // namespace

bool register_backend(Backend backend) {
  std::lock_guard<std::mutex> lk(backend_mu());
  insert_sorted(backend_list(), std::move(backend));
  return true;
}

std::vector<Backend> registered_backends() {
  std::lock_guard<std::mutex> lk(backend_mu());
  return backend_list();
}

namespace {
std::map<std::string, TargetOpener>& target_openers() {
  static std::map<std::string, TargetOpener> openers;
  return openers;
}
}  // namespace

bool register_target_opener(std::string backend, TargetOpener open) {
  std::lock_guard<std::mutex> lk(backend_mu());
  target_openers()[std::move(backend)] = std::move(open);
  return true;
}

std::shared_ptr<ComputeDevice> DeviceRegistry::open_target(std::string_view backend, std::string_view arch) {
  std::string base;
  for (char c : backend) base += char(std::toupper(static_cast<unsigned char>(c)));
  TargetOpener opener;
  std::string known;
  {
    std::lock_guard<std::mutex> lk(backend_mu());
    for (const auto& [name, open] : target_openers()) known += cat(known.empty() ? "" : ", ", name);
    if (auto it = target_openers().find(base); it != target_openers().end()) opener = it->second;
  }
  if (!opener)
    fail(Code::Device, "backend '", std::string(backend), "' cannot compile for a target without its device",
         " (backends that can in this build: ", known.empty() ? "none" : known, ")");
  if (arch.empty()) fail(Code::InvalidArg, "the ", base, " architecture is empty (e.g. \"sm_90\", \"gfx942\")");
  std::lock_guard<std::mutex> lk(mu_);
  auto key = std::make_pair(base, std::string(arch));
  if (auto it = targets_.find(key); it != targets_.end()) return it->second;
  std::shared_ptr<ComputeDevice> dev = opener(key.second, options_);
  if (!dev) fail(Code::Device, "the ", base, " target ", key.second, " failed to open");
  dev->set_disk_cache(options_.disk_cache);
  targets_.emplace(key, dev);
  return dev;
}

std::string canonical_device_name(std::string_view name) {
  std::string s;
  for (char c : name) s += char(std::toupper(static_cast<unsigned char>(c)));
  if (s.empty()) fail(Code::Device, "device name is empty");
  size_t colon = s.find(':');
  std::string base = s.substr(0, colon);
  bool ok = !base.empty();
  for (char c : base) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (colon != std::string::npos) {
    std::string idx = s.substr(colon + 1);
    ok = ok && !idx.empty() && idx.size() < 10;
    for (char c : idx) ok = ok && std::isdigit(static_cast<unsigned char>(c));
    if (ok && std::stol(idx) == 0) return base;  // "CPU:0" is "CPU"
  }
  if (!ok) fail(Code::Device, "malformed device name '", std::string(name), "' (expected e.g. \"CPU\" or \"CL:1\")");
  return s;
}

DeviceRegistry::DeviceRegistry(DeviceOptions options) : options_(options), backends_(registered_backends()) {}

void DeviceRegistry::add(Backend backend) {
  std::lock_guard<std::mutex> lk(mu_);
  insert_sorted(backends_, std::move(backend));
}

void DeviceRegistry::add(const std::string& name, Factory factory) {
  int preference = 1000;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (const Backend* b = find(name)) preference = b->preference;
  }
  add(Backend{
      name, preference, [](std::string*) { return 1; },
      [factory = std::move(factory)](const std::string& n, int, const DeviceOptions& o) { return factory(n, o); }});
}

const Backend* DeviceRegistry::find(const std::string& base) const {
  for (const Backend& b : backends_)
    if (b.name == base) return &b;
  return nullptr;
}

std::vector<std::string> DeviceRegistry::names() const {
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<std::string> out;
  for (const Backend& b : backends_) out.push_back(b.name);
  return out;
}

int DeviceRegistry::count(std::string_view backend, std::string* why) {
  std::string base = canonical_device_name(backend);
  std::lock_guard<std::mutex> lk(mu_);
  const Backend* b = find(base);
  if (!b) {
    std::string available;
    for (const Backend& x : backends_) available += (available.empty() ? "" : ", ") + x.name;
    fail(Code::NotFound, "no ", base, " backend in this build (backends: ", available.empty() ? "none" : available,
         ")");
  }
  std::string reason;
  int n = 0;
  try {
    n = b->count(&reason);
  } catch (const Error& e) {
    reason = e.message();
  }
  if (why) *why = reason;
  return n;
}

std::shared_ptr<ComputeDevice> DeviceRegistry::open(std::string_view name) {
  std::string canon = canonical_device_name(name);
  std::lock_guard<std::mutex> lk(mu_);
  if (auto it = open_.find(canon); it != open_.end()) return it->second;
  size_t colon = canon.find(':');
  std::string base = canon.substr(0, colon);
  int index = colon == std::string::npos ? 0 : std::stoi(canon.substr(colon + 1));
  const Backend* backend = find(base);
  if (!backend) {
    std::string available;
    for (const Backend& b : backends_) available += (available.empty() ? "" : ", ") + b.name;
    fail(Code::Device, "device '", std::string(name), "' is not available: no ", base,
         " backend in this build (available: ", available.empty() ? "none" : available, ")");
  }
  std::shared_ptr<ComputeDevice> dev;
  try {
    dev = backend->open(canon, index, options_);
  } catch (const Error& e) {
    if (e.code() == Code::Device) throw;
    if (e.code() == Code::InvalidArg)  // a bad setting (SN_CPU=...), kept as what it is
      fail(Code::InvalidArg, "device ", canon, " failed to open: ", e.message());
    fail(Code::Device, "device ", canon, " failed to open: ", e.message());
  }
  if (!dev) fail(Code::Device, "device ", canon, " failed to open");
  dev->set_disk_cache(options_.disk_cache);
  open_.emplace(canon, dev);
  return dev;
}

void DeviceRegistry::set_disk_cache(bool on) {
  std::lock_guard<std::mutex> lk(mu_);
  options_.disk_cache = on;
  for (auto& [name, dev] : open_) dev->set_disk_cache(on);
  for (auto& [key, dev] : targets_) dev->set_disk_cache(on);
}

bool DeviceRegistry::disk_cache() const {
  std::lock_guard<std::mutex> lk(mu_);
  return options_.disk_cache;
}

std::shared_ptr<ComputeDevice> DeviceRegistry::default_device() {
  std::vector<std::string> candidates = names();
  std::string reasons;
  for (const std::string& n : candidates) {
    std::string why;
    if (count(n, &why) <= 0) {
      reasons += cat("; ", n, ": ", why.empty() ? "no device" : why);
      continue;
    }
    try {
      auto dev = open(n);
      if (dev->cannot_run().empty()) return dev;
    } catch (const Error& e) {
      if (e.code() == Code::InvalidArg) throw;  // a bad setting (SN_CPU=...): said, not passed over
      reasons += cat("; ", n, ": ", e.message());
    }
  }
  fail(Code::Device, "no device is available to run kernels",
       candidates.empty() ? ": this build has no backend" : reasons);
}

}  // namespace sn
