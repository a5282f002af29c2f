// Devices, buffers, compiled programs and DLPack interchange of the C API. The handles wrap the
// runtime's shared_ptrs (core/runtime) and are validated against a registry of live handles, like
// contexts and graphs (handles.cpp). Children keep parents alive: a device retains its context, a
// buffer and a program retain their device, a DLPack export its buffer. Those references are
// counted apart from the caller's (HandleRefs), so a caller's surplus release is rejected instead of
// freeing a parent under its children.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "capi/src/capi_internal.h"
#include "core/opt/search.h"
#include "core/pipeline.h"
#include "core/tensor/tensor.h"
#include "sinter/sinter_dlpack.h"

inline constexpr uint32_t kDeviceMagic = 0x534e4456u;   // "SNDV"
inline constexpr uint32_t kBufferMagic = 0x534e4246u;   // "SNBF"
inline constexpr uint32_t kProgramMagic = 0x534e5047u;  // "SNPG"

struct sn_device {
  uint32_t magic = kDeviceMagic;
  sn::capi::HandleRefs refs;  // guarded by the runtime registry mutex; children: buffers, programs
  sn_context* ctx = nullptr;
  std::shared_ptr<sn::ComputeDevice> dev;
};

struct sn_buffer {
  uint32_t magic = kBufferMagic;
  sn::capi::HandleRefs refs;  // guarded by the runtime registry mutex; children: DLPack exports
  sn_device* device = nullptr;
  std::shared_ptr<sn::Buffer> buf;
};

struct sn_program {
  uint32_t magic = kProgramMagic;
  sn::capi::HandleRefs refs;  // guarded by the runtime registry mutex; no children
  sn_device* device = nullptr;
  std::shared_ptr<const sn::Program> prog;
};

