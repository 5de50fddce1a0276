#include "cli/args.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <stdexcept>

#include "core/error.h"
#include "core/parse.h"
#include "core/table.h"
#include "core/text.h"

namespace nodus::cli {
namespace {

std::set<const CLI::App*>& command_takers() {
  static std::set<const CLI::App*> apps;
  return apps;
}

// "--max-cost: invalid value ''..." -> "invalid value ''...": CLI11 puts the option name first.
std::string without_flag(const std::string& message) {
  if (message.rfind(": ", 0) == 0) return message.substr(2);  // parsed with flag ""
  if (!message.empty() && message[0] == '-') {
    auto colon = message.find(": ");
    if (colon != std::string::npos) return message.substr(colon + 2);
  }
  return message;
}

template <typename Parse>
CLI::Validator parsed_by(Parse parse) {
  return CLI::Validator(
      [parse](std::string& value) -> std::string {
        auto r = parse(value);
        return r.ok() ? std::string() : without_flag(r.error().message);
      },
      "", "");
}

std::string strip_dashes(const std::string& s) {
  size_t i = s.find_first_not_of('-');
  return i == std::string::npos ? "" : s.substr(i);
}

bool is_option_token(const std::string& t) {
  if (t.size() < 2 || t[0] != '-') return false;
  // "-5" and "-0.5" are values (a negative --max-cost is rejected by its parser, not here).
  return !(std::isdigit(static_cast<unsigned char>(t[1])) || t[1] == '.');
}

// The option named by token ("--max-cost=5" -> --max-cost, "-d" -> -d) in sub or its parent.
const CLI::Option* find_option(const CLI::App& sub, const std::string& token) {
  std::string name = token.substr(0, token.find('='));
  if (name.size() > 2 && name[1] != '-') name = name.substr(0, 2);  // "-wDIR"
  const CLI::Option* opt = sub.get_option_no_throw(name);
  if (!opt && sub.get_parent()) opt = sub.get_parent()->get_option_no_throw(name);
  return opt;
}

// Flags (--dry-run, --no-wait) expect no value: the next token is not theirs.
bool takes_value(const CLI::Option* opt) {
  return opt && opt->get_type_size_max() > 0 && opt->get_expected_max() > 0;
}

std::vector<std::string> option_names(const CLI::App& sub) {
  std::vector<std::string> out;
  for (const CLI::Option* opt : sub.get_options()) {
    for (const auto& l : opt->get_lnames()) out.push_back("--" + l);
    for (const auto& s : opt->get_snames()) out.push_back("-" + s);
  }
  return out;
}

std::vector<std::string> visible_subcommands(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; }))
    if (!s->get_group().empty()) out.push_back(s->get_name());
  return out;
}

}  // namespace

std::string HelpFormatter::make_usage(const CLI::App* app, std::string name) const {
  std::string path = app->get_name();
  for (const CLI::App* p = app->get_parent(); p; p = p->get_parent())
    path = (p->get_parent() ? p->get_name() : std::string("nodus")) + " " + path;
  if (!app->get_parent()) path = "nodus";
  std::string out = "Usage: " + path;
  bool has_options =
      !app->get_options([](const CLI::Option* o) { return o->nonpositional(); }).empty();
  if (has_options) out += " [OPTIONS]";
  for (const CLI::Option* o :
       app->get_options([](const CLI::Option* o) { return o->get_positional(); }))
    out += " " + (o->get_type_name().empty() ? o->get_name(true, false) : o->get_type_name()) +
           (o->get_expected_max() > 1 ? "..." : "");
  if (command_takers().count(app)) out += " -- CMD [ARGS...]";
  if (!app->get_parent()) out += " COMMAND";
  (void)name;
  return out + "\n";
}

void takes_command(CLI::App* sub) { command_takers().insert(sub); }

void set_examples(CLI::App* sub, const std::vector<std::string>& lines) {
  std::string text = "Examples:";
  for (const auto& l : lines) text += "\n  " + l;
  sub->footer(text);
}

