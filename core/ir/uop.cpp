#include "core/ir/uop.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <sstream>

#include "core/util/checked.h"

namespace sn {

namespace {
// Stable (process-independent) hashing: splitmix-style mixing for words; bytes below.
//
// Bytes: whole 32-byte blocks go through four independent lanes (per 8-byte word an add of its
// product, a rotate and a multiply: the rotate carries high bits down, where a multiply alone
// lets a flip of one word's top bit cancel one of the next word's), the rest through FNV-1a. A program's constant
// weights are hashed when their node is built and again for the program's content hash; ResNet-18's 45 MB took about 45
// ms each time with FNV-1a's multiply per byte, one after the other. Strings under 32 bytes hash as before.
uint64_t hash_bytes(const void* p, size_t n, uint64_t h = 0xcbf29ce484222325ULL) {
  auto* b = static_cast<const unsigned char*>(p);
  if (n >= 32) {
    constexpr uint64_t kM1 = 0x9e3779b97f4a7c15ULL, kM2 = 0xc2b2ae3d27d4eb4fULL;
    uint64_t lane[4] = {h, h ^ kM1, h + kM2, h - kM2};
    size_t blocks = n / 32;
    for (size_t i = 0; i < blocks; i++, b += 32)
      for (int k = 0; k < 4; k++) {
        uint64_t w;
        std::memcpy(&w, b + 8 * k, 8);
        lane[k] = std::rotl(lane[k] + w * kM2, 31) * kM1;
      }
    h = (std::rotl(lane[0], 1) + std::rotl(lane[1], 7) + std::rotl(lane[2], 12) + std::rotl(lane[3], 18)) ^ n;
    h = (h ^ (h >> 29)) * kM2;
    n -= blocks * 32;
  }
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}
uint64_t hash_str(const std::string& s) { return hash_bytes(s.data(), s.size()); }
uint64_t hash_dtype(DType d) {
  return (uint64_t(d.scalar) << 24) | (uint64_t(d.lanes) << 8) | (uint64_t(d.ptr) << 4) | uint64_t(d.addrspace);
}
uint64_t hash_device(const Device& d) {
  uint64_t h = d.tuple ? 7 : 3;
  for (auto& n : d.names) h = hash_combine(h, hash_str(n));
  return h;
}
uint64_t hash_ints(const std::vector<int64_t>& v) {
  uint64_t h = 0x1234;
  for (auto x : v) h = hash_combine(h, uint64_t(x));
  return h;
}

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); i++) s += (i ? "," : "") + std::to_string(v[i]);
  return s + ")";
}
}  // namespace

std::string Device::str() const {
  if (names.empty()) return "NULL";
  if (!tuple) return names[0];
  std::string s = "(";
  for (size_t i = 0; i < names.size(); i++) s += (i ? "," : "") + names[i];
  return s + ")";
}

uint64_t hash_arg(const Arg& a) {
  uint64_t h = hash_combine(0xa5a5, a.index());
  struct V {
    uint64_t operator()(std::monostate) const { return 0; }
    uint64_t operator()(int64_t v) const { return uint64_t(v); }
    uint64_t operator()(double v) const {
      uint64_t b;
      std::memcpy(&b, &v, 8);
      return b;
    }
    uint64_t operator()(const std::vector<int64_t>& v) const { return hash_ints(v); }
    uint64_t operator()(DType d) const { return hash_dtype(d); }
    uint64_t operator()(const std::string& s) const { return hash_str(s); }
    uint64_t operator()(const ReduceArg& r) const { return hash_combine(uint64_t(r.op), hash_ints(r.axes)); }
    uint64_t operator()(const RangeArg& r) const { return hash_combine(uint64_t(r.id), uint64_t(r.type)); }
    uint64_t operator()(const BufferArg& b) const {
      return hash_combine(hash_combine(hash_combine(b.id, uint64_t(b.size)), hash_device(b.device)),
                          uint64_t(b.addrspace));
    }
    uint64_t operator()(const ParamArg& p) const {
      return hash_combine(hash_combine(uint64_t(p.slot), hash_device(p.device)), uint64_t(p.addrspace));
    }
    uint64_t operator()(const VarArg& v) const {
      return hash_combine(hash_combine(hash_str(v.name), uint64_t(v.min)), uint64_t(v.max));
    }
    uint64_t operator()(const MemArg& m) const { return hash_combine(hash_device(m.device), uint64_t(m.addrspace)); }
    uint64_t operator()(const SliceArg& s) const { return hash_combine(uint64_t(s.size), hash_dtype(s.dtype)); }
  };
  return hash_combine(h, std::visit(V{}, a));
}

