// Tensor builders of the C API: input tensors and the compositions of core/tensor/compose.h. Each
// validates its handles, converts the C arrays, and lets the tensor front check the values (its
// messages name the operation, the rule and the values; the boundary prefixes the C function).
#include <array>

#include "capi/src/capi_internal.h"
#include "core/tensor/compose.h"
#include "core/tensor/gradient.h"
#include "core/tensor/multi.h"
#include "core/tensor/tensor.h"

namespace sn::capi {
namespace {

std::vector<int64_t> dims_of(const int64_t* p, size_t n, const char* param) {
  if (n > 0 && p == nullptr) invalid(param, " is NULL but its count is ", n);
  return n == 0 ? std::vector<int64_t>{} : std::vector<int64_t>(p, p + n);
}

// A pair parameter ({rows, columns}); NULL gives `fallback`.
std::array<int64_t, 2> pair_of(const int64_t* p, std::array<int64_t, 2> fallback) {
  return p == nullptr ? fallback : std::array<int64_t, 2>{p[0], p[1]};
}

const UOp* optional_uop(const sn_graph* g, const sn_uop* u, const char* param) {
  return u == nullptr ? nullptr : uop_of(g, u, param);
}

// fn(graph, x) for the one-tensor builders.
template <class F>
sn_uop* unary_builder(const char* name, sn_graph* graph, sn_uop* x, sn_error** err, F fn) {
  return guard(name, err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    return hand_out(g, fn(g->graph, uop_of(g, x, "x")));
  });
}

std::vector<const UOp*> uops_of(const sn_graph* g, sn_uop* const* xs, size_t n, const char* param) {
  if (n == 0) invalid(param, ": needs at least one tensor");
  if (xs == nullptr) invalid(param, " is NULL but its count is ", n);
  std::vector<const UOp*> out;
  for (size_t i = 0; i < n; i++) out.push_back(uop_of(g, xs[i], cat(param, "[", i, "]").c_str()));
  return out;
}

// A device or device tuple named by the caller, each device checked to exist (opened in the graph's
// context); `tuple` requires a tuple.
sn::Device devices_of(sn_graph* g, const char* text, const char* param, bool tuple) {
  if (text == nullptr) invalid(param, " is NULL");
  sn::Device d = sn::parse_device_names(text, param);
  if (tuple && !d.tuple)
    invalid(param, ": \"", text, "\" is one device; a device tuple such as \"CPU:0,CPU:1\" is needed");
  for (const std::string& name : d.names) g->ctx->runtime.devices().open(name);
  return d;
}

}  // namespace
}  // namespace sn::capi

using namespace sn::capi;

sn_uop* sn_tensor_input(sn_graph* graph, sn_dtype dtype, const int64_t* shape, size_t ndim, const char* device,
                        sn_error** err) {
  return guard("sn_tensor_input", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    sn::DType dt = to_dtype(raw(dtype), "dtype");
    std::string dev = device == nullptr || *device == '\0' ? "CPU" : device;
    sn::Device tuple;
    if (dev.find(',') != std::string::npos || dev.front() == '(') {  // sharded on axis 0 (API version 8)
      tuple = devices_of(g, device, "device", true);
      dev = tuple.names[0];
    }
    std::vector<int64_t> dims = dims_of(shape, ndim, "shape");
    const sn::UOp* t = sn::input(g->graph, dt, dims, dev);
    const sn::UOp* out = tuple.null() ? t : sn::shard(g->graph, t, tuple, 0);
    sn_uop* h = hand_out(g, out);
    std::lock_guard lock(registry().mu);
    g->inputs.push_back(t);
    return h;
  });
}

namespace {

// A shape of dims given as uops: constants, or index uops over bounded variables.
sn::Shape symbolic_dims(sn_graph* g, sn_uop* const* dims, size_t ndim) {
  if (ndim > 0 && dims == nullptr) invalid("dims is NULL but ndim is ", ndim);
  sn::Shape shape;
  for (size_t k = 0; k < ndim; k++) {
    const sn::UOp* d = uop_of(g, dims[k], sn::cat("dims[", k, "]").c_str());
    if (!d->dtype.is_int() || d->dtype.lanes != 1 || (d->shape() != nullptr && !d->shape()->empty()))
      invalid("dims[", k, "] must be a scalar index or integer uop (a constant, a variable or index math), got ",
              d->dtype.name());
    if (d->is_const())
      shape.push_back(sn::Dim::of(int64_t(d->const_int())));
    else if (d->dtype.is_index())
      shape.push_back(sn::Dim{0, d});
    else
      invalid("dims[", k, "] must have the index dtype (sn_uop_var makes one), got ", d->dtype.name());
  }
  return shape;
}

}  // namespace

