// nodus config: every setting nodus reads from the environment, with the value in force.

#include "cli/args.h"
#include "cli/common.h"
#include "core/config.h"
#include "core/table_fields.h"
#include "http_redact.h"

namespace nodus::cli {
namespace {
struct ConfigCommand {
  std::string format = "table";
  int operator()() const {
    Format f = format_from(format);
    Table t({{"key", "KEY"},
             {"env", "VARIABLE"},
             {"value", "VALUE"},
             {"default", "DEFAULT"},
             {"meaning", "MEANING"}});
    for (const auto& k : config_keys()) {
      std::string value = config_get(k.key);
      if (k.key == std::string("home") && value.empty()) value = nodus_home();
      // A non-secret setting may still hold a URL with credentials (NODUS_PRICES=https://u:p@h).
      if (k.secret && !value.empty())
        value = redact_setting(k.key, value);
      else
        value = redact_urls(value);
      t.add_row({k.key, k.env, value.empty() ? "-" : value,
                 *k.default_value ? k.default_value : "-", k.meaning},
                {{"key", k.key},
                 {"env", k.env},
                 {"value", or_null(value)},
                 {"default", or_null(std::string(k.default_value))},
                 {"meaning", k.meaning}});
    }
    print(t.render(f));
    return 0;
  }
};
}  // namespace

Command add_config(CLI::App& app) {
  auto cmd = std::make_shared<ConfigCommand>();
  CLI::App* sub =
      app.add_subcommand("config", "show the settings nodus reads from the environment");
  set_examples(sub, {"nodus config", "nodus config --format json"});
  add_format_flag(sub, cmd->format);
  return {sub, [cmd] { return (*cmd)(); }};
}

}  // namespace nodus::cli