namespace sn::capi {
namespace {

struct RuntimeRegistry {
  std::mutex mu;
  std::unordered_set<const sn_device*> devices;
  std::unordered_set<const sn_buffer*> buffers;
  std::unordered_set<const sn_program*> programs;
  // DLPack tensors exported and not yet deleted: a second call of the deleter is ignored.
  std::unordered_set<const sn_dlpack_tensor*> dlpack;
};
RuntimeRegistry& rt_registry() {
  static auto* r = new RuntimeRegistry;  // never destroyed, like registry()
  return *r;
}

template <class H>
H* live(const std::unordered_set<const H*>& set, const H* h, uint32_t magic, const char* param, const char* kind,
        const char* maker) {
  if (h == nullptr) invalid(param, " is NULL");
  std::lock_guard lock(rt_registry().mu);
  if (set.count(h) == 0 || h->magic != magic)
    invalid(param, ": handle is not a live ", kind, " (released or not made by ", maker, ")");
  return const_cast<H*>(h);
}

sn_device* live_device(const sn_device* d, const char* param) {
  return live(rt_registry().devices, d, kDeviceMagic, param, "sn_device", "sn_device_open");
}
sn_buffer* live_buffer(const sn_buffer* b, const char* param) {
  return live(rt_registry().buffers, b, kBufferMagic, param, "sn_buffer", "sn_buffer_alloc");
}
sn_program* live_program(const sn_program* p, const char* param) {
  return live(rt_registry().programs, p, kProgramMagic, param, "sn_program", "sn_compile");
}

template <class H>
H* register_handle(std::unordered_set<const H*>& set, H* h);

// A new handle for the device `name` (NULL or "": the default) of a context that exists (live for
// the caller, or kept alive by the graph it is taken from).
sn_device* device_handle(sn_context* c, std::shared_ptr<ComputeDevice> dev);

sn_device* open_device(sn_context* c, const char* name) {
  return device_handle(c, c->runtime.device(name == nullptr ? "" : name));
}

sn_device* device_handle(sn_context* c, std::shared_ptr<ComputeDevice> dev) {
  retain_context_ref(c);
  auto* h = new sn_device;
  h->ctx = c;
  h->dev = std::move(dev);
  try {
    return register_handle(rt_registry().devices, h);
  } catch (...) {
    release_context_ref(c);
    throw;
  }
}

// Registers a new handle; on failure the handle is deleted and the error propagates.
template <class H>
H* register_handle(std::unordered_set<const H*>& set, H* h) {
  try {
    std::lock_guard lock(rt_registry().mu);
    set.insert(h);
  } catch (...) {
    delete h;
    throw;
  }
  return h;
}

// Adds a child handle's reference to a device that exists (validated, or held by the child's
// parent handle).
void retain_device(sn_device* d) {
  std::lock_guard lock(rt_registry().mu);
  ++d->refs.internal;
}

// Frees a handle none references any more (already out of the registry), then drops its
// reference on its parent.
void release_device_ref(sn_device* d);
void destroy(sn_device* d) {
  sn_context* ctx = d->ctx;
  delete d;
  release_context_ref(ctx);
}
void destroy(sn_buffer* b) {
  sn_device* d = b->device;
  delete b;
  release_device_ref(d);
}
void destroy(sn_program* p) {
  sn_device* d = p->device;
  delete p;
  release_device_ref(d);
}

// Drops a child handle's reference; the last reference of all frees the handle.
template <class H>
void release_internal(std::unordered_set<const H*>& set, H* h) {
  {
    std::lock_guard lock(rt_registry().mu);
    if (--h->refs.internal > 0 || !h->refs.dead()) return;
    set.erase(h);
  }
  destroy(h);
}

void release_device_ref(sn_device* d) { release_internal(rt_registry().devices, d); }

sn_buffer* new_buffer(sn_device* d, std::shared_ptr<Buffer> buf) {
  auto* h = new sn_buffer;
  h->buf = std::move(buf);
  h->device = d;
  retain_device(d);
  try {
    return register_handle(rt_registry().buffers, h);
  } catch (...) {
    release_device_ref(d);
    throw;
  }
}

// Drops one of the caller's references to a handle of kind H. A pointer that is not a live handle,
// or a live one the caller holds no reference to (it lives on only for its children), is rejected:
// dropping a child's reference would free it under that child. The last reference of all frees it.
template <class H>
void release_user(std::unordered_set<const H*>& set, H* h, uint32_t magic, const char* param, const char* kind,
                  const char* maker) {
  {
    std::lock_guard lock(rt_registry().mu);
    if (set.count(h) == 0 || h->magic != magic)
      invalid(param, ": handle is not a live ", kind, " (released or not made by ", maker, ")");
    if (h->refs.user == 0)
      invalid(param, ": the caller holds no reference to this ", kind, " (released more often than made or retained)");
    if (--h->refs.user > 0 || !h->refs.dead()) return;
    set.erase(h);
  }
  destroy(h);
}

template <class H>
H* retain_user(const std::unordered_set<const H*>& set, H* h, uint32_t magic, const char* param, const char* kind,
               const char* maker) {
  std::lock_guard lock(rt_registry().mu);
  if (h == nullptr || set.count(h) == 0 || h->magic != magic)
    invalid(param, ": handle is not a live ", kind, " (released or not made by ", maker, ")");
  ++h->refs.user;
  return h;
}

std::vector<int64_t> dims_of(const int64_t* p, size_t n, const char* param) {
  if (n > 0 && p == nullptr) invalid(param, " is NULL but its count is ", n);
  return n == 0 ? std::vector<int64_t>{} : std::vector<int64_t>(p, p + n);
}

// The first released layout of sn_compile_options; a smaller struct_size is rejected.
constexpr size_t kCompileOptionsSizeV1 = offsetof(sn_compile_options, ninputs) + sizeof(size_t);

sn_compile_options default_options() {
  sn_compile_options o;
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.debug = -1;
  o.optimize = 1;
  o.threads = 1;
  o.keep_stages = 0;
  o.use_cache = 1;
  o.beam = beam_width_from_env();
  return o;
}

// The default input order of sn_compile: every input the outputs read, in creation order, each as
// the tensor sn_tensor_input made (so the program knows its shape) or as its Buffer.
std::vector<const UOp*> default_inputs(sn_graph* g, std::span<const UOp* const> outputs) {
  std::unordered_map<const UOp*, const UOp*> tensor_of;  // Buffer -> tensor made by sn_tensor_input
  {
    std::lock_guard lock(registry().mu);
    for (const UOp* t : g->inputs) tensor_of.emplace(buffer_of(t), t);
  }
  std::vector<const UOp*> bufs;
  for (const UOp* u : toposort(outputs))
    if (u->op == Op::Buffer) bufs.push_back(u);
  std::sort(bufs.begin(), bufs.end(),
            [](const UOp* a, const UOp* b) { return a->as<BufferArg>().id < b->as<BufferArg>().id; });
  std::vector<const UOp*> out;
  for (const UOp* b : bufs) {
    auto it = tensor_of.find(b);
    out.push_back(it == tensor_of.end() ? b : it->second);
  }
  return out;
}

sn_code tensor_info(const char* fn, const sn_program* program, size_t index, bool input, sn_dtype* dtype,
                    int64_t* shape, size_t shape_cap, size_t* ndim, sn_error** err) {
  return guard(fn, err, SN_E_INTERNAL, [&] {
    const Program& p = *live_program(program, "program")->prog;
    const auto& specs = input ? p.inputs : p.outputs;
    if (index >= specs.size())
      invalid("index ", index, " is out of range: the program has ", specs.size(), input ? " inputs" : " outputs");
    const TensorSpec& s = specs[index];
    if (shape != nullptr && shape_cap < s.shape.size())
      invalid("shape_cap ", shape_cap, " is smaller than the rank ", s.shape.size());
    if (dtype) *dtype = from_scalar(s.dtype.scalar);
    if (ndim) *ndim = s.shape.size();
    if (shape) std::copy(s.shape.begin(), s.shape.end(), shape);
    return SN_OK;
  });
}

const Launch& launch_at(const Program& p, size_t index) {
  if (index >= p.launches.size())
    invalid("index ", index, " is out of range: the program has ", p.launches.size(), " kernels");
  return p.launches[index];
}

// ---- DLPack -------------------------------------------------------------------------------

struct DlpackExport {
  sn_dlpack_tensor tensor;
  std::vector<int64_t> shape;
  sn_buffer* buffer;  // one child reference (HandleRefs::internal), dropped by the deleter
};

// Drops the export's reference to its buffer. A tensor deleted before (the deleter called twice)
// or not exported by us is ignored, with the last error set, instead of being freed again.
extern "C" void dlpack_export_deleter(sn_dlpack_tensor* self) {
  if (self == nullptr) return;
  guard("sn_dlpack_tensor deleter", nullptr, 0, [&] {
    {
      std::lock_guard lock(rt_registry().mu);
      if (rt_registry().dlpack.erase(self) == 0)
        invalid("self: not a live DLPack tensor of sn_buffer_to_dlpack (already deleted)");
    }
    auto* holder = static_cast<DlpackExport*>(self->manager_ctx);
    release_internal(rt_registry().buffers, holder->buffer);
    delete holder;
    return 0;
  });
}

sn_dlpack_dtype to_dlpack_dtype(DType dt) {
  sn_dlpack_dtype d{0, uint8_t(dt.bits()), 1};
  if (dt.is_bool())
    d = {SN_DLPACK_BOOL, 8, 1};
  else if (dt.scalar == Scalar::BFloat16)
    d.code = SN_DLPACK_BFLOAT;
  else if (dt.is_float() && dt.scalar != Scalar::Fp8E4M3 && dt.scalar != Scalar::Fp8E5M2)
    d.code = SN_DLPACK_FLOAT;
  else if (dt.is_unsigned())
    d.code = SN_DLPACK_UINT;
  else if (dt.is_signed_int())
    d.code = SN_DLPACK_INT;
  else
    invalid("dtype ", dt.name(), " has no DLPack type code");
  return d;
}

DType from_dlpack_dtype(const sn_dlpack_dtype& d) {
  auto bad = [&] {
    fail(Code::Unsupported, "DLPack dtype (code ", int(d.code), ", bits ", int(d.bits), ", lanes ", d.lanes,
         ") is not supported");
  };
  if (d.lanes != 1) bad();
  switch (d.code) {
    case SN_DLPACK_BOOL:
      if (d.bits != 8) bad();
      return dtypes::bool_;
    case SN_DLPACK_INT:
      switch (d.bits) {
        case 8:
          return dtypes::int8;
        case 16:
          return dtypes::int16;
        case 32:
          return dtypes::int32;
        case 64:
          return dtypes::int64;
      }
      break;
    case SN_DLPACK_UINT:
      switch (d.bits) {
        case 8:
          return dtypes::uint8;
        case 16:
          return dtypes::uint16;
        case 32:
          return dtypes::uint32;
        case 64:
          return dtypes::uint64;
      }
      break;
    case SN_DLPACK_FLOAT:
      switch (d.bits) {
        case 16:
          return dtypes::float16;
        case 32:
          return dtypes::float32;
        case 64:
          return dtypes::float64;
      }
      break;
    case SN_DLPACK_BFLOAT:
      if (d.bits == 16) return dtypes::bfloat16;
      break;
  }
  bad();
  return {};
}

// Copies the elements of a strided tensor (strides in elements: any sign, 0 on broadcast axes)
// from `src` into `dst` in row-major order. `numel` > 0.
void gather_strided(char* dst, const char* src, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                    int64_t numel, int64_t item) {
  size_t nd = shape.size();
  if (nd == 0) {
    std::memcpy(dst, src, size_t(item));
    return;
  }
  int64_t inner = shape[nd - 1], istride = strides[nd - 1];
  std::vector<int64_t> idx(nd, 0);
  int64_t off = 0;  // element offset of the current row
  for (int64_t row = 0; row < numel / inner; row++) {
    const char* s = src + off * item;
    if (istride == 1) {
      std::memcpy(dst, s, size_t(inner * item));
      dst += inner * item;
    } else {
      for (int64_t i = 0; i < inner; i++, dst += item) std::memcpy(dst, s + i * istride * item, size_t(item));
    }
    for (size_t k = nd - 1; k-- > 0;) {  // the next row: count up the outer axes
      off += strides[k];
      if (++idx[k] < shape[k]) break;
      off -= strides[k] * shape[k];
      idx[k] = 0;
    }
  }
}

}  // namespace
}  // namespace sn::capi