sn_uop* sn_tensor_input_sym(sn_graph* graph, sn_dtype dtype, sn_uop* const* dims, size_t ndim, const char* device,
                            sn_error** err) {
  return guard("sn_tensor_input_sym", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    sn::DType dt = to_dtype(raw(dtype), "dtype");
    sn::Shape shape = symbolic_dims(g, dims, ndim);
    std::string dev = device == nullptr || *device == '\0' ? "CPU" : device;
    if (dev.find_first_of("(),") != std::string::npos)
      sn::fail(sn::Code::Unsupported, "device \"", dev,
               "\": a device tuple takes static dims (multi-device programs with symbolic shapes are not supported)");
    const sn::UOp* t = sn::input_sym(g->graph, dt, shape, dev);
    sn_uop* h = hand_out(g, t);
    std::lock_guard lock(registry().mu);
    g->inputs.push_back(t);
    return h;
  });
}

sn_uop* sn_tensor_reshape_sym(sn_graph* graph, sn_uop* x, sn_uop* const* dims, size_t ndim, sn_error** err) {
  return guard("sn_tensor_reshape_sym", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    const sn::UOp* xu = uop_of(g, x, "x");
    return hand_out(g, sn::reshape_sym(g->graph, xu, symbolic_dims(g, dims, ndim)));
  });
}

sn_uop* sn_tensor_expand_sym(sn_graph* graph, sn_uop* x, sn_uop* const* dims, size_t ndim, sn_error** err) {
  return guard("sn_tensor_expand_sym", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    const sn::UOp* xu = uop_of(g, x, "x");
    return hand_out(g, sn::expand_sym(g->graph, xu, symbolic_dims(g, dims, ndim)));
  });
}

sn_uop* sn_tensor_gemm(sn_graph* graph, sn_uop* a, sn_uop* b, sn_error** err) {
  return guard("sn_tensor_gemm", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    return hand_out(g, sn::gemm(g->graph, uop_of(g, a, "a"), uop_of(g, b, "b")));
  });
}

sn_uop* sn_tensor_matmul(sn_graph* graph, sn_uop* a, sn_uop* b, sn_error** err) {
  return guard("sn_tensor_matmul", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    return hand_out(g, sn::matmul(g->graph, uop_of(g, a, "a"), uop_of(g, b, "b")));
  });
}

sn_uop* sn_tensor_conv2d(sn_graph* graph, sn_uop* x, sn_uop* w, sn_uop* bias, const int64_t* stride,
                         const int64_t* padding, const int64_t* dilation, int64_t groups, sn_error** err) {
  return guard("sn_tensor_conv2d", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    return hand_out(g,
                    sn::conv2d(g->graph, uop_of(g, x, "x"), uop_of(g, w, "w"), optional_uop(g, bias, "bias"),
                               pair_of(stride, {1, 1}), pair_of(padding, {0, 0}), pair_of(dilation, {1, 1}), groups));
  });
}

namespace {
template <class F>
sn_uop* pool(const char* name, sn_graph* graph, sn_uop* x, const int64_t* kernel, const int64_t* stride,
             const int64_t* padding, sn_error** err, F fn) {
  return guard(name, err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    const sn::UOp* xu = uop_of(g, x, "x");
    if (kernel == nullptr) invalid("kernel is NULL (it needs {rows, columns})");
    std::array<int64_t, 2> k{kernel[0], kernel[1]};
    return hand_out(g, fn(g->graph, xu, k, pair_of(stride, k), pair_of(padding, {0, 0})));
  });
}
}  // namespace

sn_uop* sn_tensor_max_pool2d(sn_graph* graph, sn_uop* x, const int64_t* kernel, const int64_t* stride,
                             const int64_t* padding, sn_error** err) {
  return pool("sn_tensor_max_pool2d", graph, x, kernel, stride, padding, err,
              [](sn::Graph& g, const sn::UOp* u, auto k, auto s, auto p) { return sn::max_pool2d(g, u, k, s, p); });
}

