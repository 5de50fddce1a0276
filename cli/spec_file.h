#pragma once
// Spec files: `nodus run -f job.yaml` and `nodus sweep -f sweep.yaml` (schema and an example:
// docs/spec-files.md, examples/sweep.yaml). A file holds what the flags would say; a flag given
// on the command line wins over the file. Values stay text exactly as written (1e-5 stays
// 1e-5). Errors name file:line:column and exit 125 before anything runs. `--save FILE` writes
// the file a command line means, so `sweep -f FILE` plans the same cells.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/common.h"

namespace nodus::cli {

// The sweep-only fields a spec may set (RunFlags has the rest).
struct SweepSpec {
  std::vector<std::string> params;  // NAME=VALUES, in the file's order
  std::string budget;
  std::optional<int> parallel;
  std::optional<int> repeat;
  std::optional<uint64_t> sample;
  std::optional<uint64_t> seed;
  std::string objective;
};

// Reads `path` into the options of `app` that were not given on its command line: run flags
// into `run` and, when `sweep` is set (sweep -f), the sweep's own into it (a job spec with
// sweep keys is refused). Throws Fatal naming file:line:column.
void apply_spec_file(const std::string& path, CLI::App& app, RunFlags& run, SweepSpec* sweep);

// An env value that is a whole "${NAME}" (NAME: letters, digits, '_', not starting with a digit):
// NAME, which the loader replaces by nodus's own environment variable of that name.
std::optional<std::string> env_reference(const std::string& value);

// True when --save writes -e NAME=VALUE as "NAME: ${NAME}": its name looks secret or the value
// holds a URL's credentials (core/secret.h).
bool env_needs_reference(const std::string& name, const std::string& value);

// The YAML for a sweep's command line (what --save writes). Secret env values are references
// (env_needs_reference); the caller refuses commands with credentials in their arguments.
std::string sweep_spec_yaml(const RunFlags& run, const SweepSpec& sweep);

}  // namespace nodus::cli
