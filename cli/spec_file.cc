#include "cli/spec_file.h"

#include <yaml-cpp/depthguard.h>  // YAML::DeepRecursion
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <type_traits>

#include "cli/args.h"
#include "core/error.h"
#include "core/files.h"
#include "core/json_input.h"
#include "core/secret.h"
#include "core/text.h"

namespace nodus::cli {
namespace {

class Spec {
 public:
  explicit Spec(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& what) const {
    throw Fatal(escape_control(path_) + ":" + std::to_string(mark.line + 1) + ":" +
                std::to_string(mark.column + 1) + ": " + what);
  }

  // A scalar as written; lists and maps are refused where a value is expected.
  std::string scalar(const YAML::Node& n, const std::string& key) const {
    if (n.IsNull()) fail(n.Mark(), key + ": no value (write one, or leave the key out)");
    if (!n.IsScalar()) fail(n.Mark(), key + ": expected a value, not a list or a map");
    return n.Scalar();
  }

  void check_keys(const YAML::Node& map, const std::set<std::string>& known,
                  const std::string& where) const {
    for (const auto& kv : map) {
      std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
      if (known.count(key)) continue;
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      // A typo (comand, max_cost for max-cost) is named as the flags' typos are.
      const std::string near = nearest(key, {known.begin(), known.end()});
      fail(kv.first.Mark(), "unknown key '" + escape_control(key) + "'" + where +
                                (near.empty() ? "" : "; did you mean " + near + "?") +
                                ": expected one of " + list);
    }
  }

  // A param's values: a list (each value as written), a range string ("1e-5..1e-2:log4"), or
  // a map {from, to, step | factor | log}, or {choices: [...]}.
  std::string param_values(const std::string& name, const YAML::Node& v) const {
    if (v.IsScalar()) return v.Scalar();
    if (v.IsSequence()) {
      std::string out;
      for (const auto& item : v) {
        std::string s = scalar(item, "params." + name);
        if (s.find(',') != std::string::npos)
          fail(item.Mark(), "params." + name + ": value '" + escape_control(s) +
                                "' holds a comma, which separates values");
        out += (out.empty() ? "" : ",") + s;
      }
      if (out.empty()) fail(v.Mark(), "params." + name + ": the list is empty");
      return out;
    }
    if (v.IsMap()) {
      if (v["choices"]) {
        check_keys(v, {"choices"}, " in params." + name);
        return param_values(name, v["choices"]);
      }
      check_keys(v, {"from", "to", "step", "factor", "log"}, " in params." + name);
      if (!v["from"] || !v["to"]) fail(v.Mark(), "params." + name + ": a range needs from and to");
      std::string out = scalar(v["from"], "from") + ".." + scalar(v["to"], "to");
      int steps = !!v["step"] + !!v["factor"] + !!v["log"];
      if (steps > 1) fail(v.Mark(), "params." + name + ": give one of step, factor or log");
      if (v["step"]) out += ":" + scalar(v["step"], "step");
      if (v["factor"]) out += ":x" + scalar(v["factor"], "factor");
      if (v["log"]) out += ":log" + scalar(v["log"], "log");
      return out;
    }
    fail(v.Mark(), "params." + name + ": expected a list, a range or a map");
  }

  // A spec needs 4 levels (params.lr.choices[0]); a "[[[[..." bomb is refused at JSON's limit.
  // The walk is bounded too: aliases can make a small file a huge tree.
  void check_depth(const YAML::Node& n, size_t depth = 1) {
    if (depth > kJsonMaxDepth) fail(n.Mark(), json_depth_words());
    if (++visited_ > kMaxNodes)
      fail(n.Mark(), "more than " + std::to_string(kMaxNodes) + " values (through aliases?)");
    if (n.IsSequence())
      for (const auto& item : n) check_depth(item, depth + 1);
    if (n.IsMap()) {
      std::map<std::string, int> lines;  // yaml-cpp keeps every duplicate but finds the first
      for (const auto& kv : n) {
        if (kv.first.IsScalar()) {
          auto [it, fresh] = lines.emplace(kv.first.Scalar(), kv.first.Mark().line + 1);
          if (!fresh)
            fail(kv.first.Mark(), "duplicate key '" + escape_control(kv.first.Scalar()) +
                                      "' (first at line " + std::to_string(it->second) + ")");
        }
        check_depth(kv.second, depth + 1);
      }
    }
  }

  const std::string& path() const { return path_; }

