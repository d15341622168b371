// output_file.cpp — the atomic writer (temporary, fsync, rename) and the output-path checks.
#include "ir/output_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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
  std::string only_name;    // "on:NAME": the fault hits only files whose last path component is NAME
};

// PIPESMITH_WRITE_FAULT: comma-separated items, e.g. "named,enospc:100", "rename,on:plan.json".
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
    const std::string arg = colon == std::string::npos ? "" : item.substr(colon + 1);
    if (kind == "on") {
      f.only_name = arg;
      continue;
    }
    if (!arg.empty()) f.after_bytes = std::strtoull(arg.c_str(), nullptr, 10);
    if (kind == "named") f.named_temp = true;
    if (kind == "enospc") f.kind = Fault::kEnospc;
    if (kind == "stall") f.kind = Fault::kStall;
    if (kind == "fsync") f.kind = Fault::kFsync;
    if (kind == "close") f.kind = Fault::kClose;
    if (kind == "rename") f.kind = Fault::kRename;
  }
  return f;
}

// The fault for the file `path`: none when "on:NAME" names another file.
Fault fault_for(const Fault& f, const std::string& path) {
  if (f.only_name.empty() || fs::path(path).filename() == f.only_name) return f;
  Fault none;
  none.named_temp = f.named_temp;
  return none;
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

// What a symbolic link holds, resolved against the link's directory when relative.
std::string link_destination(const std::string& link) {
  std::error_code ec;
  const fs::path to = fs::read_symlink(link, ec);
  if (ec) return link;
  return to.is_absolute() ? to.string() : (fs::path(link).parent_path() / to).lexically_normal().string();
}

// The file a write to `path` replaces: a symbolic link's final target, else the path itself. A link
// that leads to no file is refused (the Status holds the reason alone, for the caller to prefix):
// following it would create a file the user never named, and replacing it would drop the link.
Result<std::string> resolve_target(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
  if (char* real = ::realpath(path.c_str(), nullptr)) {
    std::string r(real);
    std::free(real);
    return r;
  }
  const int err = errno;
  if (err == ELOOP) return Status::bad_input("it is a symbolic link that loops (" + std::string(std::strerror(err)) + ")");
  if (err != ENOENT)
    return Status::bad_input(fmt::format("cannot follow the symbolic link: {}", std::strerror(err)));
  // Follow the chain of links to the first name that is no file.
  std::string at = path;
  for (int hop = 0; hop < 40; ++hop) {
    at = link_destination(at);
    if (::lstat(at.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) break;
  }
  return Status::bad_input(fmt::format(
      "it is a dangling symbolic link to '{}', which does not exist (remove the link, or create the file it points to)",
      at));
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

// ---- one file of a write: located, staged in a whole temporary, committed by a rename ----

struct Staged {
  std::string path;        // as the caller named it (messages)
  std::string target;      // the file replaced: `path`, or the file its symbolic link points to
  std::string dir;         // the target's directory, where the temporary lives
  bool exists = false;     // the target exists (a regular file, unless in_place)
  bool in_place = false;   // the target exists and is not a regular file: written in place
  mode_t mode = 0666;      // the temporary's permission bits: the existing target's, else 0666 less umask
  std::string temp;        // the whole temporary's name in `dir`, once staged and until committed
};

Result<Staged> locate(const std::string& path) {
  Result<std::string> target = resolve_target(path);
  if (!target.ok()) return Status::bad_input(fmt::format("cannot write '{}': {}", path, target.status().message()));
  Staged s;
  s.path = path;
  s.target = *target;
  struct stat st {};
  s.exists = ::stat(s.target.c_str(), &st) == 0;
  if (s.exists && S_ISDIR(st.st_mode)) return Status::bad_input(fmt::format("cannot write '{}': it is a directory", path));
  s.in_place = s.exists && !S_ISREG(st.st_mode);
  if (s.exists) s.mode = st.st_mode & 07777;
  const fs::path tp(s.target);
  s.dir = tp.has_parent_path() ? tp.parent_path().string() : std::string(".");
  return s;
}

// Writes `text` into a temporary beside the target: every write checked, fsynced, named, closed.
Status stage(Staged& s, std::string_view text, const Fault& fault) {
  const std::string base = fs::path(s.target).filename().string();
  Result<Temp> opened = open_temp(s.dir, base, s.mode, fault.named_temp);
  if (!opened.ok()) return opened.status();
  Temp t = *opened;
  auto fail = [&](const std::string& what, int err) {
    if (t.fd >= 0) ::close(t.fd);
    if (!t.name.empty()) ::unlink(t.name.c_str());
    return io_error(what, s.path, err);
  };
  if (s.exists && ::fchmod(t.fd, s.mode) != 0) return fail("cannot set the permissions of the temporary file", errno);
  if (int err = write_all(t.fd, text, fault, s.path); err != 0) return fail("write failed", err);
  if (fault.kind == Fault::kFsync) return fail("fsync failed", EIO);
  if (::fsync(t.fd) != 0) return fail("fsync failed", errno);
  if (int err = name_temp(t, s.dir, base); err != 0) return fail("cannot name the temporary file", err);
  const int fd = std::exchange(t.fd, -1);
  if (fault.kind == Fault::kClose) ::close(fd);
  if (fault.kind == Fault::kClose || ::close(fd) != 0) return fail("close failed", fault.kind == Fault::kClose ? EIO : errno);
  s.temp = t.name;
  return Status::ok();
}

// Renames the staged temporary over the target; 0 or the errno.
int commit(Staged& s, const Fault& fault) {
  if (fault.kind == Fault::kRename) return EIO;
  if (::rename(s.temp.c_str(), s.target.c_str()) != 0) return errno;
  s.temp.clear();
  return 0;
}

void discard(Staged& s) {
  if (!s.temp.empty()) ::unlink(s.temp.c_str());
  s.temp.clear();
}

}  // namespace

Status write_output_file(const std::string& path, std::string_view text) {
  if (path == "-") return write_stdout(text);
  const Fault fault = fault_for(fault_from_env(), path);
  Result<Staged> located = locate(path);
  if (!located.ok()) return located.status();
  Staged s = *located;
  if (s.in_place) return write_in_place(s.target, text);
  PS_RETURN_IF_ERROR(stage(s, text, fault));
  if (int err = commit(s, fault); err != 0) {
    discard(s);
    return io_error("cannot rename the temporary file over it", path, err);
  }
  sync_directory(s.dir);
  return Status::ok();
}

namespace {

// "'a', 'b' and 'c'"
std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += fmt::format("{}'{}'", i == 0 ? "" : i + 1 == names.size() ? " and " : ", ", names[i]);
  return out;
}

}  // namespace

Status write_output_files(const std::vector<OutputText>& files) {
  const Fault env_fault = fault_from_env();
  std::vector<std::string> paths;
  for (const OutputText& f : files) {
    PS_ASSERT(!f.path.empty() && f.path != "-", "a set of output files names files, not standard output");
    paths.push_back(f.path);
  }
  std::vector<Staged> set;
  // A failure before any rename: every temporary removed, every file as it was.
  auto unchanged = [&](const Status& st) {
    for (Staged& s : set) discard(s);
    return Status::bad_input(fmt::format("{}; none of {} was changed", st.message(), quoted_list(paths)));
  };

  // 1. Where each text goes.
  for (const OutputText& f : files) {
    Result<Staged> located = locate(f.path);
    if (!located.ok()) return unchanged(located.status());
    set.push_back(*located);
  }
  // 2. Each regular file's text whole in its temporary.
  for (size_t i = 0; i < set.size(); ++i)
    if (!set[i].in_place)
      if (Status st = stage(set[i], files[i].text, fault_for(env_fault, set[i].path)); !st.is_ok()) return unchanged(st);
  // 3. Targets that are not regular files (a device, a FIFO) hold nothing to keep: written in place.
  for (size_t i = 0; i < set.size(); ++i)
    if (set[i].in_place)
      if (Status st = write_in_place(set[i].target, files[i].text); !st.is_ok()) return unchanged(st);
  // 4. Each old file kept aside under a second name (a hard link), so that a failed rename can put
  //    back the ones already replaced; a file system without hard links gets no such copy.
  std::vector<std::string> kept(set.size());
  static std::atomic<unsigned> counter{0};
  for (size_t i = 0; i < set.size(); ++i) {
    if (set[i].in_place || !set[i].exists) continue;
    const std::string name = fmt::format("{}/.{}.pipesmith-{}-o{}.tmp", set[i].dir, fs::path(set[i].target).filename().string(),
                                         ::getpid(), counter.fetch_add(1));
    if (::link(set[i].target.c_str(), name.c_str()) == 0) kept[i] = name;
  }
  auto drop_kept = [&] {
    for (const std::string& k : kept)
      if (!k.empty()) ::unlink(k.c_str());
  };
  // 5. Every temporary renamed into place; on a failure the files already replaced are put back.
  for (size_t i = 0; i < set.size(); ++i) {
    if (set[i].in_place) continue;
    const int err = commit(set[i], fault_for(env_fault, set[i].path));
    if (err == 0) continue;
    std::vector<std::string> lost;  // replaced files that could not be put back
    for (size_t j = i; j-- > 0;) {
      if (set[j].in_place) continue;
      const bool restored = !kept[j].empty()    ? ::rename(kept[j].c_str(), set[j].target.c_str()) == 0
                            : !set[j].exists ? ::unlink(set[j].target.c_str()) == 0
                                             : false;
      if (restored) kept[j].clear();
      else lost.push_back(set[j].path);
    }
    for (Staged& s : set) discard(s);
    drop_kept();
    const Status st = io_error("cannot rename the temporary file over it", set[i].path, err);
    if (lost.empty()) return Status::bad_input(fmt::format("{}; none of {} was changed", st.message(), quoted_list(paths)));
    return Status::bad_input(fmt::format("{}; {} already hold their new text: the old could not be put back", st.message(),
                                         quoted_list(lost)));
  }
  drop_kept();
  std::vector<std::string> dirs;
  for (const Staged& s : set)
    if (std::find(dirs.begin(), dirs.end(), s.dir) == dirs.end()) dirs.push_back(s.dir);
  for (const std::string& d : dirs) sync_directory(d);
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
  const Result<std::string> resolved = resolve_target(o.path);
  if (!resolved.ok())
    return Status::bad_input(fmt::format("cannot write '{}' ({}): {}", o.path, o.flag, resolved.status().message()));
  const std::string& target = *resolved;
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

// One named output, looked up once.
struct Named {
  const OutputPath* o = nullptr;
  std::optional<FileId> id;  // when it exists
  bool regular_or_absent = true;
  std::string normal;        // normal_path, for outputs that do not exist yet
};

}  // namespace

Status check_output_paths(const std::vector<OutputPath>& outputs, const std::vector<std::string>& inputs) {
  std::vector<std::pair<const std::string*, FileId>> input_ids;
  for (const std::string& in : inputs)
    if (!in.empty() && in != "-")
      if (const std::optional<FileId> id = file_id(in)) input_ids.emplace_back(&in, *id);
  std::vector<Named> named;
  for (const OutputPath& o : outputs) {
    if (o.path.empty() || o.path == "-") continue;
    PS_RETURN_IF_ERROR(check_one_writable(o));
    Named n{&o, file_id(o.path), is_regular_or_absent(o.path), {}};
    if (!n.id) n.normal = normal_path(o.path);
    if (n.id && n.regular_or_absent)
      for (const auto& [in, id] : input_ids)
        if (id == *n.id)
          return Status::bad_input(fmt::format(
              "refusing to write '{}' ({}): it is the input file '{}', which the output would replace", o.path, o.flag,
              *in));
    named.push_back(std::move(n));
  }
  for (size_t i = 0; i < named.size(); ++i) {
    if (!named[i].regular_or_absent) continue;
    for (size_t j = i + 1; j < named.size(); ++j) {
      const Named &a = named[i], &b = named[j];
      const bool same = a.id && b.id ? *a.id == *b.id
                        : a.id || b.id ? normal_path(a.o->path) == normal_path(b.o->path)
                                       : a.normal == b.normal;
      if (same)
        return Status::bad_input(fmt::format("{} and {} both name '{}': each output needs its own file", a.o->flag,
                                             b.o->flag, b.o->path));
    }
  }
  return Status::ok();
}

}  // namespace ps
