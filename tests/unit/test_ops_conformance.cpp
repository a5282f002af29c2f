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
#include "tests/util/ops_case.h"

namespace sn::oracle {
namespace {

using testutil::Json;

using testutil::json_tensor;
using testutil::mismatch;

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