using namespace sn;
using namespace sn::capi;

// ---- devices --------------------------------------------------------------------------------

sn_device* sn_device_open(sn_context* ctx, const char* name, sn_error** err) {
  return guard("sn_device_open", err, static_cast<sn_device*>(nullptr),
               [&] { return open_device(live_context(ctx, "ctx"), name); });
}

sn_device* sn_device_retain(sn_device* device) {
  return guard("sn_device_retain", nullptr, static_cast<sn_device*>(nullptr), [&] {
    return retain_user(rt_registry().devices, device, kDeviceMagic, "device", "sn_device", "sn_device_open");
  });
}

void sn_device_release(sn_device* device) {
  if (device == nullptr) return;
  guard("sn_device_release", nullptr, 0, [&] {
    release_user(rt_registry().devices, device, kDeviceMagic, "device", "sn_device", "sn_device_open");
    return 0;
  });
}

const char* sn_device_name(const sn_device* device, sn_error** err) {
  return guard("sn_device_name", err, static_cast<const char*>(nullptr),
               [&] { return live_device(device, "device")->dev->name().c_str(); });
}

int sn_device_count(sn_context* ctx, const char* backend, sn_error** err) {
  return guard("sn_device_count", err, -1, [&] {
    sn_context* c = live_context(ctx, "ctx");
    if (backend == nullptr) invalid("backend is NULL");
    return c->runtime.devices().count(backend);
  });
}

char* sn_device_description(const sn_device* device, sn_error** err) {
  return guard("sn_device_description", err, static_cast<char*>(nullptr),
               [&] { return dup_string(live_device(device, "device")->dev->description()); });
}

// ---- debug level ----------------------------------------------------------------------------

sn_code sn_context_set_debug(sn_context* ctx, int level, sn_error** err) {
  return guard("sn_context_set_debug", err, SN_E_INTERNAL, [&] {
    sn_context* c = live_context(ctx, "ctx");
    if (level < 0 || level > 5) invalid("level ", level, " is outside [0, 5]");
    c->runtime.set_debug(level);
    return SN_OK;
  });
}

sn_code sn_context_set_disk_cache(sn_context* ctx, int enabled, sn_error** err) {
  return guard("sn_context_set_disk_cache", err, SN_E_INTERNAL, [&] {
    live_context(ctx, "ctx")->runtime.devices().set_disk_cache(enabled != 0);
    return SN_OK;
  });
}