sn_uop* sn_tensor_avg_pool2d(sn_graph* graph, sn_uop* x, const int64_t* kernel, const int64_t* stride,
                             const int64_t* padding, sn_error** err) {
  return pool("sn_tensor_avg_pool2d", graph, x, kernel, stride, padding, err,
              [](sn::Graph& g, const sn::UOp* u, auto k, auto s, auto p) { return sn::avg_pool2d(g, u, k, s, p); });
}

sn_uop* sn_tensor_softmax(sn_graph* graph, sn_uop* x, int64_t axis, sn_error** err) {
  return unary_builder("sn_tensor_softmax", graph, x, err,
                       [&](sn::Graph& g, const sn::UOp* u) { return sn::softmax(g, u, axis); });
}

sn_uop* sn_tensor_log_softmax(sn_graph* graph, sn_uop* x, int64_t axis, sn_error** err) {
  return unary_builder("sn_tensor_log_softmax", graph, x, err,
                       [&](sn::Graph& g, const sn::UOp* u) { return sn::log_softmax(g, u, axis); });
}

sn_uop* sn_tensor_layernorm(sn_graph* graph, sn_uop* x, int64_t naxes, sn_uop* weight, sn_uop* bias, double eps,
                            sn_error** err) {
  return guard("sn_tensor_layernorm", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    return hand_out(g, sn::layernorm(g->graph, uop_of(g, x, "x"), naxes, optional_uop(g, weight, "weight"),
                                     optional_uop(g, bias, "bias"), eps));
  });
}

sn_uop* sn_tensor_relu(sn_graph* graph, sn_uop* x, sn_error** err) {
  return unary_builder("sn_tensor_relu", graph, x, err, [](sn::Graph& g, const sn::UOp* u) { return sn::relu(g, u); });
}
sn_uop* sn_tensor_gelu(sn_graph* graph, sn_uop* x, sn_error** err) {
  return unary_builder("sn_tensor_gelu", graph, x, err, [](sn::Graph& g, const sn::UOp* u) { return sn::gelu(g, u); });
}
sn_uop* sn_tensor_sigmoid(sn_graph* graph, sn_uop* x, sn_error** err) {
  return unary_builder("sn_tensor_sigmoid", graph, x, err,
                       [](sn::Graph& g, const sn::UOp* u) { return sn::sigmoid(g, u); });
}
sn_uop* sn_tensor_tanh(sn_graph* graph, sn_uop* x, sn_error** err) {
  return unary_builder("sn_tensor_tanh", graph, x, err,
                       [](sn::Graph& g, const sn::UOp* u) { return sn::tensor_tanh(g, u); });
}
sn_uop* sn_tensor_exp(sn_graph* graph, sn_uop* x, sn_error** err) {
  return unary_builder("sn_tensor_exp", graph, x, err,
                       [](sn::Graph& g, const sn::UOp* u) { return sn::tensor_exp(g, u); });
}
sn_uop* sn_tensor_log(sn_graph* graph, sn_uop* x, sn_error** err) {
  return unary_builder("sn_tensor_log", graph, x, err,
                       [](sn::Graph& g, const sn::UOp* u) { return sn::tensor_log(g, u); });
}

sn_uop* sn_tensor_cumsum(sn_graph* graph, sn_uop* x, int64_t axis, sn_error** err) {
  return unary_builder("sn_tensor_cumsum", graph, x, err,
                       [&](sn::Graph& g, const sn::UOp* u) { return sn::cumsum(g, u, axis); });
}

sn_uop* sn_tensor_argmax(sn_graph* graph, sn_uop* x, int64_t axis, int keepdim, sn_error** err) {
  return unary_builder("sn_tensor_argmax", graph, x, err,
                       [&](sn::Graph& g, const sn::UOp* u) { return sn::argmax(g, u, axis, keepdim != 0); });
}

sn_uop* sn_tensor_cat(sn_graph* graph, sn_uop* const* xs, size_t n, int64_t axis, sn_error** err) {
  return guard("sn_tensor_cat", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    return hand_out(g, sn::concat(g->graph, uops_of(g, xs, n, "xs"), axis));
  });
}

