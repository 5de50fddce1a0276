#pragma once
// The command line, strictly: every option before "--" is known and has a valid, non-empty value
// before anything runs or is stored; a typo gets a one-line error with the nearest real option or
// command. Also the help layout (`nodus run [OPTIONS] -- CMD [ARGS...]`, examples).

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/result.h"

namespace nodus::cli {

// Help: "Usage: nodus run [OPTIONS] -- CMD [ARGS...]" and examples after the options.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* app, std::string name) const override;
};
// Marks `sub` as taking the job's command after its options; shown in its usage line.
void takes_command(CLI::App* sub);
void set_examples(CLI::App* sub, const std::vector<std::string>& lines);

// Validators that parse the value the way the command will, so a bad value fails at parse time
// with the parser's own message. Each also rejects "" (an empty value never means "no cap").
CLI::Validator usd_value();
CLI::Validator duration_value();
// `placeholders`: a value with {NAME} in it passes (sweep --gpu, checked when the sweep plans).
CLI::Validator gpu_value(bool placeholders = false);
CLI::Validator percent_value();
CLI::Validator env_value();
// A container image reference: starts with a letter or digit (never an option such as
// --privileged), then letters, digits and . _ - / : @ only.
CLI::Validator image_value();
CLI::Validator format_value();
// A size (core/parse.h parse_size) of at least min_bytes, or none.
CLI::Validator size_value(uint64_t min_bytes);
inline constexpr uint64_t kMinLogLimit = uint64_t{1} << 20;  // --log-limit: at least 1 MiB
CLI::Validator one_of(std::vector<std::string> allowed);
// A name for a job or sweep: non-empty, valid UTF-8, no control characters, and not the form of
// an id (42 or s3), so an id and a name can never mean two different things.
CLI::Validator name_value();
// --param NAME=VALUES: valid UTF-8 without control characters (the grid parser does the rest).
CLI::Validator param_value();
Result<void> check_name(const std::string& name, const std::string& flag);

// Adds to every option of every subcommand that takes a value: not empty, valid UTF-8.
void harden(CLI::App& app);

// What `flag` of `app` says of `value` (its own validators, those harden() added included):
// the first complaint, "" when the command line would take it. Spec files check their values
// with it, so a file and a flag refuse the same things in the same words.
std::string flag_value_problem(CLI::App& app, const std::string& flag, std::string value);

// Splits argv (without argv[0]) into what CLI11 parses and the job's command: everything after
// the first "--", or for a command-taking subcommand, from its first word that is neither an
// option nor an option's value. Throws Fatal for an unknown subcommand (with the nearest one)
// and for a command given to a subcommand that takes none.
struct CommandLine {
  std::vector<std::string> options;  // for CLI11
  std::vector<std::string> command;  // the job's, verbatim; CLI11 never sees it
  bool has_command = false;
};
CommandLine split_command_line(const CLI::App& app, const std::vector<std::string>& args);

// The one-line message for a CLI11 parse error, naming the subcommand and, for an unknown
// option, the nearest known one ("did you mean --max-cost?").
std::string parse_error_message(CLI::App& app, const CLI::ParseError& e);

// The candidate nearest to `word` by edit distance (a transposition counts 1), or "" when none
// is close enough to be a likely typo.
std::string nearest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace nodus::cli
