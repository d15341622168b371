// The allocation footprint every Ops reports (runtime/counted_storage.h), through HostOps: live bytes
// rise and fall with the tensors, the peak keeps the most ever live, and a tensor that outlives its
// Ops still releases its bytes.
#include <doctest/doctest.h>

#include <memory>

#include "runtime/host_ops.h"

using namespace ps::rt;

TEST_CASE("HostOps counts live and peak bytes of its tensors, until the last reference goes") {
  HostOps ops;
  CHECK(ops.live_bytes() == 0);
  CHECK(ops.peak_bytes() == 0);
  Tensor a = ops.alloc(100, DType::kF32);
  Tensor b = ops.alloc(50, DType::kI32);
  CHECK(ops.live_bytes() == 600);
  CHECK(ops.peak_bytes() == 600);
  Tensor a2 = a;  // one storage, counted once
  a.reset();
  CHECK(ops.live_bytes() == 600);
  a2.reset();
  CHECK(ops.live_bytes() == 200);
  CHECK(ops.peak_bytes() == 600);
  Tensor c = ops.alloc(10, DType::kF32);
  CHECK(ops.live_bytes() == 240);
  CHECK(ops.peak_bytes() == 600);
  Tensor d = ops.alloc(200, DType::kF32);
  CHECK(ops.peak_bytes() == 1040);
  b.reset();
  c.reset();
  d.reset();
  CHECK(ops.live_bytes() == 0);
  CHECK(ops.peak_bytes() == 1040);
}

TEST_CASE("a tensor outliving its HostOps releases its memory and its bytes") {
  Tensor t;
  {
    auto ops = std::make_unique<HostOps>();
    t = ops->alloc(16, DType::kF32);
    t.f32()[15] = 1.0f;
    CHECK(ops->live_bytes() == 64);
  }
  CHECK(t.f32()[15] == 1.0f);
  t.reset();  // the storage's counters outlived the Ops (a sanitizer build checks the release)
  CHECK(t.empty());
}
