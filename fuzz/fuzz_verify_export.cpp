// libFuzzer target: the checker and the PyTorch export on any schedule the reader accepts
// (certificates and their claims, stage layer ranges, programs). Properties checked on every input:
//  * the verdict is consistent: valid exactly when there is no violation; every violation and every
//    unchecked claim has a rule or field and a message; checking twice gives the same text report,
//    and the JSON report is JSON;
//  * export never fails on a schedule the checker accepts except with bad input (a message); what it
//    writes reads back: both CSVs parse as PyTorch CSVs over the same ranks, plan.json is JSON with
//    the schedule's P, S and M, and a second export gives byte-identical texts;
//  * export produces nothing for a schedule the checker rejects.
// Inputs whose plans are larger than a few thousand compute ops are skipped: the limits have their
// own target (fuzz_limits); this one is about the rules.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "ir/schedule_io.h"
#include "export/pytorch_export.h"
#include "report/report.h"
#include "verify/verify.h"
#include "fuzz/require.h"

using psfuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto r = ps::parse_schedule_yaml(text, "fuzz.yaml");
  if (!r.ok()) return 0;
  const ps::Schedule& s = *r;
  const long long ops = 3LL * s.problem.num_stages() * s.problem.microbatches;
  if (ops > 3000) return 0;

  const ps::Report report = ps::verify(s);
  require(report.valid == report.violations.empty());
  for (const auto& v : report.violations) require(!v.rule.empty() && !v.message.empty());
  for (const auto& c : report.unchecked_claims) require(!c.field.empty() && !c.message.empty());
  const std::string text_report = ps::format_report(report);
  require(ps::format_report(ps::verify(s)) == text_report);
  require(nlohmann::json::accept(ps::format_report_json(report)));

  auto ex = ps::export_pytorch(s, {});
  if (!ex.ok()) {
    require(ex.status().code() == ps::ErrorCode::kBadInput && !ex.status().message().empty());
    return 0;
  }
  if (!ex->valid) {
    require(ex->compute_only_csv.empty() && ex->compute_comms_csv.empty() && ex->plan_json.empty());
    return 0;
  }
  for (const std::string* csv : {&ex->compute_only_csv, &ex->compute_comms_csv}) {
    auto back = ps::parse_pytorch_csv(*csv, "export.csv");
    require(back.ok());
    require(back->schedule.num_devices() == s.num_devices());
  }
  const auto plan = nlohmann::json::parse(ex->plan_json, nullptr, false);
  require(!plan.is_discarded());
  require(plan.value("devices", -1) == s.problem.devices);
  require(plan.value("num_stages", -1) == s.problem.num_stages());
  require(plan.value("microbatches", -1) == s.problem.microbatches);
  auto again = ps::export_pytorch(s, {});
  require(again.ok() && again->compute_only_csv == ex->compute_only_csv &&
          again->compute_comms_csv == ex->compute_comms_csv && again->plan_json == ex->plan_json);
  return 0;
}