int sn_context_debug(const sn_context* ctx, sn_error** err) {
  return guard("sn_context_debug", err, -1, [&] { return live_context(ctx, "ctx")->runtime.debug(); });
}

// ---- compile --------------------------------------------------------------------------------

sn_code sn_compile_options_init(sn_compile_options* options, size_t struct_size, sn_error** err) {
  return guard("sn_compile_options_init", err, SN_E_INTERNAL, [&] {
    if (options == nullptr) invalid("options is NULL");
    if (struct_size < kCompileOptionsSizeV1)
      invalid("struct_size ", struct_size, " is smaller than the first sn_compile_options (", kCompileOptionsSizeV1,
              " bytes)");
    sn_compile_options d = default_options();
    d.struct_size = uint32_t(std::min(struct_size, sizeof d));
    std::memset(static_cast<void*>(options), 0, struct_size);
    std::memcpy(static_cast<void*>(options), &d, std::min(struct_size, sizeof d));
    return SN_OK;
  });
}

sn_program* sn_compile(sn_graph* graph, sn_uop* const* outputs, size_t noutputs, sn_device* device,
                       const sn_compile_options* options, sn_error** err) {
  return guard("sn_compile", err, static_cast<sn_program*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    if (noutputs > 0 && outputs == nullptr) invalid("outputs is NULL but noutputs is ", noutputs);
    std::vector<const UOp*> outs;
    for (size_t i = 0; i < noutputs; i++) outs.push_back(uop_of(g, outputs[i], cat("outputs[", i, "]").c_str()));

    sn_compile_options o = default_options();
    if (options != nullptr) {
      if (options->struct_size < kCompileOptionsSizeV1)
        invalid("options->struct_size ", options->struct_size, " is smaller than the first sn_compile_options (",
                kCompileOptionsSizeV1, " bytes): call sn_compile_options_init");
      std::memcpy(&o, options, std::min<size_t>(options->struct_size, sizeof o));
    }
    if (o.debug < -1 || o.debug > 5) invalid("options->debug ", o.debug, " is outside [-1, 5]");
    CompileOptions co;
    co.debug = o.debug;
    co.optimize = o.optimize != 0;
    co.allow_threads = o.threads != 0;
    co.keep_stages = o.keep_stages != 0;
    co.use_cache = o.use_cache != 0;
    if (o.struct_size >= offsetof(sn_compile_options, neffects) + sizeof(size_t) && o.neffects > 0) {
      if (o.effects == nullptr) invalid("options->effects is NULL but options->neffects is ", o.neffects);
      for (size_t i = 0; i < o.neffects; i++)
        co.effects.push_back(uop_of(g, o.effects[i], cat("options->effects[", i, "]").c_str()));
    }
    if (o.struct_size >= offsetof(sn_compile_options, beam) + sizeof(int32_t)) {
      if (o.beam < 0 || o.beam > 64) invalid("options->beam ", o.beam, " is outside [0, 64]");
      co.beam = o.beam;
    } else {
      co.beam = beam_width_from_env();
    }
    if (o.struct_size >= offsetof(sn_compile_options, nkernel_opts) + sizeof(size_t) && o.nkernel_opts > 0) {
      if (o.kernel_opts == nullptr)
        invalid("options->kernel_opts is NULL but options->nkernel_opts is ", o.nkernel_opts);
      for (size_t i = 0; i < o.nkernel_opts; i++) {
        const char* line = o.kernel_opts[i];
        if (line == nullptr) invalid("options->kernel_opts[", i, "] is NULL");
        std::string_view text(line);
        size_t colon = text.find(':');
        uint64_t id = 0;
        std::string_view hex = colon == std::string_view::npos ? text : text.substr(0, colon);
        while (!hex.empty() && hex.back() == ' ') hex.remove_suffix(1);
        auto r = std::from_chars(hex.data(), hex.data() + hex.size(), id, 16);
        if (colon == std::string_view::npos || hex.empty() || r.ec != std::errc() || r.ptr != hex.data() + hex.size())
          invalid("options->kernel_opts[", i, "] '", text,
                  "' is not '<kernel id>: <opts>' (as sn_program_kernel_opts prints it)");
        std::vector<Opt> opts;
        std::string bad;
        if (!parse_opts(text.substr(colon + 1), &opts, &bad))
          invalid(
              "options->kernel_opts[", i, "]: '", bad, "' is not an opt (UPCAST(axis,k), UNROLL(axis,k), ",
              "THREAD(axis,k), LOCAL(axis,k), GROUP(axis,k), GROUPTOP(axis,k), PADTO(axis,m), SWAP(a,b), NOLOCALS)");
        if (!co.kernel_opts.emplace(id, std::move(opts)).second)
          invalid("options->kernel_opts[", i, "] names kernel ", kernel_id_str(id), " a second time");
      }
    }
    if (noutputs == 0 && co.effects.empty())
      invalid("noutputs is 0 and options list no effects: a program needs an output or an effect");
    if (o.ninputs > 0) {
      if (o.inputs == nullptr) invalid("options->inputs is NULL but options->ninputs is ", o.ninputs);
      for (size_t i = 0; i < o.ninputs; i++)
        co.inputs.push_back(uop_of(g, o.inputs[i], cat("options->inputs[", i, "]").c_str()));
    } else {
      std::vector<const UOp*> roots = outs;
      roots.insert(roots.end(), co.effects.begin(), co.effects.end());
      co.inputs = default_inputs(g, roots);
    }

    sn_device* d = device;
    sn_device* opened = nullptr;
    if (d == nullptr) {
      opened = open_device(g->ctx, nullptr);
      d = opened;
    } else {
      live_device(d, "device");
    }
    struct CloseOpened {  // the default device handle lives on through the program's reference
      sn_device* d;
      ~CloseOpened() { sn_device_release(d); }
    } close_opened{opened};

    auto prog = compile_program(g->ctx->runtime, g->graph, outs, d->dev, co);
    auto* h = new sn_program;
    h->prog = std::move(prog);
    h->device = d;
    retain_device(d);
    try {
      return register_handle(rt_registry().programs, h);
    } catch (...) {
      release_device_ref(d);
      throw;
    }
  });
}

