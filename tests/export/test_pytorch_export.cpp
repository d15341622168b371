// PyTorch's lowering passes in pipesmith's terms (export/pytorch_lowering.h) on hand-derived cases, and
// export_pytorch (export/pytorch_export.h) read back by the tests' own reading of PyTorch's rules.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "ir/model.h"
#include "export/pytorch_lowering.h"
#include "ir/schedule_io.h"
#include "pytorch_rules.h"
#include "test_util.h"
#include "export/pytorch_export.h"

namespace pt = pstest::pt;
using namespace ps;

namespace {

Schedule csv_schedule(const std::string& text) {
  auto r = parse_pytorch_csv(text, "test.csv");
  REQUIRE(r.ok());
  return r->schedule;
}

std::string rows(const std::vector<PtProgram>& p) { return format_pt_csv(p); }

}  // namespace

TEST_CASE("pytorch lowering: GPipe on two ranks, every rule by hand") {
  // Sweep by sweep: UNSHARDs; 0F0 (+SEND, RECV on rank 1) then 1F0; 0F1, 1F1; rank 0 waits for
  // RECV_B0 while 1B0 sends it; ...; REDUCE_GRAD after each stage's last B; RESHARDs at the end.
  Schedule s = csv_schedule("0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n");
  PtLowering low = pytorch_lower(s);
  REQUIRE(low.ok);
  CHECK(rows(low.programs) ==
        "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0RESHARD\n"
        "1UNSHARD,1RECV_F0,1F0,1RECV_F1,1F1,1B0,1SEND_B0,1B1,1SEND_B1,1REDUCE_GRAD,1RESHARD\n");
}

TEST_CASE("pytorch lowering: UNSHARD/RESHARD keep a window of the next three stages") {
  PtProgram p = cells_of(csv_schedule("0F0,2F0,4F0,6F0,6B0,4B0,2B0,0B0\n1F0\n3F0\n5F0\n7F0\n").programs[0]);
  CHECK(rows({add_unshard_reshard(p)}) ==
        "0UNSHARD,2UNSHARD,4UNSHARD,0F0,0RESHARD,6UNSHARD,2F0,4F0,6F0,6B0,6RESHARD,0UNSHARD,4B0,4RESHARD,"
        "2B0,2RESHARD,0B0,0RESHARD\n");
}

TEST_CASE("pytorch lowering: REDUCE_GRAD after the M-th B or W of a stage, OVERLAP_F_B counted by its parts") {
  Schedule s = csv_schedule("0F0,0F1,(0I0;1F0)OVERLAP_F_B,0W0,1B0,0I1,0W1,1F1,1B1\n");
  PtProgram p = cells_of(s.programs[0]);
  REQUIRE(p.size() == 9);
  CHECK(to_string(p[2]) == "(0I0;1F0)OVERLAP_F_B");
  CHECK(rows({add_reduce_grad(p, 2)}) ==
        "0F0,0F1,(0I0;1F0)OVERLAP_F_B,0W0,1B0,0I1,0W1,0REDUCE_GRAD,1F1,1B1,1REDUCE_GRAD\n");
}

TEST_CASE("pytorch lowering: a cyclic wait stops it and names each rank's next cell") {
  Schedule s = csv_schedule("0F0,0B0,0F1,0B1\n1F1,1F0,1B0,1B1\n");
  PtLowering low = pytorch_lower(s);
  CHECK(!low.ok);
  REQUIRE(low.blocked.size() == 2);
  CHECK(low.blocked[1] == "rank 1 waits at '1F1'");
}

TEST_CASE("pytorch lowering: the certified order gets REDUCE_GRAD without moving an op") {
  // 1F1B on two ranks with its comms: REDUCE_GRAD(0) after 0B1, REDUCE_GRAD(1) after 1B1 and the
  // SEND_B that follows it.
  Schedule s = csv_schedule(
      "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n"
      "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1\n");
  CHECK(rows(certified_pytorch_programs(s, false)) ==
        "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD\n"
        "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1,1REDUCE_GRAD\n");
  CHECK(rows(certified_pytorch_programs(s, true)) ==
        "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD,0RESHARD\n"
        "1RECV_F0,1UNSHARD,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1,1REDUCE_GRAD,1RESHARD\n");
}

