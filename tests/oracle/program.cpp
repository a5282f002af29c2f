#include "tests/oracle/program.h"

#include <cerrno>
#include <cstdlib>

#include "core/tensor/tensor.h"

namespace sn::oracle {

namespace {

struct SExpr {
  bool list = false;
  std::string atom;
  std::vector<SExpr> items;
  size_t pos = 0;  // offset in the text, for messages
};

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  SExpr parse_all() {
    SExpr e = parse(0);
    skip_ws();
    if (i_ != s_.size()) error("trailing text");
    return e;
  }

 private:
  [[noreturn]] void error(const std::string& what) const {
    fail(Code::InvalidArg, "program: ", what, " at offset ", i_, " in \"", s_, "\"");
  }

  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) i_++;
  }

  SExpr parse(int depth) {
    if (depth > 1000) error("nesting too deep");
    skip_ws();
    if (i_ >= s_.size()) error("unexpected end");
    SExpr e;
    e.pos = i_;
    if (s_[i_] == ')') error("unexpected ')'");
    if (s_[i_] == '(') {
      e.list = true;
      i_++;
      for (;;) {
        skip_ws();
        if (i_ >= s_.size()) error("missing ')'");
        if (s_[i_] == ')') {
          i_++;
          return e;
        }
        e.items.push_back(parse(depth + 1));
      }
    }
    size_t start = i_;
    while (i_ < s_.size() && s_[i_] != '(' && s_[i_] != ')' && s_[i_] != ' ' && s_[i_] != '\t' && s_[i_] != '\n' &&
           s_[i_] != '\r')
      i_++;
    e.atom = std::string(s_.substr(start, i_ - start));
    return e;
  }

  std::string_view s_;
  size_t i_ = 0;
};

bool is_number_start(const std::string& a) {
  return !a.empty() && ((a[0] >= '0' && a[0] <= '9') || a[0] == '-' || a[0] == '+' || a[0] == '.');
}

struct ElementwiseName {
  const char* name;
  Op op;
};
constexpr ElementwiseName kElementwise[] = {
    {"neg", Op::Neg},     {"recip", Op::Recip}, {"trunc", Op::Trunc}, {"exp2", Op::Exp2},     {"log2", Op::Log2},
    {"sin", Op::Sin},     {"sqrt", Op::Sqrt},   {"not", Op::Not},     {"add", Op::Add},       {"sub", Op::Sub},
    {"mul", Op::Mul},     {"div", Op::Div},     {"max", Op::Max},     {"pow", Op::Pow},       {"idiv", Op::Idiv},
    {"mod", Op::Mod},     {"cmplt", Op::CmpLt}, {"cmpne", Op::CmpNe}, {"cmpeq", Op::CmpEq},   {"cmpgt", Op::CmpGt},
    {"cmpge", Op::CmpGe}, {"cmple", Op::CmpLe}, {"and", Op::And},     {"or", Op::Or},         {"xor", Op::Xor},
    {"shl", Op::Shl},     {"shr", Op::Shr},     {"where", Op::Where}, {"mulacc", Op::Mulacc},
};

class Builder {
 public:
  Builder(Graph& g, std::string_view text, const std::map<std::string, InputSpec>& inputs, std::string device)
      : g_(g), device_(std::move(device)), text_(text), inputs_(inputs) {}

  Program build(const SExpr& e) {
    Program p;
    p.root = expr(e);
    for (const auto& [name, t] : tensors_) p.buffers[name] = buffer_of(t);
    return p;
  }

 private:
  [[noreturn]] void error(const SExpr& at, const std::string& what) const {
    fail(Code::InvalidArg, "program: ", what, " at offset ", at.pos, " in \"", text_, "\"");
  }

  const std::string& atom(const SExpr& e, const char* what) const {
    if (e.list) error(e, std::string("expected ") + what + ", got a list");
    return e.atom;
  }

  int64_t integer(const SExpr& e) const {
    const std::string& a = atom(e, "an integer");
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(a.c_str(), &end, 10);
    if (a.empty() || errno != 0 || end != a.c_str() + a.size()) error(e, "bad integer '" + a + "'");
    return v;
  }

  std::vector<int64_t> integers(const std::vector<SExpr>& items, size_t from) const {
    std::vector<int64_t> out;
    for (size_t k = from; k < items.size(); k++) out.push_back(integer(items[k]));
    return out;
  }

  std::vector<int64_t> integer_list(const SExpr& e) const {
    if (!e.list) error(e, "expected a list of integers like (1 2)");
    return integers(e.items, 0);
  }

  DType dtype(const SExpr& e) const {
    const std::string& a = atom(e, "a dtype");
    Scalar s;
    if (!scalar_from_name(a, &s) || s == Scalar::Void || s == Scalar::Index) error(e, "unknown dtype '" + a + "'");
    return DType(s);
  }

