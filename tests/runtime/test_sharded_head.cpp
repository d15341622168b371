// The vocabulary-parallel head: K consecutive head layers at the end of the model run as a chain of
// shards passing (x, L, t). Checked against one unsharded head computed directly with host_math (loss,
// input gradient, concatenated weight gradients), through the executor with shards on different
// devices (bit-exact against the sequential reference, memory equal to the rule), through the CLI, and
// refused up front by a backend without the shard ops (the cuda backend).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "runtime/exec_model.h"
#include "runtime/executor.h"
#include "runtime/host_backend.h"
#include "runtime/host_math.h"
#include "runtime/host_ops.h"
#include "runtime/memory_rule.h"
#include "runtime/sequential_reference.h"
#include "runtime/stage_compute.h"
#include "test_util.h"
#include "toy_schedules.h"

using namespace ps;
using namespace ps::rt;

namespace {

// Layers "E - - L…L" (`shards` head layers of one type 'L') plus, optionally, extra layer symbols at
// the end (to build a model whose last head type differs).
Model sharded_model(int shards, const std::string& tail = "") {
  // Head classes per shard: max(vocab, 2·hidden·1.5).
  return pstest::toy_model("sharded",
                           {{'E', "embedding", 0.5}, {'-', "mlp", 1.0}, {'L', "head", 1.5}, {'P', "mtp-head", 1.0}},
                           "E--" + std::string(static_cast<size_t>(shards), 'L') + tail);
}

// A problem whose stage s covers layers ranges[s] and sits on device placement[s].
Problem ranged_problem(int devices, int microbatches, const std::vector<std::pair<int, int>>& ranges,
                       const std::vector<int>& placement) {
  Problem p = pstest::toy_problem(devices, microbatches, placement);
  for (size_t s = 0; s < ranges.size(); ++s) {
    p.stages[s].first_layer = ranges[s].first;
    p.stages[s].last_layer = ranges[s].second;
  }
  return p;
}

ExecModel build(const Problem& p, const Model& model) {
  ExecModelOptions o;
  o.scale = 0.125;  // d_model 8, hidden 32, vocab 32
  o.tokens = 8;
  auto m = build_exec_model(p, &model, o);
  REQUIRE_MESSAGE(m.ok(), m.status().str());
  return *m;
}

std::vector<float> download(Ops& ops, const Tensor& t) {
  std::vector<float> v(t.count());
  ops.download(t, v.data());
  return v;
}

// max |got − ref| / max |ref|.
double rel_diff(const std::vector<float>& got, const std::vector<float>& ref) {
  REQUIRE(got.size() == ref.size());
  double diff = 0, mag = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(got[i]) - ref[i]));
    mag = std::max(mag, std::fabs(static_cast<double>(ref[i])));
  }
  return diff / std::max(mag, 1e-30);
}

