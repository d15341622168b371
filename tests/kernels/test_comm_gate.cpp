// kernels/comm_gate.h on the CPU: the watchdog's abort is not held up by a worker waiting for a
// transfer, and once it has run no worker call reaches the communicator again (the cuda backend's
// ncclCommAbort path, with a stand-in communicator that never completes).
#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <thread>

#include "kernels/comm_gate.h"

TEST_CASE("CommGate: abort runs while a worker polls a transfer that never completes") {
  ps::kern::CommGate gate;
  std::atomic<int> polls{0}, polls_after_abort{0};
  std::atomic<bool> abort_ran{false}, inside{false};
  // The worker: an enqueue, then a wait for a transfer that never finishes.
  auto worker = std::async(std::launch::async, [&] {
    ps::Status st = gate.call([] { return ps::Status::ok(); });
    REQUIRE(st.is_ok());
    return gate.settle([&]() -> ps::Result<bool> {
      inside.store(true);
      ++polls;
      if (abort_ran.load()) ++polls_after_abort;
      return false;
    });
  });
  while (!inside.load()) std::this_thread::yield();
  // The watchdog: must get through while the worker is still waiting (a hang here fails the test by
  // its timeout below instead of hanging the suite).
  auto watchdog = std::async(std::launch::async, [&] {
    gate.abort([&] { abort_ran.store(true); });
  });
  REQUIRE(watchdog.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  REQUIRE(worker.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  const ps::Status st = worker.get();
  CHECK(ps::rt::is_aborted(st));
  CHECK(abort_ran.load());
  CHECK(polls.load() >= 1);
  CHECK(polls_after_abort.load() == 0);  // the communicator is never touched after the abort
  // Later calls do not reach it either, and a second abort does nothing.
  int calls = 0;
  CHECK(ps::rt::is_aborted(gate.call([&] {
    ++calls;
    return ps::Status::ok();
  })));
  CHECK(calls == 0);
  int aborts = 0;
  gate.abort([&] { ++aborts; });
  CHECK(aborts == 0);
}

TEST_CASE("CommGate: settle returns the poll's error and its completion") {
  ps::kern::CommGate gate;
  int n = 0;
  CHECK(gate.settle([&]() -> ps::Result<bool> { return ++n == 3; }).is_ok());
  CHECK(n == 3);
  auto st = gate.settle([]() -> ps::Result<bool> { return ps::Status::error(ps::ErrorCode::kRuntime, "NCCL error"); });
  CHECK(st.message() == "NCCL error");
  gate.request_abort();
  CHECK(ps::rt::is_aborted(gate.settle([]() -> ps::Result<bool> { return false; })));
  CHECK(!gate.aborted());  // a request only stops the waits; the abort itself has not run
}
