#include "core/runtime/device.h"

#include <cctype>

#include "core/runtime/cpu_device.h"
#include "core/util/error.h"

namespace sn {

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
  if (!ok) fail(Code::Device, "malformed device name '", std::string(name), "' (expected e.g. \"CPU\" or \"CUDA:1\")");
  return s;
}

DeviceRegistry::DeviceRegistry(DeviceOptions options) : options_(options) {
  if (cpu_backend_available()) add("CPU", make_cpu_device);
}

void DeviceRegistry::add(const std::string& name, Factory factory) {
  std::lock_guard<std::mutex> lk(mu_);
  for (auto& [n, f] : factories_)
    if (n == name) {
      f = std::move(factory);
      return;
    }
  factories_.emplace_back(name, std::move(factory));
}

std::vector<std::string> DeviceRegistry::names() const {
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<std::string> out;
  for (const auto& [n, f] : factories_) out.push_back(n);
  return out;
}

std::shared_ptr<ComputeDevice> DeviceRegistry::open(std::string_view name) {
  std::string canon = canonical_device_name(name);
  std::lock_guard<std::mutex> lk(mu_);
  if (auto it = open_.find(canon); it != open_.end()) return it->second;
  std::string available;
  for (const auto& [n, f] : factories_) available += (available.empty() ? "" : ", ") + n;
  if (available.empty()) available = "none";
  std::string base = canon.substr(0, canon.find(':'));
  const Factory* factory = nullptr;
  for (const auto& [n, f] : factories_)
    if (n == base) factory = &f;
  if (!factory)
    fail(Code::Device, "device '", std::string(name), "' is not available: no ", base,
         " backend in this build (available: ", available, ")");
  std::shared_ptr<ComputeDevice> dev;
  try {
    dev = (*factory)(canon, options_);
  } catch (const Error& e) {
    if (e.code() == Code::Device) throw;
    fail(Code::Device, "device ", canon, " failed to open: ", e.message());
  }
  if (!dev) fail(Code::Device, "device ", canon, " failed to open");
  open_.emplace(canon, dev);
  return dev;
}

std::shared_ptr<ComputeDevice> DeviceRegistry::default_device() {
  std::string first;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (factories_.empty()) fail(Code::Device, "no device is available: this build has no backend");
    first = factories_.front().first;
  }
  return open(first);
}

}  // namespace sn