 private:
  static constexpr size_t kMaxNodes = 1 << 20;  // a 1 MiB file holds fewer without aliases
  std::string path_;
  size_t visited_ = 0;
};

bool given(const CLI::App& app, const std::string& name) {
  const CLI::Option* o = app.get_option_no_throw(name);
  return o != nullptr && o->count() > 0;
}

// Reads a spec file's keys into the flags they stand for. A value passes the checks of the flag
// it stands for, in the flag's words; a bad one is refused even where a flag overrides it.
class SpecReader {
 public:
  SpecReader(Spec& spec, CLI::App& app) : spec_(spec), app_(app) {}

  std::string value_of(const YAML::Node& n, const std::string& key, const std::string& flag) {
    std::string v = spec_.scalar(n, key);
    if (auto problem = flag_value_problem(app_, flag, v); !problem.empty())
      spec_.fail(n.Mark(), key + ": " + problem);
    return v;
  }

  // The key's value into `field`, unless its flag was given.
  void set(const YAML::Node& n, const std::string& key, const std::string& flag,
           std::string& field) {
    if (!n) return;
    std::string v = value_of(n, key, flag);
    if (!given(app_, flag)) field = v;
  }

  // The keys of a job (a sweep's cells have them too); `sweep` adds caps.budget.
  void run_keys(const YAML::Node& root, RunFlags& run, SweepSpec* sweep) {
    set(root["name"], "name", "--name", run.name);
    set(root["gpu"], "gpu", "--gpu", run.gpu);
    if (auto res = root["resources"]) {
      if (!res.IsMap()) spec_.fail(res.Mark(), "resources: expected a map (gpu, nodes)");
      spec_.check_keys(res, {"gpu", "nodes"}, " in resources");
      set(res["gpu"], "resources.gpu", "--gpu", run.gpu);
      set(res["nodes"], "resources.nodes", "--nodes", run.nodes);
    }
    if (auto caps = root["caps"]) {
      if (!caps.IsMap()) spec_.fail(caps.Mark(), "caps: expected a map (max_cost, timeout, ...)");
      std::set<std::string> known = {"max_cost", "timeout", "grace"};
      if (sweep) known.insert("budget");
      spec_.check_keys(caps, known, " in caps");
      set(caps["max_cost"], "caps.max_cost", "--max-cost", run.max_cost);
      set(caps["timeout"], "caps.timeout", "--timeout", run.timeout);
      set(caps["grace"], "caps.grace", "--grace", run.grace);
      if (sweep && caps["budget"]) set(caps["budget"], "caps.budget", "--budget", sweep->budget);
    }
    set(root["workdir"], "workdir", "--workdir", run.workdir);
    // As docker compose does, a relative path in the file is relative to the file, not to where
    // nodus runs (a --workdir flag stays relative to the current folder).
    if (root["workdir"] && !given(app_, "--workdir") && !run.workdir.empty() &&
        run.workdir.front() != '/') {
      std::error_code ec;
      auto base = std::filesystem::absolute(std::filesystem::path(spec_.path()), ec).parent_path();
      if (!ec) run.workdir = (base / run.workdir).lexically_normal().string();
    }
    set(root["image"], "image", "--image", run.image);
    set(root["backend"], "backend", "--backend", run.backend);
    set(root["throughput"], "throughput", "--throughput", run.throughput);
    set(root["warmup"], "warmup", "--warmup", run.warmup);
    set(root["log_limit"], "log_limit", "--log-limit", run.log_limit);
    if (auto env = root["env"]) env_keys(env, run);
    if (auto rx = root["metric_regex"]; rx && !given(app_, "--metric-regex")) {
      if (!rx.IsSequence()) spec_.fail(rx.Mark(), "metric_regex: expected a list of NAME=REGEX");
      for (const auto& item : rx)
        run.metric_regex.push_back(value_of(item, "metric_regex", "--metric-regex"));
    }
    if (auto knobs = root["loader"]; knobs && !given(app_, "--loader")) {
      if (!knobs.IsSequence()) spec_.fail(knobs.Mark(), "loader: expected a list of KNOB=VALUE");
      for (const auto& item : knobs) run.loader.push_back(value_of(item, "loader", "--loader"));
    }
    if (auto tf32 = root["tf32"]) {
      // A YAML boolean, as docker compose's flags are: true or false, nothing else.
      std::string v = spec_.scalar(tf32, "tf32");
      if (v != "true" && v != "false")
        spec_.fail(tf32.Mark(),
                   "tf32: invalid value '" + escape_control(v) + "': expected true or false");
      if (!given(app_, "--tf32")) run.tf32 = v == "true";
    }
    if (auto cmd = root["command"]; cmd && run.command.empty()) {
      // A list: each item one argument, never through a shell (write [sh, -c, "..."] for one).
      if (!cmd.IsSequence() || cmd.size() == 0)
        spec_.fail(cmd.Mark(),
                   "command: expected a list of arguments, like [python, train.py]; a "
                   "shell command is [sh, -c, \"...\"]");
      for (const auto& item : cmd) run.command.push_back(spec_.scalar(item, "command"));
    }
  }

