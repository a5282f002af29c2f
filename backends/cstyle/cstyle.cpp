#include "backends/cstyle/cstyle.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <unordered_map>
#include <vector>

#include "core/util/error.h"

namespace sn {

// clang-format off
// Type names in Scalar order: void bool i8 i16 i32 i64 u8 u16 u32 u64 f16 bf16 f32 f64 e4m3 e5m2 index
const CDialect kOpenCL{
    "OpenCL C",
    {"void", "bool", "char", "short", "int", "long", "uchar", "ushort", "uint", "ulong", "ushort", "ushort", "float",
     "double", "uchar", "uchar", "long"},
    "L", "UL", "static inline", "__kernel void", "__global ", "restrict", "__local ",
    "barrier(CLK_LOCAL_MEM_FENCE);", "get_group_id(%d)", "get_local_id(%d)", false, true, false,
    "", "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"};
const CDialect kCudaC{
    "CUDA C",
    {"void", "bool", "signed char", "short", "int", "long long", "unsigned char", "unsigned short", "unsigned int",
     "unsigned long long", "unsigned short", "unsigned short", "float", "double", "unsigned char", "unsigned char",
     "long long"},
    "LL", "ULL", "static __device__ inline", "extern \"C\" __global__ void", "", "__restrict__", "__shared__ ",
    "__syncthreads();", "blockIdx.%c", "threadIdx.%c", true, false, true, "", ""};
const CDialect kC99{
    "C99",
    {"void", "bool", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
     "uint16_t", "uint16_t", "float", "double", "uint8_t", "uint8_t", "int64_t"},
    "LL", "ULL", "static inline", "static void", "", "restrict", nullptr, nullptr, nullptr, nullptr, false, false, true,
    "#include <math.h>\n#include <stdbool.h>\n#include <stdint.h>\n#include <string.h>\n", ""};
// clang-format on

std::string c_identifier(const std::string& s) {
  std::string o;
  for (char c : s) o += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (o.empty() || std::isdigit(static_cast<unsigned char>(o[0]))) o = "k" + o;
  return o;
}

namespace {

// ---- helpers ---------------------------------------------------------------------------------
// Written once in C with $-placeholders for the dialect's names ($FN, $u8 .. $f64); each helper
// lists the helpers it calls (emitted before it).
struct Helper {
  const char* deps;  // space-separated names
  const char* code;
};

const std::map<std::string, Helper>& helper_library() {
  static const std::map<std::string, Helper> lib = {
      {"fmax_f32", {"", "$FN $f32 sn_fmax_f32($f32 a, $f32 b) { return a != a ? a : b != b ? b : a < b ? b : a; }\n"}},
      {"fmax_f64", {"", "$FN $f64 sn_fmax_f64($f64 a, $f64 b) { return a != a ? a : b != b ? b : a < b ? b : a; }\n"}},
      // float -> int64 / uint64: toward zero, NaN -> 0, saturated at the int64 (uint64) range
      {"f32_to_i64",
       {"",
        "$FN $i64 sn_f32_to_i64($f32 x) {\n"
        "  return x != x ? 0 : x >= 9223372036854775808.0f ? ($i64)9223372036854775807$I64\n"
        "       : x <= -9223372036854775808.0f ? -($i64)9223372036854775807$I64 - 1 : ($i64)x;\n}\n"}},
      {"f64_to_i64",
       {"",
        "$FN $i64 sn_f64_to_i64($f64 x) {\n"
        "  return x != x ? 0 : x >= 9223372036854775808.0 ? ($i64)9223372036854775807$I64\n"
        "       : x <= -9223372036854775808.0 ? -($i64)9223372036854775807$I64 - 1 : ($i64)x;\n}\n"}},
      {"f32_to_u64",
       {"f32_to_i64",
        "$FN $u64 sn_f32_to_u64($f32 x) {\n"
        "  return x != x ? 0 : x < 0 ? ($u64)sn_f32_to_i64(x)\n"
        "       : x >= 18446744073709551616.0f ? ($u64)18446744073709551615$U64 : ($u64)x;\n}\n"}},
      {"f64_to_u64",
       {"f64_to_i64",
        "$FN $u64 sn_f64_to_u64($f64 x) {\n"
        "  return x != x ? 0 : x < 0 ? ($u64)sn_f64_to_i64(x)\n"
        "       : x >= 18446744073709551616.0 ? ($u64)18446744073709551615$U64 : ($u64)x;\n}\n"}},
      // IEEE half bits <-> float: exact one way, round to nearest even the other (subnormals too)
      {"f16_to_f32",
       {"bits_f32_u32",
        "$FN $f32 sn_f16_to_f32($u16 h) {\n"
        "  $u32 s = ($u32)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n"
        "  if (e == 0x1fu) return sn_bits_f32_u32(s | 0x7f800000u | (m << 13));\n"
        "  if (e == 0) { $f32 f = ($f32)m * 5.9604644775390625e-8f; return s ? -f : f; }\n"
        "  return sn_bits_f32_u32(s | ((e + 112u) << 23) | (m << 13));\n}\n"}},
      {"f32_to_f16",
       {"bits_u32_f32 bits_f32_u32",
        "$FN $u16 sn_f32_to_f16($f32 f) {\n"
        "  $u32 x = sn_bits_u32_f32(f), s = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;\n"
        "  if (a > 0x7f800000u) return ($u16)(s | 0x7e00u);\n"
        "  if (a >= 0x477ff000u) return ($u16)(s | 0x7c00u);\n"
        "  if (a < 0x38800000u) {  /* subnormal: |f| * 2^24 rounded to an integer by adding 2^23 */\n"
        "    $f32 t = sn_bits_f32_u32(a) * 16777216.0f + 8388608.0f;\n"
        "    return ($u16)(s | (sn_bits_u32_f32(t) - 0x4b000000u));\n  }\n"
        "  return ($u16)(s | ((a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u) >> 13));\n}\n"}},
      {"bf16_to_f32", {"bits_f32_u32", "$FN $f32 sn_bf16_to_f32($u16 h) { return sn_bits_f32_u32(($u32)h << 16); }\n"}},
      {"f32_to_bf16",
       {"bits_u32_f32",
        "$FN $u16 sn_f32_to_bf16($f32 f) {\n"
        "  $u32 b = sn_bits_u32_f32(f), hi = b >> 16;\n"
        "  return ($u16)(f != f ? (hi | 0x40u) : (b + 0x7fffu + (hi & 1u)) >> 16);\n}\n"}},
      // double -> float rounded to odd: rounding that again to a narrower format is correct
      {"f64_to_f32_odd",
       {"bits_u32_f32 bits_f32_u32",
        "$FN $f32 sn_f64_to_f32_odd($f64 x) {\n"
        "  $f32 t = ($f32)x;\n  $f64 back = ($f64)t;\n"
        "  if (x != x || back == x) return t;\n"
        "  $u32 away = (back > x) != (x < 0);\n"
        "  return sn_bits_f32_u32((sn_bits_u32_f32(t) - away) | 1u);\n}\n"}},
      // fp8 (OCP e4m3fn: no inf, max 448; e5m2: IEEE-like) bits <-> float, as the LLVM backend
      {"e4m3_to_f32", {"bits_u32_f32 bits_f32_u32", nullptr}},
      {"e5m2_to_f32", {"bits_u32_f32 bits_f32_u32", nullptr}},
      {"f32_to_e4m3", {"bits_u32_f32 bits_f32_u32", nullptr}},
      {"f32_to_e5m2", {"bits_u32_f32 bits_f32_u32", nullptr}},
  };
  return lib;
}

struct Fp8 {
  int mbits, bias;
  bool ieee;
  unsigned max_code, nan_code;
};
Fp8 fp8_format(const std::string& name) {
  if (name.find("e4m3") != std::string::npos) return {3, 7, false, 0x7e, 0x7f};
  return {2, 15, true, 0x7b, 0x7e};
}

std::string fp8_code(const std::string& name) {
  Fp8 f = fp8_format(name);
  const bool to_f32 = name.rfind("_to_f32") != std::string::npos;
  std::string fmt = name.substr(name.find("e"), 4);
  char buf[2048];
  if (to_f32) {
    float q = std::ldexp(1.0f, 1 - f.bias - f.mbits);
    std::string tail = f.ieee ? cat("  if (m == ", f.max_code + 1, "u) mag = 0x7f800000u;\n  if (m > ", f.max_code + 1,
                                    "u) mag = 0x7fc00000u;\n")
                              : "  if (m == 0x7fu) mag = 0x7fc00000u;\n";
    std::snprintf(buf, sizeof buf,
                  "$FN $f32 sn_%s_to_f32($u8 x) {\n"
                  "  $u32 w = x, sign = (w & 0x80u) << 24, m = w & 0x7fu;\n"
                  "  $u32 mag = m < %du ? sn_bits_u32_f32(($f32)m * %af) : (m << %d) + %uu;\n%s"
                  "  return sn_bits_f32_u32(sign | mag);\n}\n",
                  fmt.c_str(), 1 << f.mbits, double(q), 23 - f.mbits, unsigned(127 - f.bias) << 23, tail.c_str());
    return buf;
  }
  int sh = 23 - f.mbits, emin = 1 - f.bias;
  float magic = std::ldexp(1.0f, emin - f.mbits + 23);
  unsigned magic_bits;
  std::memcpy(&magic_bits, &magic, 4);
  std::string out =
      f.ieee ? cat("  return ($u8)(f != f ? ", f.nan_code, "u : code > ", f.max_code, "u ? (sign | ", f.max_code + 1,
                   "u) : (sign | code));\n")
             : cat("  return ($u8)(f != f || code > ", f.max_code, "u ? ", f.nan_code, "u : (sign | code));\n");
  std::snprintf(buf, sizeof buf,
                "$FN $u8 sn_f32_to_%s($f32 f) {\n"
                "  $u32 b = sn_bits_u32_f32(f), sign = (b >> 24) & 0x80u, a = b & 0x7fffffffu;\n"
                "  $u32 r = a + %uu + ((a >> %d) & 1u);\n"
                "  $u32 cn = (r >> %d) - %uu;\n"
                "  $u32 cs = sn_bits_u32_f32(sn_bits_f32_u32(a) + %af) - %uu;\n"
                "  $u32 code = a < %uu ? cs : cn;\n%s}\n",
                fmt.c_str(), (1u << (sh - 1)) - 1, sh, sh, unsigned(127 - f.bias) << f.mbits, double(magic), magic_bits,
                unsigned(emin + 127) << 23, out.c_str());
  return buf;
}

// The dialect's name for a type placeholder.
std::string fill(std::string code, const CDialect& d) {
  auto name = [&](Scalar s) { return d.types[size_t(s)]; };
  const std::pair<const char*, std::string> subst[] = {{"$FN", d.function},
                                                       {"$u8", name(Scalar::UInt8)},
                                                       {"$u16", name(Scalar::UInt16)},
                                                       {"$u32", name(Scalar::UInt32)},
                                                       {"$u64", name(Scalar::UInt64)},
                                                       {"$i64", name(Scalar::Int64)},
                                                       {"$f32", name(Scalar::Float32)},
                                                       {"$f64", name(Scalar::Float64)},
                                                       {"$I64", d.int64_suffix},
                                                       {"$U64", d.uint64_suffix}};
  for (const auto& [from, to] : subst)
    for (size_t at = 0; (at = code.find(from, at)) != std::string::npos; at += to.size())
      code.replace(at, std::strlen(from), to);
  return code;
}

// "bits_<to>_<from>": reinterpret the bits of one scalar type as another of the same size.
bool bits_helper(const std::string& name, const CDialect& d, std::string* code) {
  if (name.rfind("bits_", 0) != 0) return false;
  auto type_of = [&](const std::string& t) -> Scalar {
    static const std::pair<const char*, Scalar> kinds[] = {
        {"u16", Scalar::UInt16},  {"i16", Scalar::Int16},  {"u32", Scalar::UInt32}, {"i32", Scalar::Int32},
        {"f32", Scalar::Float32}, {"u64", Scalar::UInt64}, {"i64", Scalar::Int64},  {"f64", Scalar::Float64}};
    for (const auto& [n, s] : kinds)
      if (t == n) return s;
    fail(Code::Internal, "cstyle: no bit type ", t);
  };
  size_t us = name.find('_', 5);
  const char* to = d.types[size_t(type_of(name.substr(5, us - 5)))];
  const char* from = d.types[size_t(type_of(name.substr(us + 1)))];
  *code = cat(d.function, " ", to, " sn_", name, "(", from, " x) { union { ", from, " a; ", to,
              " b; } u; u.a = x; return u.b; }\n");
  return true;
}

void add_helper(const std::string& name, std::set<std::string>& out) {
  if (!out.insert(name).second) return;
  auto it = helper_library().find(name);
  if (it == helper_library().end()) return;  // a generated one (bits_*)
  std::string deps = it->second.deps;
  for (size_t at = 0; at < deps.size();) {
    size_t sp = deps.find(' ', at);
    std::string dep = deps.substr(at, sp == std::string::npos ? std::string::npos : sp - at);
    if (!dep.empty()) add_helper(dep, out);
    at = sp == std::string::npos ? deps.size() : sp + 1;
  }
}

// ---- the renderer ----------------------------------------------------------------------------

bool is_half(Scalar s) { return s == Scalar::Float16 || s == Scalar::BFloat16; }
bool is_fp8(Scalar s) { return s == Scalar::Fp8E4M3 || s == Scalar::Fp8E5M2; }
bool bits_float(Scalar s) { return is_half(s) || is_fp8(s); }  // a float held as its bits

const char* short_name(Scalar s) {
  switch (s) {
    case Scalar::Float16:
      return "f16";
    case Scalar::BFloat16:
      return "bf16";
    case Scalar::Fp8E4M3:
      return "e4m3";
    case Scalar::Fp8E5M2:
      return "e5m2";
    case Scalar::Float32:
      return "f32";
    case Scalar::Float64:
      return "f64";
    case Scalar::Int16:
      return "i16";
    case Scalar::UInt16:
      return "u16";
    case Scalar::Int32:
      return "i32";
    case Scalar::UInt32:
      return "u32";
    case Scalar::Int64:
    case Scalar::Index:
      return "i64";
    case Scalar::UInt64:
      return "u64";
    default:
      return "?";
  }
}

class CWriter {
 public:
  CWriter(const LoweredKernel& k, const CDialect& d) : k_(k), d_(d) {}

