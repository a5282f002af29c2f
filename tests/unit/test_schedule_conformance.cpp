// ../shared/conformance/ops.jsonl through the scheduler: every program is scheduled into kernels,
// the kernels are run by the kernel-IR interpreter, and the result must match numpy's output.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/schedule/schedule.h"
#include "tests/oracle/interp.h"
#include "tests/oracle/kernel_interp.h"
#include "tests/oracle/program.h"
#include "tests/util/json.h"

namespace sn::oracle {
namespace {

using testutil::Json;

DType dtype_named(const Json& j) {
  Scalar s;
  if (!scalar_from_name(j.as_string(), &s)) throw std::runtime_error("unknown dtype " + j.as_string());
  return DType(s);
}

double number(const Json& v) {
  if (v.is_number()) return v.as_double();
  if (v.is_bool()) return v.as_bool() ? 1.0 : 0.0;
  const std::string& s = v.as_string();
  if (s == "nan") return std::nan("");
  if (s == "inf") return INFINITY;
  if (s == "-inf") return -INFINITY;
  throw std::runtime_error("bad number string '" + s + "'");
}

int64_t integer(const Json& v) {
  if (v.is_bool()) return v.as_bool() ? 1 : 0;
  if (v.is_int()) return v.as_int();
  double d = v.as_double();  // uint64 literals above INT64_MAX
  if (d >= 9223372036854775808.0 && d < 18446744073709551616.0) return int64_t(uint64_t(d));
  throw std::runtime_error("not an integer: " + std::to_string(d));
}

Array tensor(const Json& t) {
  DType dt = dtype_named(t["dtype"]);
  std::vector<int64_t> shape;
  for (const Json& d : t["shape"].as_array()) shape.push_back(d.as_int());
  if (dt.is_float()) {
    std::vector<double> v;
    for (const Json& x : t["data"].as_array()) v.push_back(number(x));
    return Array::from_doubles(dt, shape, v);
  }
  std::vector<int64_t> v;
  for (const Json& x : t["data"].as_array()) v.push_back(integer(x));
  return Array::from_ints(dt, shape, v);
}

std::string mismatch(const Array& got, const Array& want, double rtol, double atol) {
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

TEST(ScheduleConformance, EveryCaseMatchesNumpyThroughKernels) {
  auto cases = testutil::read_jsonl(SN_SHARED_DIR "/conformance/ops.jsonl");
  ASSERT_FALSE(cases.empty());
  int passed = 0;
  size_t kernels = 0;
  for (const auto& [line, c] : cases) {
    std::string name = c.has("name") ? c["name"].as_string() : "line " + std::to_string(line);
    try {
      Graph g;
      std::map<std::string, InputSpec> specs;
      std::map<std::string, Array> data;
      for (const auto& [input_name, t] : c["inputs"].as_object()) {
        Array a = tensor(t);
        specs[input_name] = InputSpec{a.dtype, a.shape};
        data.emplace(input_name, std::move(a));
      }
      Program p = build_program(g, c["program"].as_string(), specs);
      std::vector<const UOp*> outs{p.root};
      Schedule s = schedule_graph(g, outs);
      kernels += s.kernels.size();
      std::vector<Array> inputs;
      for (const ScheduleBuffer& b : s.buffers) {
        if (b.kind != ScheduleBuffer::Kind::Input) continue;
        for (const auto& [input_name, buf] : p.buffers)
          if (buf == b.source) inputs.push_back(data.at(input_name));
      }
      Array got = run_schedule(s, inputs).at(0);
      std::string why = mismatch(got, tensor(c["output"]), c["rtol"].as_double(), c["atol"].as_double());
      if (why.empty())
        passed++;
      else
        ADD_FAILURE() << name << ": " << why << "\n  program: " << c["program"].as_string();
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << ": threw: " << e.what() << "\n  program: " << c["program"].as_string();
    }
  }
  EXPECT_EQ(passed, int(cases.size()));
  EXPECT_GE(kernels, cases.size());  // every case stores at least its output
}

}  // namespace
}  // namespace sn::oracle