TEST_CASE("export_pytorch: files that PyTorch's rules accept, PyTorch's own order checked and timed") {
  auto spec = load_spec(pstest::source_path("configs/models/llama2-7b.yaml"), "", SpecOverrides{3, 6, 0.0});
  REQUIRE(spec.ok());
  // An irregular placement with uneven stage counts: 5 stages on 3 devices (0 and 2 hold two).
  Partition part = {{0, 6}, {7, 13}, {14, 20}, {21, 27}, {28, 33}};
  std::vector<int> placement = {0, 2, 1, 0, 2};
  auto pb = make_problem(*spec, part, placement);
  REQUIRE(pb.ok());
  // A compute-only GPipe-like order per device (stages in order, all forwards, then backwards).
  Schedule s;
  s.problem = *pb;
  s.programs.assign(3, {});
  for (int st = 0; st < 5; ++st)
    for (int m = 0; m < 6; ++m) s.programs[placement[st]].push_back(Action{OpType::F, StageId{st}, MicrobatchId{m}, {}});
  for (int st = 4; st >= 0; --st)
    for (int m = 0; m < 6; ++m) s.programs[placement[st]].push_back(Action{OpType::B, StageId{st}, MicrobatchId{m}, {}});
  PytorchExportOptions o;
  o.spec = &*spec;
  auto ex = export_pytorch(s, o);
  REQUIRE(ex.ok());
  REQUIRE(ex->valid);
  CHECK(ex->certified_ms > 0);
  CHECK(ex->pytorch_lowered);
  CHECK(ex->pytorch_valid);
  CHECK(ex->pytorch_ms > 0);

  std::vector<pt::Row> only, comms;
  REQUIRE(pt::parse_csv(ex->compute_only_csv, only) == "");
  REQUIRE(pt::parse_csv(ex->compute_comms_csv, comms) == "");
  std::vector<int> r1, r2;
  CHECK(pt::compute_only(only) == "");
  CHECK(pt::validate(only, 3, 5, 6, r1) == "");
  CHECK(r1 == placement);
  CHECK(pt::validate(comms, 3, 5, 6, r2) == "");
  CHECK(r2 == placement);
  CHECK(pt::dry_run(comms, placement) == "");
  CHECK(pt::pairwise_order(comms, placement) == "");
  CHECK(pt::reduce_grad_once(comms, placement) == "");

  // PyTorch's lowering of compute_only.csv, read back by the same rules.
  auto reread = parse_pytorch_csv(ex->compute_only_csv, "compute_only.csv");
  REQUIRE(reread.ok());
  reread->schedule.problem = *pb;
  PtLowering low = pytorch_lower(reread->schedule);
  REQUIRE(low.ok);
  std::vector<pt::Row> lowered;
  REQUIRE(pt::parse_csv(format_pt_csv(low.programs), lowered) == "");
  CHECK(pt::dry_run(lowered, placement) == "");
  CHECK(pt::pairwise_order(lowered, placement) == "");
  CHECK(pt::reduce_grad_once(lowered, placement) == "");

  auto plan = nlohmann::json::parse(ex->plan_json);
  CHECK(plan["stage_to_rank"] == nlohmann::json(placement));
  CHECK(plan["rank_to_stages"] == nlohmann::json::parse("[[0, 3], [2], [1, 4]]"));
  CHECK(plan["stages"][0]["layer_types"][0] == "embedding");
  CHECK(plan["stages"][4]["layers"] == nlohmann::json::array({28, 33}));
  CHECK(plan["whole_modules"] == true);
}

TEST_CASE("export_pytorch: a stage names each module once, in first-use order") {
  // deepseek-like's head is two shard layers that both name [norm, lm_head], and its MTP module
  // spans five layers: stage 1 holds all of them.
  auto spec = load_spec(pstest::source_path("configs/models/deepseek-like.yaml"), "", SpecOverrides{2, 2, 0.0});
  REQUIRE(spec.ok());
  const int n = static_cast<int>(spec->model.layers.size());
  auto pb = make_problem(*spec, Partition{{0, 52}, {53, n - 1}}, {0, 1});
  REQUIRE(pb.ok());
  Schedule s = csv_schedule("0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n");
  s.problem = *pb;
  PytorchExportOptions o;
  o.spec = &*spec;
  auto ex = export_pytorch(s, o);
  REQUIRE(ex.ok());
  REQUIRE(ex->valid);
  auto plan = nlohmann::json::parse(ex->plan_json);
  CHECK(plan["stages"][1]["modules"] ==
        nlohmann::json::parse(R"(["layers.26", "norm", "lm_head", "mtp.0"])"));
}

TEST_CASE("export_pytorch: a cut between two layers that name one module is a cut inside a layer") {
  // gpt-oss-like writes each decoder layer as two pipesmith layers (attention, MoE) of one module
  // layers.N, without joins_next: cutting between them splits the module.
  auto spec = load_spec(pstest::source_path("configs/models/gpt-oss-like.yaml"), "", SpecOverrides{2, 2, 0.0});
  REQUIRE(spec.ok());
  const int n = static_cast<int>(spec->model.layers.size());
  PytorchExportOptions o;
  o.spec = &*spec;
  for (int cut : {1, 2}) {  // after layers.0's attention (inside), after layers.0's MoE (between)
    auto pb = make_problem(*spec, Partition{{0, cut}, {cut + 1, n - 1}}, {0, 1});
    REQUIRE(pb.ok());
    Schedule s = csv_schedule("0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n");
    s.problem = *pb;
    auto ex = export_pytorch(s, o);
    REQUIRE(ex.ok());
    auto plan = nlohmann::json::parse(ex->plan_json);
    CHECK(plan["stages"][0]["ends_inside_joined_layer"] == (cut == 1));
    CHECK(plan["stages"][1]["starts_inside_joined_layer"] == (cut == 1));
    CHECK(ex->stages_split_inside_joined == (cut == 1 ? 2 : 0));
  }
}