sn_program* sn_program_retain(sn_program* program) {
  return guard("sn_program_retain", nullptr, static_cast<sn_program*>(nullptr), [&] {
    return retain_user(rt_registry().programs, program, kProgramMagic, "program", "sn_program", "sn_compile");
  });
}

void sn_program_release(sn_program* program) {
  if (program == nullptr) return;
  guard("sn_program_release", nullptr, 0, [&] {
    release_user(rt_registry().programs, program, kProgramMagic, "program", "sn_program", "sn_compile");
    return 0;
  });
}

// ---- buffers --------------------------------------------------------------------------------

sn_buffer* sn_buffer_alloc(sn_device* device, sn_dtype dtype, const int64_t* shape, size_t ndim, sn_error** err) {
  return guard("sn_buffer_alloc", err, static_cast<sn_buffer*>(nullptr), [&] {
    sn_device* d = live_device(device, "device");
    DType dt = to_dtype(raw(dtype), "dtype");
    return new_buffer(d, Buffer::allocate(d->dev, dt, dims_of(shape, ndim, "shape")));
  });
}

sn_buffer* sn_buffer_retain(sn_buffer* buffer) {
  return guard("sn_buffer_retain", nullptr, static_cast<sn_buffer*>(nullptr), [&] {
    return retain_user(rt_registry().buffers, buffer, kBufferMagic, "buffer", "sn_buffer", "sn_buffer_alloc");
  });
}

void sn_buffer_release(sn_buffer* buffer) {
  if (buffer == nullptr) return;
  guard("sn_buffer_release", nullptr, 0, [&] {
    release_user(rt_registry().buffers, buffer, kBufferMagic, "buffer", "sn_buffer", "sn_buffer_alloc");
    return 0;
  });
}

sn_buffer* sn_buffer_view(sn_buffer* buffer, int64_t offset, const int64_t* shape, size_t ndim, sn_error** err) {
  return guard("sn_buffer_view", err, static_cast<sn_buffer*>(nullptr), [&] {
    sn_buffer* b = live_buffer(buffer, "buffer");
    return new_buffer(b->device, b->buf->view(offset, dims_of(shape, ndim, "shape")));
  });
}

sn_code sn_buffer_copy_in(sn_buffer* buffer, const void* src, size_t nbytes, sn_error** err) {
  return guard("sn_buffer_copy_in", err, SN_E_INTERNAL, [&] {
    live_buffer(buffer, "buffer")->buf->copy_in(src, nbytes);
    return SN_OK;
  });
}

sn_code sn_buffer_copy_out(const sn_buffer* buffer, void* dst, size_t nbytes, sn_error** err) {
  return guard("sn_buffer_copy_out", err, SN_E_INTERNAL, [&] {
    live_buffer(buffer, "buffer")->buf->copy_out(dst, nbytes);
    return SN_OK;
  });
}

sn_code sn_buffer_copy(sn_buffer* dst, const sn_buffer* src, sn_error** err) {
  return guard("sn_buffer_copy", err, SN_E_INTERNAL, [&] {
    sn_buffer* d = live_buffer(dst, "dst");
    const sn_buffer* s = live_buffer(src, "src");
    copy_buffer(*d->buf, *s->buf);
    return SN_OK;
  });
}

sn_dtype sn_buffer_dtype(const sn_buffer* buffer, sn_error** err) {
  return guard("sn_buffer_dtype", err, SN_DTYPE_INVALID,
               [&] { return from_scalar(live_buffer(buffer, "buffer")->buf->dtype().scalar); });
}

int64_t sn_buffer_rank(const sn_buffer* buffer, sn_error** err) {
  return guard("sn_buffer_rank", err, int64_t{-1},
               [&] { return int64_t(live_buffer(buffer, "buffer")->buf->shape().size()); });
}

int64_t sn_buffer_dim(const sn_buffer* buffer, size_t axis, sn_error** err) {
  return guard("sn_buffer_dim", err, int64_t{-1}, [&] {
    const auto& shape = live_buffer(buffer, "buffer")->buf->shape();
    if (axis >= shape.size()) invalid("axis ", axis, " is out of range for rank ", shape.size());
    return shape[axis];
  });
}

int64_t sn_buffer_numel(const sn_buffer* buffer, sn_error** err) {
  return guard("sn_buffer_numel", err, int64_t{-1}, [&] { return live_buffer(buffer, "buffer")->buf->numel(); });
}

size_t sn_buffer_nbytes(const sn_buffer* buffer, sn_error** err) {
  return guard("sn_buffer_nbytes", err, size_t{0}, [&] { return live_buffer(buffer, "buffer")->buf->nbytes(); });
}

const char* sn_buffer_device(const sn_buffer* buffer, sn_error** err) {
  return guard("sn_buffer_device", err, static_cast<const char*>(nullptr),
               [&] { return live_buffer(buffer, "buffer")->device->dev->name().c_str(); });
}