CLI::Validator usd_value() {
  return parsed_by([](const std::string& v) { return parse_usd(v, ""); });
}
CLI::Validator duration_value() {
  return parsed_by([](const std::string& v) { return parse_duration(v, ""); });
}
CLI::Validator image_value() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        auto ok = [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ||
                 c == '/' || c == ':' || c == '@';
        };
        if (!v.empty() && std::isalnum(static_cast<unsigned char>(v.front())) &&
            std::all_of(v.begin(), v.end(), ok) && v.size() <= 4096)
          return "";
        return "invalid value '" + escape_control(v) +
               "': expected an image reference (python:3.11, ghcr.io/org/img@sha256:...): a "
               "letter or digit first, then letters, digits and . _ - / : @";
      },
      "", "");
}
CLI::Validator size_value(uint64_t min_bytes) {
  return parsed_by([min_bytes](const std::string& v) { return parse_size(v, "", min_bytes); });
}
CLI::Validator gpu_value(bool placeholders) {
  return parsed_by([placeholders](const std::string& v) -> Result<void> {
    if (placeholders && v.find_first_of("{}") != std::string::npos) return Result<void>();
    auto r = parse_gpu_request(v);
    if (!r.ok()) return r.error();
    return Result<void>();
  });
}
CLI::Validator percent_value() {
  return parsed_by([](const std::string& v) { return parse_percent(v, ""); });
}
CLI::Validator env_value() {
  return parsed_by([](const std::string& v) -> Result<void> {
    auto kv = parse_env_assignment(v);
    if (!kv.ok()) return kv.error();
    return Result<void>();
  });
}
CLI::Validator format_value() {
  return parsed_by([](const std::string& v) { return parse_format(v); });
}
CLI::Validator one_of(std::vector<std::string> allowed) {
  return CLI::Validator(
      [allowed](std::string& v) -> std::string {
        if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return "";
        std::string list;
        for (size_t i = 0; i < allowed.size(); ++i)
          list += (i ? (i + 1 == allowed.size() ? " or " : ", ") : "") + allowed[i];
        return "invalid value '" + escape_control(v) + "': expected " + list;
      },
      "", "");
}

Result<void> check_name(const std::string& name, const std::string& flag) {
  std::string shown = escape_control(name);
  if (name.empty()) return Error::permanent(flag + ": invalid value '': expected a name");
  if (auto problem = text_problem(name); !problem.empty())
    return Error::permanent(flag + ": invalid value '" + shown + "': " + problem);
  bool digits = name.find_first_not_of("0123456789") == std::string::npos;
  bool sweep_id = name.size() > 1 && name[0] == 's' &&
                  name.find_first_not_of("0123456789", 1) == std::string::npos;
  if (digits || sweep_id)
    return Error::permanent(flag + ": invalid value '" + shown +
                            "': looks like a job id (42) or sweep id (s3); pick a name with a "
                            "letter that is not of that form");
  if (name.size() > 200)
    return Error::permanent(flag + ": invalid value: at most 200 bytes (got " +
                            std::to_string(name.size()) + ")");
  // As docker names containers: never an option (-x), a cell (s3:2), a path or a bidi trick.
  auto allowed = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ||
           c == '+';
  };
  if (!std::isalnum(static_cast<unsigned char>(name.front())) ||
      !std::all_of(name.begin(), name.end(), allowed))
    return Error::permanent(flag + ": invalid value '" + shown +
                            "': a name is ASCII letters, digits and . _ + -, starting with a "
                            "letter or digit (resnet-baseline, lr_3e-4)");
  return Result<void>();
}

CLI::Validator name_value() {
  return parsed_by([](const std::string& v) { return check_name(v, ""); });
}

CLI::Validator param_value() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        if (auto problem = text_problem(v); !problem.empty())
          return "invalid value '" + escape_control(v) + "': " + problem;
        return "";
      },
      "", "");
}

void harden(CLI::App& app) {
  CLI::Validator basic(
      [](std::string& v) -> std::string {
        if (v.empty()) return "an empty value is not allowed";
        if (!valid_utf8(v)) return "invalid value '" + escape_control(v) + "': not valid UTF-8";
        return "";
      },
      "", "");
  for (CLI::Option* opt : app.get_options())
    if (takes_value(opt)) opt->check(basic);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) harden(*sub);
}

std::string flag_value_problem(CLI::App& app, const std::string& flag, std::string value) {
  CLI::Option* opt = app.get_option_no_throw(flag);
  if (opt == nullptr) throw std::logic_error("no option " + flag);
  for (int i = 0;; ++i) {
    CLI::Validator* check = nullptr;
    try {
      check = opt->get_validator(i);
    } catch (const CLI::OptionNotFound&) {
      return "";  // past the last one
    }
    std::string problem;
    try {
      problem = (*check)(value);
    } catch (const CLI::ValidationError& e) {
      problem = e.what();
    }
    if (!problem.empty()) return problem;
  }
}

// Without "--", a limit typed after the command (`nodus run python train.py --max-cost 1`) goes
// to the job, and the job runs without it: a script that ignores unknown arguments runs
// uncapped. Refused, naming the flag; "--" before the command passes it to the job on purpose.
void refuse_limits_after_command(const CLI::App& sub, const std::string& name,
                                 const std::vector<std::string>& command) {
  for (const std::string& word : command) {
    const std::string flag = word.substr(0, word.find('='));
    if (flag != "--max-cost" && flag != "--budget" && flag != "--timeout") continue;
    if (!find_option(sub, flag)) continue;
    throw Fatal(name + ": '" + flag + "' comes after the command, so it would go to the job and " +
                "nodus would not apply it; put nodus's flags before the command (nodus " + name +
                " " + flag + " ... -- CMD), or put -- before the command to pass it to the job");
  }
}

