#include "core/secret.h"

#include <array>
#include <cctype>
#include <vector>

#include "core/config.h"

namespace nodus {
namespace {

std::string upper(std::string_view s) {
  std::string r(s);
  for (auto& c : r) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return r;
}

// Whole words: long enough that finding them inside a name is not an accident.
constexpr std::array<std::string_view, 14> kContained = {
    "TOKEN",      "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "JWT",       "APIKEY",
    "CREDENTIAL", "AUTH",   "SESSION",  "COOKIE", "PRIVATE",    "SIGNATURE", "ACCESSKEY"};
// Short words: secret only as a token of their own (HF_KEY, DB_PASS, GH_PAT, X-Amz-Sig,
// STRIPE_SK, DB_PW).
constexpr std::array<std::string_view, 7> kTokens = {"KEY", "PASS", "PAT", "SIG",
                                                     "SK",  "PW",   "PWD"};
// Endings that make a token secret when glued to a prefix (PGPASS, MYSQLPWD), and the English
// words with the same ending that are not (COMPASS_DIR, BYPASS_CACHE).
constexpr std::array<std::string_view, 2> kEndings = {"PASS", "PWD"};
constexpr std::array<std::string_view, 5> kEnglishPass = {"COMPASS", "BYPASS", "SURPASS",
                                                          "OVERPASS", "UNDERPASS"};

std::vector<std::string> tokens(std::string_view name) {
  std::vector<std::string> out(1);
  for (size_t i = 0; i < name.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    bool boundary = !std::isalpha(c);
    bool camel = i > 0 && std::isupper(c) && std::islower(static_cast<unsigned char>(name[i - 1]));
    if (boundary || camel) {
      if (!out.back().empty()) out.emplace_back();
      if (boundary) continue;
    }
    out.back() += static_cast<char>(std::toupper(c));
  }
  if (out.back().empty()) out.pop_back();
  return out;
}

bool scheme_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
}
bool url_end(char c) {
  return std::isspace(static_cast<unsigned char>(c)) || c == '"' || c == '\'' || c == '<' ||
         c == '>' || c == '`';
}

// "a=1&token=xyz" -> "a=1&token=<redacted>".
std::string redact_params(std::string_view params) {
  std::string out;
  size_t start = 0;
  while (start <= params.size()) {
    size_t end = params.find('&', start);
    if (end == std::string_view::npos) end = params.size();
    std::string_view pair = params.substr(start, end - start);
    size_t eq = pair.find('=');
    if (eq != std::string_view::npos && is_secret_name(pair.substr(0, eq)))
      out += std::string(pair.substr(0, eq + 1)) + std::string(kRedacted);
    else
      out += pair;
    if (end == params.size()) break;
    out += '&';
    start = end + 1;
  }
  return out;
}

// One URL from its scheme to its end: userinfo and secret parameters redacted.
std::string redact_one(std::string_view url, size_t authority) {
  std::string out(url.substr(0, authority));
  size_t path = url.find_first_of("/?#", authority);
  if (path == std::string_view::npos) path = url.size();
  std::string_view host = url.substr(authority, path - authority);
  if (size_t at = host.rfind('@'); at != std::string_view::npos) {
    std::string_view userinfo = host.substr(0, at);
    size_t colon = userinfo.find(':');
    if (colon == std::string_view::npos)
      out += std::string(kRedacted);
    else
      out += std::string(userinfo.substr(0, colon + 1)) + std::string(kRedacted);
    out += host.substr(at);
  } else {
    out += host;
  }
  std::string_view rest = url.substr(path);
  size_t query = rest.find_first_of("?#");
  out += rest.substr(0, query);
  while (query != std::string_view::npos) {
    size_t next = rest.find('#', query + 1);
    if (rest[query] == '#') next = std::string_view::npos;
    out += rest[query];
    std::string_view part = rest.substr(
        query + 1, next == std::string_view::npos ? std::string_view::npos : next - query - 1);
    out += redact_params(part);
    query = next;
  }
  return out;
}

bool secret_token(const std::string& t) {
  for (std::string_view word : kTokens)
    if (t == word) return true;
  for (std::string_view word : kEnglishPass)
    if (t == word) return false;
  for (std::string_view end : kEndings)
    if (t.size() > end.size() && t.ends_with(end)) return true;
  return false;
}

bool base64url_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
}