void* sn_buffer_host_pointer(sn_buffer* buffer, sn_error** err) {
  return guard("sn_buffer_host_pointer", err, static_cast<void*>(nullptr), [&]() -> void* {
    sn_buffer* b = live_buffer(buffer, "buffer");
    return b->buf->host_data();
  });
}

// ---- run ------------------------------------------------------------------------------------

sn_code sn_program_run(sn_program* program, sn_buffer* const* inputs, size_t ninputs, sn_buffer* const* outputs,
                       size_t noutputs, sn_error** err) {
  return guard("sn_program_run", err, SN_E_INTERNAL, [&] {
    sn_program* p = live_program(program, "program");
    if (ninputs > 0 && inputs == nullptr) invalid("inputs is NULL but ninputs is ", ninputs);
    if (noutputs > 0 && outputs == nullptr) invalid("outputs is NULL but noutputs is ", noutputs);
    std::vector<std::shared_ptr<Buffer>> ins, outs;
    for (size_t i = 0; i < ninputs; i++) ins.push_back(live_buffer(inputs[i], cat("inputs[", i, "]").c_str())->buf);
    for (size_t i = 0; i < noutputs; i++) outs.push_back(live_buffer(outputs[i], cat("outputs[", i, "]").c_str())->buf);
    p->prog->run(ins, outs);
    return SN_OK;
  });
}

namespace {

// (name, value) pairs from the C arrays; a NULL or repeated name is InvalidArg.
std::vector<std::pair<std::string, int64_t>> var_pairs(const char* const* names, const int64_t* values, size_t n) {
  if (n > 0 && (names == nullptr || values == nullptr))
    invalid(names == nullptr ? "names" : "values", " is NULL but the count is ", n);
  std::vector<std::pair<std::string, int64_t>> vars;
  for (size_t i = 0; i < n; i++) {
    if (names[i] == nullptr) invalid("names[", i, "] is NULL");
    for (const auto& v : vars)
      if (v.first == names[i]) invalid("variable '", names[i], "' is given twice");
    vars.emplace_back(names[i], values[i]);
  }
  return vars;
}

}  // namespace

sn_code sn_program_run_vars(sn_program* program, sn_buffer* const* inputs, size_t ninputs, sn_buffer* const* outputs,
                            size_t noutputs, const char* const* names, const int64_t* values, size_t nvars,
                            sn_error** err) {
  return guard("sn_program_run_vars", err, SN_E_INTERNAL, [&] {
    sn_program* p = live_program(program, "program");
    if (ninputs > 0 && inputs == nullptr) invalid("inputs is NULL but ninputs is ", ninputs);
    if (noutputs > 0 && outputs == nullptr) invalid("outputs is NULL but noutputs is ", noutputs);
    std::vector<std::pair<std::string, int64_t>> vars = var_pairs(names, values, nvars);
    std::vector<std::shared_ptr<Buffer>> ins, outs;
    for (size_t i = 0; i < ninputs; i++) ins.push_back(live_buffer(inputs[i], cat("inputs[", i, "]").c_str())->buf);
    for (size_t i = 0; i < noutputs; i++) outs.push_back(live_buffer(outputs[i], cat("outputs[", i, "]").c_str())->buf);
    p->prog->run(ins, outs, vars);
    return SN_OK;
  });
}

size_t sn_program_num_vars(const sn_program* program, sn_error** err) {
  return guard("sn_program_num_vars", err, size_t{0},
               [&] { return live_program(program, "program")->prog->vars.size(); });
}

sn_code sn_program_var_info(const sn_program* program, size_t index, const char** name, int64_t* min, int64_t* max,
                            sn_error** err) {
  return guard("sn_program_var_info", err, SN_E_INTERNAL, [&] {
    const auto& vars = live_program(program, "program")->prog->vars;
    if (index >= vars.size()) invalid("index ", index, " is out of range: the program has ", vars.size(), " variables");
    if (name) *name = vars[index].name.c_str();
    if (min) *min = vars[index].min;
    if (max) *max = vars[index].max;
    return SN_OK;
  });
}

sn_buffer* sn_program_alloc_output(sn_program* program, size_t index, sn_error** err) {
  return guard("sn_program_alloc_output", err, static_cast<sn_buffer*>(nullptr), [&] {
    sn_program* p = live_program(program, "program");
    if (index >= p->prog->outputs.size())
      invalid("index ", index, " is out of range: the program has ", p->prog->outputs.size(), " outputs");
    return new_buffer(p->device, p->prog->allocate_output(index));
  });
}

sn_buffer* sn_program_alloc_output_vars(sn_program* program, size_t index, const char* const* names,
                                        const int64_t* values, size_t n, sn_error** err) {
  return guard("sn_program_alloc_output_vars", err, static_cast<sn_buffer*>(nullptr), [&] {
    sn_program* p = live_program(program, "program");
    if (index >= p->prog->outputs.size())
      invalid("index ", index, " is out of range: the program has ", p->prog->outputs.size(), " outputs");
    return new_buffer(p->device, p->prog->allocate_output(index, var_pairs(names, values, n)));
  });
}

// ---- inspect --------------------------------------------------------------------------------

size_t sn_program_num_inputs(const sn_program* program, sn_error** err) {
  return guard("sn_program_num_inputs", err, size_t{0},
               [&] { return live_program(program, "program")->prog->inputs.size(); });
}

size_t sn_program_num_outputs(const sn_program* program, sn_error** err) {
  return guard("sn_program_num_outputs", err, size_t{0},
               [&] { return live_program(program, "program")->prog->outputs.size(); });
}

sn_code sn_program_input_info(const sn_program* program, size_t index, sn_dtype* dtype, int64_t* shape,
                              size_t shape_cap, size_t* ndim, sn_error** err) {
  return tensor_info("sn_program_input_info", program, index, true, dtype, shape, shape_cap, ndim, err);
}

