// Printers: S-expressions, an indented tree with derived properties, and Graphviz DOT.
// All are iterative and linear in the graph size.
#include <cctype>
#include <cmath>
#include <sstream>
#include <unordered_map>

#include "core/ir/graph.h"

namespace sn {

namespace {
std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string i128_str(i128 v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  unsigned __int128 u = neg ? static_cast<unsigned __int128>(-(v + 1)) + 1 : static_cast<unsigned __int128>(v);
  std::string s;
  while (u) {
    s += char('0' + int(u % 10));
    u /= 10;
  }
  if (neg) s += '-';
  return std::string(s.rbegin(), s.rend());
}

std::string float_str(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream os;
  os.precision(9);
  os << v;
  std::string s = os.str();
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

// The text of a leaf, or "" if the node is not printed as a leaf.
std::string leaf(const UOp* u) {
  switch (u->op) {
    case Op::Const:
      if (u->dtype.is_bool()) return u->const_int() ? "true" : "false";
      if (u->dtype.is_float()) return float_str(u->const_float());
      return i128_str(u->const_int());
    case Op::DefineVar:
      return u->as<VarArg>().name;
    default:
      return "";
  }
}

// Nodes reachable from root, with how many parents within that subgraph refer to each.
std::unordered_map<const UOp*, int> parent_counts(const std::vector<const UOp*>& topo) {
  std::unordered_map<const UOp*, int> n;
  for (auto* u : topo)
    for (auto* s : u->src()) n[s]++;
  return n;
}

std::string head(const UOp* u) {
  std::string s = lower(op_name(u->op));
  if (u->op == Op::Cast || u->op == Op::Bitcast) return s + "." + u->dtype.name();
  std::string a = arg_str(u->arg);
  if (!a.empty() && u->op != Op::Const) s += "[" + a + "]";
  return s;
}
}  // namespace

std::string to_sexpr(const UOp* root, bool bindings) {
  auto topo = toposort(root);
  auto parents = parent_counts(topo);
  // shared non-leaf nodes print once as a binding, then by name
  std::unordered_map<const UOp*, std::string> names;
  std::ostringstream out;
  auto emit = [&](const UOp* top, std::ostringstream& os) {
    std::vector<std::pair<const UOp*, size_t>> stack{{top, 0}};
    while (!stack.empty()) {
      auto& [u, i] = stack.back();
      if (i == 0) {
        std::string l = leaf(u);
        if (!l.empty()) {
          os << l;
          stack.pop_back();
          continue;
        }
        if (u != top) {
          if (auto it = names.find(u); it != names.end()) {
            os << it->second;
            stack.pop_back();
            continue;
          }
        }
        os << "(" << head(u);
      }
      if (i < u->nsrc()) {
        os << " ";
        stack.push_back({u->src(i++), 0});
        continue;
      }
      os << ")";
      stack.pop_back();
    }
  };
  if (bindings) {
    for (auto* u : topo) {
      if (u == root || !leaf(u).empty() || parents[u] < 2) continue;
      std::ostringstream os;
      emit(u, os);
      std::string name = "%" + std::to_string(u->id);
      out << name << " = " << os.str() << "\n";
      names[u] = name;
    }
  }
  emit(root, out);
  return out.str();
}

std::string to_tree(const UOp* root) {
  std::ostringstream out;
  std::unordered_map<const UOp*, bool> seen;
  std::vector<std::pair<const UOp*, size_t>> stack{{root, 0}};  // node, depth
  while (!stack.empty()) {
    auto [u, depth] = stack.back();
    stack.pop_back();
    std::string indent(std::min<size_t>(depth, 40) * 2, ' ');
    if (depth > 40) indent += "[" + std::to_string(depth) + "] ";
    out << indent << "%" << u->id << " ";
    if (seen[u]) {
      out << "^ (shown above)\n";
      continue;
    }
    seen[u] = true;
    std::string l = leaf(u);
    out << (l.empty() ? head(u) : lower(op_name(u->op)) + " " + l) << " : " << u->dtype.name();
    if (u->shape()) out << " shape=" << shape_str(*u->shape());
    if (!u->device().null()) out << " device=" << u->device().str();
    if (!u->dtype.is_void() && !u->dtype.ptr) {
      const MinMax& m = u->minmax();
      if (m.is_float) {
        if (std::isfinite(m.flo) || std::isfinite(m.fhi))
          out << " range=[" << float_str(m.flo) << "," << float_str(m.fhi) << "]";
      } else {
        out << " range=[" << i128_str(m.lo) << "," << i128_str(m.hi) << "]";
      }
    }
    if (u->axis() >= 0) out << " axis=" << u->axis();
    out << "\n";
    for (size_t i = u->nsrc(); i-- > 0;) stack.push_back({u->src(i), depth + 1});
  }
  return out.str();
}

std::string to_dot(const UOp* root) {
  std::ostringstream out;
  out << "digraph uops {\n  node [shape=box, fontname=\"monospace\"];\n";
  for (auto* u : toposort(root)) {
    std::string label = leaf(u);
    label = label.empty() ? head(u) : label;
    std::string esc;
    for (char c : label) {
      if (c == '"' || c == '\\') esc += '\\';
      esc += c;
    }
    out << "  n" << u->id << " [label=\"" << esc << "\\n" << u->dtype.name();
    if (u->shape()) out << " " << shape_str(*u->shape());
    out << "\"];\n";
    for (size_t i = 0; i < u->nsrc(); i++)
      out << "  n" << u->src(i)->id << " -> n" << u->id << " [label=\"" << i << "\"];\n";
  }
  out << "}\n";
  return out.str();
}

}  // namespace sn
