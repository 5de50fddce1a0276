#pragma once
// nodus's zero-change instrumentation of Python jobs: the sitecustomize.py compiled into the
// binary (telemetry/pyhook/sitecustomize.py says what it measures), when a job gets it, and
// writing it into the job's folder. The job finds it through PYTHONPATH; it writes its figures
// to NODUS_HOOK_DIR (engine/measure.h reads them).

#include <map>
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

// --loader: the DataLoader arguments the hook sets for a script that does not take them as
// flags (sitecustomize.py, _NodusLoaderKnobs): each flag is KNOB=VALUE, or several joined by
// commas ("num_workers=8,pin_memory=true"). The knobs: num_workers (>= 0), prefetch_factor and
// batch_size (>= 1), pin_memory and persistent_workers (true or false). Returns them by knob
// as the hook reads them; an unknown knob, a bad value or a knob given twice is an error that
// names it and what is allowed.
Result<std::map<std::string, std::string>> parse_loader_knobs(
    const std::vector<std::string>& flags);
// The knobs as NODUS_LOADER carries them to the hook: "num_workers=8,pin_memory=true".
std::string loader_env(const std::map<std::string, std::string>& knobs);
// batch_size changes what each step trains on, not only how batches are made: said as such.
inline bool changes_training(std::string_view knob) { return knob == "batch_size"; }

// Writes sitecustomize.py into dir (created, 0700), replacing what is there atomically.
Result<void> write_pyhook(const std::string& dir);

}  // namespace nodus::telemetry
