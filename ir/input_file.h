// input_file.h — reading an input file whole, with a size cap.
//
// Guarantees: never reads more than limits::kMaxInputBytes + 1 bytes, whatever the file is (a regular
// file, a FIFO, /dev/zero); refuses directories; says why it failed.
#pragma once

#include <optional>
#include <string>

namespace ps {

// Why a file could not be read: where it failed, and the reason in words.
struct InputFileError {
  enum class Stage {
    kOpen,   // the file could not be opened (reason: the system's, "No such file or directory")
    kRead,   // it opened, but is a directory, is too large, or a read failed
  };
  Stage stage = Stage::kOpen;
  std::string reason;  // "No such file or directory", "it is a directory", "it is larger than the 128 MiB ..."
};

// Reads `path` into `text`. Returns why it could not, or nothing on success.
std::optional<InputFileError> read_input_file(const std::string& path, std::string& text);

}  // namespace ps
