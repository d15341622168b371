// Kernels against their naive CPU references (kernels/reference.h): the host backend's blocked math
// always; the CUDA kernels and cuBLAS GEMMs in "[gpu]" cases (ctest -L gpu), plus 1-GPU smoke runs
// of the cuda backend (one device, NCCL with a single rank) with the gradient check — one with an
// ordinary head, one with a vocabulary-sharded head (its schedule and model also run on the host
// backend without a GPU, so that the GPU case's setup is checked everywhere).
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "ir/model.h"
#include "kernels/cuda_backend.h"
#include "kernels/reference.h"
#include "runtime/exec_model.h"
#include "runtime/executor.h"
#include "runtime/host_backend.h"
#include "runtime/host_math.h"
#include "runtime/host_ops.h"
#include "runtime/sequential_reference.h"
#include "runtime/toy_schedules.h"

#if defined(PIPESMITH_HAVE_CUDA)
#include "kernels/cuda_ops.h"
#endif

using namespace ps;
namespace ref = ps::kern::ref;

namespace {

std::vector<float> randn(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

std::vector<int32_t> randint(size_t n, int hi, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> d(0, hi - 1);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

struct GemmCase {
  bool ta, tb;
  int m, n, k;
  float alpha, beta;
};

const GemmCase kGemmCases[] = {
    {false, false, 7, 5, 3, 1.0f, 0.0f},     {false, true, 33, 70, 129, 1.0f, 0.0f},
    {true, false, 130, 65, 31, 1.0f, 0.0f},  {true, true, 64, 300, 17, 0.5f, 1.0f},
    {false, false, 1, 257, 140, 2.0f, 0.25f}, {false, true, 96, 96, 96, 1.0f, 1.0f},
};

// Runs every op of an Ops implementation on random inputs and compares with the references.
void check_ops_against_reference(rt::Ops& ops, double tol) {
  auto up = [&](const std::vector<float>& v) {
    rt::Tensor t = ops.alloc(v.size(), rt::DType::kF32);
    ops.upload(t, v.data());
    return t;
  };
  auto up_i = [&](const std::vector<int32_t>& v) {
    rt::Tensor t = ops.alloc(v.size(), rt::DType::kI32);
    ops.upload(t, v.data());
    return t;
  };
  auto down = [&](const rt::Tensor& t) {
    std::vector<float> v(t.count());
    ops.download(t, v.data());
    return v;
  };
  uint32_t seed = 1;
  for (const GemmCase& c : kGemmCases) {
    CAPTURE(c.m);
    CAPTURE(c.n);
    CAPTURE(c.k);
    CAPTURE(c.ta);
    CAPTURE(c.tb);
    const auto a = randn(static_cast<size_t>(c.m) * c.k, seed++), b = randn(static_cast<size_t>(c.k) * c.n, seed++);
    auto cref = randn(static_cast<size_t>(c.m) * c.n, seed++);
    rt::Tensor ta = up(a), tb = up(b), tc = up(cref);
    ops.gemm(c.ta, c.tb, c.m, c.n, c.k, c.alpha, ta, tb, c.beta, tc);
    ref::gemm(c.ta, c.tb, c.m, c.n, c.k, c.alpha, a, b, c.beta, cref);
    CHECK(ref::max_rel_diff(down(tc), cref) < tol);
  }
  const auto h = randn(4099, seed++, 2.0f), da = randn(4099, seed++);
  rt::Tensor th = up(h), tda = up(da), tout = ops.alloc(h.size(), rt::DType::kF32);
  std::vector<float> expect;
  ops.gelu_forward(th, tout);
  ref::gelu_forward(h, expect);
  CHECK(ref::max_rel_diff(down(tout), expect) < tol);
  ops.gelu_backward(th, tda, tout);
  ref::gelu_backward(h, da, expect);
  CHECK(ref::max_rel_diff(down(tout), expect) < tol);
  auto y = randn(4099, seed++);
  rt::Tensor ty = up(y);
  ops.add(th, ty);
  ref::add(h, y);
  CHECK(ref::max_rel_diff(down(ty), y) < tol);
  // Embedding with repeated tokens (the scatter must add them all, in order).
  const int rows = 37, dim = 24;
  const size_t T = 50;
  const auto table = randn(static_cast<size_t>(rows) * dim, seed++);
  const auto tokens = randint(T, rows, seed++);
  rt::Tensor ttab = up(table), ttok = up_i(tokens), temb = ops.alloc(T * dim, rt::DType::kF32);
  ops.embedding_forward(ttab, ttok, dim, temb);
  ref::embedding_forward(table, tokens, dim, expect);
  CHECK(ref::max_rel_diff(down(temb), expect) < tol);
  const auto dout = randn(T * dim, seed++);
  auto dtab = randn(static_cast<size_t>(rows) * dim, seed++);
  rt::Tensor tdout = up(dout), tdtab = up(dtab);
  ops.embedding_backward(tdout, ttok, dim, tdtab);
  ref::embedding_backward(dout, tokens, dim, dtab);
  CHECK(ref::max_rel_diff(down(tdtab), dtab) < tol);
  // Softmax cross-entropy, including a row with large logits (stability) and > 256 classes.
  for (int classes : {3, 300, 1100}) {
    CAPTURE(classes);
    const int R = 9;
    auto logits = randn(static_cast<size_t>(R) * classes, seed++, 3.0f);
    logits[5] = 80.0f;
    const auto targets = randint(R, classes, seed++);
    rt::Tensor tl = up(logits), tt = up_i(targets), tp = ops.alloc(logits.size(), rt::DType::kF32),
               tloss = ops.alloc(R, rt::DType::kF32), td = ops.alloc(logits.size(), rt::DType::kF32);
    std::vector<float> probs, loss, dl;
    ops.softmax_xent_forward(tl, tt, R, classes, tp, tloss);
    ref::softmax_xent_forward(logits, targets, R, classes, probs, loss);
    CHECK(ref::max_rel_diff(down(tp), probs) < tol);
    CHECK(ref::max_rel_diff(down(tloss), loss) < tol);
    ops.softmax_xent_backward(tp, tt, R, classes, 0.125f, td);
    ref::softmax_xent_backward(probs, targets, R, classes, 0.125f, dl);
    CHECK(ref::max_rel_diff(down(td), dl) < tol);
  }
  // Head shards: the first (no carry in), a middle and the last shard (the loss) of a 3-shard head;
  // targets over all 3 shards' classes (some in the shard, some not), a row with a large logit and a
  // row whose running L is −inf.
  for (int classes : {3, 300, 1100}) {
    for (int shard : {0, 1, 2}) {
      CAPTURE(classes);
      CAPTURE(shard);
      const int R = 9, offset = shard * classes;
      const bool first = shard == 0, last = shard == 2;
      auto logits = randn(static_cast<size_t>(R) * classes, seed++, 3.0f);
      logits[5] = 80.0f;
      auto targets = randint(R, 3 * classes, seed++);
      targets[0] = offset + classes / 2;                // in the shard
      targets[1] = (offset + classes) % (3 * classes);  // not in it
      std::vector<float> carry_in;
      if (!first) {
        carry_in = randn(2 * static_cast<size_t>(R), seed++, 2.0f);
        for (int r = 0; r < R; ++r) carry_in[r] += std::log(static_cast<float>(offset));  // L ~ LSE so far
        carry_in[2] = -INFINITY;
      }
      const size_t n = static_cast<size_t>(R) * classes;
      rt::Tensor tl = up(logits), tt = up_i(targets), tcin = first ? rt::Tensor() : up(carry_in),
                 tp = ops.alloc(n, rt::DType::kF32), tw = ops.alloc(2 * static_cast<size_t>(R), rt::DType::kF32),
                 tcout = ops.alloc(2 * static_cast<size_t>(R), rt::DType::kF32),
                 tloss = last ? ops.alloc(R, rt::DType::kF32) : rt::Tensor();
      std::vector<float> probs, weights, carry_out, loss;
      ops.head_shard_forward(tl, tt, R, classes, offset, tcin, tp, tw, tcout, tloss);
      ref::head_shard_forward(logits, targets, R, classes, offset, carry_in, last, probs, weights, carry_out, loss);
      CHECK(ref::max_rel_diff(down(tp), probs) < tol);
      CHECK(ref::max_rel_diff(down(tw), weights) < tol);
      CHECK(ref::max_rel_diff(down(tcout), carry_out) < tol);
      if (last) CHECK(ref::max_rel_diff(down(tloss), loss) < tol);
      std::vector<float> dcarry_out;
      if (!last) {
        dcarry_out = randn(2 * static_cast<size_t>(R), seed++, 0.1f);
        for (int r = 0; r < R; ++r) dcarry_out[r] = std::fabs(dcarry_out[r]);  // dL > 0, as in a chain
      }
      rt::Tensor tdcout = last ? rt::Tensor() : up(dcarry_out), td = ops.alloc(n, rt::DType::kF32),
                 tdcin = first ? rt::Tensor() : ops.alloc(2 * static_cast<size_t>(R), rt::DType::kF32);
      std::vector<float> dlogits, dcarry_in;
      ops.head_shard_backward(tp, tt, tw, tdcout, R, classes, offset, 0.125f, td, tdcin);
      ref::head_shard_backward(probs, targets, weights, dcarry_out, R, classes, offset, 0.125f, dlogits, dcarry_in);
      CHECK(ref::max_rel_diff(down(td), dlogits) < tol);
      if (!first) CHECK(ref::max_rel_diff(down(tdcin), dcarry_in) < tol);
    }
  }
  // copy: a slice into the middle of another tensor (the head chain's message packing).
  const auto src = randn(100, seed++);
  auto dst = randn(80, seed++);
  rt::Tensor tsrc = up(src), tdst = up(dst);
  ops.copy(tsrc, 7, tdst, 20, 50);
  std::copy(src.begin() + 7, src.begin() + 57, dst.begin() + 20);
  CHECK(down(tdst) == dst);
  CHECK(ops.status().is_ok());
}

// A 1-device schedule: F of every stage, then I in reverse, per microbatch; W deferred to the end.
Schedule one_device_fiw(int stages, int microbatches, const std::vector<std::pair<int, int>>& layer_ranges = {}) {
  Schedule s;
  s.problem.name = "gpu-smoke";
  s.problem.devices = 1;
  s.problem.microbatches = microbatches;
  for (int st = 0; st < stages; ++st) {
    StageSpec sp;
    sp.device = 0;
    sp.fwd_ms = 1.0 + st;
    if (!layer_ranges.empty()) {
      sp.first_layer = layer_ranges.at(st).first;
      sp.last_layer = layer_ranges.at(st).second;
    }
    s.problem.stages.push_back(sp);
  }
  s.programs.resize(1);
  auto add = [&](OpType t, int st, int m) {
    Action a;
    a.type = t;
    a.stage = StageId{st};
    a.mb = MicrobatchId{m};
    s.programs[0].push_back(a);
  };
  for (int m = 0; m < microbatches; ++m) {
    for (int st = 0; st < stages; ++st) add(OpType::F, st, m);
    for (int st = stages - 1; st >= 0; --st) add(OpType::I, st, m);
  }
  for (int m = microbatches - 1; m >= 0; --m)
    for (int st = 0; st < stages; ++st) add(OpType::W, st, m);
  return s;
}

// Layers "E - - L L L", the head type 'L' a vocabulary-parallel head of 3 shards.
Model sharded_head_model() {
  return pstest::toy_model("sharded-smoke", {{'E', "embedding", 0.5}, {'-', "mlp", 1.0}, {'L', "head", 1.5}}, "E--LLL");
}

// Three stages on one device: E - - L | L | L — shard 0 with the MLPs, then a stage per shard, so
// that the chain's [x | L | t] messages are packed and unpacked (local hand-offs).
struct ShardedSmoke {
  Schedule schedule;
  Model model;
  rt::ExecModel exec;
};

ShardedSmoke sharded_smoke() {
  ShardedSmoke c{one_device_fiw(3, 4, {{0, 3}, {4, 4}, {5, 5}}), sharded_head_model(), {}};
  rt::ExecModelOptions o;
  o.scale = 0.5;  // d_model 32; each shard max(vocab 128, 2·hidden·1.5) classes: > 256 (several per thread)
  auto m = rt::build_exec_model(c.schedule.problem, &c.model, o);
  REQUIRE_MESSAGE(m.ok(), m.status().str());
  c.exec = std::move(*m);
  REQUIRE(c.exec.head_shards() == 3);
  return c;
}

// Runs a sharded smoke case on `backend` and checks gradients and losses against the sequential
// reference (host math) within `tol`.
void run_sharded_smoke(rt::Backend& backend, double tol) {
  const ShardedSmoke c = sharded_smoke();
  rt::ExecResult r = rt::execute(c.schedule, c.exec, backend, {});
  REQUIRE_MESSAGE(r.status.is_ok(), r.status.str());
  auto reference = rt::run_sequential_reference(c.exec);
  REQUIRE(reference.ok());
  auto cmp = rt::compare_gradients(c.exec, r.gradients, r.losses, *reference, tol);
  CHECK_MESSAGE(cmp.ok, "max rel ", cmp.max_rel_diff, " at ", cmp.worst_param);
  size_t n_params = 0;
  for (int st = 0; st < c.exec.num_stages(); ++st) n_params += c.exec.stage_params(st).size();
  CHECK(cmp.tensors == n_params);
  CHECK(cmp.max_loss_diff < 1e-4);
  CHECK(r.losses.size() == 4);
}

}  // namespace

TEST_CASE("host math: blocked GEMM, GELU, embedding, softmax-xent, head shards, copy match the naive references") {
  rt::HostOps ops;
  check_ops_against_reference(ops, 2e-6);
  // The tolerance check has teeth: a perturbed reference fails it.
  std::vector<float> a{1, 2, 3}, b{1, 2, 3.001f};
  CHECK(ref::max_rel_diff(a, b) > 2e-6);
}

TEST_CASE("head shard references: a chain of shards is one unsharded softmax cross-entropy") {
  // The references of the shard ops are checked on their own: 3 shards of 4, 300 and 7 classes
  // chained through (L, t) give the loss and the gradient of one head over the 311 classes.
  const int R = 6, sizes[] = {4, 300, 7}, V = 311;
  const auto logits = randn(static_cast<size_t>(R) * V, 11, 3.0f);
  auto targets = randint(R, V, 12);
  targets[0] = 1;
  targets[1] = 305;
  std::vector<float> probs, loss, dl;
  ref::softmax_xent_forward(logits, targets, R, V, probs, loss);
  ref::softmax_xent_backward(probs, targets, R, V, 0.25f, dl);
  struct Shard {
    std::vector<float> logits, probs, weights, carry;
  };
  std::vector<Shard> shards;
  std::vector<float> carry, chain_loss;
  int offset = 0;
  for (int k = 0; k < 3; ++k) {
    Shard sh;
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < sizes[k]; ++j) sh.logits.push_back(logits[static_cast<size_t>(r) * V + offset + j]);
    ref::head_shard_forward(sh.logits, targets, R, sizes[k], offset, carry, k == 2, sh.probs, sh.weights, sh.carry,
                            chain_loss);
    carry = sh.carry;
    shards.push_back(std::move(sh));
    offset += sizes[k];
  }
  CHECK(ref::max_rel_diff(chain_loss, loss) < 1e-6);
  std::vector<float> dcarry, chain_dl(dl.size());
  offset = V;
  for (int k = 2; k >= 0; --k) {
    offset -= sizes[k];
    std::vector<float> d, dcarry_in;
    ref::head_shard_backward(shards[k].probs, targets, shards[k].weights, dcarry, R, sizes[k], offset, 0.25f, d,
                             dcarry_in);
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < sizes[k]; ++j)
        chain_dl[static_cast<size_t>(r) * V + offset + j] = d[static_cast<size_t>(r) * sizes[k] + j];
    dcarry = dcarry_in;
  }
  CHECK(ref::max_rel_diff(chain_dl, dl) < 1e-6);
}