// Runs the model on one StageCompute (F of all stages, then I, then W per microbatch) and compares the
// head chain (stages 1..S-1) with one unsharded head on the concatenated weights, computed directly
// with host_math: per-microbatch loss and input gradient, and the weight gradients summed over
// microbatches. Stage 0 holds E - -; its output is the head's input X.
void check_against_unsharded(const Model& model, const std::vector<std::pair<int, int>>& ranges, int shards) {
  const int S = static_cast<int>(ranges.size());
  const Problem p = ranged_problem(1, 3, ranges, std::vector<int>(ranges.size(), 0));
  const ExecModel m = build(p, model);
  REQUIRE(m.head_shards() == shards);
  const int T = m.tokens, D = m.d_model, V = m.vocab_out, M = m.microbatches;
  // The shards, in order, with their classes and offsets.
  int offset = 0, k = 0;
  for (int s = 1; s < S; ++s)
    for (const BlockSpec& b : m.stages[s]) {
      REQUIRE(b.is_head_shard());
      CHECK(b.shard == k++);
      CHECK(b.shards == shards);
      CHECK(b.class_offset == offset);
      CHECK(b.classes == 96);
      offset += b.classes;
    }
  CHECK(k == shards);
  CHECK(V == offset);

  HostOps ops;
  StageCompute sc(m, ops);
  for (int s = 0; s < S; ++s) REQUIRE(sc.add_stage(s).is_ok());
  // W = concatenated shard weights [V × D] (stage order, block order).
  std::vector<float> w;
  for (int s = 1; s < S; ++s)
    for (const auto& part : sc.parameters(s)) w.insert(w.end(), part.begin(), part.end());
  REQUIRE(w.size() == static_cast<size_t>(V) * D);

  std::vector<float> dw_ref(w.size(), 0.0f);
  const float scale = 1.0f / (static_cast<float>(T) * static_cast<float>(M));
  bool target_beyond_first_shard = false;
  for (int mb = 0; mb < M; ++mb) {
    CAPTURE(mb);
    Tensor x = *sc.forward(0, mb, Tensor());
    REQUIRE(x.count() == static_cast<size_t>(T) * D);
    const std::vector<float> xh = download(ops, x);
    Tensor y = x;
    for (int s = 1; s < S; ++s) {
      auto out = sc.forward(s, mb, std::move(y));
      REQUIRE_MESSAGE(out.ok(), out.status().str());
      y = std::move(*out);
    }
    CHECK(y.empty());
    Tensor dy;
    for (int s = S - 1; s >= 1; --s) {
      auto dx = sc.backward_input(s, mb, std::move(dy));
      REQUIRE_MESSAGE(dx.ok(), dx.status().str());
      dy = std::move(*dx);
    }
    REQUIRE(dy.count() == static_cast<size_t>(T) * D);
    const std::vector<float> dx_chain = download(ops, dy);
    REQUIRE(sc.backward_input(0, mb, dy).ok());
    for (int s = 0; s < S; ++s) REQUIRE(sc.backward_weight(s, mb).is_ok());

    // One unsharded head with host_math.
    const std::vector<int32_t> targets = microbatch_targets(m, mb);
    for (int t : targets) target_beyond_first_shard = target_beyond_first_shard || t >= 96;
    std::vector<float> logits(static_cast<size_t>(T) * V), probs(logits.size()), loss(T), dlogits(logits.size());
    host_gemm(false, true, T, V, D, 1.0f, xh.data(), w.data(), 0.0f, logits.data());
    host_softmax_xent_forward(logits.data(), targets.data(), T, V, probs.data(), loss.data());
    host_softmax_xent_backward(probs.data(), targets.data(), T, V, scale, dlogits.data());
    std::vector<float> dx_ref(static_cast<size_t>(T) * D);
    host_gemm(false, false, T, D, V, 1.0f, dlogits.data(), w.data(), 0.0f, dx_ref.data());  // dX = dZ·W
    host_gemm(true, false, V, D, T, 1.0f, dlogits.data(), xh.data(), 1.0f, dw_ref.data());   // dW += dZᵀ·X
    double loss_ref = 0;
    for (float l : loss) loss_ref += l;
    loss_ref /= T;
    const double loss_chain = *sc.loss(mb);
    CAPTURE(loss_chain);
    CAPTURE(loss_ref);
    CHECK(std::fabs(loss_chain - loss_ref) <= 1e-5 * std::fabs(loss_ref));
    CHECK(rel_diff(dx_chain, dx_ref) <= 1e-5);
  }
  CHECK(target_beyond_first_shard);  // the chain's target logit really comes from several shards
  std::vector<float> dw_chain;
  for (int s = 1; s < S; ++s) {
    auto g = sc.gradients(s);
    REQUIRE(g.ok());
    for (const auto& part : *g) dw_chain.insert(dw_chain.end(), part.begin(), part.end());
  }
  CHECK(rel_diff(dw_chain, dw_ref) <= 1e-5);
  CHECK(sc.held_bytes() == 0);
}