sn_code sn_program_output_info(const sn_program* program, size_t index, sn_dtype* dtype, int64_t* shape,
                               size_t shape_cap, size_t* ndim, sn_error** err) {
  return tensor_info("sn_program_output_info", program, index, false, dtype, shape, shape_cap, ndim, err);
}

size_t sn_program_num_kernels(const sn_program* program, sn_error** err) {
  return guard("sn_program_num_kernels", err, size_t{0},
               [&] { return live_program(program, "program")->prog->launches.size(); });
}

const char* sn_program_kernel_name(const sn_program* program, size_t index, sn_error** err) {
  return guard("sn_program_kernel_name", err, static_cast<const char*>(nullptr),
               [&] { return launch_at(*live_program(program, "program")->prog, index).kernel->name.c_str(); });
}

char* sn_program_kernel_source(const sn_program* program, size_t index, sn_error** err) {
  return guard("sn_program_kernel_source", err, static_cast<char*>(nullptr),
               [&] { return dup_string(launch_at(*live_program(program, "program")->prog, index).kernel->source); });
}

// ---- version 8 (GPU targets) ----------------------------------------------------------------------

sn_device* sn_device_open_target(sn_context* ctx, const char* backend, const char* arch, sn_error** err) {
  return guard("sn_device_open_target", err, static_cast<sn_device*>(nullptr), [&] {
    sn_context* c = live_context(ctx, "ctx");
    if (backend == nullptr) invalid("backend is NULL");
    if (arch == nullptr) invalid("arch is NULL");
    return device_handle(c, c->runtime.devices().open_target(backend, arch));
  });
}

const void* sn_program_kernel_binary(const sn_program* program, size_t index, size_t* size, sn_error** err) {
  return guard("sn_program_kernel_binary", err, static_cast<const void*>(nullptr), [&] {
    const Program& p = *live_program(program, "program")->prog;
    if (size == nullptr) invalid("size is NULL");
    const DeviceKernel& k = *launch_at(p, index).kernel;
    if (k.binary.empty())
      fail(Code::Unsupported, "device ", p.device->name(),
           " keeps no kernel binary (only compiled GPU targets do: ", "sn_device_open_target)");
    *size = k.binary.size();
    return static_cast<const void*>(k.binary.data());
  });
}

char* sn_program_kernel_opts(const sn_program* program, size_t index, sn_error** err) {
  return guard("sn_program_kernel_opts", err, static_cast<char*>(nullptr), [&] {
    const Launch& l = launch_at(*live_program(program, "program")->prog, index);
    std::string opts = opts_str(l.kernel->opts);
    return dup_string(cat(kernel_id_str(l.ast_hash), ":", opts.empty() ? "" : " ", opts));
  });
}

char* sn_program_stage(const sn_program* program, const char* stage, sn_error** err) {
  return guard("sn_program_stage", err, static_cast<char*>(nullptr), [&] {
    const Program& p = *live_program(program, "program")->prog;
    if (stage == nullptr) invalid("stage is NULL");
    static const char* const kStages[] = {"tensor", "schedule", "ast",  "optimized", "launch", "expanded", "simplified",
                                          "reduce", "parallel", "isel", "linear",    "source", "plan"};
    std::string s = stage, known;
    for (const char* k : kStages) known += (known.empty() ? "" : ", ") + std::string(k);
    if (std::find(std::begin(kStages), std::end(kStages), s) == std::end(kStages))
      fail(Code::NotFound, "unknown stage '", s, "' (stages: ", known, ")");
    if (!p.stages) {
      if (s != "source") fail(Code::NotFound, "stage '", s, "' was not kept: compile with options.keep_stages = 1");
      std::string text;
      for (size_t k = 0; k < p.launches.size(); k++)
        text += cat("# kernel ", k, ": ", p.launches[k].kernel->name, "\n", p.launches[k].kernel->source);
      return dup_string(text);
    }
    return dup_string(p.stage_text(s));
  });
}

size_t sn_program_arena_bytes(const sn_program* program, sn_error** err) {
  return guard("sn_program_arena_bytes", err, size_t{0},
               [&] { return live_program(program, "program")->prog->arena_bytes; });
}

// ---- export ---------------------------------------------------------------------------------

char* sn_program_export_c(const sn_program* program, const char* name, sn_error** err) {
  return guard("sn_program_export_c", err, static_cast<char*>(nullptr), [&] {
    const Program& p = *live_program(program, "program")->prog;
    if (name == nullptr) invalid("name is NULL");
    return dup_string(p.device->export_c(p, name));
  });
}

// ---- DLPack ---------------------------------------------------------------------------------

