// A fuzz target for the C API: the input bytes are a program of API calls (build nodes with every builder, the
// generic one included; compile; run with right and wrong buffers; query; print; retain and release live, released,
// foreign and fake handles). The oracle is the API's contract, checked after every call:
//   - a call succeeds (non-NULL, SN_OK) exactly when it sets no error, and a failure's error has a known code that
//     matches the returned code and a non-empty message;
//   - SN_E_INTERNAL (a bug we know we have) and every crash, leak, sanitizer report or hang is a failure.
// Built two ways: with clang's libFuzzer (SN_BUILD_FUZZ=ON: tests/fuzz/CMakeLists.txt, scripts/fuzz.sh), and as a
// plain replay driver (fuzz_replay.cpp) that runs the committed corpus in every ctest run, under gcc's ASan+UBSan
// in CI.
//
// Every byte is read in a fixed order (never two reads in one call's arguments, whose order C++ leaves to the
// compiler), so an input means the same calls to clang's libFuzzer build and to gcc's replay.
//
// Sizes are kept where a run finishes fast: dims are small (0..8) or huge (>= 2^40, so anything that allocates or
// loops over them must be refused); a program whose tensors exceed 2^16 elements is compiled but never run.
#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "sinter/sinter.h"
#include "sinter/sinter_dlpack.h"

