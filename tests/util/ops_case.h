// Reading ../shared/conformance/ops.jsonl cases: tensors from JSON and numpy's comparison rule.
// Shared by the three runners (oracle, scheduler + kernel interpreter, compiled CPU path).
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/oracle/interp.h"
#include "tests/oracle/program.h"
#include "tests/util/json.h"

namespace sn::testutil {

inline DType case_dtype(const Json& j) {
  Scalar s;
  if (!scalar_from_name(j.as_string(), &s)) throw std::runtime_error("unknown dtype " + j.as_string());
  return DType(s);
}

// Numbers, or the strings "nan", "inf", "-inf"; bools are 0/1.
inline double case_double(const Json& v) {
  if (v.is_number()) return v.as_double();
  if (v.is_bool()) return v.as_bool() ? 1.0 : 0.0;
  const std::string& s = v.as_string();
  if (s == "nan") return std::nan("");
  if (s == "inf") return INFINITY;
  if (s == "-inf") return -INFINITY;
  throw std::runtime_error("bad number string '" + s + "'");
}

// Integer data exactly (uint64 literals above INT64_MAX arrive as doubles: keep their bits).
inline int64_t case_int(const Json& v) {
  if (v.is_bool()) return v.as_bool() ? 1 : 0;
  if (v.is_int()) return v.as_int();
  double d = v.as_double();
  if (d >= 9223372036854775808.0 && d < 18446744073709551616.0) return int64_t(uint64_t(d));
  throw std::runtime_error("not an integer: " + std::to_string(d));
}

// {"dtype", "shape", "data"} -> an oracle array.
inline oracle::Array json_tensor(const Json& t) {
  DType dt = case_dtype(t["dtype"]);
  std::vector<int64_t> shape;
  for (const Json& d : t["shape"].as_array()) shape.push_back(d.as_int());
  const auto& data = t["data"].as_array();
  if (dt.is_float()) {
    std::vector<double> v;
    for (const Json& x : data) v.push_back(case_double(x));
    return oracle::Array::from_doubles(dt, shape, v);
  }
  std::vector<int64_t> v;
  for (const Json& x : data) v.push_back(case_int(x));
  return oracle::Array::from_ints(dt, shape, v);
}

// "" when `got` matches `want`: same dtype and shape, |got - want| <= atol + rtol * |want|
// elementwise, NaN matching NaN (integers exact or within the same bound).
inline std::string mismatch(const oracle::Array& got, const oracle::Array& want, double rtol, double atol) {
  if (got.dtype != want.dtype) return "dtype " + got.dtype.name() + ", expected " + want.dtype.name();
  if (got.shape != want.shape) return "shape " + got.str(0) + ", expected " + want.str(0);
  size_t bad = 0;
  std::string first;
  for (size_t k = 0; k < want.numel(); k++) {
    double g = got.value_at(k), w = want.value_at(k);
    bool ok = want.dtype.is_float()
                  ? (std::isnan(g) && std::isnan(w)) || g == w || std::fabs(g - w) <= atol + rtol * std::fabs(w)
                  : got.int_at(k) == want.int_at(k) || std::fabs(g - w) <= atol + rtol * std::fabs(w);
    if (!ok && bad++ < 5) first += cat(" [", k, "] got ", g, " want ", w, ";");
  }
  return bad ? cat(bad, " of ", want.numel(), " elements differ:", first) : "";
}

// One case, parsed: its program built in a graph, and the data of each named input.
struct OpsCase {
  oracle::Program program;
  std::map<std::string, oracle::Array> data;
};

// Runs every case of ops.jsonl through `run(graph, case) -> the output Array` and compares it with
// numpy's under the case's tolerances. Reports each mismatch or exception (naming the case and its
// program) as a test failure and returns how many cases matched. Inputs live on `device`.
template <class F>
int run_ops_cases(F&& run, const std::string& device = "CPU") {
  int passed = 0;
  for (const auto& [line, c] : read_jsonl(SN_SHARED_DIR "/conformance/ops.jsonl")) {
    std::string name = c.has("name") ? c["name"].as_string() : "line " + std::to_string(line);
    try {
      Graph g;
      OpsCase oc;
      std::map<std::string, oracle::InputSpec> specs;
      for (const auto& [input_name, t] : c["inputs"].as_object()) {
        oracle::Array a = json_tensor(t);
        specs[input_name] = oracle::InputSpec{a.dtype, a.shape};
        oc.data.emplace(input_name, std::move(a));
      }
      oc.program = oracle::build_program(g, c["program"].as_string(), specs, device);
      oracle::Array got = run(g, oc);
      std::string why = mismatch(got, json_tensor(c["output"]), c["rtol"].as_double(), c["atol"].as_double());
      if (why.empty())
        passed++;
      else
        ADD_FAILURE() << name << " on " << device << ": " << why << "\n  program: " << c["program"].as_string();
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << " on " << device << ": threw: " << e.what()
                    << "\n  program: " << c["program"].as_string();
    }
  }
  return passed;
}

// The number of cases in ops.jsonl (each runner checks it ran them all).
constexpr int kOpsCases = 118;

}  // namespace sn::testutil
