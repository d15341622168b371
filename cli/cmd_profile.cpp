// `pipesmith profile` — measure each layer type's F/I/W time and memory on a backend (host or cuda)
// and write a model YAML with the profiled numbers (same schema as configs/models): the loop
// profile → baseline/synth → run. `--backend torch` measures the PyTorch reference transformer
// instead: it runs `python -m pipesmith.torch.profile` (python/pipesmith/torch/profile.py) with
// the flags translated, and returns its exit code; with `--hf CONFIG.json` that module measures the
// transformers model of the config on its own layers (python/pipesmith/torch/hf_profile.py), and
// imports the config by running this command (`import hf`, named in $PIPESMITH_COMMAND).
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
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
  rt::ProfileOptions options;  // --scale, --tokens, --repeats, --warmup, --timeout (the library's defaults)
  std::string widths = "cost";
  // --backend torch only (pipesmith.torch.profile's flags); 0 / "" = that module's default.
  int hidden = 0;
  int seq = 0;
  int vocab = 0;
  int rows = 0;
  int threads = 0;
  int concurrent = 0;
  std::string method;
  bool full_width = false;
  std::string also_fused;
  std::string dtype;
  std::string device;
  std::string hf;  // a transformers config.json instead of the model YAML
  int layers = 0;
  // Which flags were given (some belong to one kind of backend only).
  std::vector<std::string> given;
};

bool given(const ProfileFlags& f, const char* flag) {
  return std::find(f.given.begin(), f.given.end(), flag) != f.given.end();
}

// The repository this binary was built from (python/ and .venv live there).
std::string source_dir() {
#ifdef PIPESMITH_SOURCE_DIR
  return PIPESMITH_SOURCE_DIR;
#else
  return ".";
#endif
}

// Where the torch profiler comes from: the Python that runs it, and the source tree's python/ to put
// on PYTHONPATH (empty: the package is installed where that Python finds it).
struct TorchPython {
  std::string python;
  std::string python_path;
  std::string origin;  // for the progress line: "installed beside this command", ...
};

// $PIPESMITH_PYTHON (with the package as that Python finds it); else the Python beside this command
// (`pip install .` puts the command and the package into one environment, so an installed command
// needs no checkout); else, for a build tree's command, the repository's .venv with the build's
// BUILD/python (the checkout's package with the extension, which writes the profiled YAML), or the
// checkout's python/ when the build has none; else python3 on the PATH.
TorchPython find_python() {
  if (const char* v = std::getenv("PIPESMITH_PYTHON"); v && *v) return {v, "", "$PIPESMITH_PYTHON"};
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path beside = self.parent_path() / "python";
    if (access(beside.c_str(), X_OK) == 0) return {beside.string(), "", "installed beside this command"};
  }
  const std::string tree = source_dir();
  if (access((tree + "/python/pipesmith/torch/profile.py").c_str(), R_OK) == 0) {
    const std::string venv = tree + "/.venv/bin/python";
    std::string package = tree + "/python";
    if (!ec) {  // BUILD/cli/pipesmith: BUILD/python/pipesmith links the checkout's sources beside _core
      const std::filesystem::path build_python = self.parent_path().parent_path() / "python";
      if (access((build_python / "pipesmith/torch/profile.py").c_str(), R_OK) == 0) package = build_python.string();
    }
    return {access(venv.c_str(), X_OK) == 0 ? venv : "python3", package, "the source tree " + tree};
  }
  return {"python3", "", "python3 on the PATH"};
}