  CKernel render(const std::string& fname) {
    for (const UOp* u : k_.linear->src()) instruction(u);
    CKernel out;
    std::string sig, prologue;
    for (const KernelParam& p : k_.params) {
      std::string t = mem_type(p.dtype.scalar);
      std::string cq = p.written ? "" : "const ";
      std::string n = cat("data", p.slot);
      if (d_.offset_params) {
        sig += cat(sig.empty() ? "" : ", ", d_.global_ptr, "uchar* ", n, "_base, ulong ", n, "_offset");
        prologue += cat("  ", d_.global_ptr, cq, t, "* ", n, " = (", d_.global_ptr, cq, t, "*)(", n, "_base + ", n,
                        "_offset);\n");
      } else {
        sig += cat(sig.empty() ? "" : ", ", d_.global_ptr, cq, t, "* ", d_.restrict_, " ", n);
      }
    }
    for (const KernelVar& v : k_.vars) sig += cat(sig.empty() ? "" : ", ", type(Scalar::Index), " ", var_name(v.name));
    if (k_.threads > 1 || uses_core_id_) sig += cat(sig.empty() ? "" : ", ", type(Scalar::Index), " core_id");
    if (sig.empty()) sig = "void";
    out.function = cat("/* ", k_.name, " */\n", d_.kernel, " ", fname, "(", sig, ") {\n", prologue, body_, "}\n");
    out.helpers = helpers_;
    out.uses_double = uses_double_;
    return out;
  }

