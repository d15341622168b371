// common.h — what the binding files of pipesmith._core share: a failed library call raised as the
// pipesmith.errors class of its error code (file, line, column and the command's exit code on it),
// path arguments checked as the C library will see them, and the spellings every binding maps.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>  // nb::cast<std::string> (path arguments)

#include <string>
#include <utility>

#include "ir/status.h"
#include "verify/report_types.h"

namespace ps::py {

namespace nb = nanobind;

// Raises the pipesmith.errors exception for `st` (the GIL must be held).
[[noreturn]] void raise_status(const Status& st);

template <class T>
T take(Result<T>&& r) {
  if (!r.ok()) raise_status(r.status());
  return std::move(*r);
}

// Raises for a failed status; nothing for ok.
void check(const Status& st);

// A path argument (str, bytes or os.PathLike) as the C library will see it; anything else, or a path
// holding a NUL character (open() would cut it there and use another file), is a BadInputError.
std::string path_arg(nb::handle obj, const char* what);

// "rendezvous" / "grouped" / "buffered" / "posted"; a BadInputError for anything else.
Semantics semantics_from(const std::string& name);

// One binding file per concept registers its part of the module.
void bind_model_write(nb::module_& m);
void bind_run(nb::module_& m);
void bind_tables(nb::module_& m);

}  // namespace ps::py
