// common.cpp — what every binding shares: errors raised as pipesmith.errors classes, path arguments.
#include "common.h"

#include <fmt/format.h>

using namespace nanobind::literals;

namespace ps::py {

namespace {

const char* error_class_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kBadInput: return "BadInputError";
    case ErrorCode::kInfeasible: return "InfeasibleError";
    case ErrorCode::kInvalidSchedule: return "InvalidScheduleError";
    case ErrorCode::kRuntime: return "RuntimeFailure";
    case ErrorCode::kInterrupted: return "InterruptedError";
    case ErrorCode::kOk: break;
  }
  return "Error";
}

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kBadInput: return "bad_input";
    case ErrorCode::kInfeasible: return "infeasible";
    case ErrorCode::kInvalidSchedule: return "invalid_schedule";
    case ErrorCode::kRuntime: return "runtime";
    case ErrorCode::kInterrupted: return "interrupted";
  }
  return "unknown";
}

// What the `pipesmith` command exits with for an error class (cli/main.cpp maps them the same way).
int command_exit_code(ErrorCode code) {
  return code == ErrorCode::kInterrupted ? 130 : static_cast<int>(code);
}

}  // namespace

// Raises the pipesmith.errors exception for `st` (the GIL must be held).
[[noreturn]] void raise_status(const Status& st) {
  nb::object errors = nb::module_::import_("pipesmith.errors");
  nb::object cls = errors.attr(error_class_name(st.code()));
  const SourceLoc& loc = st.loc();
  nb::object exc = cls(st.str(), "code"_a = error_code_name(st.code()), "exit_code"_a = command_exit_code(st.code()),
                       "message"_a = st.message(), "file"_a = loc.file.empty() ? nb::none() : nb::cast(loc.file.str()),
                       "line"_a = loc.line, "col"_a = loc.col);
  PyErr_SetObject(cls.ptr(), exc.ptr());
  throw nb::python_error();
}

void check(const Status& st) {
  if (!st.is_ok()) raise_status(st);
}

// A path argument (str, bytes or os.PathLike) as the C library will see it; anything else, or a path
// holding a NUL character (open() would cut it there and use another file), is a BadInputError.
std::string path_arg(nb::handle obj, const char* what) {
  PyObject* fs = PyOS_FSPath(obj.ptr());
  if (!fs) {
    PyErr_Clear();
    raise_status(Status::bad_input(fmt::format("{} must be a path (str or os.PathLike), got {}", what,
                                               nb::type_name(obj.type()).c_str())));
  }
  nb::object text = nb::steal(PyBytes_Check(fs) ? PyUnicode_DecodeFSDefaultAndSize(PyBytes_AS_STRING(fs),
                                                                                     PyBytes_GET_SIZE(fs))
                                                : fs);
  if (PyBytes_Check(fs)) Py_DECREF(fs);
  if (!text.is_valid()) throw nb::python_error();
  std::string path = nb::cast<std::string>(text);
  if (path.find('\0') != std::string::npos)
    raise_status(Status::bad_input(fmt::format("{} '{}' holds a NUL character: no file has that name", what,
                                               path.substr(0, path.find('\0')))));
  return path;
}

Semantics semantics_from(const std::string& name) {
  auto s = parse_semantics(name);
  if (!s) raise_status(Status::bad_input("semantics must be rendezvous, grouped, buffered or posted, got '" + name + "'"));
  return *s;
}

}  // namespace ps::py