sn_uop* sn_tensor_stack(sn_graph* graph, sn_uop* const* xs, size_t n, int64_t axis, sn_error** err) {
  return guard("sn_tensor_stack", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    return hand_out(g, sn::stack(g->graph, uops_of(g, xs, n, "xs"), axis));
  });
}

sn_uop* sn_tensor_one_hot(sn_graph* graph, sn_uop* idx, int64_t n, sn_dtype dtype, sn_error** err) {
  return guard("sn_tensor_one_hot", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    return hand_out(g, sn::one_hot(g->graph, uop_of(g, idx, "idx"), n, to_dtype(raw(dtype), "dtype")));
  });
}

sn_uop* sn_tensor_arange(sn_graph* graph, int64_t n, sn_dtype dtype, sn_error** err) {
  return guard("sn_tensor_arange", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    return hand_out(g, sn::arange(g->graph, n, to_dtype(raw(dtype), "dtype")));
  });
}

sn_uop* sn_tensor_gather(sn_graph* graph, sn_uop* x, int64_t axis, sn_uop* idx, sn_error** err) {
  return guard("sn_tensor_gather", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    return hand_out(g, sn::gather(g->graph, uop_of(g, x, "x"), axis, uop_of(g, idx, "idx")));
  });
}

sn_uop* sn_tensor_scatter_add(sn_graph* graph, sn_uop* x, int64_t axis, sn_uop* idx, sn_uop* val, sn_error** err) {
  return guard("sn_tensor_scatter_add", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    return hand_out(g,
                    sn::scatter_add(g->graph, uop_of(g, x, "x"), axis, uop_of(g, idx, "idx"), uop_of(g, val, "val")));
  });
}

sn_uop* sn_tensor_rand(sn_graph* graph, const int64_t* shape, size_t ndim, uint64_t seed, sn_dtype dtype,
                       sn_error** err) {
  return guard("sn_tensor_rand", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    return hand_out(g, sn::rand_uniform(g->graph, dims_of(shape, ndim, "shape"), seed, to_dtype(raw(dtype), "dtype")));
  });
}

sn_uop* sn_tensor_randn(sn_graph* graph, const int64_t* shape, size_t ndim, uint64_t seed, sn_dtype dtype,
                        sn_error** err) {
  return guard("sn_tensor_randn", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    return hand_out(g, sn::randn(g->graph, dims_of(shape, ndim, "shape"), seed, to_dtype(raw(dtype), "dtype")));
  });
}

sn_code sn_tensor_gradient(sn_graph* graph, sn_uop* loss, sn_uop* const* wrt, size_t n, sn_uop** grads,
                           sn_error** err) {
  return guard("sn_tensor_gradient", err, SN_E_INVALID_ARG, [&] {
    sn_graph* g = live_graph(graph, "graph");
    const sn::UOp* l = uop_of(g, loss, "loss");
    std::vector<const sn::UOp*> w = uops_of(g, wrt, n, "wrt");
    if (grads == nullptr) invalid("grads is NULL but n is ", n);
    std::vector<const sn::UOp*> d = sn::gradient(g->graph, l, w);
    std::vector<sn_uop*> out;
    for (const sn::UOp* u : d) out.push_back(hand_out(g, u));
    std::copy(out.begin(), out.end(), grads);  // only once every gradient exists
    return SN_OK;
  });
}

sn_uop* sn_tensor_detach(sn_graph* graph, sn_uop* x, sn_error** err) {
  return unary_builder("sn_tensor_detach", graph, x, err,
                       [](sn::Graph& g, const sn::UOp* u) { return sn::detach(g, u); });
}

sn_uop* sn_tensor_assign(sn_graph* graph, sn_uop* target, sn_uop* value, sn_error** err) {
  return guard("sn_tensor_assign", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    return hand_out(g, sn::assign(g->graph, uop_of(g, target, "target"), uop_of(g, value, "value")));
  });
}

sn_uop* sn_tensor_index(sn_graph* graph, sn_uop* x, sn_uop* const* indices, size_t n, sn_error** err) {
  return guard("sn_tensor_index", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    const sn::UOp* xu = uop_of(g, x, "x");
    if (n > 0 && indices == nullptr) invalid("indices is NULL but n is ", n);
    std::vector<const sn::UOp*> idx;
    for (size_t i = 0; i < n; i++) idx.push_back(uop_of(g, indices[i], sn::cat("indices[", i, "]").c_str()));
    return hand_out(g, sn::index(g->graph, xu, idx));
  });
}