// Runs `s` on the host backend: gradients bit-exact against the sequential reference, held memory
// equal to the rule after every op, everything freed.
void run_and_check(const Schedule& s, const Model& model) {
  const ExecModel m = build(s.problem, model);
  REQUIRE(m.head_shards() > 1);
  HostBackend backend(s.num_devices());
  ExecResult r = execute(s, m, backend, {});
  REQUIRE_MESSAGE(r.status.is_ok(), r.status.str());
  auto ref = run_sequential_reference(m);
  REQUIRE(ref.ok());
  GradientComparison c = compare_gradients(m, r.gradients, r.losses, *ref);
  CHECK(c.ok);
  size_t n_params = 0;
  for (int st = 0; st < m.num_stages(); ++st) n_params += m.stage_params(st).size();
  CHECK(c.tensors == n_params);
  CHECK(c.max_abs_diff == 0.0);
  CHECK(c.max_loss_diff == 0.0);
  CHECK(r.losses.size() == static_cast<size_t>(s.problem.microbatches));
  const auto rule = memory_by_rule(s, m);
  for (const DeviceRun& dr : r.devices) {
    CAPTURE(dr.device);
    CHECK(dr.held_bytes == rule[dr.device].held_bytes);
    CHECK(dr.held_bytes.back() == 0);
  }
}

// Gives the stages of a toy schedule layer ranges.
Schedule with_ranges(Schedule s, const std::vector<std::pair<int, int>>& ranges) {
  REQUIRE(s.problem.stages.size() == ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    s.problem.stages[i].first_layer = ranges[i].first;
    s.problem.stages[i].last_layer = ranges[i].second;
  }
  return s;
}

// An Ops without the shard ops (as the cuda backend), for the refusal; execute() never calls it.
class NoShardOps final : public Ops {
 public:
  Tensor alloc(size_t, DType) override { return Tensor(); }
  void upload(Tensor&, const void*) override {}
  void download(const Tensor&, void*) override {}
  void gemm(bool, bool, int, int, int, float, const Tensor&, const Tensor&, float, Tensor&) override {}
  void add(const Tensor&, Tensor&) override {}
  void gelu_forward(const Tensor&, Tensor&) override {}
  void gelu_backward(const Tensor&, const Tensor&, Tensor&) override {}
  void embedding_forward(const Tensor&, const Tensor&, int, Tensor&) override {}
  void embedding_backward(const Tensor&, const Tensor&, int, Tensor&) override {}
  void softmax_xent_forward(const Tensor&, const Tensor&, int, int, Tensor&, Tensor&) override {}
  void softmax_xent_backward(const Tensor&, const Tensor&, int, int, float, Tensor&) override {}
  void head_shard_forward(const Tensor&, const Tensor&, int, int, int, const Tensor&, Tensor&, Tensor&, Tensor&,
                          Tensor&) override {}
  void head_shard_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, int, int, int, float, Tensor&,
                           Tensor&) override {}
  bool supports_sharded_head() const override { return false; }
  void copy(const Tensor&, size_t, Tensor&, size_t, size_t) override {}
  Status status() const override { return Status::ok(); }
  size_t live_bytes() const override { return 0; }
  size_t peak_bytes() const override { return 0; }
  std::string name() const override { return "no-shard"; }
};

class NoShardDevice final : public DeviceContext {
 public:
  Ops& ops() override { return ops_; }
  void begin_op(int, const Action&) override {}
  void end_op(int, const Action&) override {}
  Status send(const Action&, int, const Tensor&, const Action&) override { return Status::ok(); }
  Result<Tensor> recv(const Action&, int, const Action&, size_t) override { return Tensor(); }
  Status run_group(std::vector<CommItem>&, std::atomic<int>&) override { return Status::ok(); }
  bool is_async() const override { return false; }
  Status finish() override { return Status::ok(); }
  int completed_ops() const override { return 0; }
  std::vector<OpSpan> op_times() override { return {}; }
  void abort() override {}
  std::string describe() const override { return "no-shard device"; }

 private:
  NoShardOps ops_;
};

