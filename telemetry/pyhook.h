#pragma once
// nodus's zero-change instrumentation of Python jobs: the sitecustomize.py compiled into the
// binary (telemetry/pyhook/sitecustomize.py says what it measures), when a job gets it, and
// writing it into the job's folder. The job finds it through PYTHONPATH; it writes its figures
// to NODUS_HOOK_DIR (engine/measure.h reads them).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace nodus::telemetry {

// The text of telemetry/pyhook/sitecustomize.py.
std::string_view pyhook_source();

// True when the command runs Python: argv[0]'s basename is python followed by a version or
// nothing (python, python3, python3.11), torchrun or accelerate, also behind `env [K=V...]`.
bool runs_python(const std::vector<std::string>& argv);

// Why Python will not import the hook although the command runs Python: -I or -E (PYTHONPATH
// ignored) or -S (no site module) among the interpreter's own flags; nullopt when it will.
std::optional<std::string> python_ignores_hook(const std::vector<std::string>& argv);

// Writes sitecustomize.py into dir (created, 0700), replacing what is there atomically.
Result<void> write_pyhook(const std::string& dir);

}  // namespace nodus::telemetry
