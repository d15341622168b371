// `pipesmith profile` — measure each layer type's F/I/W time and memory on a backend (host or cuda)
// and write a model YAML with the profiled numbers (same schema as configs/models): the loop
// profile → baseline/synth → run.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/number_flags.h"
#include "ir/model.h"
#include "kernels/cuda_backend.h"
#include "runtime/host_backend.h"
#include "runtime/profile.h"

namespace ps::cli {

namespace {

struct ProfileFlags {
  std::string model;
  std::string cluster;
  std::string backend = "host";
  std::string output = "-";
  double scale = 1.0;
  int tokens = 32;
  int repeats = 5;
  int warmup = 2;
  double timeout_s = 60;
  std::string widths = "cost";
};

int run_profile(const ProfileFlags& f) {
  if (f.backend != "host" && f.backend != "cuda")
    return report_error(Status::bad_input(fmt::format("--backend must be host or cuda, got '{}'", f.backend)));
  if (f.tokens < 1 || f.tokens > 1 << 16) return report_error(Status::bad_input("--tokens must be in 1..65536"));
  if (!(f.timeout_s > 0) || !std::isfinite(f.timeout_s))
    return report_error(Status::bad_input(fmt::format("--timeout must be a finite number of seconds > 0, got {}", f.timeout_s)));
  if (Status st = check_outputs({{f.output, "-o"}}, {f.model, f.cluster}); !st.is_ok()) return report_error(st);
  auto spec = load_spec(f.model, f.cluster);
  if (!spec) return report_error(spec.status());
  rt::ProfileOptions po;
  po.model.scale = f.scale;
  po.model.tokens = f.tokens;
  if (f.widths != "cost" && f.widths != "params")
    return report_error(Status::bad_input(fmt::format("--widths must be cost or params, got '{}'", f.widths)));
  po.model.widths_from_params = f.widths == "params";
  po.repeats = f.repeats;
  po.warmup = f.warmup;
  po.timeout_s = f.timeout_s;
  if (f.backend == "host") {  // the cuda backend's tensors live on the GPU
    auto need = rt::estimate_profile_memory(*spec, po);
    if (!need) return report_error(need.status());
    if (Status st = rt::check_fits(*need, rt::host_memory(),
                                   fmt::format("profiling '{}' (--scale {:g}, --tokens {}, {} microbatches a layer type)",
                                               f.model, f.scale, f.tokens, f.warmup + f.repeats));
        !st.is_ok())
      return report_error(st);
  }
  std::unique_ptr<rt::Backend> backend;
  if (f.backend == "host") {
    backend = std::make_unique<rt::HostBackend>(1);
  } else {
    kern::CudaBackendOptions co;
    co.devices = 1;
    auto b = kern::make_cuda_backend(co);
    if (!b) return report_error(b.status());
    backend = std::move(*b);
  }
  auto res = rt::profile_layer_types(*spec, *backend, po);
  if (!res) return report_error(res.status());
  const std::string yaml = rt::format_profiled_model_yaml(*spec, *res, f.model);
  if (f.output == "-") {
    std::fputs(yaml.c_str(), stdout);
    return 0;
  }
  std::fputs(rt::format_profile_table(*res).c_str(), stdout);
  Status st = write_text_file(f.output, yaml);
  if (!st) return report_error(st);
  std::printf("wrote %s\n", f.output.c_str());
  return 0;
}

}  // namespace

Runner add_profile(CLI::App& app) {
  auto* sub = app.add_subcommand("profile", "Measure each layer type's F/I/W time and memory on a backend; write a "
                                            "model YAML with the profiled numbers");
  auto f = std::make_shared<ProfileFlags>();
  sub->add_option("model", f->model, "Model YAML (may also hold cluster: and pipeline:)")->required();
  sub->add_option("--cluster", f->cluster, "Cluster YAML (copied into the output)");
  sub->add_option("--backend", f->backend, "host (default) or cuda");
  sub->add_option("-o,--output", f->output, "Model YAML to write (default - = stdout; otherwise a table is printed)");
  sub->add_option("--scale", f->scale, "Width multiplier of the executable model (as in `pipesmith run`)")
      ->check(flags::scale());
  sub->add_option("--tokens", f->tokens, "Tokens per microbatch (default 32)")->check(flags::tokens());
  sub->add_option("--widths", f->widths, "Block widths from costs (default) or params_m (as `pipesmith run --widths`)");
  sub->add_option("--repeats", f->repeats, "Measured microbatches per layer type (default 5, at most 1000; median)")
      ->check(flags::integer_in(1, rt::kMaxProfileRepeats));
  sub->add_option("--warmup", f->warmup, "Unmeasured microbatches first (default 2, at most 1000)")
      ->check(flags::integer_in(0, rt::kMaxProfileRepeats));
  sub->add_option("--timeout", f->timeout_s, "Watchdog seconds (default 60)")->check(flags::timeout_s());
  return [f] { return run_profile(*f); };
}

}  // namespace ps::cli