class NoShardBackend final : public Backend {
 public:
  explicit NoShardBackend(int devices) : devices_(devices) {}
  std::string name() const override { return "cuda"; }
  int num_devices() const override { return devices_; }
  std::vector<int> local_devices() const override {
    std::vector<int> v(devices_);
    for (int d = 0; d < devices_; ++d) v[d] = d;
    return v;
  }
  DeviceContext& device(int) override { return device_; }
  Status begin_iteration() override {
    began = true;
    return Status::ok();
  }
  void abort_all() override {}
  bool began = false;

 private:
  int devices_;
  NoShardDevice device_;
};

}  // namespace

TEST_CASE("sharded head: the model maps a trailing run of one head type to shards, a single head as before") {
  const Problem p = ranged_problem(2, 2, {{0, 2}, {3, 6}}, {0, 1});
  const ExecModel m = build(p, sharded_model(4));
  CHECK(m.head_shards() == 4);
  CHECK(m.vocab_out == 4 * 96);
  CHECK(m.boundary_count(0) == static_cast<size_t>(m.tokens) * m.d_model);  // before the chain: x only
  CHECK(m.describe_sharded_head() == "4 shards, stage 1");
  CHECK(m.describe().find("stage 1: head(shard 0/4, classes=96, layer 3 'L') head(shard 1/4, classes=96, layer 4 'L')") !=
        std::string::npos);
  CHECK(m.stage_summary(1) == "head shards 0-3 of 4 (384 classes)");
  REQUIRE(m.notes.size() == 1);
  CHECK(m.notes[0] == "layers 3..6 ('L' head): one vocabulary-parallel head (4 shards, stage 1; 384 classes in all)");
  for (int t : microbatch_targets(m, 1)) CHECK((t >= 0 && t < 384));

  // A boundary inside the chain carries (x, L, t).
  const ExecModel split = build(ranged_problem(3, 2, {{0, 3}, {4, 5}, {6, 6}}, {0, 1, 2}), sharded_model(4));
  CHECK(split.boundary_count(0) == static_cast<size_t>(split.tokens) * (split.d_model + 2));
  CHECK(split.boundary_count(1) == static_cast<size_t>(split.tokens) * (split.d_model + 2));
  CHECK(split.describe_sharded_head() == "4 shards, stages 0–2");
  CHECK(split.stage_summary(0) == "embedding (32 rows), 2 mlp (h 32), head shard 0 of 4 (96 classes)");

  // One head: an ordinary head, as before (no note, 96 classes, targets < 96).
  const ExecModel one = build(ranged_problem(2, 2, {{0, 2}, {3, 3}}, {0, 1}), sharded_model(1));
  CHECK(one.head_shards() == 1);
  CHECK(one.vocab_out == 96);
  CHECK(one.notes.empty());
  CHECK(one.stages[1][0].shards == 1);
  CHECK(one.stage_summary(1) == "head (96 classes)");

  // A different head type last (DeepSeek's main head, then its MTP head): not shards of one head; the
  // earlier head runs as an MLP block, as any head that is not the last layer does.
  const ExecModel mtp = build(ranged_problem(2, 2, {{0, 2}, {3, 4}}, {0, 1}), sharded_model(1, "P"));
  CHECK(mtp.head_shards() == 1);
  CHECK(mtp.stages[1][0].kind == BlockKind::kMlp);
  CHECK(mtp.stages[1][1].kind == BlockKind::kHead);
  CHECK(mtp.stages[1][1].shards == 1);
}

TEST_CASE("sharded head: K = 2, 3 shards give one unsharded head's loss and gradients (host_math reference)") {
  SUBCASE("2 shards, one stage") { check_against_unsharded(sharded_model(2), {{0, 2}, {3, 4}}, 2); }
  SUBCASE("2 shards, two stages") { check_against_unsharded(sharded_model(2), {{0, 2}, {3, 3}, {4, 4}}, 2); }
  SUBCASE("3 shards, stages of 1 and 2") { check_against_unsharded(sharded_model(3), {{0, 2}, {3, 3}, {4, 5}}, 3); }
  SUBCASE("3 shards, one per stage") { check_against_unsharded(sharded_model(3), {{0, 2}, {3, 3}, {4, 4}, {5, 5}}, 3); }
}