sn_uop* sn_tensor_slice(sn_graph* graph, sn_uop* x, int64_t offset, int64_t size, sn_dtype dtype, sn_error** err) {
  return guard("sn_tensor_slice", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    return hand_out(g, sn::slice(g->graph, uop_of(g, x, "x"), offset, size, to_dtype(raw(dtype), "dtype")));
  });
}

sn_uop* sn_tensor_binary(sn_graph* graph, const void* data, size_t nbytes, sn_error** err) {
  return guard("sn_tensor_binary", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    if (nbytes > 0 && data == nullptr) invalid("data is NULL but nbytes is ", nbytes);
    if (nbytes > (size_t(1) << 40)) invalid("nbytes ", nbytes, " is larger than a constant can be (2^40 bytes)");
    std::string bytes = nbytes == 0 ? std::string() : std::string(static_cast<const char*>(data), nbytes);
    return hand_out(g, sn::binary_data(g->graph, std::move(bytes)));
  });
}

// ---- version 8 (multi-device) ----

sn_uop* sn_tensor_shard(sn_graph* graph, sn_uop* x, const char* devices, int64_t axis, sn_error** err) {
  return guard("sn_tensor_shard", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    const sn::UOp* xu = uop_of(g, x, "x");
    return hand_out(g, sn::shard(g->graph, xu, devices_of(g, devices, "devices", true), axis));
  });
}

sn_uop* sn_tensor_to(sn_graph* graph, sn_uop* x, const char* device, sn_error** err) {
  return guard("sn_tensor_to", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    const sn::UOp* xu = uop_of(g, x, "x");
    return hand_out(g, sn::to_device(g->graph, xu, devices_of(g, device, "device", false)));
  });
}

sn_uop* sn_tensor_broadcast(sn_graph* graph, sn_uop* x, const char* devices, sn_error** err) {
  return guard("sn_tensor_broadcast", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    const sn::UOp* xu = uop_of(g, x, "x");
    return hand_out(g, sn::broadcast(g->graph, xu, devices_of(g, devices, "devices", true)));
  });
}

sn_uop* sn_tensor_scatter(sn_graph* graph, sn_uop* x, const char* devices, sn_error** err) {
  return guard("sn_tensor_scatter", err, static_cast<sn_uop*>(nullptr), [&] {
    sn_graph* g = live_graph(graph, "graph");
    const sn::UOp* xu = uop_of(g, x, "x");
    return hand_out(g, sn::scatter(g->graph, xu, devices_of(g, devices, "devices", true)));
  });
}

sn_uop* sn_tensor_gather_devices(sn_graph* graph, sn_uop* x, sn_error** err) {
  return unary_builder("sn_tensor_gather_devices", graph, x, err,
                       [](sn::Graph& gr, const sn::UOp* u) { return sn::gather(gr, u); });
}
sn_uop* sn_tensor_reduce_devices(sn_graph* graph, sn_uop* x, sn_error** err) {
  return unary_builder("sn_tensor_reduce_devices", graph, x, err,
                       [](sn::Graph& gr, const sn::UOp* u) { return sn::reduce_devices(gr, u); });
}
sn_uop* sn_tensor_allgather(sn_graph* graph, sn_uop* x, sn_error** err) {
  return unary_builder("sn_tensor_allgather", graph, x, err,
                       [](sn::Graph& gr, const sn::UOp* u) { return sn::allgather(gr, u); });
}
sn_uop* sn_tensor_reduce_scatter(sn_graph* graph, sn_uop* x, sn_error** err) {
  return unary_builder("sn_tensor_reduce_scatter", graph, x, err,
                       [](sn::Graph& gr, const sn::UOp* u) { return sn::reduce_scatter(gr, u); });
}
sn_uop* sn_tensor_allreduce(sn_graph* graph, sn_uop* x, sn_error** err) {
  return unary_builder("sn_tensor_allreduce", graph, x, err,
                       [](sn::Graph& gr, const sn::UOp* u) { return sn::allreduce(gr, u); });
}
