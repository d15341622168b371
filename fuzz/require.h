// require.h — the check the fuzz targets' properties use: a property that does not hold traps, which
// libFuzzer reports as a crash with the input that broke it (an assert would vanish under NDEBUG).
#pragma once

namespace psfuzz {

inline void require(bool cond) {
  if (!cond) __builtin_trap();
}

}  // namespace psfuzz