int run_torch_profile(const ProfileFlags& f) {
  for (const char* host_only : {"--scale", "--tokens", "--widths", "--timeout"})
    if (given(f, host_only))
      return report_error(Status::bad_input(fmt::format(
          "{} applies to --backend host and cuda; --backend torch takes --hidden, --seq, --vocab, --rows, "
          "--full-width, --dtype, --threads, --device",
          host_only)));
  if (Status st = check_outputs({{f.output, "-o"}, {f.also_fused, "--also-fused"}}, {f.model, f.hf, f.cluster});
      !st.is_ok())
    return report_error(st);
  if (!f.also_fused.empty() && f.output == "-")
    return report_error(Status::bad_input("--also-fused needs -o (the profile written to a file)"));
  const TorchPython tp = find_python();
  const std::string& python = tp.python;
  std::fprintf(stderr, "profile: --backend torch: %s -m pipesmith.torch.profile (the package: %s)\n", python.c_str(),
               tp.origin.c_str());
  std::vector<std::string> args = {python, "-m", "pipesmith.torch.profile", "-o", f.output,
                                   "--repeats", std::to_string(f.options.repeats), "--warmup",
                                   std::to_string(f.options.warmup)};
  if (f.hf.empty()) {
    args.insert(args.begin() + 3, f.model);
  } else {
    args.insert(args.end(), {"--hf", f.hf});
  }
  if (!f.cluster.empty()) args.insert(args.end(), {"--cluster", f.cluster});
  auto add_int = [&](const char* flag, int v) {
    if (v > 0) args.insert(args.end(), {flag, std::to_string(v)});
  };
  add_int("--hidden", f.hidden);
  add_int("--seq", f.seq);
  add_int("--vocab", f.vocab);
  add_int("--rows-per-microbatch", f.rows);
  add_int("--threads", f.threads);
  add_int("--concurrent", f.concurrent);
  add_int("--layers", f.layers);
  if (!f.method.empty()) args.insert(args.end(), {"--method", f.method});
  if (f.full_width) args.emplace_back("--full-width");
  if (!f.also_fused.empty()) args.insert(args.end(), {"--also-fused", f.also_fused});
  if (!f.dtype.empty()) args.insert(args.end(), {"--dtype", f.dtype});
  if (!f.device.empty()) args.insert(args.end(), {"--device", f.device});
  const std::string& python_path = tp.python_path;
  std::error_code self_ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", self_ec).string();  // for `import hf`
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0)
    return report_error(
        Status::error(ErrorCode::kRuntime, fmt::format("cannot fork: {}", std::strerror(errno))));
  if (pid == 0) {
    if (!python_path.empty()) {
      const char* old = std::getenv("PYTHONPATH");
      const std::string pp = old && *old ? python_path + ":" + old : python_path;
      setenv("PYTHONPATH", pp.c_str(), 1);
    }
    if (!self_ec) setenv("PIPESMITH_COMMAND", self.c_str(), 1);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr,
                 "pipesmith: error: --backend torch: cannot run '%s': %s (set PIPESMITH_PYTHON to a Python with "
                 "torch, or make the repository's .venv: scripts/install-deps)\n",
                 python.c_str(), std::strerror(errno));
    _exit(1);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return report_error(Status::error(ErrorCode::kRuntime, fmt::format("waitpid: {}", std::strerror(errno))));
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return report_error(Status::error(ErrorCode::kRuntime, fmt::format("--backend torch: {} -m pipesmith.torch.profile "
                                                                     "ended by signal {}",
                                                                     python, WTERMSIG(status))));
}

