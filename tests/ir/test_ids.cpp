// Strong ids (ir/ids.h): explicit from int, `.value()`, ordered and hashed within their kind, printed
// by fmt as their number, and not interchangeable with each other or with int.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <map>
#include <type_traits>
#include <unordered_set>

#include "ir/comm_insert.h"
#include "ir/ids.h"

using namespace ps;

static_assert(!std::is_convertible_v<int, StageId>, "an id is made from an int explicitly");
static_assert(!std::is_convertible_v<StageId, int>, "an id is read with .value()");
static_assert(!std::is_convertible_v<StageId, DeviceId>, "a stage is not a device");
static_assert(!std::is_constructible_v<DeviceId, MicrobatchId>, "a microbatch is not a device");
static_assert(!std::is_constructible_v<LayerId, StageId>, "a stage is not a layer");
static_assert(std::is_constructible_v<DeviceId, int>);
static_assert(sizeof(DeviceId) == sizeof(int) && std::is_trivially_copyable_v<DeviceId>);
static_assert(DeviceId{3}.value() == 3 && DeviceId{} == DeviceId{0});
// The typed boundary: the wait-for witness names devices, not ints.
static_assert(std::is_same_v<decltype(BlockedOp::device), DeviceId>);
static_assert(std::is_same_v<decltype(BlockedOp::waits_for_device), std::optional<DeviceId>>);

TEST_CASE("ids: compare, order, hash and format as their number") {
  const StageId a{2}, b{5};
  CHECK(a == StageId{2});
  CHECK(a != b);
  CHECK(a < b);
  CHECK(b >= a);
  std::map<MicrobatchId, double> loss{{MicrobatchId{3}, 0.5}, {MicrobatchId{1}, 0.25}};
  CHECK(loss.begin()->first == MicrobatchId{1});
  std::unordered_set<LayerId> layers{LayerId{7}, LayerId{7}, LayerId{8}};
  CHECK(layers.size() == 2);
  CHECK(layers.count(LayerId{8}) == 1);
  CHECK(fmt::format("device {} stage {:>3}", DeviceId{4}, a) == "device 4 stage   2");
  BlockedOp op;
  CHECK(!op.waits_for_device);
  op.waits_for_device = DeviceId{1};
  CHECK(op.waits_for_device == DeviceId{1});
}