 private:
  // ---- names and types ----------------------------------------------------------------------
  std::string type(Scalar s) {
    if (s == Scalar::Float64) uses_double_ = true;
    return d_.types[size_t(s)];
  }
  std::string type(DType dt) {
    if (dt.lanes != 1) fail(Code::Internal, "cstyle: vector ", dt.name(), " (isel devectorizes for this target)");
    return type(dt.scalar);
  }
  // Element type in memory: bools are bytes.
  std::string mem_type(Scalar s) { return type(s == Scalar::Bool ? Scalar::UInt8 : s); }
  std::string var_name(const std::string& n) { return "var_" + c_identifier(n); }
  std::string helper(const std::string& name) {
    add_helper(name, helpers_);
    return "sn_" + name;
  }

  const std::string& v(const UOp* u) {
    auto it = val_.find(u);
    if (it != val_.end()) return it->second;
    if (u->op == Op::Const) return val_[u] = literal(u);
    fail(Code::Internal, "cstyle: ", op_name(u->op), " is used before it is defined");
  }

  void line(const std::string& s) {
    body_.append(size_t(2 * depth_), ' ');
    body_ += s;
    body_ += '\n';
  }
  // A value instruction: `T vN = expr;`.
  void def(const UOp* u, const std::string& expr) {
    std::string n = cat("v", nval_++);
    line(cat(type(u->dtype), " ", n, " = ", expr, ";"));
    val_[u] = n;
  }