  void arity(const SExpr& e, size_t n) const {
    if (e.items.size() != n)
      error(e, "(" + e.items[0].atom + " ...) takes " + std::to_string(n - 1) + " arguments, got " +
                   std::to_string(e.items.size() - 1));
  }

  const UOp* constant_value(const SExpr& e, DType dt) {
    const std::string& a = atom(e, "a constant value");
    if (dt.is_float()) {
      char* end = nullptr;
      double v = std::strtod(a.c_str(), &end);  // also reads nan, inf, -inf
      if (a.empty() || end != a.c_str() + a.size()) error(e, "bad float '" + a + "'");
      return constant(g_, dt, v);
    }
    if (a == "true" || a == "false") return constant_int(g_, dt, a == "true" ? 1 : 0);
    errno = 0;
    char* end = nullptr;
    if (a[0] != '-') {  // unsigned parse covers uint64 values above INT64_MAX
      unsigned long long v = std::strtoull(a.c_str(), &end, 10);
      if (errno == 0 && end == a.c_str() + a.size()) return constant_int(g_, dt, i128(v));
    } else {
      long long v = std::strtoll(a.c_str(), &end, 10);
      if (errno == 0 && end == a.c_str() + a.size()) return constant_int(g_, dt, i128(v));
    }
    // "2.0" for an integer dtype is fine when it is integral (constant() checks)
    end = nullptr;
    double v = std::strtod(a.c_str(), &end);
    if (end != a.c_str() + a.size()) error(e, "bad integer '" + a + "'");
    return constant(g_, dt, v);
  }

  const UOp* input_tensor(const SExpr& e) {
    const std::string& name = e.atom;
    if (is_number_start(name)) error(e, "bare number '" + name + "' (use (const DTYPE VALUE))");
    auto it = tensors_.find(name);
    if (it != tensors_.end()) return it->second;
    auto spec = inputs_.find(name);
    if (spec == inputs_.end()) error(e, "unknown input '" + name + "'");
    const UOp* t = input(g_, spec->second.dtype, spec->second.shape, device_);
    tensors_[name] = t;
    return t;
  }

  const UOp* expr(const SExpr& e) {
    if (!e.list) return input_tensor(e);
    if (e.items.empty()) error(e, "empty list");
    const std::string& head = atom(e.items[0], "an op name");
    const auto& it = e.items;
    if (head == "const") {
      arity(e, 3);
      return constant_value(it[2], dtype(it[1]));
    }
    if (head == "cast" || head == "bitcast") {
      arity(e, 3);
      DType dt = dtype(it[1]);
      const UOp* x = expr(it[2]);
      return head == "cast" ? cast(g_, x, dt) : bitcast(g_, x, dt);
    }
    if (head == "reduce") {
      if (it.size() < 3) error(e, "(reduce OP x axes...) needs an op and a tensor");
      const std::string& r = atom(it[1], "a reduce op");
      Op op = r == "add" ? Op::Add : r == "max" ? Op::Max : r == "mul" ? Op::Mul : Op::Count_;
      if (op == Op::Count_) error(it[1], "reduce op must be add, max or mul, got '" + r + "'");
      return reduce(g_, expr(it[2]), op, integers(it, 3));
    }
    if (head == "reshape" || head == "permute" || head == "expand" || head == "flip") {
      if (it.size() < 2) error(e, "(" + head + " x ...) needs a tensor");
      const UOp* x = expr(it[1]);
      std::vector<int64_t> v = integers(it, 2);
      if (head == "reshape") return reshape(g_, x, v);
      if (head == "permute") return permute(g_, x, v);
      if (head == "expand") return expand(g_, x, v);
      return flip(g_, x, v);
    }
    if (head == "pad" || head == "shrink") {
      arity(e, 4);
      const UOp* x = expr(it[1]);
      std::vector<int64_t> off = integer_list(it[2]), sizes = integer_list(it[3]);
      return head == "pad" ? pad(g_, x, off, sizes) : shrink(g_, x, off, sizes);
    }
    for (const ElementwiseName& n : kElementwise) {
      if (head != n.name) continue;
      std::vector<const UOp*> src;
      for (size_t k = 1; k < it.size(); k++) src.push_back(expr(it[k]));
      return elementwise(g_, n.op, src);
    }
    error(e.items[0], "unknown op '" + head + "'");
  }

  Graph& g_;
  std::string device_;
  std::string_view text_;
  const std::map<std::string, InputSpec>& inputs_;
  std::map<std::string, const UOp*> tensors_;
};

}  // namespace

Program build_program(Graph& g, std::string_view text, const std::map<std::string, InputSpec>& inputs,
                      const std::string& device) {
  SExpr e = Parser(text).parse_all();
  return Builder(g, text, inputs, device).build(e);
}

}  // namespace sn::oracle