CommandLine split_command_line(const CLI::App& app, const std::vector<std::string>& args) {
  CommandLine line;
  auto cut = std::find(args.begin(), args.end(), "--");
  if (cut != args.end()) {
    line.command.assign(cut + 1, args.end());
    line.has_command = true;
  }
  line.options.assign(args.begin(), cut);
  if (line.options.empty())
    throw Fatal("a command is needed, one of: " + [&] {
      std::string s;
      for (const auto& n : visible_subcommands(app)) s += (s.empty() ? "" : ", ") + n;
      return s;
    }() + " (see nodus --help)");
  const std::string& first = line.options[0];
  if (is_option_token(first)) return line;  // --help, --version, or an error for CLI11
  const CLI::App* sub = nullptr;
  try {
    sub = app.get_subcommand(first);
  } catch (const CLI::OptionNotFound&) {
  }
  if (!sub) {
    std::string near = nearest(first, visible_subcommands(app));
    throw Fatal("unknown command '" + escape_control(first) + "'" +
                (near.empty() ? "" : "; did you mean " + near + "?") + " (see nodus --help)");
  }
  bool takes = command_takers().count(sub) > 0;
  if (!takes) {
    if (line.has_command)
      throw Fatal(first + ": takes no command after -- (see nodus " + first + " --help)");
    return line;
  }
  // `nodus run [OPTIONS] CMD [ARGS...]`: the command starts at the first plain word.
  for (size_t i = 1; i < line.options.size(); ++i) {
    const std::string& t = line.options[i];
    if (is_option_token(t)) {
      const CLI::Option* opt = find_option(*sub, t);
      bool attached = t.find('=') != std::string::npos || (t[1] != '-' && t.size() > 2);
      if (takes_value(opt) && !attached) ++i;
      continue;
    }
    if (line.has_command)  // a plain word before "--": part of neither
      return line;         // CLI11 reports it as unexpected
    line.command.assign(line.options.begin() + static_cast<long>(i), line.options.end());
    line.options.resize(i);
    line.has_command = true;
    refuse_limits_after_command(*sub, first, line.command);
    break;
  }
  return line;
}

std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string w = to_lower(strip_dashes(word.substr(0, word.find('='))));
  if (w.size() < 2) return "";  // -z: one letter is too little to guess from
  std::string best;
  size_t best_d = std::string::npos;
  for (const auto& c : candidates) {
    std::string n = to_lower(strip_dashes(c));
    size_t d = edit_distance(w, n);
    // --wait for --no-wait, --max for --max-cost: a part of the real name.
    if (w.size() >= 3 && n.size() > w.size() && n.find(w) != std::string::npos) d = 1;
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  size_t allowed = std::max<size_t>(1, std::min<size_t>(3, w.size() / 3));
  return best_d <= allowed ? best : "";
}

std::string parse_error_message(CLI::App& app, const CLI::ParseError& e) {
  CLI::App* sub = nullptr;
  for (CLI::App* s : app.get_subcommands()) sub = s;  // the parsed one
  std::string where = sub ? sub->get_name() + ": " : "";
  std::string help = sub ? "nodus " + sub->get_name() + " --help" : "nodus --help";
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    std::vector<std::string> extras = app.remaining(true);
    std::string option;
    for (const auto& x : extras)
      if (is_option_token(x)) {
        option = x;
        break;
      }
    if (option.empty()) {
      std::string word = extras.empty() ? std::string("?") : extras.front();
      return where + "unexpected argument '" + escape_control(word) + "'" +
             (sub && command_takers().count(sub) ? "; put the job's command after --" : "") +
             " (see " + help + ")";
    }
    std::string msg = where + "unknown option '" + escape_control(option) + "'";
    std::string near = nearest(option, sub ? option_names(*sub) : option_names(app));
    std::string name = option.substr(0, option.find('='));
    if (sub && near == name) {
      msg += "; options go after the command name (nodus " + sub->get_name() + " " + name + " ...)";
    } else if (!near.empty()) {
      msg += "; did you mean " + near + "?";
    } else {
      for (const CLI::App* other : app.get_subcommands([](const CLI::App*) { return true; }))
        if (other != sub && !other->get_group().empty() && other->get_option_no_throw(name)) {
          msg += "; " + name + " is an option of nodus " + other->get_name();
          break;
        }
    }
    return msg + " (see " + help + ")";
  }
  return where + escape_control(e.what()) + " (see " + help + ")";
}

}  // namespace nodus::cli
