// export_pytorch of a recomputing schedule (export/pytorch_export.h): PyTorch's CSV grammar has no R,
// so the files drop the R ops, plan.json marks each recomputing stage's mode, and the figures are the
// checker's simulation of the orders as PyTorch runs them (each R inside its backward:
// ir/recompute_ops.h, VerifyOptions::recompute_in_backward). Times are worked out by hand.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "export/pytorch_export.h"
#include "ir/recompute_ops.h"
#include "ir/schedule_io.h"
#include "report/report.h"
#include "test_util.h"
#include "verify/builders.h"

namespace test_recompute_export {

using namespace vt;

// Two stages on two devices, F = I = W = 1 ms (B = 2), transfers take 0 ms. With `mode` set, stage 0
// recomputes (R = 0.5 ms, F keeps 10 of its 100 MB).
Problem two_stages(RecomputeMode mode) {
  Problem p = uniform_problem(2, 2, {0, 1});
  if (mode != RecomputeMode::kNone) {
    p.stages[0].recompute = mode;
    p.stages[0].recompute_ms = 0.5;
    p.stages[0].recompute_kept_mb = 10;
  }
  return p;
}

// Every cell of a CSV text (rows split on '\n', cells on ',').
std::vector<std::string> cells(const std::string& csv) {
  std::vector<std::string> out;
  std::istringstream rows(csv);
  std::string row;
  while (std::getline(rows, row)) {
    std::istringstream in(row);
    std::string cell;
    while (std::getline(in, cell, ',')) out.push_back(cell);
  }
  return out;
}

bool has_r_cell(const std::string& csv) {
  for (const std::string& c : cells(csv))
    for (size_t i = 1; i + 1 < c.size(); ++i)
      if (c[i] == 'R' && std::isdigit(static_cast<unsigned char>(c[i - 1])) &&
          std::isdigit(static_cast<unsigned char>(c[i + 1])))
        return true;
  return false;
}

TEST_CASE("export_pytorch with R: files without R, the stage's mode in plan.json, PyTorch's timing stated") {
  // GPipe with stage 0's recomputations early: R0 and R1 right after the forwards, while device 0
  // waits for the gradients. Certified: device 0 F0 [0,1] F1 [1,2] R0 [2,2.5] R1 [2.5,3]; device 1
  // F0 [1,2] F1 [2,3] B0 [3,5] B1 [5,7]; device 0 B0 [5,7] B1 [7,9]: 9 ms.
  // As PyTorch runs it, each R is inside its backward, after the gradient arrives: R0 [5,5.5]
  // B0 [5.5,7.5], R1 [7.5,8] B1 [8,10]: 10 ms — for both files (PyTorch's own lowering of this
  // compute-only order keeps the compute order). Were R right before B but free to start early it
  // would be 9.5 ms; were it not counted, 9.
  const Schedule s = from_strings(two_stages(RecomputeMode::kFull), {"0F0 0F1 0R0 0R1 0B0 0B1", "1F0 1F1 1B0 1B1"});
  auto ex = export_pytorch(s, {});
  REQUIRE(ex.ok());
  REQUIRE_MESSAGE(ex->valid, format_report(ex->report));
  CHECK(ex->certified_ms == doctest::Approx(9));
  CHECK(ex->recomputes);
  CHECK(ex->recompute_ops_moved == 2);
  CHECK(ex->comms_at_backward_ms == doctest::Approx(10));
  REQUIRE(ex->pytorch_valid);
  CHECK(ex->pytorch_ms == doctest::Approx(10));

  // Neither CSV holds an R (PyTorch's reader, and pipesmith's, refuse one).
  CHECK_FALSE(has_r_cell(ex->compute_only_csv));
  CHECK_FALSE(has_r_cell(ex->compute_comms_csv));
  CHECK(parse_pytorch_csv(ex->compute_only_csv, "compute_only.csv").ok());
  CHECK(parse_pytorch_csv(ex->compute_comms_csv, "compute_comms.csv").ok());
  CHECK(ex->compute_comms_csv ==
        "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD\n"
        "1RECV_F0,1F0,1RECV_F1,1F1,1B0,1SEND_B0,1B1,1SEND_B1,1REDUCE_GRAD\n");

  auto plan = nlohmann::json::parse(ex->plan_json);
  CHECK(plan["stages"][0]["recompute"] == "full");
  CHECK_FALSE(plan["stages"][1].contains("recompute"));
  CHECK(plan["iteration_ms"]["compute_comms"] == doctest::Approx(10));
  CHECK(plan["iteration_ms"]["pytorch_lowering"] == doctest::Approx(10));
  bool noted = false;
  for (const std::string& n : ex->notes) noted = noted || pstest::contains(n, "1 stage(s) recompute");
  CHECK(noted);

  // The same order without recomputation: the same two CSVs (the backward carries the R), and a
  // plan.json without any recompute key.
  const Schedule plain = from_strings(two_stages(RecomputeMode::kNone), {"0F0 0F1 0B0 0B1", "1F0 1F1 1B0 1B1"});
  auto px = export_pytorch(plain, {});
  REQUIRE(px.ok());
  REQUIRE(px->valid);
  CHECK(px->compute_comms_csv == ex->compute_comms_csv);
  CHECK(px->compute_only_csv == ex->compute_only_csv);
  CHECK_FALSE(px->recomputes);
  CHECK(px->pytorch_ms == doctest::Approx(9));
  CHECK(px->comms_at_backward_ms == px->certified_ms);
  CHECK_FALSE(pstest::contains(px->plan_json, "recompute"));
  CHECK_FALSE(nlohmann::json::parse(px->plan_json)["iteration_ms"].contains("compute_comms"));
}

TEST_CASE("export_pytorch with R already at the backward: selective named, nothing moves, the wait still counts") {
  // R0, R1 right before B0, B1 in the certified order (0 moved); the checker's certified timing lets
  // R0 run at [2,2.5] while device 0 waits: B0 [5,7], R1 [7,7.5], B1 [7.5,9.5] = 9.5 ms. In PyTorch
  // R0 runs inside B0, after the gradient: 10 ms, as above.
  const Schedule s =
      from_strings(two_stages(RecomputeMode::kSelective), {"0F0 0F1 0R0 0B0 0R1 0B1", "1F0 1F1 1B0 1B1"});
  auto ex = export_pytorch(s, {});
  REQUIRE(ex.ok());
  REQUIRE(ex->valid);
  CHECK(ex->recompute_ops_moved == 0);
  CHECK(ex->certified_ms == doctest::Approx(9.5));
  CHECK(ex->comms_at_backward_ms == doctest::Approx(10));
  CHECK(ex->pytorch_ms == doctest::Approx(10));
  CHECK(nlohmann::json::parse(ex->plan_json)["stages"][0]["recompute"] == "selective");
}

TEST_CASE("recompute ops: moved to the backward, counted, dropped") {
  const Schedule s = from_strings(two_stages(RecomputeMode::kFull), {"0F0 0F1 0R0 0R1 0B0 0B1", "1F0 1F1 1B0 1B1"});
  CHECK(recompute_ops_moved(s) == 2);
  const Schedule at = recompute_at_backward(s);
  std::string row;
  for (const Action& a : at.programs[0]) row += to_string(a) + " ";
  CHECK(row == "0F0 0F1 0R0 0B0 0R1 0B1 ");
  CHECK(recompute_ops_moved(at) == 0);
  CHECK(without_recompute_ops(s).programs[0].size() == 4);
  // With comms between R and its backward, R still counts as right before it (compute order).
  const Schedule c = from_strings(two_stages(RecomputeMode::kFull),
                                  {"0F0 0SEND_F0 0F1 0SEND_F1 0R0 0RECV_B0 0B0 0R1 0RECV_B1 0B1",
                                   "1RECV_F0 1F0 1RECV_F1 1F1 1B0 1SEND_B0 1B1 1SEND_B1"});
  CHECK(recompute_ops_moved(c) == 0);
  // An OVERLAP_F_B cell that ends with an R ends at the op before it once R is dropped; one with R
  // inside keeps its extent.
  Schedule o = from_strings(two_stages(RecomputeMode::kFull), {"0F0 0F1 0R0 0B0 0R1 0B1", "1F0 1F1 1B0 1B1"});
  o.programs[0][1].overlap_next = true;  // (0F1;0R0)
  o.programs[0][3].overlap_next = true;  // (0B0;0R1;0B1)
  o.programs[0][4].overlap_next = true;
  const Schedule dropped = without_recompute_ops(o);
  REQUIRE(dropped.programs[0].size() == 4);
  CHECK_FALSE(dropped.programs[0][1].overlap_next);  // 0F1 alone
  CHECK(dropped.programs[0][2].overlap_next);        // (0B0;0B1)
  CHECK(format_pytorch_csv(dropped) == "0F0,0F1,(0B0;0B1)OVERLAP_F_B\n1F0,1F1,1B0,1B1\n");
}

}  // namespace test_recompute_export