sn_dlpack_tensor* sn_buffer_to_dlpack(sn_buffer* buffer, sn_error** err) {
  return guard("sn_buffer_to_dlpack", err, static_cast<sn_dlpack_tensor*>(nullptr), [&] {
    sn_buffer* b = live_buffer(buffer, "buffer");
    const Buffer& buf = *b->buf;
    auto [type, id] = buf.device().dlpack_device();
    if (type == 0)
      fail(Code::Unsupported, "DLPack export of ", buf.device().name(),
           " buffers is not supported (CPU and CUDA memory only)");
    if (buf.shape().size() > size_t(INT32_MAX)) invalid("rank ", buf.shape().size(), " does not fit DLPack");
    auto holder = std::make_unique<DlpackExport>();
    holder->shape = buf.shape();
    sn_dlpack_tensor& t = holder->tensor;
    std::memset(&t, 0, sizeof t);
    t.version = {SN_DLPACK_MAJOR_VERSION, SN_DLPACK_MINOR_VERSION};
    t.deleter = dlpack_export_deleter;
    t.flags = 0;
    // Host memory: element 0's address; device memory (CUDA): the allocation's device address and
    // the buffer's byte offset in it, as DLPack asks of device pointers.
    t.dl_tensor.data = buf.host_data() ? buf.host_data() : buf.storage()->ptr();
    t.dl_tensor.byte_offset = buf.host_data() ? 0 : buf.byte_offset();
    t.dl_tensor.device = {type, id};
    t.dl_tensor.ndim = int32_t(buf.shape().size());
    t.dl_tensor.dtype = to_dlpack_dtype(buf.dtype());
    t.dl_tensor.shape = holder->shape.empty() ? nullptr : holder->shape.data();
    t.dl_tensor.strides = nullptr;
    t.manager_ctx = holder.get();
    {
      std::lock_guard lock(rt_registry().mu);
      if (rt_registry().buffers.count(b) == 0) invalid("buffer was released concurrently");
      rt_registry().dlpack.insert(&t);
      // A child's reference: the caller releasing the buffer (even too often) leaves the export alive.
      ++b->refs.internal;
    }
    holder->buffer = b;
    return &holder.release()->tensor;
  });
}

sn_buffer* sn_buffer_from_dlpack(sn_device* device, sn_dlpack_tensor* tensor, sn_error** err) {
  return guard("sn_buffer_from_dlpack", err, static_cast<sn_buffer*>(nullptr), [&] {
    sn_device* d = live_device(device, "device");
    if (tensor == nullptr) invalid("tensor is NULL");
    if (tensor->version.major != SN_DLPACK_MAJOR_VERSION)
      fail(Code::Version, "DLPack version ", tensor->version.major, ".", tensor->version.minor, " is not 1.x");
    auto [type, id] = d->dev->dlpack_device();
    if (type == 0)
      fail(Code::Unsupported, "DLPack import onto ", d->dev->name(), " is not supported (CPU and CUDA only)");
    const sn_dlpack_dl_tensor& t = tensor->dl_tensor;
    if (t.device.device_type != type || t.device.device_id != id)
      fail(Code::Unsupported, "DLPack tensor on device (type ", t.device.device_type, ", id ", t.device.device_id,
           ") cannot be imported onto ", d->dev->name(), ", whose memory is DLPack device (type ", type, ", id ", id,
           ")");
    const bool host = d->dev->host_memory();
    DType dt = from_dlpack_dtype(t.dtype);
    if (t.ndim < 0) invalid("ndim ", t.ndim, " is negative");
    if (t.ndim > 0 && t.shape == nullptr) invalid("shape is NULL for ndim ", t.ndim);
    std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
    int64_t numel = checked_numel(shape, "DLPack shape");
    bool compact = true;  // row-major (strides of size-1 axes do not matter), or nothing to read
    if (t.strides != nullptr && numel > 0) {
      int64_t expect = 1;
      for (int32_t k = t.ndim; k-- > 0;) {
        if (shape[size_t(k)] != 1 && t.strides[k] != expect) compact = false;
        expect *= shape[size_t(k)];
      }
    }
    char* data = static_cast<char*>(t.data);
    if (data == nullptr && numel > 0) invalid("data is NULL");
    if (data != nullptr) data += t.byte_offset;
    if (!host && (!compact || (tensor->flags & SN_DLPACK_FLAG_READ_ONLY)))
      fail(Code::Unsupported, "DLPack import onto ", d->dev->name(), ": a ", compact ? "read-only" : "strided",
           " tensor in device memory would be copied on the device, which is not supported (pass a compact, "
           "writable tensor)");
    if (!compact || (tensor->flags & SN_DLPACK_FLAG_READ_ONLY)) {
      // Buffers are row-major windows that programs may write: strided or read-only memory is
      // copied into a fresh buffer, and the producer's tensor is released at once.
      auto buf = Buffer::allocate(d->dev, dt, shape);
      if (numel > 0) {
        std::vector<int64_t> strides(shape.size());
        for (size_t k = shape.size(), st = 1; k-- > 0;) {
          strides[k] = t.strides ? t.strides[k] : int64_t(st);
          st *= size_t(shape[k]);
        }
        gather_strided(static_cast<char*>(buf->host_data()), data, shape, strides, numel, dt.itemsize());
      }
      sn_buffer* h = new_buffer(d, std::move(buf));
      if (tensor->deleter) tensor->deleter(tensor);
      return h;
    }
    if (reinterpret_cast<uintptr_t>(data) % uintptr_t(dt.itemsize()) != 0)
      invalid("data + byte_offset is not aligned to the ", dt.itemsize(), "-byte ", dt.name(), " elements");
    alignas(kBufferAlignment) static char empty_target[kBufferAlignment];
    if (data == nullptr) data = empty_target;  // buffers always have an address
    auto nbytes = size_t(checked_bytes(numel, dt.itemsize(), "DLPack tensor of ", dt.name()));
    // The Storage owns the producer's tensor once the buffer exists (armed below): its release
    // calls the deleter. Before that, a failure leaves the tensor to the caller untouched.
    auto armed = std::make_shared<std::atomic<bool>>(false);
    auto storage = std::make_shared<Storage>(d->dev, data, nbytes, [tensor, armed](void*) {
      if (armed->load() && tensor->deleter) tensor->deleter(tensor);
    });
    sn_buffer* h = new_buffer(d, std::make_shared<Buffer>(std::move(storage), 0, dt, std::move(shape)));
    armed->store(true);
    return h;
  });
}