  // env: a map NAME: value, before the command line's -e (the later one wins).
  void env_keys(const YAML::Node& env, RunFlags& run) {
    if (!env.IsMap()) spec_.fail(env.Mark(), "env: expected a map of NAME: value");
    // The file's variables first, then the command line's (the later one wins).
    std::vector<std::string> from_file;
    for (const auto& kv : env) {
      std::string name = spec_.scalar(kv.first, "env");
      std::string value = spec_.scalar(kv.second, "env");
      // "${NAME}": the value of nodus's own environment variable NAME, which is how --save
      // writes a secret (the file never holds it).
      if (auto ref = env_reference(value)) {
        const char* real = std::getenv(ref->c_str());
        if (!real)
          spec_.fail(kv.second.Mark(), "env: " + name + ": " + value +
                                           " names a variable that is not set; export " + *ref);
        value = real;
      }
      std::string pair = name + "=" + value;
      if (auto problem = flag_value_problem(app_, "--env", pair); !problem.empty())
        spec_.fail(kv.first.Mark(), "env: " + problem);
      from_file.push_back(pair);
    }
    run.env.insert(run.env.begin(), from_file.begin(), from_file.end());
  }

  // params, repeat, parallel, sample, seed and objective.
  void sweep_keys(const YAML::Node& root, SweepSpec& sweep) {
    if (auto params = root["params"]; params && !given(app_, "--param")) {
      if (!params.IsMap()) spec_.fail(params.Mark(), "params: expected a map of NAME: values");
      for (const auto& kv : params) {
        std::string name = spec_.scalar(kv.first, "params");
        sweep.params.push_back(name + "=" + spec_.param_values(name, kv.second));
      }
    }
    auto number = [&](const YAML::Node& n, const std::string& key, const std::string& flag,
                      auto& field, long long lo) {
      if (!n) return;
      std::string s = spec_.scalar(n, key);
      char* end = nullptr;
      errno = 0;
      long long v = std::strtoll(s.c_str(), &end, 10);
      if (s.empty() || *end != '\0' || errno != 0 || v < lo)
        spec_.fail(n.Mark(), key + ": invalid value '" + escape_control(s) +
                                 "': expected a whole " + "number >= " + std::to_string(lo));
      if (auto problem = flag_value_problem(app_, flag, s); !problem.empty())
        spec_.fail(n.Mark(), key + ": " + problem);  // the flag's range (--repeat: 1 to 100)
      if (given(app_, flag)) return;
      field = static_cast<std::remove_reference_t<decltype(*field)>>(v);
    };
    number(root["repeat"], "repeat", "--repeat", sweep.repeat, 1);
    number(root["parallel"], "parallel", "--parallel", sweep.parallel, 1);
    number(root["sample"], "sample", "--sample", sweep.sample, 1);
    number(root["seed"], "seed", "--seed", sweep.seed, 0);
    set(root["objective"], "objective", "--objective", sweep.objective);
  }