  // ---- literals -----------------------------------------------------------------------------
  std::string float_literal(double v, Scalar s) {
    if (std::isnan(v) || std::isinf(v)) {
      char hex[32];
      if (s == Scalar::Float32) {
        std::snprintf(hex, sizeof hex, "0x%08xu",
                      std::isnan(v)     ? 0x7fc00000u
                      : std::signbit(v) ? 0xff800000u
                                        : 0x7f800000u);
        return cat(helper("bits_f32_u32"), "(", hex, ")");
      }
      std::snprintf(hex, sizeof hex, "0x%016llx",
                    std::isnan(v)     ? 0x7ff8000000000000ull
                    : std::signbit(v) ? 0xfff0000000000000ull
                                      : 0x7ff0000000000000ull);
      return cat(helper("bits_f64_u64"), "((", type(Scalar::UInt64), ")", hex, d_.uint64_suffix, ")");
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%a", s == Scalar::Float32 ? double(float(v)) : v);
    return s == Scalar::Float32 ? cat(buf, "f") : cat("(", type(Scalar::Float64), ")", buf);
  }
  std::string int_literal(i128 v, DType dt) {
    std::string t = type(dt);
    if (dt.is_bool()) return v ? "1" : "0";
    int bits = dt.bits();
    if (dt.is_unsigned()) {
      uint64_t u = uint64_t(v);
      return cat("((", t, ")", u, bits == 64 ? d_.uint64_suffix : "u", ")");
    }
    int64_t s = int64_t(v);
    if ((dt.is_index() || dt.scalar == Scalar::Int32) && s > INT32_MIN && s <= INT32_MAX) return std::to_string(s);
    if (s == INT64_MIN) return cat("(-(", t, ")9223372036854775807", d_.int64_suffix, " - 1)");
    return cat("((", t, ")", s, bits == 64 ? d_.int64_suffix : "", ")");
  }
  std::string literal(const UOp* c) {
    DType dt = c->dtype;
    Scalar s = dt.scalar;
    if (bits_float(s)) {  // a half or fp8 constant: its bits, rounded as the conversions do
      double f = c->holds<double>() ? c->as<double>() : double(c->const_int());
      std::string conv = float_literal(f, Scalar::Float32);
      if (is_fp8(s)) return cat(helper(cat("f32_to_", short_name(s))), "(", conv, ")");
      return cat(helper(cat("f32_to_", short_name(s))), "(", conv, ")");
    }
    if (dt.is_float()) return float_literal(c->holds<double>() ? c->as<double>() : double(c->const_int()), s);
    return int_literal(c->holds<double>() ? i128(c->as<double>()) : c->const_int(), dt);
  }

  // ---- instructions -------------------------------------------------------------------------
  void instruction(const UOp* u) {
    switch (u->op) {
      case Op::Const:
      case Op::Group:
      case Op::Sink:
      case Op::Stack:
        return;
      case Op::Param:
        val_[u] = cat("data", u->as<ParamArg>().slot);
        return;
      case Op::DefineVar:
        val_[u] = var_name(u->as<VarArg>().name);
        return;
      case Op::Special:
        return special(u);
      case Op::Buffer: {
        const BufferArg& b = u->as<BufferArg>();
        bool local = b.addrspace == AddrSpace::Local;
        if (local && !d_.local_decl) fail(Code::Unsupported, "cstyle: ", d_.name, " has no local memory");
        std::string n = cat(local ? "lbuf" : "acc", nbuf_++);
        line(cat(local ? d_.local_decl : "", mem_type(u->dtype.scalar), " ", n, "[", std::max<int64_t>(1, b.size),
                 "];"));
        val_[u] = n;
        return;
      }
      case Op::After:
        val_[u] = v(u->src(0));
        return;
      case Op::Index:
        if (u->dtype.lanes != 1) fail(Code::Internal, "cstyle: vector address (isel devectorizes for this target)");
        val_[u] = cat(v(u->src(0)), "[", v(u->src(1)), "]");
        return;
      case Op::Load: {
        std::string x = from_mem(v(u->src(0)), u->dtype);
        if (u->nsrc() == 3) x = cat(v(u->src(2)), " ? ", x, " : ", v(u->src(1)));
        return def(u, x);
      }
      case Op::Store:
        if (u->nsrc() == 3) fail(Code::Internal, "cstyle: a gated store outside an If block");
        line(cat(v(u->src(0)), " = ", to_mem(v(u->src(1)), u->src(1)->dtype), ";"));
        return;
      case Op::Range: {
        std::string n = cat("r", u->as<RangeArg>().id, "_", nloop_++);
        std::string t = type(Scalar::Index);
        line(cat("for (", t, " ", n, " = 0; ", n, " < ", v(u->src(0)), "; ", n, "++) {"));
        val_[u] = n;
        depth_++;
        return;
      }
      case Op::End:
      case Op::Endif:
        depth_--;
        line("}");
        return;
      case Op::If:
        line(cat("if (", v(u->src(0)), ") {"));
        depth_++;
        return;
      case Op::Barrier:
        if (!d_.barrier) fail(Code::Unsupported, "cstyle: ", d_.name, " has no barriers");
        line(d_.barrier);
        return;
      case Op::Cast:
        return def(u, cast(v(u->src(0)), u->src(0)->dtype.scalar, u->dtype.scalar));
      case Op::Bitcast:
        return def(u, bitcast(u));
      default:
        break;
    }
    if (is_elementwise(u->op)) return def(u, alu(u));
    fail(Code::Unsupported, "cstyle: cannot render ", op_name(u->op));
  }

  void special(const UOp* u) {
    const std::string& n = u->as<std::string>();
    std::string t = type(Scalar::Index);
    if (n == "core_id") {
      uses_core_id_ = true;
      val_[u] = "core_id";
      return;
    }
    bool group = n.rfind("gidx", 0) == 0;
    if (!group && n.rfind("lidx", 0) != 0) fail(Code::Internal, "cstyle: unknown index ", n);
    const char* fmt = group ? d_.group_id : d_.local_id;
    if (!fmt) fail(Code::Unsupported, "cstyle: ", d_.name, " has no work-groups (", n, ")");
    int dim = n.back() - '0';
    char buf[64];
    if (d_.xyz)
      std::snprintf(buf, sizeof buf, fmt, "xyz"[dim]);
    else
      std::snprintf(buf, sizeof buf, fmt, dim);
    line(cat(t, " ", n, " = (", t, ")", buf, ";"));
    val_[u] = n;
  }

  std::string from_mem(const std::string& x, DType dt) { return dt.is_bool() ? cat("(", x, " != 0)") : x; }
  std::string to_mem(const std::string& x, DType dt) {
    return dt.is_bool() ? cat("(", type(Scalar::UInt8), ")(", x, ")") : x;
  }

  // ---- casts --------------------------------------------------------------------------------
  // A float value (any float kind, bits kinds included) as float32 or float64 arithmetic.
  std::string to_float(const std::string& x, Scalar from) {
    if (bits_float(from)) return cat(helper(cat(short_name(from), "_to_f32")), "(", x, ")");
    return x;
  }
  std::string cast(const std::string& x, Scalar from, Scalar to) {
    if (from == to) return x;
    std::string tt = type(to);
    DType f(from), t(to);
    if (bits_float(from)) return cast(to_float(x, from), Scalar::Float32, to);
    if (bits_float(to)) {
      std::string f32;
      if (from == Scalar::Float64)
        f32 = cat(helper("f64_to_f32_odd"), "(", x, ")");
      else if (f.is_float())
        f32 = x;
      else  // as the LLVM backend: ints through float32 (exact wherever these formats are finite)
        f32 = cat("(", type(Scalar::Float32), ")", x);
      return cat(helper(cat("f32_to_", short_name(to))), "(", f32, ")");
    }
    if (t.is_bool()) return cat("(", x, " != 0)");
    if (f.is_bool() || !f.is_float()) return cat("(", tt, ")", x);  // ints wrap, bools are 0/1
    if (t.is_float()) return cat("(", tt, ")", x);
    // float -> int: toward zero, NaN -> 0, saturated at 64 bits, then wrapped
    std::string conv = cat(helper(cat(short_name(from), to == Scalar::UInt64 ? "_to_u64" : "_to_i64")), "(", x, ")");
    return to == Scalar::UInt64 || to == Scalar::Int64 || to == Scalar::Index ? conv : cat("(", tt, ")", conv);
  }
  std::string bitcast(const UOp* u) {
    Scalar from = u->src(0)->dtype.scalar, to = u->dtype.scalar;
    if (u->dtype.is_bool() || u->src(0)->dtype.is_bool()) fail(Code::Unsupported, "cstyle: bitcast of bool");
    const std::string& x = v(u->src(0));
    auto fam = [](Scalar s) {  // what the value is held as
      DType d(s);
      return bits_float(s) || !d.is_float() ? 'i' : 'f';
    };
    if (fam(from) == 'i' && fam(to) == 'i') return cat("(", type(to), ")", x);
    auto bit_name = [&](Scalar s) -> std::string {
      if (bits_float(s)) return DType(s).bits() == 16 ? "u16" : "u8";
      return short_name(s);
    };
    return cat(helper(cat("bits_", bit_name(to), "_", bit_name(from))), "(", x, ")");
  }

  // ---- arithmetic ---------------------------------------------------------------------------
  // Integer math that wraps: through the unsigned type of at least 32 bits, then back.
  std::string wrap(DType dt, const std::string& a, const char* op, const std::string& b) {
    if (dt.is_index()) return cat("(", a, " ", op, " ", b, ")");  // index math does not overflow
    bool wide = dt.bits() == 64;
    if (dt.is_unsigned() && dt.bits() >= 32) return cat("(", a, " ", op, " ", b, ")");
    std::string u = type(wide ? Scalar::UInt64 : Scalar::UInt32);
    return cat("(", type(dt), ")((", u, ")", a, " ", op, " (", u, ")", b, ")");
  }
  std::string math(const char* name, DType dt, const std::string& args) {
    bool f32 = dt.scalar == Scalar::Float32;
    return cat(name, f32 && d_.float_suffix_math ? "f" : "", "(", args, ")");
  }

  std::string alu(const UOp* u) {
    Op op = u->op;
    DType d = op == Op::Where ? u->src(1)->dtype : u->src(0)->dtype;  // operand dtype
    if (bits_float(d.scalar) && op != Op::Where)
      fail(Code::Internal, "cstyle: ", op_name(op), " on ", d.name(), " (isel computes halves in float32)");
    auto a = [&](size_t i) { return v(u->src(i)); };
    bool fl = d.is_float();
    auto bin = [&](const char* o) {
      return fl || d.is_bool() ? cat("(", a(0), " ", o, " ", a(1), ")") : wrap(d, a(0), o, a(1));
    };
    auto cmp = [&](const char* o) { return cat("(", a(0), " ", o, " ", a(1), ")"); };
    switch (op) {
      case Op::Add:
        return bin("+");
      case Op::Sub:
        return bin("-");
      case Op::Mul:
        return bin("*");
      case Op::Div:
        return cat("(", a(0), " / ", a(1), ")");
      case Op::Recip:
        return cat("(", float_literal(1.0, d.scalar), " / ", a(0), ")");
      case Op::Neg:
        return fl ? cat("(-", a(0), ")") : wrap(d, int_literal(0, d), "-", a(0));
      case Op::Mulacc:
        if (fl) return cat("(", a(0), " * ", a(1), " + ", a(2), ")");
        return wrap(d, wrap(d, a(0), "*", a(1)), "+", a(2));
      case Op::Max:
        if (fl) return cat(helper(cat("fmax_", short_name(d.scalar))), "(", a(0), ", ", a(1), ")");
        return cat("(", a(0), " < ", a(1), " ? ", a(1), " : ", a(0), ")");
      case Op::CDiv:
      case Op::CMod:
        return divmod(u, d);
      case Op::CmpLt:
        return cmp("<");
      case Op::CmpGt:
        return cmp(">");
      case Op::CmpGe:
        return cat("!(", a(0), " < ", a(1), ")");
      case Op::CmpLe:
        return cat("!(", a(1), " < ", a(0), ")");
      case Op::CmpNe:
        return cmp("!=");
      case Op::CmpEq:
        return cmp("==");
      case Op::And:
        return cat("(", type(d), ")(", a(0), " & ", a(1), ")");
      case Op::Or:
        return cat("(", type(d), ")(", a(0), " | ", a(1), ")");
      case Op::Xor:
        return cat("(", type(d), ")(", a(0), " ^ ", a(1), ")");
      case Op::Shl:
      case Op::Shr:
        return shift(u, d);
      case Op::Where:
        return cat("(", a(0), " ? ", a(1), " : ", a(2), ")");
      case Op::Not:
        if (d.is_bool()) return cat("!", a(0));
        return cat("(", type(d), ")(", a(0), " == 0)");
      case Op::Trunc:
        return fl ? math("trunc", d, a(0)) : a(0);
      case Op::Sqrt:
        return math("sqrt", d, a(0));
      case Op::Exp2:
        return math("exp2", d, a(0));
      case Op::Log2:
        return math("log2", d, a(0));
      case Op::Sin:
        return math("sin", d, a(0));
      case Op::Pow:
        return math("pow", d, cat(a(0), ", ", a(1)));
      default:
        fail(Code::Unsupported, "cstyle: cannot render ", op_name(op), " on ", d.name());
    }
  }

  // C-truncating division and remainder that never trap: x/0 = x, x%0 = 0, INT_MIN/-1 wraps (as
  // the LLVM backend).
  std::string divmod(const UOp* u, DType d) {
    bool div = u->op == Op::CDiv;
    const std::string &a = v(u->src(0)), &b = v(u->src(1));
    const MinMax& mb = u->src(1)->minmax();
    bool sg = !d.is_unsigned();
    std::string q = cat("(", type(d), ")(", a, div ? " / " : " % ", b, ")");
    if (mb.lo >= 1) return q;
    std::string neg = div ? wrap(d, int_literal(0, d), "-", a) : int_literal(0, d);
    std::string zero_case = div ? a : int_literal(0, d);
    if (sg) return cat("(", b, " == 0 ? ", zero_case, " : ", b, " == -1 ? ", neg, " : ", q, ")");
    return cat("(", b, " == 0 ? ", zero_case, " : ", q, ")");
  }

  // Shifts by at least the width: << gives 0, >> gives 0 or the sign (as the LLVM backend).
  std::string shift(const UOp* u, DType d) {
    const std::string &a = v(u->src(0)), &b = v(u->src(1));
    int bits = d.bits();
    bool shl = u->op == Op::Shl;
    bool sg = !d.is_unsigned();
    std::string plain = shl ? wrap(d, a, "<<", b) : cat("(", type(d), ")(", a, " >> ", b, ")");
    const MinMax& mb = u->src(1)->minmax();
    if (mb.lo >= 0 && mb.hi < bits) return plain;
    std::string ub = cat("(", type(d.bits() == 64 ? Scalar::UInt64 : Scalar::UInt32), ")", b);
    std::string big = shl || !sg ? int_literal(0, d) : cat("(", type(d), ")(", a, " < 0 ? -1 : 0)");
    return cat("(", ub, " >= ", bits, "u ? ", big, " : ", plain, ")");
  }

  const LoweredKernel& k_;
  const CDialect& d_;
  std::string body_;
  std::unordered_map<const UOp*, std::string> val_;
  std::set<std::string> helpers_;
  int depth_ = 1, nval_ = 0, nbuf_ = 0, nloop_ = 0;
  bool uses_double_ = false, uses_core_id_ = false;
};

}  // namespace

CKernel render_c(const LoweredKernel& k, const CDialect& d, const std::string& name) {
  if (!k.linear || k.linear->op != Op::Linear) fail(Code::InvalidArg, "render_c: the kernel has no Linear");
  return CWriter(k, d).render(name);
}

std::string c_prelude(const CDialect& d, const std::set<std::string>& helpers, bool uses_double) {
  std::string out = d.preamble;
  if (uses_double) out += d.fp64_preamble;
  // Dependencies first: generated bit helpers, then library helpers whose deps are all out.
  std::set<std::string> all;
  for (const std::string& h : helpers) add_helper(h, all);
  std::set<std::string> done;
  std::vector<std::string> pending(all.begin(), all.end());
  while (!pending.empty()) {
    std::vector<std::string> next;
    for (const std::string& name : pending) {
      std::string code;
      auto it = helper_library().find(name);
      bool ready = true;
      if (it != helper_library().end()) {
        std::string deps = it->second.deps;
        for (size_t at = 0; at < deps.size();) {
          size_t sp = deps.find(' ', at);
          std::string dep = deps.substr(at, sp == std::string::npos ? std::string::npos : sp - at);
          ready = ready && (dep.empty() || done.count(dep));
          at = sp == std::string::npos ? deps.size() : sp + 1;
        }
        code = it->second.code ? it->second.code : fp8_code(name);
      } else if (!bits_helper(name, d, &code)) {
        fail(Code::Internal, "cstyle: unknown helper ", name);
      }
      if (!ready) {
        next.push_back(name);
        continue;
      }
      out += fill(code, d);
      done.insert(name);
    }
    if (next.size() == pending.size()) fail(Code::Internal, "cstyle: helpers depend on each other in a cycle");
    pending.swap(next);
  }
  return out;
}

}  // namespace sn
