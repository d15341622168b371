// output_file.cpp — the atomic writer (temporary, fsync, rename) and the output-path checks.
#include "ir/output_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>
#include <utility>

namespace ps {

namespace {

namespace fs = std::filesystem;

// ---- fault injection (PIPESMITH_WRITE_FAULT) ----

struct Fault {
  enum Kind { kNone, kEnospc, kStall, kFsync, kClose, kRename } kind = kNone;
  size_t after_bytes = 0;
  bool named_temp = false;  // "named": no O_TMPFILE, as on a file system without it
};

// PIPESMITH_WRITE_FAULT: comma-separated items, e.g. "named,enospc:100".
Fault fault_from_env() {
  const char* v = std::getenv("PIPESMITH_WRITE_FAULT");
  Fault f;
  if (!v || !*v) return f;
  const std::string all(v);
  for (size_t start = 0; start <= all.size();) {
    const size_t comma = std::min(all.find(',', start), all.size());
    const std::string item = all.substr(start, comma - start);
    start = comma + 1;
    const size_t colon = item.find(':');
    const std::string kind = item.substr(0, colon);
    if (colon != std::string::npos) f.after_bytes = std::strtoull(item.c_str() + colon + 1, nullptr, 10);
    if (kind == "named") f.named_temp = true;
    if (kind == "enospc") f.kind = Fault::kEnospc;
    if (kind == "stall") f.kind = Fault::kStall;
    if (kind == "fsync") f.kind = Fault::kFsync;
    if (kind == "close") f.kind = Fault::kClose;
    if (kind == "rename") f.kind = Fault::kRename;
  }
  return f;
}

Status io_error(const std::string& what, const std::string& path, int err) {
  return Status::bad_input(fmt::format("cannot write '{}': {}: {}", path, what, std::strerror(err)));
}

// ---- the temporary file ----

// /proc/self/fd links an O_TMPFILE file into the directory without privileges.
bool proc_fd_available() {
  static const bool ok = ::access("/proc/self/fd", X_OK) == 0;
  return ok;
}

struct Temp {
  int fd = -1;
  std::string name;    // the name it has in the directory; empty while anonymous
  bool anonymous = false;
};

// Opens the temporary in `dir`: anonymous when the file system allows, else a fresh unique name.
Result<Temp> open_temp(const std::string& dir, const std::string& base, mode_t mode, bool named) {
  Temp t;
#ifdef O_TMPFILE
  if (!named && proc_fd_available()) {
    t.fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
    if (t.fd >= 0) {
      t.anonymous = true;
      return t;
    }
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL && errno != ENOENT)
      return io_error("cannot create a temporary file in '" + dir + "'", dir + "/" + base, errno);
  }
#endif
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    t.name = fmt::format("{}/.{}.pipesmith-{}-{}.tmp", dir, base, ::getpid(), counter.fetch_add(1));
    t.fd = ::open(t.name.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, mode);
    if (t.fd >= 0) return t;
    if (errno != EEXIST) return io_error("cannot create '" + t.name + "'", dir + "/" + base, errno);
  }
  return io_error("cannot create a temporary file", dir + "/" + base, EEXIST);
}

// Writes everything to fd, retrying short writes and EINTR; the fault injector may cut it short.
int write_all(int fd, std::string_view text, const Fault& fault, const std::string& path) {
  size_t done = 0;
  while (done < text.size()) {
    size_t chunk = text.size() - done;
    if (fault.kind == Fault::kEnospc || fault.kind == Fault::kStall) {
      if (done >= fault.after_bytes) {
        if (fault.kind == Fault::kEnospc) return ENOSPC;
        std::fprintf(stderr, "pipesmith: write fault: stalled after %zu bytes of '%s'\n", done, path.c_str());
        std::fflush(stderr);
        std::this_thread::sleep_for(std::chrono::seconds(60));
      } else {
        chunk = std::min(chunk, fault.after_bytes - done);
      }
    }
    const ssize_t n = ::write(fd, text.data() + done, chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    done += static_cast<size_t>(n);
  }
  return 0;
}

void sync_directory(const std::string& dir) {
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;
  (void)::fsync(dfd);  // best effort: the rename is done; a file system without directory sync is fine
  ::close(dfd);
}

// Writes an existing non-regular file (a device, a FIFO) in place.
Status write_in_place(const std::string& path, std::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open", path, errno);
  const int err = write_all(fd, text, Fault{}, path);
  if (::close(fd) != 0 && err == 0) return io_error("close failed", path, errno);
  if (err != 0) return io_error("write failed", path, err);
  return Status::ok();
}

// The file a write to `path` replaces: a symbolic link's target, else the path itself.
std::string resolve_target(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    if (char* real = ::realpath(path.c_str(), nullptr)) {
      std::string r(real);
      std::free(real);
      return r;
    }
  }
  return path;
}

// Gives the whole anonymous temporary a name in `dir` (the rename needs one).
int name_temp(Temp& t, const std::string& dir, const std::string& base) {
  if (!t.anonymous) return 0;
  static std::atomic<unsigned> counter{0};
  const std::string proc = fmt::format("/proc/self/fd/{}", t.fd);
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name = fmt::format("{}/.{}.pipesmith-{}-l{}.tmp", dir, base, ::getpid(), counter.fetch_add(1));
    if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) == 0) {
      t.name = std::move(name);
      return 0;
    }
    if (errno != EEXIST) return errno;
  }
  return EEXIST;
}

}  // namespace

