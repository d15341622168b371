// bench_util.h — what the benches' flag readers share.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace ps::bench {

// "a,b,,c" → {"a", "b", "c"}: the comma-separated items of a flag's value, empty ones dropped.
inline std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace ps::bench
