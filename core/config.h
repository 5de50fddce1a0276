#pragma once
// Every setting nodus reads from the environment, in one table: key, variable, default, meaning.
// Flags override these; `nodus config` prints the table with the values in force.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace nodus {

struct ConfigKey {
  const char* key;
  const char* env;
  const char* default_value;  // "" when none
  const char* meaning;
  bool secret = false;            // never printed or stored
  const char* choices = nullptr;  // the documented values, space-separated; nullptr: any text
};

const std::vector<ConfigKey>& config_keys();

// The value of a key from its environment variable, else its default ("" when none).
std::string config_get(const std::string& key);
// The value if the variable is set and not empty.
std::optional<std::string> config_env(const std::string& key);
// gpu_queue_after as a duration (store/gpu_queue.h). Throws Fatal naming the value when invalid.
std::chrono::milliseconds gpu_queue_after();

// Throws Fatal (exit 125) for the first variable with documented choices that holds another
// value (NODUS_CGROUP=banana), naming it and the choices. Run and sweep call it before anything
// is stored: read as "not off", such a value would silently mean "on".
void check_config_choices();

// $NODUS_HOME, else $XDG_DATA_HOME/nodus, else ~/.local/share/nodus.
std::string nodus_home();

// True when stdout (or fd) is a terminal and NO_COLOR is unset.
bool use_color(int fd);
bool is_tty(int fd);

}  // namespace nodus