Status write_output_file(const std::string& path, std::string_view text) {
  if (path == "-") return write_stdout(text);
  const std::string target = resolve_target(path);
  struct stat st {};
  const bool exists = ::stat(target.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) return Status::bad_input(fmt::format("cannot write '{}': it is a directory", path));
  if (exists && !S_ISREG(st.st_mode)) return write_in_place(target, text);
  const fs::path tp(target);
  const std::string dir = tp.has_parent_path() ? tp.parent_path().string() : std::string(".");
  const std::string base = tp.filename().string();
  const mode_t mode = exists ? (st.st_mode & 07777) : 0666;
  const Fault fault = fault_from_env();

  Result<Temp> opened = open_temp(dir, base, mode, fault.named_temp);
  if (!opened.ok()) return opened.status();
  Temp t = *opened;
  auto fail = [&](const std::string& what, int err) {
    if (t.fd >= 0) ::close(t.fd);
    if (!t.name.empty()) ::unlink(t.name.c_str());
    return io_error(what, path, err);
  };
  if (exists && ::fchmod(t.fd, mode) != 0) return fail("cannot set the permissions of the temporary file", errno);
  if (int err = write_all(t.fd, text, fault, path); err != 0) return fail("write failed", err);
  if (fault.kind == Fault::kFsync) return fail("fsync failed", EIO);
  if (::fsync(t.fd) != 0) return fail("fsync failed", errno);
  if (int err = name_temp(t, dir, base); err != 0) return fail("cannot name the temporary file", err);
  const int fd = std::exchange(t.fd, -1);
  if (fault.kind == Fault::kClose) ::close(fd);
  if (fault.kind == Fault::kClose || ::close(fd) != 0) return fail("close failed", fault.kind == Fault::kClose ? EIO : errno);
  if (fault.kind == Fault::kRename) return fail("cannot rename the temporary file over it", EIO);
  if (::rename(t.name.c_str(), target.c_str()) != 0) return fail("cannot rename the temporary file over it", errno);
  sync_directory(dir);
  return Status::ok();
}

Status write_stdout(std::string_view text) {
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), stdout) != text.size())
    return Status::bad_input(fmt::format("cannot write to standard output: {}", std::strerror(errno)));
  if (std::fflush(stdout) != 0)
    return Status::bad_input(fmt::format("cannot write to standard output: {}", std::strerror(errno)));
  return Status::ok();
}

Status finish_stdout() {
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  if (!flushed || std::ferror(stdout))
    return Status::bad_input(fmt::format("cannot write to standard output: {}", std::strerror(flushed ? EIO : err)));
  return Status::ok();
}

namespace {

struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileId& o) const { return dev == o.dev && ino == o.ino; }
};

std::optional<FileId> file_id(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

bool is_regular_or_absent(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode);
}

// The path an output will occupy, for comparing two outputs that do not exist yet.
std::string normal_path(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? path : p.string();
}

Status check_one_writable(const OutputPath& o) {
  std::error_code ec;
  const fs::path p(o.path);
  if (fs::is_directory(p, ec))
    return Status::bad_input(fmt::format("cannot write '{}' ({}): it is a directory", o.path, o.flag));
  const std::string target = resolve_target(o.path);
  const fs::path tp(target);
  const fs::path dir = tp.has_parent_path() ? tp.parent_path() : fs::path(".");
  if (!fs::exists(dir, ec))
    return Status::bad_input(
        fmt::format("cannot write '{}' ({}): directory '{}' does not exist", o.path, o.flag, dir.string()));
  if (!fs::is_directory(dir, ec))
    return Status::bad_input(fmt::format("cannot write '{}' ({}): '{}' is not a directory", o.path, o.flag, dir.string()));
  // A regular file is replaced through a temporary in its directory; a device or FIFO is written in place.
  const bool in_place = !is_regular_or_absent(target);
  if (::access(in_place ? target.c_str() : dir.c_str(), W_OK) != 0)
    return Status::bad_input(fmt::format("cannot write '{}' ({}): {}", o.path, o.flag, std::strerror(errno)));
  return Status::ok();
}

}  // namespace

Status check_output_paths(const std::vector<OutputPath>& outputs, const std::vector<std::string>& inputs) {
  std::vector<const OutputPath*> named;
  for (const OutputPath& o : outputs)
    if (!o.path.empty() && o.path != "-") named.push_back(&o);
  for (const OutputPath* o : named) {
    PS_RETURN_IF_ERROR(check_one_writable(*o));
    const std::optional<FileId> id = file_id(o->path);
    if (!id || !is_regular_or_absent(o->path)) continue;
    for (const std::string& in : inputs) {
      if (in.empty() || in == "-") continue;
      if (file_id(in) == id)
        return Status::bad_input(fmt::format(
            "refusing to write '{}' ({}): it is the input file '{}', which the output would replace", o->path,
            o->flag, in));
    }
  }
  for (size_t i = 0; i < named.size(); ++i) {
    for (size_t j = i + 1; j < named.size(); ++j) {
      if (!is_regular_or_absent(named[i]->path)) continue;
      const std::optional<FileId> a = file_id(named[i]->path), b = file_id(named[j]->path);
      const bool same = a && b ? *a == *b : normal_path(named[i]->path) == normal_path(named[j]->path);
      if (same)
        return Status::bad_input(fmt::format("{} and {} both name '{}': each output needs its own file", named[i]->flag,
                                             named[j]->flag, named[j]->path));
    }
  }
  return Status::ok();
}

}  // namespace ps
