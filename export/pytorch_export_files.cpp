// The export's three files in one directory, written as one set (pytorch_export.h).
#include <fmt/format.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iterator>

#include "ir/output_file.h"
#include "export/pytorch_export.h"

namespace ps {

namespace {

// Creates DIR and the directories above it that are missing; returns those it created, deepest first.
Result<std::vector<std::filesystem::path>> make_export_dir(const std::string& out_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<fs::path> made;
  for (fs::path p = fs::absolute(out_dir, ec); p.has_relative_path() && !fs::exists(p, ec); p = p.parent_path())
    made.push_back(p);
  fs::create_directories(out_dir, ec);
  if (ec) return Status::bad_input(fmt::format("cannot create '{}': {}", out_dir, ec.message()));
  return made;
}

}  // namespace

const std::vector<std::string>& pytorch_export_file_names() {
  static const std::vector<std::string> names = {"compute_only.csv", "compute_comms.csv", "plan.json"};
  return names;
}

Status check_export_dir(const OutputPath& dir_path, const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string& name = dir_path.flag;
  const fs::path dir(dir_path.path);
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec))
      return Status::bad_input(fmt::format("{} '{}' exists and is not a directory", name, dir_path.path));
    std::vector<OutputPath> outs;
    for (const std::string& file : pytorch_export_file_names()) outs.push_back({(dir / file).string(), name});
    return check_output_paths(outs, inputs);
  }
  if (fs::is_symlink(fs::symlink_status(dir, ec)))
    return Status::bad_input(fmt::format("{} '{}' is a dangling symbolic link to '{}', which does not exist", name,
                                         dir_path.path, fs::read_symlink(dir, ec).string()));
  fs::path up = fs::absolute(dir, ec).parent_path();
  while (up.has_relative_path() && !fs::exists(up, ec)) up = up.parent_path();
  if (!fs::is_directory(up, ec))
    return Status::bad_input(
        fmt::format("cannot create {} '{}': '{}' is not a directory", name, dir_path.path, up.string()));
  if (::access(up.c_str(), W_OK) != 0)
    return Status::bad_input(
        fmt::format("cannot create {} '{}' in '{}': {}", name, dir_path.path, up.string(), std::strerror(errno)));
  return Status::ok();
}

Result<std::vector<std::string>> write_pytorch_export(const PytorchExport& ex, const OutputPath& dir_path) {
  if (!ex.valid)
    return Status::error(ErrorCode::kInvalidSchedule, "the schedule is not valid: nothing to export");
  PS_RETURN_IF_ERROR(check_export_dir(dir_path, {}));
  auto made = make_export_dir(dir_path.path);
  if (!made.ok()) return made.status();
  const std::filesystem::path dir(dir_path.path);
  const std::string* texts[] = {&ex.compute_only_csv, &ex.compute_comms_csv, &ex.plan_json};
  std::vector<OutputText> files;
  std::vector<std::string> paths;
  for (size_t i = 0; i < std::size(texts); ++i) {
    paths.push_back((dir / pytorch_export_file_names()[i]).string());
    files.push_back({paths.back(), *texts[i]});
  }
  if (Status w = write_output_files(files); !w.is_ok()) {
    std::error_code ec;
    for (const std::filesystem::path& p : *made) std::filesystem::remove(p, ec);  // empty: nothing was written
    return w;
  }
  return paths;
}

}  // namespace ps