TEST_CASE("sharded-head smoke case: 3 shards on one device match the sequential reference on the host backend") {
  // The [gpu] case below runs the same schedule and model on the cuda backend.
  rt::HostBackend backend(1);
  run_sharded_smoke(backend, 0.0);
}

TEST_CASE("host math: GELU matches the tanh formula and its derivative matches a finite difference") {
  for (float x : {-6.0f, -2.5f, -0.3f, 0.0f, 0.7f, 3.0f}) {
    CAPTURE(x);
    CHECK(rt::gelu_value(x) == doctest::Approx(ref::gelu(x)).epsilon(1e-6));
    const double h = 1e-3;
    const double fd = (ref::gelu(static_cast<float>(x + h)) - ref::gelu(static_cast<float>(x - h))) / (2 * h);
    CHECK(rt::gelu_derivative(x) == doctest::Approx(fd).epsilon(2e-3));
  }
  CHECK(rt::gelu_value(10.0f) == doctest::Approx(10.0f));
  CHECK(rt::gelu_value(-10.0f) == doctest::Approx(0.0f));
}

TEST_CASE("cuda backend: without a device it fails cleanly with a runtime error") {
  auto b = kern::make_cuda_backend({1, ""});
  if (b.ok()) return;  // a GPU is present: the [gpu] cases cover it
  CHECK(b.status().code() == ErrorCode::kRuntime);
  if (kern::cuda_backend_built())
    CHECK(b.status().message().rfind("no CUDA device", 0) == 0);
  else
    CHECK(b.status().message().rfind("built without the CUDA backend", 0) == 0);
}