namespace {

// ---- the input bytes ------------------------------------------------------------------------------------------------

class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool empty() const { return p_ == end_; }
  uint8_t u8() { return p_ == end_ ? 0 : *p_++; }
  size_t pick(size_t n) { return n == 0 ? 0 : u8() % n; }
  bool coin() { return u8() & 1; }
  // A dim or count: small most of the time, else one of the values that break arithmetic.
  int64_t dim() {
    static const int64_t kHuge[] = {INT64_MAX,
                                    INT64_MIN,
                                    -1,
                                    -2,
                                    int64_t(1) << 62,
                                    (int64_t(1) << 62) + 1,
                                    int64_t(1) << 40,
                                    int64_t(1) << 31,
                                    INT32_MAX,
                                    int64_t(1) << 32,
                                    (int64_t(1) << 40) + 3,
                                    INT64_MAX - 1};
    uint8_t b = u8();
    if (b < 232) return b % 9;
    return kHuge[(b - 232) % (sizeof kHuge / sizeof kHuge[0])];
  }
  int64_t axis() { return int64_t(u8() % 11) - 5; }  // -5..5: in and out of range
  double real() {
    static const double kVals[] = {0.0, 1.0, -1.0, 0.5, 3.25, -7.0, 1e30, -1e-30, 65504.0, 1e300};
    uint8_t b = u8();
    if (b < 240) return double(int(b) - 120) / 8.0;
    return kVals[(b - 240) % (sizeof kVals / sizeof kVals[0])];
  }
  std::vector<int64_t> dims(size_t max_rank = 4) {
    std::vector<int64_t> d(pick(max_rank + 1));
    for (auto& x : d) x = dim();
    return d;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

// ---- the contract
// -----------------------------------------------------------------------------------------------------

[[noreturn]] void violation(const char* what, const char* detail) {
  std::fprintf(stderr, "sinter fuzz: contract violated by %s: %s\n", what, detail);
  std::abort();
}

// An error the call reported: a known code, not internal, with a message.
void check_error(const sn_error* e, const char* what) {
  sn_code c = sn_error_code(e);
  const char* m = sn_error_message(e);
  if (c == SN_E_INTERNAL) {
    std::fprintf(stderr, "sinter fuzz: internal error from %s: %s\n", what, m ? m : "(null)");
    std::abort();
  }
  if (c == SN_OK || !((c >= SN_E_INVALID_ARG && c <= SN_E_NOT_FOUND))) violation(what, "unknown error code");
  if (m == nullptr || m[0] == '\0') violation(what, "empty error message");
}

// Errors the run keeps (instead of freeing at once) to free twice or query later.
std::vector<sn_error*> g_kept_errors;

void settle(sn_error*& e, Bytes& in) {
  if (e == nullptr) return;
  if (g_kept_errors.size() < 4 && in.pick(8) == 0) {
    g_kept_errors.push_back(e);
  } else {
    sn_error_free(e);
  }
  e = nullptr;
}

// A pointer result: non-NULL exactly when no error.
template <class T>
T* got(T* r, sn_error*& e, Bytes& in, const char* what) {
  if ((r == nullptr) != (e != nullptr)) violation(what, r ? "result and an error" : "NULL without an error");
  if (e) check_error(e, what);
  settle(e, in);
  return r;
}

// A status result: SN_OK exactly when no error, else the error's code.
sn_code status(sn_code c, sn_error*& e, Bytes& in, const char* what) {
  if ((c == SN_OK) != (e == nullptr)) violation(what, c == SN_OK ? "SN_OK with an error" : "failure without error");
  if (e) {
    check_error(e, what);
    if (sn_error_code(e) != c) violation(what, "returned code differs from the error's");
  }
  settle(e, in);
  return c;
}

// A value result with no failure marker of its own: any error must be well formed.
void maybe(sn_error*& e, Bytes& in, const char* what) {
  if (e) check_error(e, what);
  settle(e, in);
}

// The thread's last error after a call given no error slot.
void check_last(bool failed, const char* what) {
  if (failed != (sn_last_error_code() != SN_OK)) violation(what, "last error does not match the result");
  if (failed) {
    const char* m = sn_last_error_message();
    if (m == nullptr || m[0] == '\0') violation(what, "empty last error message");
    if (sn_last_error_code() == SN_E_INTERNAL) {
      std::fprintf(stderr, "sinter fuzz: internal error from %s: %s\n", what, m);
      std::abort();
    }
  }
  sn_clear_last_error();
}

// ---- the state one input builds
// ---------------------------------------------------------------------------------------

// Not a handle of any kind: the API must reject it by lookup, never by reading it.
alignas(64) unsigned char g_fake[256];

const char* const kDevices[] = {"CPU", "C", "CPU:0", "CPU:1", "", "bogus", "CPU,CPU", "(CPU:0,CPU:1)", "CUDA", "AMD"};

struct State {
  sn_context* ctx = nullptr;
  sn_context* foreign_ctx = nullptr;  // a second context: its handles are foreign to ctx's
  std::vector<sn_graph*> graphs;      // [0] main, then more (some of the foreign context)
  std::vector<sn_uop*> uops;          // of any graph, live or released
  std::vector<sn_device*> devices;
  sn_device* compile_only = nullptr;    // "C": compiles, runs nothing
  std::vector<sn_program*> programs;    // may run
  std::vector<sn_program*> unrunnable;  // over huge or symbolic sizes: only queried
  std::vector<sn_buffer*> buffers;
  std::vector<sn_function*> functions;
  std::vector<void*> released;  // handles released once (any type): must be rejected by every call
  int compiles = 0;
};

template <class T>
T* pick_from(Bytes& in, const std::vector<T*>& pool, State& st) {
  // Mostly a live handle; sometimes NULL, a fake or a released one.
  size_t k = in.u8();
  if (k < 220 && !pool.empty()) return pool[k % pool.size()];
  if (k < 236) return nullptr;
  if (k < 246 || st.released.empty()) return reinterpret_cast<T*>(g_fake + 64);
  return reinterpret_cast<T*>(st.released[k % st.released.size()]);
}

sn_graph* graph(Bytes& in, State& st) { return pick_from(in, st.graphs, st); }
sn_uop* uop(Bytes& in, State& st) { return pick_from(in, st.uops, st); }
sn_device* device(Bytes& in, State& st) { return pick_from(in, st.devices, st); }
sn_dtype dtype(Bytes& in) { return sn_dtype(in.pick(20)); }  // 0..17 valid, 18..19 not
sn_op any_op(Bytes& in) { return sn_op(in.pick(86)); }
const char* device_name(Bytes& in) {
  size_t k = in.pick(16);
  return k < 10 ? kDevices[k] : nullptr;
}

void add(State& st, sn_uop* u) {
  if (u && st.uops.size() < 512) st.uops.push_back(u);
}

std::vector<sn_uop*> uop_list(Bytes& in, State& st, size_t max_n) {
  std::vector<sn_uop*> v(in.pick(max_n + 1));
  for (auto& u : v) u = uop(in, st);
  return v;
}

// ---- actions
// ----------------------------------------------------------------------------------------------------------

void build_leaf(Bytes& in, State& st) {
  sn_error* e = nullptr;
  sn_graph* g = graph(in, st);
  switch (in.pick(7)) {
    case 0:
    case 1: {
      auto d = in.dims();
      sn_dtype dt = dtype(in);
      const char* dev = device_name(in);
      add(st, got(sn_tensor_input(g, dt, d.data(), d.size(), dev, &e), e, in, "tensor_input"));
      break;
    }
    case 2: {
      sn_dtype dt = dtype(in);
      int64_t v = in.dim();
      add(st, got(sn_uop_const_int(g, dt, v, &e), e, in, "const_int"));
      break;
    }
    case 3: {
      sn_dtype dt = dtype(in);
      double v = in.real();
      add(st, got(sn_uop_const_float(g, dt, v, &e), e, in, "const_float"));
      break;
    }
    case 4: {
      const char* names[] = {"n", "batch", "", nullptr};
      int64_t lo = in.dim(), hi = in.dim();
      add(st, got(sn_uop_var(g, names[in.pick(4)], lo, hi, &e), e, in, "var"));
      break;
    }
    case 5: {
      sn_dtype dt = dtype(in);
      int64_t size = in.dim();
      const char* dev = device_name(in);
      add(st, got(sn_uop_buffer(g, dt, size, dev, &e), e, in, "uop_buffer"));
      break;
    }
    case 6: {
      auto d = in.dims();
      int64_t slot = in.dim();
      sn_dtype dt = dtype(in);
      const char* dev = device_name(in);
      add(st, got(sn_uop_param(g, slot, dt, d.data(), d.size(), dev, &e), e, in, "uop_param"));
      break;
    }
  }
}

void build_elementwise(Bytes& in, State& st) {
  sn_error* e = nullptr;
  sn_graph* g = graph(in, st);
  switch (in.pick(6)) {
    case 0: {
      sn_op op = any_op(in);
      sn_uop* a = uop(in, st);
      add(st, got(sn_uop_unary(g, op, a, &e), e, in, "unary"));
      break;
    }
    case 1:
    case 2: {
      sn_uop* a = uop(in, st);
      sn_op op = any_op(in);
      sn_uop* b = uop(in, st);
      add(st, got(sn_uop_binary(g, op, a, b, &e), e, in, "binary"));
      break;
    }
    case 3: {
      sn_uop* a = uop(in, st);
      sn_uop* b = uop(in, st);
      sn_op op = any_op(in);
      sn_uop* c = uop(in, st);
      add(st, got(sn_uop_ternary(g, op, a, b, c, &e), e, in, "ternary"));
      break;
    }
    case 4: {
      auto v = uop_list(in, st, 4);
      sn_op op = any_op(in);
      add(st, got(sn_uop_alu(g, op, v.data(), v.size(), &e), e, in, "alu"));
      break;
    }
    case 5: {
      sn_uop* x = uop(in, st);
      if (in.coin())
        add(st, got(sn_uop_cast(g, x, dtype(in), &e), e, in, "cast"));
      else
        add(st, got(sn_uop_bitcast(g, x, dtype(in), &e), e, in, "bitcast"));
      break;
    }
  }
}

void build_movement(Bytes& in, State& st) {
  sn_error* e = nullptr;
  sn_graph* g = graph(in, st);
  sn_uop* x = uop(in, st);
  auto a = in.dims(5);
  switch (in.pick(8)) {
    case 0:
      add(st, got(sn_uop_reshape(g, x, a.data(), a.size(), &e), e, in, "reshape"));
      break;
    case 1:
      add(st, got(sn_uop_expand(g, x, a.data(), a.size(), &e), e, in, "expand"));
      break;
    case 2: {
      std::vector<int64_t> b(a.size());
      for (auto& v : b) v = in.dim();
      add(st, got(sn_uop_pad(g, x, a.data(), b.data(), a.size(), &e), e, in, "pad"));
      break;
    }
    case 3: {
      std::vector<int64_t> b(a.size());
      for (auto& v : b) v = in.dim();
      add(st, got(sn_uop_shrink(g, x, a.data(), b.data(), a.size(), &e), e, in, "shrink"));
      break;
    }
    case 4:
      for (auto& v : a) v = in.axis();
      add(st, got(sn_uop_permute(g, x, a.data(), a.size(), &e), e, in, "permute"));
      break;
    case 5:
      for (auto& v : a) v = in.pick(3);
      add(st, got(sn_uop_flip(g, x, a.data(), a.size(), &e), e, in, "flip"));
      break;
    case 6: {
      for (auto& v : a) v = in.axis();
      const sn_op ops[] = {SN_OP_ADD, SN_OP_MAX, SN_OP_MUL, any_op(in)};
      add(st, got(sn_uop_reduce(g, x, ops[in.pick(4)], a.data(), a.size(), &e), e, in, "reduce"));
      break;
    }
    case 7:
      add(st, got(sn_uop_contiguous(g, x, &e), e, in, "contiguous"));
      break;
  }
}

void build_tensor(Bytes& in, State& st) {
  sn_error* e = nullptr;
  sn_graph* g = graph(in, st);
  sn_uop* x = uop(in, st);
  sn_uop* y = uop(in, st);
  int64_t k2[2] = {in.dim(), in.dim()}, s2[2] = {in.dim(), in.dim()}, p2[2] = {in.dim(), in.dim()};
  const int64_t* stride = in.coin() ? s2 : nullptr;
  const int64_t* pad = in.coin() ? p2 : nullptr;
  switch (in.pick(27)) {
    case 0:
      add(st, got(sn_tensor_gemm(g, x, y, &e), e, in, "gemm"));
      break;
    case 1:
      add(st, got(sn_tensor_matmul(g, x, y, &e), e, in, "matmul"));
      break;
    case 2: {
      int64_t d2[2] = {int64_t(1 + in.pick(3)), int64_t(1 + in.pick(3))};
      sn_uop* bias = in.coin() ? uop(in, st) : nullptr;
      const int64_t* dilation = in.coin() ? d2 : nullptr;
      int64_t groups = in.dim();
      add(st, got(sn_tensor_conv2d(g, x, y, bias, stride, pad, dilation, groups, &e), e, in, "conv2d"));
      break;
    }
    case 3:
      add(st, got(sn_tensor_max_pool2d(g, x, k2, stride, pad, &e), e, in, "max_pool2d"));
      break;
    case 4:
      add(st, got(sn_tensor_avg_pool2d(g, x, k2, stride, pad, &e), e, in, "avg_pool2d"));
      break;
    case 5:
      add(st, got(sn_tensor_softmax(g, x, in.axis(), &e), e, in, "softmax"));
      break;
    case 6:
      add(st, got(sn_tensor_log_softmax(g, x, in.axis(), &e), e, in, "log_softmax"));
      break;
    case 7: {
      sn_uop* b = in.coin() ? uop(in, st) : nullptr;
      int64_t naxes = in.axis();
      sn_uop* w = in.coin() ? y : nullptr;
      double eps = in.real();
      add(st, got(sn_tensor_layernorm(g, x, naxes, w, b, eps, &e), e, in, "layernorm"));
      break;
    }
    case 8:
      add(st, got(sn_tensor_relu(g, x, &e), e, in, "relu"));
      break;
    case 9:
      add(st, got(sn_tensor_gelu(g, x, &e), e, in, "gelu"));
      break;
    case 10:
      add(st, got(sn_tensor_sigmoid(g, x, &e), e, in, "sigmoid"));
      break;
    case 11:
      add(st, got(sn_tensor_tanh(g, x, &e), e, in, "tanh"));
      break;
    case 12:
      add(st, got(sn_tensor_exp(g, x, &e), e, in, "exp"));
      break;
    case 13:
      add(st, got(sn_tensor_log(g, x, &e), e, in, "log"));
      break;
    case 14:
      add(st, got(sn_tensor_cumsum(g, x, in.axis(), &e), e, in, "cumsum"));
      break;
    case 15: {
      int64_t axis = in.axis();
      int keep = in.coin();
      add(st, got(sn_tensor_argmax(g, x, axis, keep, &e), e, in, "argmax"));
      break;
    }
    case 16: {
      auto v = uop_list(in, st, 4);
      add(st, got(sn_tensor_cat(g, v.data(), v.size(), in.axis(), &e), e, in, "cat"));
      break;
    }
    case 17: {
      auto v = uop_list(in, st, 4);
      add(st, got(sn_tensor_stack(g, v.data(), v.size(), in.axis(), &e), e, in, "stack"));
      break;
    }
    case 18: {
      int64_t n = in.dim();
      sn_dtype dt = dtype(in);
      add(st, got(sn_tensor_one_hot(g, x, n, dt, &e), e, in, "one_hot"));
      break;
    }
    case 19: {
      int64_t n = in.dim();
      sn_dtype dt = dtype(in);
      add(st, got(sn_tensor_arange(g, n, dt, &e), e, in, "arange"));
      break;
    }
    case 20:
      add(st, got(sn_tensor_gather(g, x, in.axis(), y, &e), e, in, "gather"));
      break;
    case 21: {
      sn_uop* v = uop(in, st);
      add(st, got(sn_tensor_scatter_add(g, x, in.axis(), y, v, &e), e, in, "scatter_add"));
      break;
    }
    case 22: {
      auto d = in.dims();
      uint64_t seed = in.u8();
      if (in.coin())
        add(st, got(sn_tensor_rand(g, d.data(), d.size(), seed, dtype(in), &e), e, in, "rand"));
      else
        add(st, got(sn_tensor_randn(g, d.data(), d.size(), seed, dtype(in), &e), e, in, "randn"));
      break;
    }
    case 23: {
      auto v = uop_list(in, st, 3);
      add(st, got(sn_tensor_index(g, x, v.data(), v.size(), &e), e, in, "index"));
      break;
    }
    case 24: {
      int64_t off = in.dim();
      int64_t size = in.dim();
      sn_dtype dt = dtype(in);
      add(st, got(sn_tensor_slice(g, x, off, size, dt, &e), e, in, "slice"));
      break;
    }
    case 25: {
      uint8_t bytes[16];
      size_t n = in.pick(17);
      for (size_t i = 0; i < n; i++) bytes[i] = in.u8();
      add(st, got(sn_tensor_binary(g, n ? bytes : nullptr, n, &e), e, in, "tensor_binary"));
      break;
    }
    case 26:
      add(st, got(sn_tensor_detach(g, x, &e), e, in, "detach"));
      break;
  }
}

void build_training(Bytes& in, State& st) {
  sn_error* e = nullptr;
  sn_graph* g = graph(in, st);
  if (in.coin()) {
    sn_uop* loss = uop(in, st);
    auto wrt = uop_list(in, st, 3);
    sn_uop* grads[3] = {nullptr, nullptr, nullptr};
    if (status(sn_tensor_gradient(g, loss, wrt.data(), wrt.size(), wrt.empty() ? nullptr : grads, &e), e, in,
               "gradient") == SN_OK) {
      for (size_t i = 0; i < wrt.size(); i++) {
        if (grads[i] == nullptr) violation("gradient", "SN_OK with a NULL gradient");
        add(st, grads[i]);
      }
    }
  } else {
    sn_uop* target = uop(in, st);
    add(st, got(sn_tensor_assign(g, target, uop(in, st), &e), e, in, "assign"));
  }
}

// The generic builder with an arg of every kind, well formed or not.
void build_generic(Bytes& in, State& st) {
  sn_error* e = nullptr;
  sn_graph* g = graph(in, st);
  sn_op op = any_op(in);
  sn_dtype dt = dtype(in);
  auto srcs = uop_list(in, st, 4);
  sn_arg arg;
  if (status(sn_arg_init(&arg, sizeof arg, &e), e, in, "arg_init") != SN_OK) violation("arg_init", "failed");
  int64_t ints[4];
  char text[8];
  arg.kind = sn_arg_kind(in.pick(14));
  arg.int_value = in.dim();
  arg.float_value = in.real();
  arg.nints = in.pick(5);
  for (size_t i = 0; i < arg.nints; i++) ints[i] = in.coin() ? in.axis() : in.dim();
  arg.ints = in.pick(8) ? ints : nullptr;
  arg.dtype = dtype(in);
  arg.reduce_op = any_op(in);
  arg.str_len = in.pick(9);
  for (size_t i = 0; i < arg.str_len; i++) text[i] = char(in.u8());
  arg.str = in.pick(8) ? text : nullptr;
  arg.id = in.dim();
  arg.axis_type = sn_axis_type(in.pick(14));
  arg.addrspace = sn_addrspace(in.pick(5));
  arg.size = in.dim();
  arg.device = device_name(in);
  arg.min = in.dim();
  arg.max = in.dim();
  if (in.pick(16) == 0) arg.struct_size = uint32_t(in.u8());  // a wrong struct_size must be refused
  const sn_arg* ap = in.pick(6) ? &arg : nullptr;
  add(st, got(sn_uop_new(g, op, dt, srcs.empty() ? nullptr : srcs.data(), srcs.size(), ap, &e), e, in, "uop_new"));
}

void build_function(Bytes& in, State& st) {
  sn_error* e = nullptr;
  switch (in.pick(4)) {
    case 0: {  // begin, with params, a body over them and end
      size_t n = in.pick(4);
      sn_dtype dts[3];
      std::vector<int64_t> shapes[3];
      const int64_t* sp[3];
      size_t ranks[3];
      for (size_t i = 0; i < n && i < 3; i++) {
        dts[i] = in.pick(4) ? SN_DTYPE_FLOAT32 : dtype(in);
        shapes[i] = in.dims(3);
        sp[i] = shapes[i].data();
        ranks[i] = shapes[i].size();
      }
      sn_function* f = got(sn_function_begin(graph(in, st), n, dts, sp, ranks, &e), e, in, "function_begin");
      if (f && st.functions.size() < 8) st.functions.push_back(f);
      break;
    }
    case 1: {
      sn_function* f = pick_from(in, st.functions, st);
      add(st, got(sn_function_param(f, in.pick(5), &e), e, in, "function_param"));
      break;
    }
    case 2: {
      sn_function* f = pick_from(in, st.functions, st);
      auto outs = uop_list(in, st, 3);
      (void)status(sn_function_end(f, outs.data(), outs.size(), &e), e, in, "function_end");
      if (in.coin()) (void)status(sn_function_set_flags(f, in.u8() & 3, &e), e, in, "function_set_flags");
      break;
    }
    case 3: {
      sn_function* f = pick_from(in, st.functions, st);
      auto args = uop_list(in, st, 3);
      sn_uop* results[4] = {nullptr, nullptr, nullptr, nullptr};
      if (status(sn_function_call(graph(in, st), f, args.data(), args.size(), results, &e), e, in, "function_call") ==
          SN_OK) {
        for (sn_uop* r : results) add(st, r);
      }
      break;
    }
  }
}

// Largest element count of any node under `roots` (0 when a query fails): programs over more are not run.
int64_t largest_tensor(const std::vector<sn_uop*>& roots) {
  std::vector<const sn_uop*> stack(roots.begin(), roots.end());
  std::unordered_set<const sn_uop*> seen;
  int64_t largest = 0;
  while (!stack.empty()) {
    const sn_uop* u = stack.back();
    stack.pop_back();
    if (u == nullptr || !seen.insert(u).second) continue;
    sn_error* e = nullptr;
    int64_t rank = sn_uop_rank(u, &e);
    if (e) {
      sn_error_free(e);
      return INT64_MAX;
    }
    int64_t numel = 1;
    for (int64_t i = 0; i < rank; i++) {
      int64_t v = 0;
      if (sn_uop_dim(u, size_t(i), &v, nullptr, &e) != SN_OK) {
        sn_error_free(e);
        return INT64_MAX;
      }
      if (v < 0 || (v > 0 && numel > (int64_t(1) << 40) / v)) return INT64_MAX;  // symbolic or huge
      numel *= v;
    }
    if (numel > largest) largest = numel;
    size_t n = sn_uop_num_srcs(u, &e);
    for (size_t i = 0; i < n; i++) {
      sn_uop* s = sn_uop_src(u, i, &e);
      if (e) {
        sn_error_free(e);
        e = nullptr;
      } else {
        stack.push_back(s);
      }
    }
    // Dims may be symbolic uops of another expression: their nodes are not tensors, so they are not followed.
  }
  return largest;
}

constexpr int64_t kRunLimit = int64_t(1) << 16;

void compile(Bytes& in, State& st) {
  if (st.compiles >= 3) return;  // compiling costs milliseconds: a few per input
  st.compiles++;
  sn_error* e = nullptr;
  sn_graph* g = graph(in, st);
  auto outs = uop_list(in, st, 3);
  auto effects = uop_list(in, st, 2);
  auto inputs = uop_list(in, st, 3);
  sn_compile_options o;
  if (status(sn_compile_options_init(&o, sizeof o, &e), e, in, "compile_options_init") != SN_OK) return;
  o.debug = in.pick(8) == 0 ? int32_t(in.pick(4)) - 1 : -1;
  if (o.debug > 0) o.debug = 0;  // printing is exercised by the printers; keep the run quiet
  o.optimize = in.coin();
  o.threads = in.coin();
  o.keep_stages = in.coin();
  o.use_cache = in.coin();
  if (in.coin()) {
    o.inputs = inputs.data();
    o.ninputs = inputs.size();
  }
  if (in.coin()) {
    o.effects = effects.data();
    o.neffects = effects.size();
  }
  if (in.pick(16) == 0) o.struct_size = uint32_t(in.u8());
  std::vector<sn_uop*> roots = outs;
  roots.insert(roots.end(), effects.begin(), effects.end());
  // A program whose tensors are small may run. Compiling one over large, huge or symbolic sizes would run its
  // input-independent kernels (core/runtime/precompute.h) over those sizes: it compiles for the compile-only C
  // device instead, and is only queried.
  if (std::getenv("SN_FUZZ_TRACE")) {  // what is compiled, to turn a failing input into a test
    for (sn_uop* r : roots) {
      sn_error* te = nullptr;
      char* text = sn_uop_to_tree(r, &te);
      std::fprintf(stderr, "compile root %p: %s\n", static_cast<void*>(r), text ? text : sn_error_message(te));
      sn_string_free(text);
      sn_error_free(te);
    }
  }
  if (std::getenv("SN_FUZZ_TRACE"))
    std::fprintf(stderr, "compile: %zu outputs, %zu inputs listed, %zu effects, graph %p\n", outs.size(),
                 o.inputs ? o.ninputs : 0, o.effects ? o.neffects : 0, static_cast<void*>(g));
  const bool small = largest_tensor(roots) <= kRunLimit;
  sn_device* d = small ? device(in, st) : st.compile_only;
  if (d == nullptr) return;
  sn_program* p = got(sn_compile(g, outs.data(), outs.size(), d, in.pick(6) ? &o : nullptr, &e), e, in, "compile");
  if (p == nullptr) return;
  (small && d != st.compile_only ? st.programs : st.unrunnable).push_back(p);
}

// Whether a buffer of these dims would be one a run cannot afford but a machine can hold (2^17 .. 2^39
// elements): such sizes are valid requests, so the harness does not make them. Sizes past any memory must fail.
bool costly(const int64_t* dims, size_t nd) {
  __int128 n = 1;
  for (size_t k = 0; k < nd; k++) {
    if (dims[k] <= 0) return false;                       // invalid, or no elements at all
    if (n > (__int128(1) << 80) / dims[k]) return false;  // past any memory
    n *= dims[k];
  }
  return n > (__int128(1) << 17) && n < (__int128(1) << 39);
}

// Program p's output i, allocated, unless its size is costly.
sn_buffer* alloc_output(Bytes& in, sn_program* p, size_t i) {
  sn_error* e = nullptr;
  sn_dtype dt;
  int64_t shape[8];
  size_t nd = 0;
  if (sn_program_output_info(p, i, &dt, shape, 8, &nd, &e) == SN_OK && nd <= 8 && costly(shape, nd)) return nullptr;
  if (e) sn_error_free(e);
  e = nullptr;
  return got(sn_program_alloc_output(p, i, &e), e, in, "program_alloc_output");
}

// A buffer of program p's input or output i (right shape), or a random one.
sn_buffer* make_buffer(Bytes& in, State& st, sn_program* p, bool output, size_t i) {
  sn_error* e = nullptr;
  if (output && in.pick(4) != 0) return alloc_output(in, p, i);
  sn_dtype dt = SN_DTYPE_FLOAT32;
  int64_t shape[8];
  size_t nd = 0;
  sn_code c = output ? sn_program_output_info(p, i, &dt, shape, 8, &nd, &e)
                     : sn_program_input_info(p, i, &dt, shape, 8, &nd, &e);
  if (status(c, e, in, "program_io_info") != SN_OK) return nullptr;
  for (size_t k = 0; k < nd; k++)
    if (shape[k] < 0) shape[k] = int64_t(in.pick(5));  // a symbolic dim: some value
  if (in.pick(5) == 0 && nd > 0) {  // a wrong shape (a dim of INT64_MAX, an empty tensor's, one less)
    int64_t& dim = shape[in.pick(nd)];
    dim = dim == INT64_MAX ? dim - 1 : dim + 1;
  }
  if (in.pick(5) == 0) dt = dtype(in);  // a wrong dtype
  sn_device* d = st.devices.empty() ? nullptr : st.devices[in.pick(st.devices.size())];
  if (nd <= 8 && costly(shape, nd)) return nullptr;
  return got(sn_buffer_alloc(d, dt, shape, nd, &e), e, in, "buffer_alloc");
}

void run(Bytes& in, State& st) {
  if (st.programs.empty()) return;
  sn_error* e = nullptr;
  sn_program* p = st.programs[in.pick(st.programs.size())];
  size_t ni = sn_program_num_inputs(p, &e);
  maybe(e, in, "num_inputs");
  size_t no = sn_program_num_outputs(p, &e);
  maybe(e, in, "num_outputs");
  if (ni > 16 || no > 16) violation("program", "implausible input or output count");
  std::vector<sn_buffer*> ins, outs, made;
  for (size_t i = 0; i < ni; i++) {
    const bool fresh = in.pick(8) != 0;  // else one of the pool's (live, released or fake)
    sn_buffer* b = fresh ? make_buffer(in, st, p, false, i) : pick_from(in, st.buffers, st);
    if (fresh && b) made.push_back(b);
    ins.push_back(b);
    if (b && in.coin()) {  // contents: bytes from the input, some of the time the wrong size
      size_t nbytes = sn_buffer_nbytes(b, &e);
      maybe(e, in, "buffer_nbytes");
      if (nbytes <= (size_t(kRunLimit) * 16)) {
        std::vector<uint8_t> data(nbytes + 8);
        for (auto& v : data) v = in.u8();
        size_t n = in.pick(6) ? nbytes : data.size();
        (void)status(sn_buffer_copy_in(b, data.data(), n, &e), e, in, "buffer_copy_in");
      }
    }
  }
  for (size_t i = 0; i < no; i++) {
    const bool fresh = in.pick(8) != 0;
    sn_buffer* b = fresh ? make_buffer(in, st, p, true, i) : pick_from(in, st.buffers, st);
    if (fresh && b) made.push_back(b);
    outs.push_back(b);
  }
  // Sometimes too few or too many buffers.
  if (in.pick(10) == 0 && !ins.empty()) ins.pop_back();
  if (in.pick(10) == 0) outs.push_back(outs.empty() ? nullptr : outs[0]);
  sn_code c;
  if (in.coin()) {
    c = sn_program_run(p, ins.data(), ins.size(), outs.data(), outs.size(), &e);
  } else {
    const char* names[2] = {"n", in.coin() ? "batch" : "n"};
    int64_t values[2] = {int64_t(in.pick(9)), in.dim()};
    size_t nv = in.pick(3);
    c = sn_program_run_vars(p, ins.data(), ins.size(), outs.data(), outs.size(), names, values, nv, &e);
  }
  (void)status(c, e, in, "program_run");
  for (sn_buffer* b : outs) {
    if (b == nullptr || std::find(made.begin(), made.end(), b) == made.end()) continue;
    size_t nbytes = sn_buffer_nbytes(b, &e);
    maybe(e, in, "buffer_nbytes");
    if (nbytes <= size_t(kRunLimit) * 16) {
      std::vector<uint8_t> data(nbytes + 8);
      size_t n = in.pick(6) ? nbytes : data.size();
      (void)status(sn_buffer_copy_out(b, data.data(), n, &e), e, in, "buffer_copy_out");
    }
  }
  for (sn_buffer* b : made) {
    if (st.buffers.size() < 16 && in.coin()) {
      st.buffers.push_back(b);
    } else {
      sn_buffer_release(b);
    }
  }
}

void buffers(Bytes& in, State& st) {
  sn_error* e = nullptr;
  switch (in.pick(6)) {
    case 0: {
      auto d = in.dims(3);
      if (costly(d.data(), d.size())) break;
      sn_device* dev = device(in, st);
      sn_dtype dt = dtype(in);
      sn_buffer* b = got(sn_buffer_alloc(dev, dt, d.data(), d.size(), &e), e, in, "buffer_alloc");
      if (b) st.buffers.size() < 16 ? st.buffers.push_back(b) : sn_buffer_release(b);
      break;
    }
    case 1: {
      auto d = in.dims(3);
      sn_buffer* src = pick_from(in, st.buffers, st);
      sn_buffer* b = got(sn_buffer_view(src, in.dim(), d.data(), d.size(), &e), e, in, "buffer_view");
      if (b) st.buffers.size() < 16 ? st.buffers.push_back(b) : sn_buffer_release(b);
      break;
    }
    case 2: {
      sn_buffer* dst = pick_from(in, st.buffers, st);
      (void)status(sn_buffer_copy(dst, pick_from(in, st.buffers, st), &e), e, in, "buffer_copy");
      break;
    }
    case 3: {  // queries
      sn_buffer* b = pick_from(in, st.buffers, st);
      (void)sn_buffer_dtype(b, &e);
      maybe(e, in, "buffer_dtype");
      int64_t r = sn_buffer_rank(b, &e);
      maybe(e, in, "buffer_rank");
      (void)sn_buffer_dim(b, size_t(r < 0 ? 0 : r) + in.pick(2), &e);
      maybe(e, in, "buffer_dim");
      (void)sn_buffer_numel(b, &e);
      maybe(e, in, "buffer_numel");
      (void)got(sn_buffer_device(b, &e), e, in, "buffer_device");
      void* host = sn_buffer_host_pointer(b, &e);
      maybe(e, in, "buffer_host_pointer");
      (void)host;
      break;
    }
    case 4: {  // DLPack out and back in
      sn_buffer* b = pick_from(in, st.buffers, st);
      sn_dlpack_tensor* t = got(sn_buffer_to_dlpack(b, &e), e, in, "buffer_to_dlpack");
      if (t == nullptr) break;
      if (in.coin()) {
        sn_buffer* back = got(sn_buffer_from_dlpack(device(in, st), t, &e), e, in, "buffer_from_dlpack");
        if (back) {
          sn_buffer_release(back);
          break;  // the import took ownership of t
        }
      }
      if (t->deleter) t->deleter(t);
      break;
    }
    case 5: {
      sn_buffer* b = pick_from(in, st.buffers, st);
      int64_t d[2] = {in.dim(), in.dim()};
      uint8_t data[64] = {0};
      size_t n = in.pick(65);
      (void)status(sn_buffer_copy_in(b, data, n, &e), e, in, "buffer_copy_in");
      (void)status(sn_buffer_copy_out(b, data, n, &e), e, in, "buffer_copy_out");
      (void)d;
      break;
    }
  }
}

void query_uop(Bytes& in, State& st) {
  sn_error* e = nullptr;
  sn_uop* u = uop(in, st);
  switch (in.pick(9)) {
    case 0:
      (void)sn_uop_op(u, &e);
      maybe(e, in, "uop_op");
      (void)sn_uop_dtype(u, &e);
      maybe(e, in, "uop_dtype");
      (void)sn_uop_lanes(u, &e);
      maybe(e, in, "uop_lanes");
      (void)sn_uop_is_pointer(u, &e);
      maybe(e, in, "uop_is_pointer");
      (void)sn_uop_pointer_addrspace(u, &e);
      maybe(e, in, "uop_pointer_addrspace");
      (void)sn_uop_axis(u, &e);
      maybe(e, in, "uop_axis");
      break;
    case 1: {
      size_t n = sn_uop_num_srcs(u, &e);
      maybe(e, in, "uop_num_srcs");
      add(st, got(sn_uop_src(u, n ? in.pick(n + 1) : 0, &e), e, in, "uop_src"));
      break;
    }
    case 2: {
      sn_arg a;
      if (status(sn_arg_init(&a, sizeof a, &e), e, in, "arg_init") != SN_OK) break;
      if (in.pick(8) == 0) a.struct_size = uint32_t(in.u8());
      (void)status(sn_uop_arg(u, &a, &e), e, in, "uop_arg");
      break;
    }
    case 3: {
      int64_t r = sn_uop_rank(u, &e);
      maybe(e, in, "uop_rank");
      int64_t v = 0;
      sn_uop* sym = nullptr;
      size_t index = size_t(r < 0 ? 0 : r) + in.pick(2) - 1;
      sn_uop** symp = in.coin() ? &sym : nullptr;
      if (status(sn_uop_dim(u, index, &v, symp, &e), e, in, "uop_dim") == SN_OK) add(st, sym);
      break;
    }
    case 4: {
      int64_t lo, hi;
      int clamped;
      (void)status(sn_uop_min_max_int(u, &lo, &hi, &clamped, &e), e, in, "uop_min_max_int");
      double flo, fhi;
      (void)status(sn_uop_min_max_float(u, &flo, &fhi, &e), e, in, "uop_min_max_float");
      break;
    }
    case 5:
    case 6: {
      char* s = nullptr;
      switch (in.pick(4)) {
        case 0:
          s = got(sn_uop_to_string(u, &e), e, in, "uop_to_string");
          break;
        case 1:
          s = got(sn_uop_to_tree(u, &e), e, in, "uop_to_tree");
          break;
        case 2:
          s = got(sn_uop_to_dot(u, &e), e, in, "uop_to_dot");
          break;
        case 3:
          s = got(sn_uop_device(u, &e), e, in, "uop_device");
          break;
      }
      sn_string_free(s);
      if (s && in.pick(16) == 0) sn_string_free(s);  // a second free: ignored, last error set
      sn_clear_last_error();
      break;
    }
    case 7:
      add(st, got(sn_graph_simplify(graph(in, st), u, &e), e, in, "graph_simplify"));
      break;
    case 8: {
      sn_uop* valid = uop(in, st);
      add(st, got(sn_graph_simplify_given(graph(in, st), valid, u, &e), e, in, "graph_simplify_given"));
      break;
    }
  }
}

void query_program(Bytes& in, State& st) {
  sn_error* e = nullptr;
  sn_program* p = pick_from(in, in.coin() ? st.programs : st.unrunnable, st);
  switch (in.pick(6)) {
    case 0: {
      size_t n = sn_program_num_kernels(p, &e);
      maybe(e, in, "num_kernels");
      size_t i = in.pick(n + 2);
      (void)got(sn_program_kernel_name(p, i, &e), e, in, "kernel_name");
      sn_string_free(got(sn_program_kernel_source(p, i, &e), e, in, "kernel_source"));
      break;
    }
    case 1: {
      const char* stages[] = {"tensor",   "schedule",   "ast",    "optimized", "launch",
                              "expanded", "simplified", "reduce", "parallel",  "isel",
                              "linear",   "source",     "plan",   "bogus",     ""};
      const char* s = in.pick(16) ? stages[in.pick(15)] : nullptr;
      sn_string_free(got(sn_program_stage(p, s, &e), e, in, "program_stage"));
      break;
    }
    case 2: {
      (void)sn_program_arena_bytes(p, &e);
      maybe(e, in, "arena_bytes");
      size_t nv = sn_program_num_vars(p, &e);
      maybe(e, in, "num_vars");
      const char* name = nullptr;
      int64_t lo, hi;
      (void)status(sn_program_var_info(p, in.pick(nv + 2), &name, &lo, &hi, &e), e, in, "var_info");
      break;
    }
    case 3: {
      const char* names[] = {"model", "", "1bad", "with space", nullptr, "x_y"};
      sn_string_free(got(sn_program_export_c(p, names[in.pick(6)], &e), e, in, "export_c"));
      break;
    }
    case 4: {
      sn_dtype dt;
      int64_t shape[2];
      size_t nd;
      size_t i = in.pick(4), cap = in.pick(3);
      (void)status(sn_program_input_info(p, i, &dt, shape, cap, &nd, &e), e, in, "input_info");
      i = in.pick(4);
      cap = in.pick(3);
      (void)status(sn_program_output_info(p, i, &dt, shape, cap, &nd, &e), e, in, "output_info");
      break;
    }
    case 5: {
      sn_buffer* b = alloc_output(in, p, in.pick(4));
      if (b) st.buffers.size() < 16 ? st.buffers.push_back(b) : sn_buffer_release(b);
      break;
    }
  }
}

// A retain's result: a handle, or NULL with the last error set.
template <class T>
T* retained(T* r) {
  check_last(r == nullptr, "retain");
  return r;
}

template <class T>
void drop(std::vector<T*>& pool, T* h) {
  for (size_t i = 0; i < pool.size(); i++)
    if (pool[i] == h) {
      pool.erase(pool.begin() + long(i));
      return;
    }
}

// Retain and release, of live handles (balanced or not), released ones, foreign and fake ones.
void lifetimes(Bytes& in, State& st) {
  sn_error* e = nullptr;
  switch (in.pick(8)) {
    case 0: {  // release a device the caller owns: programs and buffers keep it alive
      if (st.devices.empty()) break;
      sn_device* d = st.devices[in.pick(st.devices.size())];
      drop(st.devices, d);
      sn_clear_last_error();
      sn_device_release(d);
      check_last(false, "device_release");
      st.released.push_back(d);
      break;
    }
    case 1: {
      if (st.programs.empty()) break;
      sn_program* p = st.programs[in.pick(st.programs.size())];
      drop(st.programs, p);
      sn_clear_last_error();
      sn_program_release(p);
      check_last(false, "program_release");
      st.released.push_back(p);
      break;
    }
    case 2: {
      if (st.buffers.empty()) break;
      sn_buffer* b = st.buffers[in.pick(st.buffers.size())];
      drop(st.buffers, b);
      sn_clear_last_error();
      sn_buffer_release(b);
      check_last(false, "buffer_release");
      st.released.push_back(b);
      break;
    }
    case 3: {  // a graph: its uops become stale handles
      if (st.graphs.size() < 2) break;
      sn_graph* g = st.graphs[1 + in.pick(st.graphs.size() - 1)];
      drop(st.graphs, g);
      sn_clear_last_error();
      sn_graph_release(g);
      check_last(false, "graph_release");
      st.released.push_back(g);
      break;
    }
    case 4: {  // something released (or fake) released again, of a random type: ignored, last error set
      void* h =
          st.released.empty() || in.coin() ? static_cast<void*>(g_fake + 64) : st.released[in.pick(st.released.size())];
      if (h == nullptr) break;
      switch (in.pick(7)) {
        case 0:
          sn_context_release(static_cast<sn_context*>(h));
          break;
        case 1:
          sn_graph_release(static_cast<sn_graph*>(h));
          break;
        case 2:
          sn_device_release(static_cast<sn_device*>(h));
          break;
        case 3:
          sn_buffer_release(static_cast<sn_buffer*>(h));
          break;
        case 4:
          sn_program_release(static_cast<sn_program*>(h));
          break;
        case 5:
          sn_error_free(static_cast<sn_error*>(h));
          break;
        case 6:
          sn_string_free(static_cast<char*>(h));
          break;
      }
      // The same address may be live again as another handle of that type (memory reuse); the lookup then
      // finds it and the release is real: only a pointer that is live for no type must set the last error.
      sn_clear_last_error();
      break;
    }
    case 5: {  // balanced retain/release: NULL (last error set) for anything not live
      sn_clear_last_error();
      switch (in.pick(5)) {
        case 0:
          sn_context_release(retained(sn_context_retain(in.coin() ? st.ctx : st.foreign_ctx)));
          break;
        case 1:
          sn_graph_release(retained(sn_graph_retain(graph(in, st))));
          break;
        case 2:
          sn_device_release(retained(sn_device_retain(device(in, st))));
          break;
        case 3:
          sn_program_release(retained(sn_program_retain(pick_from(in, st.programs, st))));
          break;
        case 4:
          sn_buffer_release(retained(sn_buffer_retain(pick_from(in, st.buffers, st))));
          break;
      }
      sn_clear_last_error();
      break;
    }
    case 6: {  // errors kept earlier: query, free, free again
      if (g_kept_errors.empty()) break;
      sn_error* k = g_kept_errors.back();
      g_kept_errors.pop_back();
      check_error(k, "kept error");
      sn_error_free(k);
      if (in.coin()) {
        sn_clear_last_error();
        sn_error_free(k);
        check_last(true, "error_free twice");
      }
      break;
    }
    case 7: {  // open (or fail to open) a device
      sn_context* c = in.pick(4) ? st.ctx : (in.coin() ? st.foreign_ctx : reinterpret_cast<sn_context*>(g_fake + 64));
      const char* name = in.pick(4) ? "CPU" : device_name(in);
      sn_device* d = got(sn_device_open(c, name, &e), e, in, "device_open");
      if (d) st.devices.size() < 6 ? st.devices.push_back(d) : sn_device_release(d);
      if (in.coin()) {
        (void)sn_device_count(c, device_name(in), &e);
        maybe(e, in, "device_count");
      }
      break;
    }
  }
}

void one_input(Bytes& in) {
  State st;
  sn_error* e = nullptr;
  st.ctx = got(sn_context_create(&e), e, in, "context_create");
  st.foreign_ctx = got(sn_context_create(&e), e, in, "context_create");
  if (!st.ctx || !st.foreign_ctx) violation("context_create", "failed");
  st.graphs.push_back(got(sn_graph_create(st.ctx, &e), e, in, "graph_create"));
  st.graphs.push_back(got(sn_graph_create(st.ctx, &e), e, in, "graph_create"));
  sn_graph* foreign_graph = got(sn_graph_create(st.foreign_ctx, &e), e, in, "graph_create");
  st.graphs.push_back(foreign_graph);
  sn_device* cpu = got(sn_device_open(st.ctx, "CPU", &e), e, in, "device_open");
  if (cpu) st.devices.push_back(cpu);
  st.compile_only = got(sn_device_open(st.ctx, "C", &e), e, in, "device_open");
  int actions = 0;
  while (!in.empty() && actions++ < 256) {
    switch (in.pick(16)) {
      case 0:
      case 1:
        build_leaf(in, st);
        break;
      case 2:
      case 3:
        build_elementwise(in, st);
        break;
      case 4:
        build_movement(in, st);
        break;
      case 5:
      case 6:
        build_tensor(in, st);
        break;
      case 7:
        build_training(in, st);
        break;
      case 8:
        build_generic(in, st);
        break;
      case 9:
        build_function(in, st);
        break;
      case 10:
        compile(in, st);
        break;
      case 11:
        run(in, st);
        break;
      case 12:
        buffers(in, st);
        break;
      case 13:
        query_uop(in, st);
        break;
      case 14:
        query_program(in, st);
        break;
      case 15:
        lifetimes(in, st);
        break;
    }
  }
  // Everything the input still owns goes back; the leak checker sees the rest.
  for (sn_buffer* b : st.buffers) sn_buffer_release(b);
  for (sn_program* p : st.programs) sn_program_release(p);
  for (sn_program* p : st.unrunnable) sn_program_release(p);
  for (sn_device* d : st.devices) sn_device_release(d);
  sn_device_release(st.compile_only);
  for (sn_graph* g : st.graphs) sn_graph_release(g);
  for (sn_error* k : g_kept_errors) sn_error_free(k);
  g_kept_errors.clear();
  sn_context_release(st.ctx);
  sn_context_release(st.foreign_ctx);
  sn_clear_last_error();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  one_input(in);
  return 0;
}
