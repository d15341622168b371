#include "ir/input_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ir/limits.h"

namespace ps {

std::optional<InputFileError> read_input_file(const std::string& path, std::string& text) {
  using Stage = InputFileError::Stage;
  text.clear();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return InputFileError{Stage::kOpen, std::strerror(errno)};
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return InputFileError{Stage::kRead, "it is a directory"};
  }
  const size_t cap = static_cast<size_t>(limits::kMaxInputBytes);
  if (S_ISREG(st.st_mode) && st.st_size > 0) text.reserve(std::min(static_cast<size_t>(st.st_size), cap) + 1);
  char buf[1 << 16];
  while (text.size() <= cap) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return InputFileError{Stage::kRead, std::strerror(err)};
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (text.size() > cap) {
    text.clear();
    text.shrink_to_fit();
    return InputFileError{Stage::kRead, fmt::format("it is larger than the {} MiB pipesmith reads (docs/inputs.md, \"Limits\")", cap >> 20)};
  }
  return std::nullopt;
}

}  // namespace ps
