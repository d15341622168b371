// schedule_csv.cpp — PyTorch torch.distributed.pipelining's CSV schedules: the reader (compute-only
// and with comms, data-parallel and overlapped cells, every cell located) and the writer. docs/schedule-format.md.
#include "ir/schedule_io.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "ir/input_file.h"
#include "ir/limits.h"
#include "ir/output_file.h"
#include "ir/schedule_io_detail.h"
#include "ir/yaml_util.h"

namespace ps {

using namespace schedule_io_detail;


namespace {

// 1-based character columns of byte offsets in one line (UTF-8 continuation bytes do not count).
// Offsets asked in increasing order cost the bytes between them: one row of a PyTorch CSV is a whole
// rank's program (10^5 cells at M in the thousands; counting from the line's start each time made
// reading such a file quadratic: 24 s at M = 4096).
class ColumnCounter {
 public:
  explicit ColumnCounter(std::string_view line) : line_(line) {}
  int at(size_t byte) {
    if (byte < byte_) byte_ = 0, col_ = 1;  // backwards: count again from the start
    for (; byte_ < byte && byte_ < line_.size(); ++byte_)
      if ((static_cast<unsigned char>(line_[byte_]) & 0xC0) != 0x80) ++col_;
    return col_;
  }

 private:
  std::string_view line_;
  size_t byte_ = 0;
  int col_ = 1;
};

// PyTorch's action grammar has no R: a recomputation op in a CSV cell is an unknown action.
Status refuse_csv_recompute(const Action& a) {
  if (a.type != OpType::R) return Status::ok();
  return Status::bad_input(fmt::format("bad action '{}': unknown op type R in a PyTorch CSV (R, pipesmith's "
                                       "recomputation op, exists only in pipesmith-schedule/1 files)",
                                       to_string(a)),
                           a.loc);
}

// The idle (empty) cells of one row: how many, and the first few for notes (a row may hold millions).
struct IdleCells {
  static constexpr size_t kShown = 12;
  int row = 0;
  int64_t count = 0;
  std::vector<int> first;  // 0-based cell indices, at most kShown
};

std::string list_cells(const IdleCells& idle) {
  std::string s;
  for (size_t i = 0; i < idle.first.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", idle.first[i] + 1);
  const int64_t more = idle.count - static_cast<int64_t>(idle.first.size());
  if (more > 0) s += fmt::format(", ... ({} more)", more);
  return s;
}

}  // namespace

namespace {

// Rows: lines split at '\n' (a final newline does not start a new row); '\r' before '\n' dropped. A row
// is a rank, so a file of more than kMaxDevices rows is refused at the first row past it, before the
// rows are held.
Result<std::vector<std::string_view>> csv_rows(std::string_view text, const std::string& file) {
  std::vector<std::string_view> rows;
  size_t start = 0;
  while (start < text.size()) {
    if (static_cast<int64_t>(rows.size()) >= limits::kMaxDevices)
      return Status::bad_input(fmt::format("more than {} rows; a row is a rank, and pipesmith supports at most {} "
                                           "devices (docs/inputs.md, \"Limits\")",
                                           limits::with_commas(limits::kMaxDevices),
                                           limits::with_commas(limits::kMaxDevices)),
                               SourceLoc{file, static_cast<int>(rows.size()) + 1, 1});
    size_t nl = text.find('\n', start);
    size_t end = nl == std::string_view::npos ? text.size() : nl;
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    rows.push_back(line);
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return rows;
}

// What reading the rows found besides the actions.
struct CsvTally {
  std::vector<IdleCells> idle;  // rows with idle cells, in row order
  SourceLoc first_idle;         // where the first idle cell is
  int64_t idle_count = 0;
  int64_t actions = 0;  // actions read so far (an OVERLAP_F_B cell counts its sub-actions)
  int64_t data_parallel_count = 0;  // UNSHARD, RESHARD and REDUCE_GRAD cells
  int overlap_count = 0;
};

// One more action read at `loc`: refused past kMaxScheduleActions, before the schedule grows further.
Status count_action(CsvTally& tally, int64_t n, const SourceLoc& loc) {
  tally.actions += n;
  return tally.actions <= limits::kMaxScheduleActions ? Status::ok() : too_many_actions(loc);
}

// Reads row `r` (line r + 1) into `prog`, cell by cell (cells split at ',', blanks trimmed, trailing empty
// cells dropped), without holding the row's cells.
Status read_csv_row(std::string_view line, size_t r, const std::string& file, std::vector<Action>& prog, CsvTally& tally) {
  const int line_no = static_cast<int>(r) + 1;
  auto blank = [](char ch) { return ch == ' ' || ch == '\t'; };
  size_t last = line.size();  // trailing empty cells and blanks are not cells
  while (last > 0 && (line[last - 1] == ',' || blank(line[last - 1]))) --last;
  ColumnCounter column(line);
  IdleCells row_idle;
  row_idle.row = static_cast<int>(r);
  size_t pos = 0;
  for (int c = 0; pos < last; ++c) {
    const size_t at = line.find(',', pos);
    const size_t end = at == std::string_view::npos || at > last ? last : at;
    size_t a = pos, b = end;
    while (a < b && blank(line[a])) ++a;
    while (b > a && blank(line[b - 1])) --b;
    const std::string_view t = line.substr(a, b - a);
    const size_t offset = a;
    pos = end + 1;
    SourceLoc loc{file, line_no, column.at(offset)};
    if (t.empty()) {
      if (row_idle.first.size() < IdleCells::kShown) row_idle.first.push_back(c);
      if (tally.idle_count++ == 0) tally.first_idle = loc;
      ++row_idle.count;
      continue;
    }
    if (looks_like_overlap(t)) {
      auto subs = parse_overlap(t, [&](size_t k) { return SourceLoc{file, line_no, column.at(offset + k)}; });
      if (!subs) return subs.status();
      for (const Action& sub : *subs) PS_RETURN_IF_ERROR(refuse_csv_recompute(sub));
      PS_RETURN_IF_ERROR(count_action(tally, static_cast<int64_t>(subs->size()), loc));
      ++tally.overlap_count;
      for (auto& act : *subs) prog.push_back(std::move(act));
      continue;
    }
    auto act = parse_action(t, loc);
    if (!act) return act.status();
    PS_RETURN_IF_ERROR(refuse_csv_recompute(*act));
    PS_RETURN_IF_ERROR(count_action(tally, 1, loc));
    if (is_data_parallel(act->type)) ++tally.data_parallel_count;
    prog.push_back(std::move(*act));
  }
  if (row_idle.count > 0) tally.idle.push_back(std::move(row_idle));
  return Status::ok();
}

// The stage and microbatch counts of the file (or of --stages / --microbatches).
struct CsvExtent {
  int stages = 0;
  int microbatches = 0;
};

// Whole-file checks: some action, no idle cell in a file with comms, indices within the limits and
// consistent with --stages / --microbatches. An action beyond the declared counts stays in the
// schedule: the checker reports it as structure.index (an invalid schedule, not an unreadable file).
Result<CsvExtent> csv_extent(const Schedule& s, const CsvTally& tally, const CsvReadOptions& opt, const std::string& file,
                             CsvReadResult& res) {
  int max_stage = -1, max_mb = -1;
  const Action* max_stage_at = nullptr;
  const Action* max_mb_at = nullptr;
  SourceLoc first_comm;
  size_t total = 0;
  for (const auto& prog : s.programs) {
    for (const Action& a : prog) {
      if (a.stage.value() > max_stage) max_stage = a.stage.value(), max_stage_at = &a;
      if (is_data_parallel(a.type)) continue;  // not a pipeline action, and it has no microbatch
      ++total;
      if (a.mb.value() > max_mb) max_mb = a.mb.value(), max_mb_at = &a;
      if (is_comm(a.type) && !first_comm.valid()) first_comm = a.loc;
    }
  }
  if (total == 0) {
    return Status::bad_input("no pipeline actions in the file (only idle cells or UNSHARD/RESHARD/REDUCE_GRAD)",
                             SourceLoc{file, 0, 0});
  }
  if (first_comm.valid() && tally.idle_count > 0) {
    return Status::bad_input(
        fmt::format("empty cell (idle slot) in a file with SEND/RECV actions (the first is at {}); idle "
                    "slots are only allowed in compute-only files",
                    first_comm.str()),
        tally.first_idle);
  }
  if (max_stage >= kMaxStages) {
    return Status::bad_input(fmt::format("action '{}' uses stage {}; pipesmith supports at most {} stages",
                                         to_string(*max_stage_at), max_stage, kMaxStages),
                             max_stage_at->loc);
  }
  if (max_mb >= kMaxMicrobatches) {
    return Status::bad_input(fmt::format("action '{}' uses microbatch {}; pipesmith supports at most {} "
                                         "microbatches",
                                         to_string(*max_mb_at), max_mb, kMaxMicrobatches),
                             max_mb_at->loc);
  }
  CsvExtent x{max_stage + 1, max_mb + 1};
  if (opt.stages >= 0 && x.stages > opt.stages) {
    res.notes.push_back(fmt::format("action '{}' ({}) uses stage {}, beyond the {} stages given", to_string(*max_stage_at),
                                    max_stage_at->loc.str(), max_stage, opt.stages));
    x.stages = opt.stages;
  } else if (opt.stages >= 0 && opt.stages != x.stages) {
    return Status::bad_input(fmt::format("the stage count given is {}, but the highest stage in the file is {} ({} stages)",
                                         opt.stages, max_stage, x.stages),
                             SourceLoc{file, 0, 0});
  }
  if (opt.microbatches >= 0 && x.microbatches > opt.microbatches) {
    res.notes.push_back(fmt::format("action '{}' ({}) uses microbatch {}, beyond the {} microbatches given",
                                    to_string(*max_mb_at), max_mb_at->loc.str(), max_mb, opt.microbatches));
    x.microbatches = opt.microbatches;
  } else if (opt.microbatches >= 0 && opt.microbatches != x.microbatches) {
    return Status::bad_input(
        fmt::format("the microbatch count given is {}, but the highest microbatch in the file is {} ({} microbatches)",
                    opt.microbatches, max_mb, x.microbatches),
        SourceLoc{file, 0, 0});
  }
  if (x.stages < 1 || x.microbatches < 1)
    return Status::bad_input(
        fmt::format("the stage and microbatch counts must be >= 1, got {} and {}", x.stages, x.microbatches),
        SourceLoc{file, 0, 0});
  PS_RETURN_IF_ERROR(limits::check_plan_ops(
      x.stages, x.microbatches,
      fmt::format("{} stages and {} microbatches (action '{}')", x.stages, x.microbatches, to_string(*max_mb_at)),
      max_mb_at->loc));
  return x;
}

// Placement: the first row (rank) each stage appears in; a stage in no row goes to the rank of the
// stage before it. Notes say both.
std::vector<int> csv_placement(const Schedule& s, int stages, CsvReadResult& res) {
  std::vector<int> placement(stages, -1);
  std::map<int, std::vector<int>> extra_rows;  // stage -> other rows it also appears in
  for (size_t d = 0; d < s.programs.size(); ++d) {
    for (const Action& a : s.programs[d]) {
      if (a.stage.value() >= stages) continue;  // out of range: structure.index
      int& p = at(placement, a.stage);
      if (p < 0) {
        p = static_cast<int>(d);
      } else if (p != static_cast<int>(d)) {
        auto& v = extra_rows[a.stage.value()];
        if (std::find(v.begin(), v.end(), static_cast<int>(d)) == v.end()) v.push_back(static_cast<int>(d));
      }
    }
  }
  std::vector<int> absent;
  for (int st = 0; st < stages; ++st) {
    if (placement[st] < 0) {
      placement[st] = st > 0 ? placement[st - 1] : 0;
      absent.push_back(st);
    }
  }
  if (!absent.empty()) {
    std::string list;
    for (size_t i = 0; i < absent.size() && i < 12; ++i) list += fmt::format("{}{}", i ? ", " : "", absent[i]);
    if (absent.size() > 12) list += fmt::format(", ... ({} more)", absent.size() - 12);
    res.notes.push_back(fmt::format("{} stage(s) appear in no row ({}); each is placed on the rank of the "
                                    "stage before it (rank 0 for stage 0)",
                                    absent.size(), list));
  }
  for (const auto& [st, rows_also] : extra_rows) {
    std::string list;
    for (int d : rows_also) list += fmt::format("{}{}", list.empty() ? "" : ", ", d);
    res.notes.push_back(fmt::format("stage {} appears on rank {} and also on rank(s) {}; placed on rank {} "
                                    "(first appearance), actions left where they are",
                                    st, placement[st], list, placement[st]));
  }
  return placement;
}

// PyTorch's FSDP lowering (`_add_unshard_reshard`) keeps at most three stages of a rank unsharded, so on
// a rank with more it gathers a stage again: UNSHARD/RESHARD of one stage more than once, which a
// schedule cannot hold (one each per stage). Those stages' UNSHARD/RESHARD are taken out, with a note
// naming them and the first repeat; without FSDP they are no-ops in PyTorch too. A model that shards
// such a stage then finds its gather missing (structure.data-parallel).
void drop_repeated_gathers(Schedule& s, CsvTally& tally, CsvReadResult& res) {
  std::map<int, int> unshards, reshards;
  std::map<int, SourceLoc> repeat;  // stage -> its first UNSHARD/RESHARD seen twice
  for (const auto& prog : s.programs)
    for (const Action& a : prog) {
      if (a.type != OpType::UNSHARD && a.type != OpType::RESHARD) continue;
      int& n = (a.type == OpType::UNSHARD ? unshards : reshards)[a.stage.value()];
      if (++n == 2 && !repeat.count(a.stage.value())) repeat[a.stage.value()] = a.loc;
    }
  if (repeat.empty()) return;
  int64_t dropped = 0;
  for (auto& prog : s.programs) {
    const auto kept = std::remove_if(prog.begin(), prog.end(), [&](const Action& a) {
      return (a.type == OpType::UNSHARD || a.type == OpType::RESHARD) && repeat.count(a.stage.value());
    });
    dropped += prog.end() - kept;
    prog.erase(kept, prog.end());
  }
  tally.data_parallel_count -= dropped;
  std::string list;
  for (const auto& [st, loc] : repeat) {
    if (!list.empty()) list += ", ";
    list += fmt::format("{} (again at {})", st, loc.str());
  }
  res.notes.push_back(fmt::format(
      "stage(s) {} are unsharded more than once, as PyTorch's FSDP lowering does on a rank with more than three "
      "stages; a schedule holds one UNSHARD and one RESHARD per stage, so their {} UNSHARD/RESHARD action(s) are "
      "not kept and those stages are not FSDP-sharded here",
      list, dropped));
}

// A CSV has no costs: a stage whose REDUCE_GRAD the file places gets a data-parallel step, one whose
// UNSHARD or RESHARD it places is sharded by FSDP, each taking 0 ms and 0 MB (the unit problem's costs
// are the pipeline's). The checker then certifies where the file puts them (ir/schedule.h).
void mark_data_parallel_stages(Schedule& s) {
  const int stages = s.problem.num_stages();
  for (const auto& prog : s.programs)
    for (const Action& a : prog) {
      if (!is_data_parallel(a.type) || a.stage.value() >= stages) continue;  // out of range: structure.index
      StageSpec& st = at(s.problem.stages, a.stage);
      if (a.type == OpType::REDUCE_GRAD) {
        st.reduces_grad = true;
        st.reduce_grad_ms = 0;
      } else {
        st.fsdp = true;
        st.unshard_ms = st.unsharded_mb = 0;
      }
    }
}

// Notes on what the schedule does not keep (empty ranks, idle cells), and on data-parallel actions and overlaps.
void add_csv_notes(const Schedule& s, const CsvTally& tally, CsvReadResult& res) {
  for (size_t d = 0; d < s.programs.size(); ++d) {
    if (s.programs[d].empty()) res.notes.push_back(fmt::format("rank {} (line {}) has no actions", d, d + 1));
  }
  if (tally.idle_count > 0) {
    std::string detail;
    for (const IdleCells& row : tally.idle) {
      detail += fmt::format("{}rank {}: cells {}", detail.empty() ? "" : "; ", row.row, list_cells(row));
    }
    res.notes.push_back(fmt::format("{} idle cell(s) ({}); a schedule keeps only the order of actions, so "
                                    "idle slots are not stored",
                                    tally.idle_count, detail));
  }
  if (tally.data_parallel_count > 0) {
    res.notes.push_back(fmt::format("{} UNSHARD/RESHARD/REDUCE_GRAD action(s): kept where the file places them; "
                                    "a CSV has no costs, so each takes 0 ms and 0 MB (unless a model's mesh "
                                    "costs the stage's)",
                                    tally.data_parallel_count));
  }
  if (tally.overlap_count > 0) {
    res.notes.push_back(fmt::format("{} OVERLAP_F_B action(s): kept as pairs, run as their sub-actions in order",
                                    tally.overlap_count));
  }
}

}  // namespace

Result<CsvReadResult> parse_pytorch_csv(const std::string& text_in, const std::string& file_name,
                                        const CsvReadOptions& opt) {
  const std::string& file = file_name;
  std::string_view text = text_in;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 byte-order mark
  if (text.empty()) return Status::bad_input("empty CSV file: expected one row of actions per rank", SourceLoc{file, 0, 0});
  auto rows_read = csv_rows(text, file);
  if (!rows_read) return rows_read.status();
  const std::vector<std::string_view>& rows = *rows_read;

  CsvReadResult res;
  Schedule& s = res.schedule;
  s.source = file;
  s.generator = "pytorch-csv";
  s.programs.assign(rows.size(), {});
  CsvTally tally;
  for (size_t r = 0; r < rows.size(); ++r) PS_RETURN_IF_ERROR(read_csv_row(rows[r], r, file, s.programs[r], tally));
  // Before the extent and the placement: a stage is placed by the actions the schedule keeps (a
  // repeated gather on another rank would otherwise place it there, and the file written back would
  // place it elsewhere).
  drop_repeated_gathers(s, tally, res);

  Result<CsvExtent> extent = csv_extent(s, tally, opt, file, res);
  if (!extent.ok()) return extent.status();
  const std::vector<int> placement = csv_placement(s, extent->stages, res);
  s.problem = unit_problem(static_cast<int>(s.programs.size()), extent->microbatches, placement);
  s.problem.name = std::filesystem::path(file).stem().string();
  mark_data_parallel_stages(s);
  add_csv_notes(s, tally, res);
  return res;
}

Result<CsvReadResult> read_pytorch_csv(const std::string& path, const CsvReadOptions& opt) {
  auto text = read_text_file(path);
  if (!text) return text.status();
  return parse_pytorch_csv(*text, path, opt);
}

std::string format_pytorch_csv(const Schedule& s) {
  // Column of each action. Compute-only schedules with predicted times: columns are the distinct
  // (start_us, k) keys over all devices, where start_us = round(start_ms * 1000) and k counts earlier
  // ops of the same device with the same start_us; a device leaves empty cells where it has no op.
  // Otherwise actions are written back to back.
  const bool spread = !s.has_comms() && !s.predicted.empty() && s.predicted.size() == s.programs.size();
  std::vector<std::vector<long long>> col(s.programs.size());
  if (spread) {
    bool shapes_ok = true;
    for (size_t d = 0; d < s.programs.size(); ++d) shapes_ok &= s.predicted[d].size() == s.programs[d].size();
    if (shapes_ok) {
      using Key = std::pair<long long, int>;
      std::vector<std::vector<Key>> keys(s.programs.size());
      std::vector<Key> all;
      for (size_t d = 0; d < s.programs.size(); ++d) {
        std::map<long long, int> seen;
        for (const OpTime& t : s.predicted[d]) {
          double us = t.start_ms * 1000.0;
          long long k = std::isfinite(us) && std::fabs(us) < 9e18 ? std::llround(us) : 0;
          Key key{k, seen[k]++};
          keys[d].push_back(key);
          all.push_back(key);
        }
      }
      std::sort(all.begin(), all.end());
      all.erase(std::unique(all.begin(), all.end()), all.end());
      for (size_t d = 0; d < s.programs.size(); ++d) {
        long long prev = -1;
        for (const Key& k : keys[d]) {
          long long c = std::lower_bound(all.begin(), all.end(), k) - all.begin();
          c = std::max(c, prev + 1);  // program order wins if predicted starts are out of order
          col[d].push_back(c);
          prev = c;
        }
      }
    }
  }
  std::string out;
  for (size_t d = 0; d < s.programs.size(); ++d) {
    long long next = 0;
    for (const auto& [first, last] : program_cells(s.programs[d])) {
      long long c = col[d].empty() ? next : col[d][first];
      for (; next < c; ++next) out += (next > 0 ? "," : "");
      if (next > 0) out += ',';
      out += overlap_text(s.programs[d], first, last);
      next = c + 1;
    }
    out += '\n';
  }
  return out;
}

Schedule compute_only_view(const Schedule& in) {
  Schedule s = in;
  s.certificate.reset();
  const bool times = in.predicted.size() == in.programs.size();
  for (size_t d = 0; d < s.programs.size(); ++d) {
    std::vector<Action> ops;
    std::vector<OpTime> kept;
    const bool dev_times = times && in.predicted[d].size() == in.programs[d].size();
    for (size_t i = 0; i < in.programs[d].size(); ++i) {
      if (!is_compute(in.programs[d][i].type)) continue;
      ops.push_back(in.programs[d][i]);
      if (dev_times) kept.push_back(in.predicted[d][i]);
    }
    s.programs[d] = std::move(ops);
    if (times) s.predicted[d] = std::move(kept);
  }
  return s;
}

Status check_pytorch_csv_exportable(const Schedule& s) {
  for (size_t d = 0; d < s.programs.size(); ++d)
    for (const Action& a : s.programs[d])
      if (a.type == OpType::R)
        return Status::bad_input(fmt::format(
            "cannot write a PyTorch CSV: device {} runs '{}', a recomputation op, and PyTorch's action "
            "grammar has none (its runtime recomputes inside the stage module, with "
            "torch.utils.checkpoint), nor can a CSV alone say which stages recompute; keep the "
            "pipesmith-schedule/1 file, whose PyTorch export (plan.json marks those stages) runs it",
            d, to_string(a)));
  return Status::ok();
}

Status write_pytorch_csv(const Schedule& s, const std::string& path) {
  PS_RETURN_IF_ERROR(check_pytorch_csv_exportable(s));
  return write_text(path, format_pytorch_csv(s));
}

}  // namespace ps
