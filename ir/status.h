// status.h — Status, Result<T>, SourceLoc, the internal-invariant assert, and the two helpers every
// reader of input text shares (excerpt, split_trimmed).
//
// Guarantees: every fallible function in pipesmith returns a Status or Result<T> that carries an
// error class (ErrorCode), a human message and, when the error comes from an input file, the
// file:line:col it points at. PS_ASSERT is for our own bugs only: it aborts with file:line.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ps {

// A file name held once however many locations point into the file: copies share one string, and
// a name built from the same text as the last one built on this thread shares it too (a reader
// attaches one location to every action of a file, so a long path is not copied per action).
// Reads as a const std::string&.
class SharedPath {
 public:
  SharedPath() = default;
  SharedPath(const std::string& text);  // NOLINT(google-explicit-constructor): a path is a string
  SharedPath(const char* text) : SharedPath(std::string(text)) {}  // NOLINT(google-explicit-constructor)
  SharedPath(std::string_view text) : SharedPath(std::string(text)) {}  // NOLINT(google-explicit-constructor)

  const std::string& str() const;
  operator const std::string&() const { return str(); }  // NOLINT(google-explicit-constructor)
  bool empty() const { return str().empty(); }
  size_t size() const { return str().size(); }
  const char* c_str() const { return str().c_str(); }
  friend bool operator==(const SharedPath& a, const SharedPath& b) { return a.text_ == b.text_ || a.str() == b.str(); }
  friend bool operator==(const SharedPath& a, const std::string& b) { return a.str() == b; }
  friend bool operator==(const SharedPath& a, const char* b) { return a.str() == b; }
  friend std::string operator+(const SharedPath& a, const std::string& b) { return a.str() + b; }
  friend std::string operator+(const std::string& a, const SharedPath& b) { return a + b.str(); }
  friend std::string operator+(const char* a, const SharedPath& b) { return a + b.str(); }

 private:
  std::shared_ptr<const std::string> text_;  // null: empty
};

// Position in an input file. line/col are 1-based; 0 means "unknown".
struct SourceLoc {
  SharedPath file;   // "configs/models/llama2-7b.yaml"; empty if not from a file
  int line = 0;      // 14
  int col = 0;       // 7

  bool valid() const { return !file.empty() || line > 0; }
  // "file:line:col" (parts that are unknown are left out).
  std::string str() const;
};

// What went wrong, by class: the library's error classes. A caller decides what each means to it; the
// `pipesmith` command maps them to its exit codes (cli/commands.h, README.md).
enum class ErrorCode : int {
  kOk = 0,
  kBadInput = 1,         // an input file or an option the caller passed is not acceptable
  kInfeasible = 2,       // no schedule exists under the given limits
  kInvalidSchedule = 3,  // the checker rejected a schedule
  kRuntime = 4,          // runtime failure (watchdog, backend error)
  kInterrupted = 5,      // the caller's interrupt flag stopped the call before it had a result
};

class Status {
 public:
  Status() = default;  // ok
  static Status ok() { return Status(); }
  static Status error(ErrorCode code, std::string message, SourceLoc loc = {}) {
    Status s;
    s.code_ = code;
    s.message_ = std::move(message);
    s.loc_ = std::move(loc);
    return s;
  }
  static Status bad_input(std::string message, SourceLoc loc = {}) {
    return error(ErrorCode::kBadInput, std::move(message), std::move(loc));
  }

  bool is_ok() const { return code_ == ErrorCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const SourceLoc& loc() const { return loc_; }
  // "file:line:col: message" (or just the message when there is no location).
  std::string str() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
  SourceLoc loc_;
};

template <class T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit on purpose
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    if (std::get<Status>(v_).is_ok()) std::abort();  // an error Result needs an error Status
  }
  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

// Text from an input quoted in a message: at most `max_chars` characters, non-printable bytes escaped
// (\n, \t, \xNN), a longer text cut with "... (N bytes)".
std::string excerpt(std::string_view text, size_t max_chars = 80);

// One field of a separated list: its text without the blanks (spaces, tabs) around it, and the byte
// offset in the whole text where that starts (where the field ends when it is all blanks).
struct TextField {
  std::string_view text;
  size_t offset = 0;
};
// `text` cut at every `sep` ("a, b," -> {"a", 0}, {"b", 3}, {"", 5}): one field more than there are
// separators, empty ones included.
std::vector<TextField> split_trimmed(std::string_view text, char sep);

[[noreturn]] void assert_fail(const char* expr, const char* file, int line, const std::string& msg);

}  // namespace ps

// Internal invariant (our bug, not the user's): aborts with file:line and the message.
#define PS_ASSERT(cond, msg)                                                  \
  do {                                                                        \
    if (!(cond)) ::ps::assert_fail(#cond, __FILE__, __LINE__, (msg));         \
  } while (0)

// Propagate an error Status from an expression returning Status.
#define PS_RETURN_IF_ERROR(expr)          \
  do {                                    \
    ::ps::Status _ps_st = (expr);         \
    if (!_ps_st.is_ok()) return _ps_st;   \
  } while (0)
