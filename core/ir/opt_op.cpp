#include "core/ir/opt_op.h"

#include <charconv>
#include <vector>

#include "core/util/error.h"

namespace sn {

namespace {

// The short name of a split by its target type and direction, as tinygrad spells its OptOps.
const char* split_name(AxisType t, bool top) {
  switch (t) {
    case AxisType::Upcast:
      return top ? nullptr : "UPCAST";
    case AxisType::Unroll:
      return top ? nullptr : "UNROLL";
    case AxisType::Thread:
      return top ? "THREAD" : nullptr;
    case AxisType::Local:
      return top ? nullptr : "LOCAL";
    case AxisType::GroupReduce:
      return top ? "GROUPTOP" : "GROUP";
    default:
      return nullptr;
  }
}

}  // namespace

std::string opt_str(const Opt& o) {
  switch (o.op) {
    case OptOp::Split:
      if (const char* n = split_name(o.type, o.top)) return cat(n, "(", o.axis, ",", o.amount, ")");
      return cat("SPLIT(", o.axis, ",", o.amount, ",", axis_type_name(o.type), o.top ? ",top" : "", ")");
    case OptOp::Padto:
      return cat("PADTO(", o.axis, ",", o.amount, ")");
    case OptOp::Swap:
      return cat("SWAP(", o.axis, ",", o.amount, ")");
    case OptOp::Nolocals:
      return "NOLOCALS";
    case OptOp::TC:
      return cat("TC(", o.axis, ",", o.amount, o.top ? ",pad" : "", ")");
  }
  return "?";
}

bool parse_opt(std::string_view text, Opt* out) {
  if (text == "NOLOCALS") {
    *out = Opt::nolocals();
    return true;
  }
  size_t open = text.find('(');
  if (open == std::string_view::npos || text.empty() || text.back() != ')') return false;
  std::string_view name = text.substr(0, open);
  std::vector<std::string_view> args;
  std::string_view rest = text.substr(open + 1, text.size() - open - 2);
  for (size_t at = 0;;) {
    size_t comma = rest.find(',', at);
    args.push_back(rest.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at));
    if (comma == std::string_view::npos) break;
    at = comma + 1;
  }
  auto num = [](std::string_view s, int64_t* v) {
    auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
  };
  int64_t a = 0, b = 0;
  if (args.size() < 2 || !num(args[0], &a) || !num(args[1], &b)) return false;
  if (name == "PADTO" && args.size() == 2) return *out = Opt::padto(a, b), true;
  if (name == "SWAP" && args.size() == 2) return *out = Opt::swap(a, b), true;
  if (name == "TC" && args.size() == 2) return *out = Opt::tc(a, b), true;
  if (name == "TC" && args.size() == 3 && args[2] == "pad") return *out = Opt::tc(a, b, true), true;
  if (name == "SPLIT" && (args.size() == 3 || (args.size() == 4 && args[3] == "top"))) {
    for (int t = 0; t <= int(AxisType::Unroll); t++)
      if (args[2] == axis_type_name(AxisType(t))) return *out = Opt::split(a, b, AxisType(t), args.size() == 4), true;
    return false;
  }
  for (int t = 0; t <= int(AxisType::Unroll); t++)
    for (bool top : {false, true})
      if (const char* n = split_name(AxisType(t), top); n && name == n && args.size() == 2)
        return *out = Opt::split(a, b, AxisType(t), top), true;
  return false;
}

std::string opts_str(const std::vector<Opt>& opts) {
  std::string s;
  for (const Opt& o : opts) s += (s.empty() ? "" : " ") + opt_str(o);
  return s;
}

bool parse_opts(std::string_view text, std::vector<Opt>* out, std::string* bad) {
  out->clear();
  for (size_t at = 0; at < text.size();) {
    if (text[at] == ' ' || text[at] == '\t') {
      at++;
      continue;
    }
    size_t end = text.find_first_of(" \t", at);
    std::string_view word = text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    Opt o;
    if (!parse_opt(word, &o)) {
      if (bad) *bad = std::string(word);
      return false;
    }
    out->push_back(o);
    at = end == std::string_view::npos ? text.size() : end;
  }
  return true;
}

}  // namespace sn