bool arg_equal(const Arg& a, const Arg& b) {
  // doubles compare by bits: -0.0 and 0.0 are different constants, and NaN equals itself
  if (auto* x = std::get_if<double>(&a)) {
    auto* y = std::get_if<double>(&b);
    return y && std::memcmp(x, y, sizeof(double)) == 0;
  }
  return a == b;
}

std::string arg_str(const Arg& a) {
  struct V {
    std::string operator()(std::monostate) const { return ""; }
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const {
      std::ostringstream os;
      os.precision(17);
      os << v;
      return os.str();
    }
    std::string operator()(const std::vector<int64_t>& v) const { return ints_str(v); }
    std::string operator()(DType d) const { return d.name(); }
    std::string operator()(const std::string& s) const {
      std::string out = "\"";
      for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (c == '\n') {
          out += "\\n";
          continue;
        }
        out += c;
      }
      return out + "\"";
    }
    std::string operator()(const ReduceArg& r) const {
      std::string s(op_name(r.op));
      for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
      return s + " " + ints_str(r.axes);
    }
    std::string operator()(const RangeArg& r) const { return std::to_string(r.id) + " " + axis_type_name(r.type); }
    std::string operator()(const BufferArg& b) const {
      return "#" + std::to_string(b.id) + " size=" + std::to_string(b.size) + " " + b.device.str() + " " +
             addrspace_name(b.addrspace);
    }
    std::string operator()(const ParamArg& p) const {
      return "slot=" + std::to_string(p.slot) + (p.device.null() ? "" : " " + p.device.str()) + " " +
             addrspace_name(p.addrspace);
    }
    std::string operator()(const VarArg& v) const {
      return v.name + "[" + std::to_string(v.min) + "," + std::to_string(v.max) + "]";
    }
    std::string operator()(const MemArg& m) const { return m.device.str() + " " + addrspace_name(m.addrspace); }
    std::string operator()(const SliceArg& s) const { return std::to_string(s.size) + " " + s.dtype.name(); }
  };
  return std::visit(V{}, a);
}

std::string shape_str(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); i++) {
    if (i) out += ",";
    if (s[i].is_const())
      out += std::to_string(s[i].value);
    else if (s[i].sym->op == Op::DefineVar)
      out += s[i].sym->as<VarArg>().name;
    else
      out += "%" + std::to_string(s[i].sym->id);
  }
  if (s.size() == 1) out += ",";
  return out + ")";
}

bool is_symbolic(const Shape& s) {
  return std::any_of(s.begin(), s.end(), [](const Dim& d) { return !d.is_const(); });
}

std::optional<int64_t> shape_numel(const Shape& s) {
  std::vector<int64_t> dims;
  for (auto& d : s) {
    if (!d.is_const()) return std::nullopt;
    dims.push_back(d.value);
  }
  return checked_numel(dims, "shape_numel");
}

i128 UOp::const_int() const {
  if (auto* f = std::get_if<double>(&arg)) return i128(*f);
  int64_t v = std::get<int64_t>(arg);
  if (dtype.scalar == Scalar::UInt64) return i128(uint64_t(v));
  return v;
}
double UOp::const_float() const {
  if (auto* f = std::get_if<double>(&arg)) return *f;
  if (dtype.scalar == Scalar::UInt64) return double(uint64_t(std::get<int64_t>(arg)));
  return double(std::get<int64_t>(arg));
}
bool UOp::is_const_value(double v) const {
  if (op != Op::Const) return false;
  if (auto* f = std::get_if<double>(&arg)) return *f == v;
  if (auto* i = std::get_if<int64_t>(&arg)) return double(*i) == v && i128(v) == const_int();
  return false;
}

const UOp* splat_source(const UOp* u) {
  if (u->op != Op::Vectorize || u->nsrc() == 0 || u->src(0)->dtype.lanes != 1) return nullptr;
  for (const UOp* s : u->src())
    if (s != u->src(0)) return nullptr;
  return u->src(0);
}

}  // namespace sn