// The end of a JWT that starts at `at` ("eyJ" there, not inside a longer base64url run), or npos:
// three non-empty base64url segments joined by '.'.
size_t jwt_end(std::string_view s, size_t at) {
  if (s.substr(at, 3) != "eyJ" || (at > 0 && base64url_char(s[at - 1])))
    return std::string_view::npos;
  size_t end = at;
  for (int segment = 0; segment < 3; ++segment) {
    if (segment > 0) {
      if (end >= s.size() || s[end] != '.') return std::string_view::npos;
      ++end;
    }
    size_t start = end;
    while (end < s.size() && base64url_char(s[end])) ++end;
    // The shortest header is {"alg":"none"} (19 characters encoded): "eyJ.a.b" is no JWT.
    if (end == start || (segment == 0 && end - start < 16)) return std::string_view::npos;
  }
  return end;
}

std::string redact_jwts(std::string_view value) {
  std::string out;
  size_t done = 0;
  for (size_t at = value.find("eyJ"); at != std::string_view::npos;
       at = value.find("eyJ", at + 1)) {
    if (at < done) continue;
    size_t end = jwt_end(value, at);
    if (end == std::string_view::npos) continue;
    out += value.substr(done, at - done);
    out += kRedacted;
    done = end;
  }
  out += value.substr(done);
  return out;
}

}  // namespace

bool is_secret_name(std::string_view name) {
  // The shell's working folders, set in every environment: paths, not passwords.
  if (name == "PWD" || name == "OLDPWD") return false;
  std::string all = upper(name);
  std::string squeezed;  // API_KEY and ACCESS-KEY match APIKEY and ACCESSKEY
  for (char c : all)
    if (std::isalnum(static_cast<unsigned char>(c))) squeezed += c;
  for (std::string_view word : kContained)
    if (squeezed.find(word) != std::string::npos) return true;
  for (const auto& t : tokens(name))
    if (secret_token(t)) return true;
  return false;
}

std::string redact_urls(std::string_view value) {
  std::string out;
  size_t done = 0;
  for (size_t sep = value.find("://"); sep != std::string_view::npos;
       sep = value.find("://", sep + 3)) {
    if (sep < done) continue;
    size_t start = sep;
    while (start > done && scheme_char(value[start - 1])) --start;
    if (start == sep || !std::isalpha(static_cast<unsigned char>(value[start]))) continue;
    size_t end = sep + 3;
    while (end < value.size() && !url_end(value[end])) ++end;
    out += value.substr(done, start - done);
    out += redact_one(value.substr(start, end - start), sep + 3 - start);
    done = end;
  }
  out += value.substr(done);
  return out;
}

std::vector<std::string> redact_argv(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  bool value_next = false;  // the previous argument was a secret-named option without "="
  for (const auto& arg : argv) {
    if (value_next && !arg.starts_with("--")) {
      out.emplace_back(kRedacted);
      value_next = false;
      continue;
    }
    value_next = false;
    // Options only (a leading '-'): a positional "a=b" is data, and argv[0] is the program.
    size_t dashes = arg.find_first_not_of('-');
    if (&arg != &argv.front() && dashes != std::string::npos && dashes > 0 && dashes <= 2) {
      size_t eq = arg.find('=');
      std::string_view name = std::string_view(arg).substr(
          dashes, eq == std::string::npos ? std::string::npos : eq - dashes);
      if (is_secret_name(name)) {
        if (eq == std::string::npos) {
          out.push_back(arg);
          value_next = true;
        } else {
          out.push_back(arg.substr(0, eq + 1) + std::string(kRedacted));
        }
        continue;
      }
    }
    out.push_back(redact_value(arg));
  }
  return out;
}

std::string redact_env_value(std::string_view name, std::string_view value) {
  if (is_secret_name(name)) return std::string(kRedacted);
  return redact_value(value);
}

std::string redact_value(std::string_view value) {
  std::string out = redact_jwts(redact_urls(value));
  // The token nodus itself holds, whatever its form (a JWT is caught above; a site may hand out
  // other tokens). Short values are left alone: "SLURM_JWT=x" must not redact every x.
  if (auto token = config_env("slurm_jwt"); token && token->size() >= 8)
    for (size_t at = out.find(*token); at != std::string::npos;
         at = out.find(*token, at + kRedacted.size()))
      out.replace(at, token->size(), kRedacted);
  return out;
}

bool is_redacted(std::string_view value) { return value.find(kRedacted) != std::string_view::npos; }

}  // namespace nodus
