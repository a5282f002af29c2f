#include "core/runtime/precompute.h"

#include <algorithm>

namespace sn {

namespace {

using Role = ProgramBuffer::Role;

// Launches that may run at compile time: no variables, they write intermediates only, and everything they read is
// a constant or written only by such launches (a fixed point: a buffer with one input-dependent writer taints all).
std::vector<bool> input_independent(const Program& p) {
  const size_t nl = p.launches.size(), nb = p.buffers.size();
  std::vector<std::vector<size_t>> writers(nb);
  for (size_t l = 0; l < nl; l++)
    for (const KernelParam& kp : p.launches[l].kernel->params)
      if (kp.written) writers[size_t(p.launches[l].buffers[size_t(kp.slot)])].push_back(l);

  std::vector<bool> pre(nl, false);
  for (size_t l = 0; l < nl; l++) {
    const Launch& launch = p.launches[l];
    bool ok = launch.var_index.empty() && launch.kernel->vars.empty();
    bool writes = false;
    for (const KernelParam& kp : launch.kernel->params) {
      const ProgramBuffer& pb = p.buffers[size_t(launch.buffers[size_t(kp.slot)])];
      if (kp.written) {
        writes = true;
        ok = ok && pb.role == Role::Intermediate;
      }
      if (kp.read && !kp.written) ok = ok && (pb.role == Role::Constant || pb.role == Role::Intermediate);
    }
    pre[l] = ok && writes;
  }
  auto all_pre = [&](size_t b) {
    return std::all_of(writers[b].begin(), writers[b].end(), [&](size_t w) { return pre[w]; });
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t l = 0; l < nl; l++) {
      if (!pre[l]) continue;
      const Launch& launch = p.launches[l];
      for (const KernelParam& kp : launch.kernel->params) {
        size_t b = size_t(launch.buffers[size_t(kp.slot)]);
        bool known = p.buffers[b].role == Role::Constant || (!writers[b].empty() && all_pre(b));
        // What it reads must be known before it runs: constants, or buffers whose writers all come earlier.
        if (kp.read && p.buffers[b].role != Role::Constant)
          known = known && std::all_of(writers[b].begin(), writers[b].end(), [&](size_t w) { return w <= l; });
        if ((kp.read || kp.written) && !known) {
          pre[l] = false;
          changed = true;
          break;
        }
      }
    }
  }
  return pre;
}

}  // namespace

size_t precompute_constants(Program& p, std::span<const std::string_view> constants) {
  const bool runs = p.device->cannot_run().empty() && !p.launches.empty();
  std::vector<bool> pre = runs ? input_independent(p) : std::vector<bool>(p.launches.size(), false);
  size_t count = size_t(std::count(pre.begin(), pre.end(), true));

  // Which buffers the launches run here read, and which the others.
  std::vector<bool> read_here(p.buffers.size(), false), read_later(p.buffers.size(), false);
  for (size_t l = 0; l < p.launches.size(); l++)
    for (int b : p.launches[l].buffers) (pre[l] ? read_here : read_later)[size_t(b)] = true;
  auto in_place = [&](size_t b) { return p.device->host_memory() && read_here[b] && !read_later[b]; };
  for (size_t b = 0; b < p.buffers.size(); b++) {
    ProgramBuffer& pb = p.buffers[b];
    const std::string_view bytes = b < constants.size() ? constants[b] : std::string_view();
    if (pb.role != Role::Constant || pb.storage || bytes.empty() || in_place(b)) continue;
    pb.storage = p.device->allocate(bytes.size());
    p.device->copy_in(*pb.storage, 0, bytes.data(), bytes.size());
  }
  if (count == 0) return 0;

  // Storage of their own for what they write; the other launches later read it as constants.
  std::vector<std::shared_ptr<Storage>> storage(p.buffers.size());
  for (size_t l = 0; l < p.launches.size(); l++) {
    if (!pre[l]) continue;
    for (const KernelParam& kp : p.launches[l].kernel->params) {
      size_t b = size_t(p.launches[l].buffers[size_t(kp.slot)]);
      if (kp.written && !storage[b]) storage[b] = p.device->allocate(p.buffers[b].nbytes());
    }
  }
  std::vector<DevicePtr> bufs;
  for (size_t l = 0; l < p.launches.size(); l++) {
    if (!pre[l]) continue;
    const Launch& launch = p.launches[l];
    const DeviceKernel& k = *launch.kernel;
    bufs.assign(launch.buffers.size(), DevicePtr{nullptr, 0});
    for (const KernelParam& kp : k.params) {
      size_t b = size_t(launch.buffers[size_t(kp.slot)]);
      const ProgramBuffer& pb = p.buffers[b];
      void* ptr = nullptr;
      if (pb.role != Role::Constant)
        ptr = storage[b] ? storage[b]->ptr() : nullptr;
      else if (pb.storage)
        ptr = pb.storage->ptr();
      else if (b < constants.size() && !constants[b].empty())  // read in place (never written: only intermediates are)
        ptr = const_cast<char*>(constants[b].data());
      bufs[size_t(kp.slot)] = DevicePtr{ptr, 0};
    }
    LaunchSize size;
    for (size_t d = 0; d < 3; d++) {
      size.global[d] = k.dims.global[d].eval(nullptr);
      size.local[d] = k.dims.local[d];
    }
    p.device->launch(k, bufs, {}, size);
  }
  p.device->synchronize();

  for (size_t b = 0; b < p.buffers.size(); b++) {
    if (!storage[b]) continue;
    p.buffers[b].role = Role::Constant;
    p.buffers[b].storage = std::move(storage[b]);
  }
  std::vector<Launch> kept;
  for (size_t l = 0; l < p.launches.size(); l++)
    if (!pre[l]) kept.push_back(std::move(p.launches[l]));
  p.launches = std::move(kept);
  // A constant that only launches run here read (a weight they packed) is read by no run: its
  // memory goes (a 4096x4096 weight kept twice, as given and packed, held 64 MiB for nothing).
  for (size_t b = 0; b < p.buffers.size(); b++)
    if (p.buffers[b].role == Role::Constant && !read_later[b]) p.buffers[b].storage.reset();
  return count;
}

}  // namespace sn