int run_profile(const ProfileFlags& f) {
  if (f.model.empty() == f.hf.empty())
    return report_error(Status::bad_input(f.hf.empty() ? "give the model YAML, or --hf CONFIG.json with --backend torch"
                                                       : "--hf names the model: give it or a model YAML, not both"));
  if (!f.hf.empty() && f.backend != "torch")
    return report_error(Status::bad_input("--hf applies to --backend torch (the transformers model measured with PyTorch)"));
  if (given(f, "--layers") && f.hf.empty()) return report_error(Status::bad_input("--layers applies to --hf only"));
  if (f.backend == "torch") return run_torch_profile(f);
  if (f.backend != "host" && f.backend != "cuda")
    return report_error(Status::bad_input(fmt::format("--backend must be host, cuda or torch, got '{}'", f.backend)));
  for (const char* torch_only : {"--hidden", "--seq", "--vocab", "--rows", "--full-width", "--dtype", "--threads",
                                 "--device", "--method", "--concurrent", "--also-fused"})
    if (given(f, torch_only))
      return report_error(Status::bad_input(fmt::format("{} applies to --backend torch only", torch_only)));
  if (Status st = check_outputs({{f.output, "-o"}}, {f.model, f.cluster}); !st.is_ok()) return report_error(st);
  auto spec = load_spec(f.model, f.cluster);
  if (!spec) return report_error(spec.status());
  rt::ProfileOptions po = f.options;
  if (f.widths != "cost" && f.widths != "params")
    return report_error(Status::bad_input(fmt::format("--widths must be cost or params, got '{}'", f.widths)));
  po.model.widths_from_params = f.widths == "params";
  {  // on the host, or on one GPU for the cuda backend (without a usable GPU the backend says so itself)
    auto need = rt::estimate_profile_memory(*spec, po);
    if (!need) return report_error(need.status());
    const std::string what = fmt::format("profiling '{}' (--scale {:g}, --tokens {}, {} microbatches a layer type)",
                                         f.model, po.model.scale, po.model.tokens, po.warmup + po.repeats);
    Status st = Status::ok();
    if (f.backend == "host") {
      st = rt::check_fits(*need, rt::host_memory(), what);
    } else if (Result<uint64_t> gpu_free = kern::smallest_free_gpu_memory(); gpu_free.ok()) {
      st = rt::check_fits_gpu(*need, *gpu_free, what);  // one layer type at a time, on one GPU
    }
    if (!st.is_ok()) return report_error(st);
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
  sub->add_option("model", f->model, "Model YAML (may also hold cluster: and pipeline:); or --hf");
  sub->add_option("--hf", f->hf,
                  "--backend torch: profile the Hugging Face transformers model of this config.json on its own "
                  "layers instead (at the config's sizes, or shrunk by --layers, --hidden, --vocab); the YAML written "
                  "is `pipesmith import hf`'s for it with the measured numbers (docs/pytorch.md, 'Profiling')");
  sub->add_option("--layers", f->layers, "--hf: decoder layers of the config kept (default: all)")
      ->check(flags::option(limits::option::kProfileLayers));
  sub->add_option("--cluster", f->cluster, "Cluster YAML (copied into the output)");
  sub->add_option("--backend", f->backend,
                  "host (default), cuda, or torch: the PyTorch reference transformer of the model, measured by "
                  "python -m pipesmith.torch.profile (Python: $PIPESMITH_PYTHON, else the one installed beside this command, "
                  "else a build tree's .venv and BUILD/python, else python3; docs/pytorch.md, 'Profiling')");
  sub->add_option("-o,--output", f->output, "Model YAML to write (default - = stdout; otherwise a table is printed)");
  sub->add_option("--scale", f->options.model.scale, "Width multiplier of the executable model (as in `pipesmith run`)")
      ->check(flags::scale());
  sub->add_option("--tokens", f->options.model.tokens, "Tokens per microbatch (default 32)")
      ->check(flags::option(limits::option::kTokens));
  sub->add_option("--widths", f->widths, "Block widths from costs (default) or params_m (as `pipesmith run --widths`)");
  sub->add_option("--repeats", f->options.repeats, "Measured microbatches per layer type (default 5, at most 1000; median)")
      ->check(flags::option(limits::option::kProfileRepeats));
  sub->add_option("--warmup", f->options.warmup, "Unmeasured microbatches first (default 2, at most 1000)")
      ->check(flags::option(limits::option::kProfileWarmup));
  sub->add_option("--timeout", f->options.timeout_s, "Watchdog seconds (default 60)")->check(flags::timeout_s());
  const char* torch_only = "--backend torch: ";
  sub->add_option("--hidden", f->hidden, std::string(torch_only) + "hidden size of the reference model (default 256); with --hf "
                                                  "of the transformers model (default: the config's)")
      ->check(flags::option(limits::option::kProfileHidden));
  sub->add_option("--seq", f->seq, std::string(torch_only) + "tokens per sequence (default 64)")
      ->check(flags::option(limits::option::kProfileSeq));
  sub->add_option("--vocab", f->vocab, std::string(torch_only) + "vocabulary of the reference model (default 512); with --hf of "
                                                 "the transformers model (default: the config's)")
      ->check(flags::option(limits::option::kProfileVocab));
  sub->add_option("--rows", f->rows, std::string(torch_only) + "sequences per microbatch (default 2)")
      ->check(flags::option(limits::option::kProfileRows));
  sub->add_option("--dtype", f->dtype, std::string(torch_only) + "float32 (default), float64 or bfloat16")
      ->check(CLI::IsMember({"float32", "float64", "bfloat16"}));
  sub->add_option("--threads", f->threads, std::string(torch_only) + "torch.set_num_threads (default 1)")
      ->check(flags::option(limits::option::kProfileThreads));
  sub->add_option("--method", f->method,
                  std::string(torch_only) + "chain (default: every layer timed in sweeps of the whole model), "
                                            "isolated (each type's first layer alone) or single (only each "
                                            "type's first layer built, timed alone on random inputs)")
      ->check(CLI::IsMember({"chain", "isolated", "single"}));
  sub->add_flag("--full-width", f->full_width,
                std::string(torch_only) + "the architecture's own hidden size, heads, experts, vocabulary, sequence "
                                          "length and micro_batch_size (replaces --hidden, --seq, --vocab, --rows)");
  sub->add_option("--concurrent", f->concurrent,
                  std::string(torch_only) + "processes sweeping at once, the measured one included (default 1; "
                                            "P ranks on one machine load it so)")
      ->check(flags::option(limits::option::kProfileConcurrent));
  sub->add_option("--also-fused", f->also_fused,
                  std::string(torch_only) + "also write the profile with I and W scaled so that I + W is the "
                                            "measured fused B (for schedules that run B only; docs/pytorch.md)");
  sub->add_option("--device", f->device, std::string(torch_only) + "cpu (default) or cuda (CUDA event timing)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  return [f, sub] {
    for (const char* name : {"--scale", "--tokens", "--widths", "--timeout", "--hidden", "--seq", "--vocab", "--rows",
                             "--full-width", "--dtype", "--threads", "--device", "--method", "--concurrent", "--also-fused",
                             "--layers"})
      if (sub->count(name) > 0) f->given.push_back(name);
    return run_profile(*f);
  };
}

}  // namespace ps::cli
