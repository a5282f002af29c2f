// ../shared/conformance/ops.jsonl: tensor programs with numpy's outputs. Each program is built
// through the tensor front and evaluated by the oracle; every case must match.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "tests/oracle/interp.h"
#include "tests/oracle/program.h"
#include "tests/util/json.h"

namespace sn::oracle {
namespace {

using testutil::Json;

DType parse_dtype(const Json& j) {
  Scalar s;
  if (!scalar_from_name(j.as_string(), &s)) throw std::runtime_error("unknown dtype " + j.as_string());
  return DType(s);
}

// Numbers, or the strings "nan", "inf", "-inf".
double json_double(const Json& v) {
  if (v.is_number()) return v.as_double();
  if (v.is_bool()) return v.as_bool() ? 1.0 : 0.0;
  const std::string& s = v.as_string();
  if (s == "nan") return std::nan("");
  if (s == "inf") return INFINITY;
  if (s == "-inf") return -INFINITY;
  throw std::runtime_error("bad number string '" + s + "'");
}

// Integer data exactly (int64 literals; uint64 literals above INT64_MAX arrive as doubles).
int64_t json_int(const Json& v) {
  if (v.is_bool()) return v.as_bool() ? 1 : 0;
  if (v.is_int()) return v.as_int();
  double d = v.as_double();
  if (d >= 9223372036854775808.0 && d < 18446744073709551616.0) return int64_t(uint64_t(d));
  throw std::runtime_error("not an integer: " + std::to_string(d));
}

Array json_tensor(const Json& t) {
  DType dt = parse_dtype(t["dtype"]);
  std::vector<int64_t> shape;
  for (const Json& d : t["shape"].as_array()) shape.push_back(d.as_int());
  const auto& data = t["data"].as_array();
  if (dt.is_float()) {
    std::vector<double> v;
    for (const Json& x : data) v.push_back(json_double(x));
    return Array::from_doubles(dt, shape, v);
  }
  std::vector<int64_t> v;
  for (const Json& x : data) v.push_back(json_int(x));
  return Array::from_ints(dt, shape, v);
}

// "" when `got` matches `want`: same dtype and shape, |got - want| <= atol + rtol * |want|
// elementwise, NaN matching NaN (and equal infinities matching).
std::string mismatch(const Array& got, const Array& want, double rtol, double atol) {
  if (got.dtype != want.dtype) return "dtype " + got.dtype.name() + ", expected " + want.dtype.name();
  if (got.shape != want.shape) return "shape " + got.str(0) + ", expected " + want.str(0);
  size_t bad = 0;
  std::string first;
  for (size_t k = 0; k < want.numel(); k++) {
    bool ok;
    if (!want.dtype.is_float()) {
      ok = got.int_at(k) == want.int_at(k) ||
           std::fabs(got.value_at(k) - want.value_at(k)) <= atol + rtol * std::fabs(want.value_at(k));
    } else {
      double g = got.f[k], w = want.f[k];
      ok = (std::isnan(g) && std::isnan(w)) || g == w || std::fabs(g - w) <= atol + rtol * std::fabs(w);
    }
    if (ok) continue;
    if (bad++ < 5) first += cat(" [", k, "] got ", got.value_at(k), " want ", want.value_at(k), ";");
  }
  if (bad == 0) return "";
  return cat(bad, " of ", want.numel(), " elements differ:", first);
}

TEST(OpsConformance, EveryCaseMatchesNumpy) {
  auto cases = testutil::read_jsonl(SN_SHARED_DIR "/conformance/ops.jsonl");
  EXPECT_EQ(cases.size(), 118u);
  int passed = 0;
  for (const auto& [line, c] : cases) {
    std::string name = c.has("name") ? c["name"].as_string() : "line " + std::to_string(line);
    try {
      Graph g;
      std::map<std::string, InputSpec> specs;
      std::map<std::string, Array> data;
      for (const auto& [input_name, t] : c["inputs"].as_object()) {
        Array a = json_tensor(t);
        specs[input_name] = InputSpec{a.dtype, a.shape};
        data.emplace(input_name, std::move(a));
      }
      Program p = build_program(g, c["program"].as_string(), specs);
      BufferData buffers;
      for (const auto& [input_name, buf] : p.buffers) buffers[buf] = data.at(input_name);
      Array got = evaluate(p.root, buffers);
      std::string why = mismatch(got, json_tensor(c["output"]), c["rtol"].as_double(), c["atol"].as_double());
      if (why.empty())
        passed++;
      else
        ADD_FAILURE() << name << ": " << why << "\n  program: " << c["program"].as_string();
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << ": threw: " << e.what();
    }
  }
  EXPECT_EQ(passed, int(cases.size()));
}

}  // namespace
}  // namespace sn::oracle
