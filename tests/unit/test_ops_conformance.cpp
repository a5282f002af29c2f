// ../shared/conformance/ops.jsonl: tensor programs with numpy's outputs. Each program is built
// through the tensor front and evaluated by the oracle; every case must match.
#include <gtest/gtest.h>

#include "core/ir/graph.h"
#include "tests/oracle/interp.h"
#include "tests/util/ops_case.h"

namespace sn::oracle {
namespace {

TEST(OpsConformance, EveryCaseMatchesNumpy) {
  int passed = testutil::run_ops_cases([](Graph&, const testutil::OpsCase& c) {
    BufferData buffers;
    for (const auto& [input_name, buf] : c.program.buffers) buffers[buf] = c.data.at(input_name);
    return evaluate(c.program.root, buffers);
  });
  EXPECT_EQ(passed, testutil::kOpsCases);
}

}  // namespace
}  // namespace sn::oracle