 private:
  Spec& spec_;
  CLI::App& app_;
};

}  // namespace

std::optional<std::string> env_reference(const std::string& value) {
  if (value.size() < 4 || !value.starts_with("${") || !value.ends_with("}")) return std::nullopt;
  std::string name = value.substr(2, value.size() - 3);
  if (std::isdigit(static_cast<unsigned char>(name[0]))) return std::nullopt;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return std::nullopt;
  return name;
}

bool env_needs_reference(const std::string& name, const std::string& value) {
  return redact_env_value(name, value) != value;
}

void apply_spec_file(const std::string& path, CLI::App& app, RunFlags& run, SweepSpec* sweep) {
  Spec spec(path);
  std::string text = value_or_throw(read_input_file(path, "spec file", 1 << 20));
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {  // yaml-cpp's own guard, at 2000 levels
    spec.fail(e.mark, json_depth_words());
  } catch (const YAML::Exception& e) {
    spec.fail(e.mark, e.msg);
  }
  spec.check_depth(root);
  if (!root.IsMap()) spec.fail(root.Mark(), "expected a map of keys (name, gpu, command, ...)");
  std::set<std::string> keys = {"name",         "gpu",    "resources", "caps",    "env",
                                "workdir",      "image",  "backend",   "command", "throughput",
                                "metric_regex", "warmup", "log_limit", "loader",  "tf32"};
  if (sweep) keys.insert({"params", "objective", "repeat", "parallel", "sample", "seed"});
  spec.check_keys(root, keys, sweep ? "" : " (a job spec; params and the like are for sweep -f)");

  SpecReader reader(spec, app);
  reader.run_keys(root, run, sweep);
  if (sweep) reader.sweep_keys(root, *sweep);
}

std::string sweep_spec_yaml(const RunFlags& run, const SweepSpec& sweep) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  if (!run.name.empty()) out << YAML::Key << "name" << YAML::Value << run.name;
  if (run.gpu != "none" || !run.nodes.empty()) {
    out << YAML::Key << "resources" << YAML::Value << YAML::BeginMap;
    if (run.gpu != "none") out << YAML::Key << "gpu" << YAML::Value << run.gpu;
    if (!run.nodes.empty()) out << YAML::Key << "nodes" << YAML::Value << run.nodes;
    out << YAML::EndMap;
  }
  out << YAML::Key << "caps" << YAML::Value << YAML::BeginMap;
  if (!run.max_cost.empty()) out << YAML::Key << "max_cost" << YAML::Value << run.max_cost;
  if (!run.timeout.empty()) out << YAML::Key << "timeout" << YAML::Value << run.timeout;
  out << YAML::Key << "grace" << YAML::Value << run.grace;
  if (!sweep.budget.empty()) out << YAML::Key << "budget" << YAML::Value << sweep.budget;
  out << YAML::EndMap;
  if (!run.env.empty()) {
    out << YAML::Key << "env" << YAML::Value << YAML::BeginMap;
    for (const auto& kv : run.env) {
      auto eq = kv.find('=');
      std::string name = kv.substr(0, eq);
      std::string value = eq == std::string::npos ? "" : kv.substr(eq + 1);
      // A secret is never written to a file nodus makes: a reference to the variable instead.
      if (env_needs_reference(name, value)) value = "${" + name + "}";
      out << YAML::Key << name << YAML::Value << value;
    }
    out << YAML::EndMap;
  }
  if (!run.workdir.empty()) out << YAML::Key << "workdir" << YAML::Value << run.workdir;
  if (!run.image.empty()) out << YAML::Key << "image" << YAML::Value << run.image;
  if (!run.backend.empty()) out << YAML::Key << "backend" << YAML::Value << run.backend;
  if (run.throughput != "samples_per_sec")
    out << YAML::Key << "throughput" << YAML::Value << run.throughput;
  if (run.warmup != "5s") out << YAML::Key << "warmup" << YAML::Value << run.warmup;
  if (run.log_limit != "1G") out << YAML::Key << "log_limit" << YAML::Value << run.log_limit;
  if (!run.loader.empty()) {
    out << YAML::Key << "loader" << YAML::Value << YAML::BeginSeq;
    for (const auto& k : run.loader) out << YAML::DoubleQuoted << k;
    out << YAML::EndSeq;
  }
  if (run.tf32) out << YAML::Key << "tf32" << YAML::Value << true;
  if (!run.metric_regex.empty()) {
    out << YAML::Key << "metric_regex" << YAML::Value << YAML::BeginSeq;
    for (const auto& r : run.metric_regex) out << YAML::DoubleQuoted << r;
    out << YAML::EndSeq;
  }
  out << YAML::Key << "params" << YAML::Value << YAML::BeginMap;
  for (const auto& p : sweep.params) {
    auto eq = p.find('=');
    // The values as typed, ranges included: the file plans exactly the command line's cells.
    out << YAML::Key << p.substr(0, eq) << YAML::Value << YAML::DoubleQuoted
        << (eq == std::string::npos ? "" : p.substr(eq + 1));
  }
  out << YAML::EndMap;
  if (!sweep.objective.empty()) out << YAML::Key << "objective" << YAML::Value << sweep.objective;
  if (sweep.repeat && *sweep.repeat > 1)
    out << YAML::Key << "repeat" << YAML::Value << *sweep.repeat;
  if (sweep.parallel && *sweep.parallel > 0)
    out << YAML::Key << "parallel" << YAML::Value << *sweep.parallel;
  if (sweep.sample && *sweep.sample > 0) {
    out << YAML::Key << "sample" << YAML::Value << *sweep.sample;
    out << YAML::Key << "seed" << YAML::Value << sweep.seed.value_or(1);
  }
  out << YAML::Key << "command" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& a : run.command) out << YAML::DoubleQuoted << a;
  out << YAML::EndSeq;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace nodus::cli
