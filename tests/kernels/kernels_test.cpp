// Kernels against their naive CPU references (kernels/reference.h): the host backend's blocked math
// always; the CUDA kernels and cuBLAS GEMMs in "[gpu]" cases (ctest -L gpu), plus a 1-GPU smoke run
// of the cuda backend (one device, NCCL with a single rank) with the gradient check.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "kernels/cuda_backend.h"
#include "kernels/reference.h"
#include "runtime/exec_model.h"
#include "runtime/executor.h"
#include "runtime/host_math.h"
#include "runtime/host_ops.h"
#include "runtime/sequential_reference.h"

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
  CHECK(ops.status().is_ok());
}

}  // namespace

TEST_CASE("host math: blocked GEMM, GELU, embedding, softmax-xent match the naive references") {
  rt::HostOps ops;
  check_ops_against_reference(ops, 2e-6);
  // The tolerance check has teeth: a perturbed reference fails it.
  std::vector<float> a{1, 2, 3}, b{1, 2, 3.001f};
  CHECK(ref::max_rel_diff(a, b) > 2e-6);
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
TEST_CASE("[gpu] cuda kernels and cuBLAS GEMM match the CPU references") {
  auto ops = kern::CudaOps::create(0);
  REQUIRE_MESSAGE(ops.ok(), ops.status().str());
  check_ops_against_reference(**ops, 1e-5);
}

TEST_CASE("[gpu] cuda backend: 1-GPU run (NCCL with one rank) matches the sequential gradients") {
  auto backend = kern::make_cuda_backend({1, ""});
  REQUIRE_MESSAGE(backend.ok(), backend.status().str());
  // Three stages on one device: F/I/W split, W deferred.
  Schedule s;
  s.problem.name = "gpu-smoke";
  s.problem.devices = 1;
  s.problem.microbatches = 4;
  for (int st = 0; st < 3; ++st) {
    StageSpec sp;
    sp.device = 0;
    sp.fwd_ms = 1.0 + st;
    s.problem.stages.push_back(sp);
  }
  s.programs.resize(1);
  auto add = [&](OpType t, int st, int m) {
    Action a;
    a.type = t;
    a.stage = st;
    a.mb = m;
    s.programs[0].push_back(a);
  };
  for (int m = 0; m < 4; ++m) {
    for (int st = 0; st < 3; ++st) add(OpType::F, st, m);
    for (int st = 2; st >= 0; --st) add(OpType::I, st, m);
  }
  for (int m = 3; m >= 0; --m)
    for (int st = 0; st < 3; ++st) add(OpType::W, st, m);
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
#endif