TEST_CASE("sharded head: shards on different devices match the sequential reference bit for bit") {
  const Model model = sharded_model(4);  // E - - L L L L: layers 0..6
  SUBCASE("3-device 1F1B, split I/W, deferred W: 2 shards on each of the last two devices") {
    run_and_check(pstest::with_comms_global_order(
                      with_ranges(pstest::one_f_one_b(3, 6, true, true), {{0, 2}, {3, 4}, {5, 6}})),
                  model);
  }
  SUBCASE("2-device 1F1B: the first shard with the MLPs, three on the other device") {
    run_and_check(pstest::with_comms_global_order(with_ranges(pstest::one_f_one_b(2, 4), {{0, 3}, {4, 6}})), model);
  }
  SUBCASE("GPipe on a V placement: a local hand-off inside the chain, then a send") {
    run_and_check(pstest::with_comms_global_order(
                      with_ranges(pstest::gpipe(2, 3, {0, 1, 1, 0}), {{0, 1}, {2, 3}, {4, 4}, {5, 6}})),
                  model);
  }
  SUBCASE("4-device 1F1B with split I/W: one shard per stage") {
    const Model five = sharded_model(5);
    run_and_check(pstest::with_comms_global_order(
                      with_ranges(pstest::one_f_one_b(4, 4, true), {{0, 3}, {4, 5}, {6, 6}, {7, 7}})),
                  five);
  }
}

TEST_CASE("sharded head: a backend without the shard ops refuses the model before it starts") {
  const Schedule s = pstest::with_comms_global_order(with_ranges(pstest::one_f_one_b(2, 2), {{0, 4}, {5, 6}}));
  const ExecModel m = build(s.problem, sharded_model(4));
  NoShardBackend backend(2);
  ExecResult r = execute(s, m, backend, {});
  CHECK_FALSE(r.status.is_ok());
  CHECK(r.status.message() == "vocabulary-sharded heads (4 shards, stages 0–1) are not implemented on the cuda backend");
  CHECK_FALSE(backend.began);
}

TEST_CASE("pipesmith run: a vocabulary-sharded head across devices (CLI, baselines) matches the reference") {
  const std::string model = pstest::source_path("tests/runtime/sharded_head_model.yaml");
  struct Case {
    const char* schedule;
    int P;
    const char* where;  // a line of the stage summary showing a boundary inside the chain
  };
  const Case cases[] = {
      {"1f1b", 2, "stage 1 (device 1): head shards 1-3 of 4 (288 classes)"},
      {"zb-h1", 3, "stage 2 (device 2): head shards 2-3 of 4 (192 classes)"},
      {"interleaved-1f1b", 2, "stage 2 (device 0): head shard 1 of 4 (96 classes)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.schedule);
    const std::string file = pstest::temp_path(std::string("sharded-") + c.schedule + ".yaml");
    auto b = pstest::run_cli("baseline " + model + " --schedule " + c.schedule + " --devices " + std::to_string(c.P) +
                             " --microbatches 4 -o " + file);
    REQUIRE_MESSAGE(b.exit_code == 0, b.output);
    auto r = pstest::run_cli("run " + file + " --model " + model +
                             " --backend host --check-gradients --scale 0.125 --tokens 8");
    CHECK_MESSAGE(r.exit_code == 0, r.output);
    CHECK_MESSAGE(r.output.find(c.where) != std::string::npos, r.output);
    CHECK(r.output.find("one vocabulary-parallel head (4 shards") != std::string::npos);
    CHECK(r.output.find("max |diff| 0,") != std::string::npos);
    CHECK(r.output.find("OK (within 1e-05 relative)") != std::string::npos);
    const std::string mem = "after every op on " + std::to_string(c.P) + "/" + std::to_string(c.P) + " devices";
    CHECK_MESSAGE(r.output.find(mem) != std::string::npos, r.output);
    std::remove(file.c_str());
  }
}
