#include "core/tensor/multi.h"

#include <algorithm>

#include "core/runtime/device.h"
#include "core/tensor/tensor.h"
#include "core/util/error.h"

namespace sn {

namespace {

std::string trim(std::string s) {
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

int64_t count_of(const Device& d) { return int64_t(d.names.size()); }

// x must be sharded on axis 0 of an n-tuple device.
void need_sharded(const char* op, const UOp* x) {
  if (!x->device().tuple)
    fail(Code::InvalidArg, op, ": x must be sharded over an n-tuple device (sn_tensor_shard), it is on ",
         x->device().null() ? std::string("no device") : x->device().str());
  if (x->axis() != 0)
    fail(Code::InvalidArg, op, ": x must be sharded on axis 0 of ", x->device().str(), ", it is ",
         x->axis() < 0 ? std::string("replicated (axis null)") : cat("sharded on axis ", x->axis()));
}

void need_single(const char* op, const UOp* x) {
  if (x->device().tuple) fail(Code::InvalidArg, op, ": x is already on the n-tuple device ", x->device().str());
}

void need_tuple(const char* op, const Device& d) {
  if (!d.tuple || d.names.empty())
    fail(Code::InvalidArg, op, ": devices must be an n-tuple such as \"CPU:0,CPU:1\", got \"", d.str(), "\"");
}

std::vector<int64_t> with_front(int64_t n, const std::vector<int64_t>& s) {
  std::vector<int64_t> out{n};
  out.insert(out.end(), s.begin(), s.end());
  return out;
}

}  // namespace

Device parse_device_names(const std::string& text_in, const char* what) {
  std::string text = trim(text_in);
  Device d;
  if (text.empty()) fail(Code::InvalidArg, what, ": the device name is empty");
  bool parens = text.front() == '(';
  if (parens) {
    if (text.back() != ')') fail(Code::InvalidArg, what, ": device tuple \"", text_in, "\" lacks its closing ')'");
    text = text.substr(1, text.size() - 2);
  }
  d.tuple = parens || text.find(',') != std::string::npos;
  size_t at = 0;
  while (true) {
    size_t comma = text.find(',', at);
    std::string name = trim(text.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (name.empty() || name.find_first_of("()") != std::string::npos)
      fail(Code::InvalidArg, what, ": device \"", text_in, "\" has an empty or malformed name");
    std::string canon;
    try {
      canon = canonical_device_name(name);
    } catch (const Error& e) {
      fail(Code::InvalidArg, what, ": ", e.message());
    }
    if (std::find(d.names.begin(), d.names.end(), canon) != d.names.end())
      fail(Code::InvalidArg, what, ": device ", name, " is listed twice in \"", text_in, "\"");
    d.names.push_back(canon);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return d;
}

const UOp* to_device(Graph& g, const UOp* x, const Device& d) {
  if (d.null()) fail(Code::InvalidArg, "to: no device given");
  std::vector<int64_t> s = static_shape(x, "to");
  if (d.tuple) {
    if (s.empty()) fail(Code::InvalidArg, "to: a tensor of shape () cannot be sharded over ", d.str());
    if (s[0] % count_of(d) != 0)
      fail(Code::InvalidArg, "to: axis 0 of ", dims_str(s), " has ", s[0], " elements, which do not divide among the ",
           count_of(d), " devices of ", d.str());
  }
  return g.make(Op::Copy, x->dtype, {x}, MemArg{d, AddrSpace::Global});
}

const UOp* shard(Graph& g, const UOp* x, const Device& d, int64_t axis) {
  need_tuple("shard", d);
  std::vector<int64_t> s = static_shape(x, "shard");
  int64_t rank = int64_t(s.size());
  if (axis < -rank || axis >= rank || rank == 0)
    fail(Code::InvalidArg, "shard: axis ", axis, " is out of range for shape ", dims_str(s));
  if (axis < 0) axis += rank;
  if (s[size_t(axis)] % count_of(d) != 0)
    fail(Code::InvalidArg, "shard: axis ", axis, " of ", dims_str(s), " has ", s[size_t(axis)],
         " elements, which do not divide among the ", count_of(d), " devices of ", d.str());
  if (x->device().tuple) {
    if (x->device() == d && x->axis() == axis) return x;
    fail(Code::InvalidArg, "shard: x is already on ", x->device().str(),
         x->axis() >= 0 ? cat(" sharded on axis ", x->axis()) : std::string(" (replicated)"),
         "; gather it to one device first (sn_tensor_to)");
  }
  if (axis == 0) return to_device(g, x, d);
  std::vector<int64_t> order{axis};
  std::vector<int64_t> back(static_cast<size_t>(rank), 0);
  for (int64_t k = 0; k < rank; k++)
    if (k != axis) order.push_back(k);
  for (int64_t k = 0; k < rank; k++) back[size_t(order[size_t(k)])] = k;
  return permute(g, to_device(g, permute(g, x, order), d), back);
}

// broadcast(T) = T.reshape(1, s).expand(n, s).copy(D).replicated(0), then the leading 1 dropped.
const UOp* broadcast(Graph& g, const UOp* x, const Device& d) {
  need_tuple("broadcast", d);
  need_single("broadcast", x);
  std::vector<int64_t> s = static_shape(x, "broadcast");
  const UOp* t = expand(g, reshape(g, x, with_front(1, s)), with_front(count_of(d), s));
  t = g.make(Op::Replicated, x->dtype, {to_device(g, t, d)}, std::vector<int64_t>{0});
  return reshape(g, t, s);
}

// scatter(T) = T.copy(D)
const UOp* scatter(Graph& g, const UOp* x, const Device& d) {
  need_tuple("scatter", d);
  need_single("scatter", x);
  return to_device(g, x, d);
}

// gather(T) = T.copy(D[0])
const UOp* gather(Graph& g, const UOp* x) {
  need_sharded("gather", x);
  return to_device(g, x, Device{{x->device().names[0]}, false});
}

// reduce(T) = gather(T).reshape(n, s).sum(0), the leading 1 dropped
const UOp* reduce_devices(Graph& g, const UOp* x) {
  need_sharded("reduce", x);
  std::vector<int64_t> s = static_shape(x, "reduce");
  int64_t n = count_of(x->device());
  std::vector<int64_t> rest = s;
  rest[0] = s[0] / n;
  const UOp* t = reshape(g, gather(g, x), with_front(n, rest));
  return reshape(g, reduce(g, t, Op::Add, {0}), rest);
}

// allgather(T) = T.reshape(1, n*s).expand(n, n*s).copy(D).replicated(0), the leading 1 dropped
const UOp* allgather(Graph& g, const UOp* x) {
  need_sharded("allgather", x);
  std::vector<int64_t> s = static_shape(x, "allgather");
  const Device& d = x->device();
  const UOp* t = expand(g, reshape(g, x, with_front(1, s)), with_front(count_of(d), s));
  t = g.make(Op::Replicated, x->dtype, {to_device(g, t, d)}, std::vector<int64_t>{0});
  return reshape(g, t, s);
}

// reduce_scatter(T) = T.reshape(n, n, s//n).permute(1, 0, 2).copy(D).sum(1).reshape(s)
const UOp* reduce_scatter(Graph& g, const UOp* x) {
  need_sharded("reduce_scatter", x);
  std::vector<int64_t> full = static_shape(x, "reduce_scatter");
  const Device& d = x->device();
  int64_t n = count_of(d), s = full[0] / n;
  if (s % n != 0)
    fail(Code::InvalidArg, "reduce_scatter: each device holds ", s, " rows of ", dims_str(full),
         ", which do not divide among the ", n, " devices of ", d.str());
  std::vector<int64_t> rest(full.begin() + 1, full.end());
  std::vector<int64_t> split{n, n, s / n}, order{1, 0, 2}, out{s};
  split.insert(split.end(), rest.begin(), rest.end());
  for (size_t k = 0; k < rest.size(); k++) order.push_back(int64_t(k) + 3);
  out.insert(out.end(), rest.begin(), rest.end());
  const UOp* t = permute(g, reshape(g, x, split), order);
  return reshape(g, reduce(g, to_device(g, t, d), Op::Add, {1}), out);
}

// allreduce(T) = allgather(reduce_scatter(T))
const UOp* allreduce(Graph& g, const UOp* x) {
  need_sharded("allreduce", x);
  return allgather(g, reduce_scatter(g, x));
}

}  // namespace sn