TEST_CASE("export_pytorch: the last stage runs its forwards as microbatches 0..M-1 (PyTorch's loss order)") {
  // Valid, but the last stage (rank 1) runs F1 before F0: PyTorch would hand F1's loss to B0. Rank 1
  // receives in rank 0's sending order (pairwise FIFO), so both receives come before its first F.
  Schedule s = csv_schedule("0F0,0F1,0B0,0B1\n1F1,1F0,1B0,1B1\n");
  auto ex = export_pytorch(s, {});
  REQUIRE(ex.ok());
  REQUIRE(ex->valid);
  CHECK(ex->microbatch_renumbering == std::vector<int>{1, 0});
  CHECK(nlohmann::json::parse(ex->plan_json)["microbatch_renumbering"] == nlohmann::json::array({1, 0}));
  auto only = parse_pytorch_csv(ex->compute_only_csv, "compute_only.csv");
  REQUIRE(only.ok());
  CHECK(rows({cells_of(only->schedule.programs[0]), cells_of(only->schedule.programs[1])}) ==
        "0F1,0F0,0B1,0B0\n1F0,1F1,1B1,1B0\n");
  CHECK(ex->compute_comms_csv ==
        "0F1,0SEND_F1,0F0,0SEND_F0,0RECV_B1,0B1,0RECV_B0,0B0,0REDUCE_GRAD\n"
        "1RECV_F1,1RECV_F0,1F0,1F1,1B1,1SEND_B1,1B0,1SEND_B0,1REDUCE_GRAD\n");
  CHECK(ex->certified_ms > 0);

  // An OVERLAP_F_B cell's sub-actions are renamed with the rest; stages 0 and 1 share the rank.
  Schedule o = csv_schedule("0F0,0F1,1F1,(1B1;1F0)OVERLAP_F_B,1B0,0B1,0B0\n");
  auto ox = export_pytorch(o, {});
  REQUIRE(ox.ok());
  REQUIRE(ox->valid);
  CHECK(ox->microbatch_renumbering == std::vector<int>{1, 0});
  auto oo = parse_pytorch_csv(ox->compute_only_csv, "compute_only.csv");
  REQUIRE(oo.ok());
  CHECK(rows({cells_of(oo->schedule.programs[0])}) == "0F1,0F0,1F0,(1B0;1F1)OVERLAP_F_B,1B1,0B0,0B1\n");

  // In order already: nothing renamed.
  auto in_order = export_pytorch(csv_schedule("0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n"), {});
  REQUIRE(in_order.ok());
  CHECK(in_order->microbatch_renumbering.empty());
  CHECK(nlohmann::json::parse(in_order->plan_json)["microbatch_renumbering"].is_null());
}

TEST_CASE("export_pytorch: an invalid schedule produces nothing; a model that does not match is refused") {
  Schedule bad = csv_schedule("0F0,0B0\n1B0,1F0\n");
  auto ex = export_pytorch(bad, {});
  REQUIRE(ex.ok());
  CHECK(!ex->valid);
  CHECK(ex->compute_only_csv.empty());
  CHECK(!ex->report.violations.empty());

  auto spec = load_spec(pstest::source_path("configs/models/llama2-7b.yaml"), "", SpecOverrides{2, 2, 0.0});
  REQUIRE(spec.ok());
  auto pb = make_problem(*spec, Partition{{0, 10}, {11, 20}}, {0, 1});
  CHECK(!pb.ok());  // 34 layers: a partition must cover them
  auto pb2 = make_problem(*spec, Partition{{0, 16}, {17, 33}}, {0, 1});
  REQUIRE(pb2.ok());
  Schedule s = csv_schedule("0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n");
  s.problem = *pb2;
  auto other = load_spec(pstest::source_path("configs/models/gemma-like.yaml"), "", SpecOverrides{2, 2, 0.0});
  REQUIRE(other.ok());
  PytorchExportOptions o;
  o.spec = &*other;
  o.model_file = "gemma-like.yaml";
  auto r = export_pytorch(s, o);
  CHECK(!r.ok());
  CHECK(pstest::contains(r.status().message(), "69 layers"));
}