#if defined(PIPESMITH_HAVE_CUDA)
TEST_CASE("[gpu] cuda kernels (incl. head shards) and cuBLAS GEMM match the CPU references") {
  auto ops = kern::CudaOps::create(0);
  REQUIRE_MESSAGE(ops.ok(), ops.status().str());
  check_ops_against_reference(**ops, 1e-5);
}

TEST_CASE("[gpu] cuda backend: 1-GPU run (NCCL with one rank) matches the sequential gradients") {
  auto backend = kern::make_cuda_backend({1, ""});
  REQUIRE_MESSAGE(backend.ok(), backend.status().str());
  // Three stages on one device: F/I/W split, W deferred.
  const Schedule s = one_device_fiw(3, 4);
  rt::ExecModelOptions o;
  o.scale = 0.5;
  auto model = rt::build_exec_model(s.problem, nullptr, o);
  REQUIRE(model.ok());
  rt::ExecResult r = rt::execute(s, *model, **backend, {});
  REQUIRE_MESSAGE(r.status.is_ok(), r.status.str());
  auto reference = rt::run_sequential_reference(*model);
  REQUIRE(reference.ok());
  auto cmp = rt::compare_gradients(*model, r.gradients, r.losses, *reference, 1e-5);
  CHECK_MESSAGE(cmp.ok, "max rel ", cmp.max_rel_diff, " at ", cmp.worst_param);
  CHECK(cmp.max_loss_diff < 1e-4);
  CHECK(r.devices.at(0).end_ms > 0);
  CHECK(r.devices.at(0).where.find("cuda:0") == 0);
}

TEST_CASE("[gpu] cuda backend: 1-GPU run of a vocabulary-sharded head (3 shards) matches the sequential gradients") {
  auto backend = kern::make_cuda_backend({1, ""});
  REQUIRE_MESSAGE(backend.ok(), backend.status().str());
  run_sharded_smoke(**backend, 1e-5);
}
#endif
