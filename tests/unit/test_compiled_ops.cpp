// ../shared/conformance/ops.jsonl compiled and run: every tensor program of the conformance set is
// built through the tensor front, compiled by the pipeline for the CPU device, run on buffers
// holding the case's inputs, and compared with numpy's output. Each failure is reported by name.
#include <gtest/gtest.h>

#if SN_BACKEND_CPU
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "tests/oracle/program.h"
#include "tests/unit/test_pipeline_util.h"
#include "tests/util/json.h"

namespace sn {
namespace {

using oracle::Array;
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

// Integer data exactly (uint64 literals above INT64_MAX arrive as doubles: keep their bits).
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

// numpy's tolerance rule of the conformance README: |got - want| <= atol + rtol * |want|, NaN
// matching NaN; integers within the same bound (exact for the integer cases, whose tolerances are 0).
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

TEST(CompiledOps, EveryConformanceCaseCompilesAndMatchesNumpy) {
  auto cases = testutil::read_jsonl(SN_SHARED_DIR "/conformance/ops.jsonl");
  ASSERT_EQ(cases.size(), 118u);
  auto dev = testrt::runtime().device("CPU");
  int passed = 0;
  for (const auto& [line, c] : cases) {
    std::string name = c.has("name") ? c["name"].as_string() : "line " + std::to_string(line);
    try {
      Graph g;
      std::map<std::string, oracle::InputSpec> specs;
      std::map<std::string, Array> data;
      for (const auto& [input_name, t] : c["inputs"].as_object()) {
        Array a = json_tensor(t);
        specs[input_name] = oracle::InputSpec{a.dtype, a.shape};
        data.emplace(input_name, std::move(a));
      }
      oracle::Program prog = oracle::build_program(g, c["program"].as_string(), specs);
      // Inputs in the order the program names them (sorted by name), each with the case's shape.
      CompileOptions opts;
      std::vector<std::string> names;
      for (const auto& [input_name, buf] : prog.buffers) {
        names.push_back(input_name);
        opts.inputs.push_back(buf);
      }
      auto p = compile_program(testrt::runtime(), g, std::vector<const UOp*>{prog.root}, dev, opts);
      std::vector<std::shared_ptr<Buffer>> ins, outs;
      for (size_t i = 0; i < names.size(); i++) {
        Array a = data.at(names[i]);
        a.shape = p->inputs[i].shape;  // the program views the flat Buffer with the case's shape
        ins.push_back(testrt::to_buffer(dev, a));
      }
      outs.push_back(p->allocate_output(0));
      p->run(ins, outs);
      Array got = testrt::from_buffer(*outs[0]);
      std::string why = mismatch(got, json_tensor(c["output"]), c["rtol"].as_double(), c["atol"].as_double());
      if (why.empty())
        passed++;
      else
        ADD_FAILURE() << name << ": " << why << "\n  program: " << c["program"].as_string();
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << ": threw: " << e.what() << "\n  program: " << c["program"].as_string();
    }
  }
  EXPECT_EQ(passed, int(cases.size()));
}

}  // namespace
}  // namespace sn
#endif
