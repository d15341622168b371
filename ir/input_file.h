// input_file.h — reading an input file whole, with a size cap.
//
// Guarantees: never reads more than limits::kMaxInputBytes + 1 bytes, whatever the file is (a regular
// file, a FIFO, /dev/zero); refuses directories; says why it failed.
#pragma once

#include <optional>
#include <string>

namespace ps {

// Reads `path` into `text`. Returns the reason it could not ("No such file or directory", "it is a
// directory", "it is larger than the 128 MiB pipesmith reads ..."), or nothing on success.
std::optional<std::string> read_input_file(const std::string& path, std::string& text);

}  // namespace ps
