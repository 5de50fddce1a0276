#include "core/secret.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/curl_api.h"

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

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `name` with its %XX escapes decoded, so that "api%5Fkey" is judged as "api_key".
std::string percent_decoded(std::string_view name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    int high = i + 2 < name.size() && name[i] == '%' ? hex_digit(name[i + 1]) : -1;
    int low = high >= 0 ? hex_digit(name[i + 2]) : -1;
    if (low >= 0) {
      out += static_cast<char>(high * 16 + low);
      i += 2;
    } else {
      out += name[i];
    }
  }
  return out;
}

// "token=xyz" -> "token=<redacted>"; any other value through redact_urls, since it may be a URL
// of its own (?next=https://u:p@h/), and a piece without '=' as it is.
std::string redact_param(std::string_view pair) {
  size_t eq = pair.find('=');
  // An empty value hides nothing; redacting it anyway would double the marker of a URL redacted
  // before, which ends where its "<redacted>" begins ("?token=" + "<redacted>").
  if (eq == std::string_view::npos || eq + 1 == pair.size()) return std::string(pair);
  if (is_secret_name(percent_decoded(pair.substr(0, eq))))
    return std::string(pair.substr(0, eq + 1)) + std::string(kRedacted);
  return std::string(pair.substr(0, eq + 1)) + redact_urls(pair.substr(eq + 1));
}

// The pieces of `text` between any of `separators`, each through redact_param, the separators
// kept: redact_params("a=1&token=xyz", "&") is "a=1&token=<redacted>".
std::string redact_params(std::string_view text, std::string_view separators) {
  std::string out;
  size_t start = 0;
  while (true) {
    size_t end = text.find_first_of(separators, start);
    out += redact_param(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    out += text[end];
    start = end + 1;
  }
  return out;
}

// One URL from its scheme to its end, redacted without a parser, for when libcurl cannot be
// loaded or refuses the URL (a password holding an unencoded '/', '?' or '#', the several hosts
// of "postgres://u:p@h1,h2/db", a bad port). Nothing then says where its parts lie, so this errs
// toward redacting, never toward showing a credential: the userinfo runs to the span's last '@'
// (stopping at the first '/', '?' or '#', as curl does and the old hand parser did, would show
// the "w" of "https://u:p#w@h/"); what precedes its first ':' stays only when it cannot be a path
// or a query; and every name=value piece after it, in the path, query or fragment, split at
// '?', '#', '&' and ';', has its value redacted when the name is secret.
std::string redact_conservatively(std::string_view url, size_t authority) {
  std::string out(url.substr(0, authority));
  std::string_view rest = url.substr(authority);
  if (size_t at = rest.rfind('@'); at != std::string_view::npos) {
    std::string_view userinfo = rest.substr(0, at);
    size_t colon = userinfo.find(':');
    if (colon != std::string_view::npos &&
        userinfo.substr(0, colon).find_first_of("/?#&=;") == std::string_view::npos)
      out += userinfo.substr(0, colon + 1);
    out += kRedacted;
    rest = rest.substr(at);
  }
  out += redact_params(rest, "?#&;");
  return out;
}

// A URL as libcurl's URL API parsed it: its parts as curl holds them (not decoded, so they are
// the URL's own bytes).
class CurlUrl {
 public:
  explicit CurlUrl(const curl::Api& api) : api_(api), handle_(api.url()) {}
  ~CurlUrl() {
    if (handle_ != nullptr) api_.url_cleanup(handle_);
  }
  CurlUrl(const CurlUrl&) = delete;
  CurlUrl& operator=(const CurlUrl&) = delete;

  // PATH_AS_IS: dot segments stay; NON_SUPPORT_SCHEME: s3://, postgres://, redis:// parse too.
  bool parse(const std::string& url) {
    return handle_ != nullptr &&
           api_.url_set(handle_, CURLUPART_URL, url.c_str(),
                        CURLU_NON_SUPPORT_SCHEME | CURLU_PATH_AS_IS) == CURLUE_OK;
  }
  // The part, or nullopt when the URL has none; any other failure sets failed().
  std::optional<std::string> get(CURLUPart part) {
    char* text = nullptr;
    CURLUcode rc = api_.url_get(handle_, part, &text, 0);
    if (rc != CURLUE_OK) {
      if (rc != CURLUE_NO_USER && rc != CURLUE_NO_PASSWORD && rc != CURLUE_NO_OPTIONS &&
          rc != CURLUE_NO_QUERY && rc != CURLUE_NO_FRAGMENT)
        failed_ = true;
      return std::nullopt;
    }
    std::string part_text = text != nullptr ? text : "";
    api_.free(text);
    return part_text;
  }
  bool failed() const { return failed_; }

 private:
  const curl::Api& api_;
  CURLU* handle_;
  bool failed_ = false;
};

// One URL from its scheme to its end (`authority`: where "//" ends), parsed by libcurl, redacted
// in its own text: the password of its userinfo (all of a userinfo without one) and the values of
// secret-named query and fragment parameters. Nothing else changes, so a URL without credentials
// comes back byte for byte (curl's own rendering would lowercase the scheme, add a '/' and
// re-encode). nullopt when curl refuses the URL or its parts are not where the text has them.
std::optional<std::string> redact_parsed(const curl::Api& api, std::string_view url,
                                         size_t authority) {
  if (url.find('\0') != std::string_view::npos) return std::nullopt;  // curl would see less
  CurlUrl parsed(api);
  if (!parsed.parse(std::string(url))) return std::nullopt;
  auto user = parsed.get(CURLUPART_USER);
  auto password = parsed.get(CURLUPART_PASSWORD);
  auto options = parsed.get(CURLUPART_OPTIONS);  // imap://user;AUTH=*:pass@h
  auto query = parsed.get(CURLUPART_QUERY);
  auto fragment = parsed.get(CURLUPART_FRAGMENT);
  if (parsed.failed()) return std::nullopt;

  std::string out;
  size_t host = authority;  // where the host (or the '@' before it) begins
  if (user || password || options) {
    // user[;options][:password]@, the '@' where curl's lengths put it.
    size_t at = authority + (user ? user->size() : 0) + (options ? options->size() + 1 : 0) +
                (password ? password->size() + 1 : 0);
    if (at >= url.size() || url[at] != '@') return std::nullopt;
    if (password) {
      size_t colon = at - password->size() - 1;
      if (url[colon] != ':' || url.substr(colon + 1, password->size()) != *password)
        return std::nullopt;
      out += url.substr(0, colon + 1);
    } else {
      out += url.substr(0, authority);
    }
    out += kRedacted;
    host = at;
  } else {
    out += url.substr(0, authority);
  }

  // After the userinfo curl's query starts at the first '?' and its fragment at the first '#'.
  std::string_view rest = url.substr(host);
  size_t hash = rest.find('#');
  size_t mark = rest.substr(0, hash).find('?');
  std::string_view query_text, fragment_text;
  if (mark != std::string_view::npos)
    query_text = rest.substr(mark + 1, hash == std::string_view::npos ? hash : hash - mark - 1);
  if (hash != std::string_view::npos) fragment_text = rest.substr(hash + 1);
  if (query.value_or("") != query_text || fragment.value_or("") != fragment_text)
    return std::nullopt;
  out += rest.substr(0, mark != std::string_view::npos ? mark : hash);
  if (mark != std::string_view::npos) out += '?' + redact_params(query_text, "&");
  if (hash != std::string_view::npos) out += '#' + redact_params(fragment_text, "&");
  return out;
}

// One URL: parsed by libcurl when it loads and accepts the URL, else redact_conservatively. The
// fallback is not "leave it as typed": a span curl refuses still looks like scheme://... and may
// hold a password (one with an unencoded '#' is exactly what curl refuses), so failing to parse
// must never be the reason a credential is stored or printed.
std::string redact_one(const curl::Api* api, std::string_view url, size_t authority) {
  if (api != nullptr)
    if (auto redacted = redact_parsed(*api, url, authority)) return *redacted;
  return redact_conservatively(url, authority);
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

// TOKENS and TOKENIZER name counts and text splitters (--max-tokens 2000, TOKENIZERS_PARALLELISM),
// not credentials: TOKEN makes a name secret only where it starts neither. `name` is in upper
// case with its separators, so that TOKEN_S3_BUCKET still names a token.
bool holds_secret_token_word(std::string_view name) {
  for (size_t at = name.find("TOKEN"); at != std::string_view::npos;
       at = name.find("TOKEN", at + 1)) {
    std::string_view after = name.substr(at + 5);
    if (!after.starts_with('S') && !after.starts_with("IZ")) return true;
  }
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

bool header_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; }
bool blank(char c) { return c == ' ' || c == '\t'; }
// A header's value runs to the end of its line, or of the quotes the text put it in.
bool header_value_end(char c) {
  return c == '\n' || c == '\r' || c == '"' || c == '\'' || c == '`';
}

// True for an HTTP header that carries a credential: Authorization and Cookie by name, and every
// dashed name is_secret_name (Proxy-Authorization, X-Api-Key, X-Auth-Token, Private-Token). A
// single other word before ':' is not taken for a header: "{token: 3}" in a script is no header.
bool credential_header(std::string_view name) {
  std::string n = upper(name);
  if (n == "AUTHORIZATION" || n == "COOKIE") return true;
  return n.find('-') != std::string::npos && is_secret_name(name);
}

// The name of the credential header whose ':' is at `colon` in `value`, read back no further
// than `done`; empty when none ends there (a plain word, "a_Cookie:", a URL's "scheme://").
std::string_view credential_header_at(std::string_view value, size_t colon, size_t done) {
  size_t start = colon;
  while (start > done && header_name_char(value[start - 1])) --start;
  std::string_view name = value.substr(start, colon - start);
  if (name.empty() || !std::isalpha(static_cast<unsigned char>(name[0])) ||
      (start > 0 && value[start - 1] == '_') || value.substr(colon + 1).starts_with("//") ||
      !credential_header(name))
    return {};
  return name;
}

// Where the credential starts in a header's `value`: after an Authorization value's scheme
// ("Bearer ", "Basic "), which stays so that the kind of credential is still told; else at once.
size_t credential_start(std::string_view name, std::string_view value) {
  if (!upper(name).ends_with("AUTHORIZATION")) return 0;
  size_t scheme = 0;
  while (scheme < value.size() && header_name_char(value[scheme])) ++scheme;
  size_t gap = scheme;
  while (gap < value.size() && blank(value[gap])) ++gap;
  return scheme > 0 && gap > scheme && gap < value.size() ? gap : 0;
}

// `value` with the value of every credential header in it ("Name: value", as curl -H takes
// one) replaced: "Authorization: Bearer <redacted>", "X-Api-Key: <redacted>".
std::string redact_headers(std::string_view value) {
  std::string out;
  size_t done = 0;
  for (size_t colon = value.find(':'); colon != std::string_view::npos;
       colon = value.find(':', colon + 1)) {
    std::string_view name = colon < done ? "" : credential_header_at(value, colon, done);
    if (name.empty()) continue;
    size_t begin = colon + 1;
    while (begin < value.size() && blank(value[begin])) ++begin;
    size_t end = begin;
    while (end < value.size() && !header_value_end(value[end])) ++end;
    begin += credential_start(name, value.substr(begin, end - begin));
    if (begin == end || value.substr(begin).starts_with(kRedacted)) continue;
    out += value.substr(done, begin - done);
    out += kRedacted;
    done = end;
  }
  out += value.substr(done);
  return out;
}

// A token that its issuer's prefix gives away, whatever it is called: the prefix, then a body of
// letters and digits (and `extra`) between min_body and max_body characters long.
struct TokenShape {
  std::string_view prefix;
  size_t min_body;
  size_t max_body = std::string_view::npos;
  std::string_view extra = "";
  bool upper_only = false;  // no lowercase in the body (AWS key ids)
  bool mixed = false;       // an upper, a lower and a digit: random, not words ("sk-learn-...")
};

constexpr TokenShape kTokenShapes[] = {
    // GitHub: classic personal, OAuth, user-to-server, server-to-server and refresh tokens.
    {"ghp_", 20},
    {"gho_", 20},
    {"ghu_", 20},
    {"ghs_", 20},
    {"ghr_", 20},
    {"github_pat_", 20, std::string_view::npos, "_"},
    // Slack: bot, user, app, refresh and session tokens.
    {"xoxb-", 10, std::string_view::npos, "-"},
    {"xoxp-", 10, std::string_view::npos, "-"},
    {"xoxa-", 10, std::string_view::npos, "-"},
    {"xoxr-", 10, std::string_view::npos, "-"},
    {"xoxs-", 10, std::string_view::npos, "-"},
    // AWS access key ids, long-lived and temporary.
    {"AKIA", 16, 16, "", true},
    {"ASIA", 16, 16, "", true},
    // Hugging Face, and OpenAI (sk-proj- and the like included).
    {"hf_", 30},
    {"sk-", 20, std::string_view::npos, "-_", false, true},
};

bool fits(const TokenShape& shape, std::string_view word) {
  if (!word.starts_with(shape.prefix)) return false;
  std::string_view body = word.substr(shape.prefix.size());
  if (body.size() < shape.min_body || body.size() > shape.max_body) return false;
  bool has_upper = false, has_lower = false, has_digit = false;
  for (char c : body) {
    unsigned char u = static_cast<unsigned char>(c);
    if (!std::isalnum(u) && shape.extra.find(c) == std::string_view::npos) return false;
    has_upper |= std::isupper(u) != 0;
    has_lower |= std::islower(u) != 0;
    has_digit |= std::isdigit(u) != 0;
  }
  if (shape.upper_only && has_lower) return false;
  return !shape.mixed || (has_upper && has_lower && has_digit);
}

// `value` with every word (a run of letters, digits, '_' and '-') that has a known token's shape
// replaced. Whole words only, so that "task-..." never reads as "sk-...".
std::string redact_token_shapes(std::string_view value) {
  std::string out;
  for (size_t at = 0; at < value.size();) {
    size_t end = at;
    while (end < value.size() && base64url_char(value[end])) ++end;
    std::string_view word = value.substr(at, end - at);
    bool token = std::any_of(std::begin(kTokenShapes), std::end(kTokenShapes),
                             [&](const TokenShape& shape) { return fits(shape, word); });
    out += token ? kRedacted : word;
    if (end < value.size()) out += value[end];
    at = end + 1;
  }
  return out;
}

// The name of the argument "name=value", "-name=value", "--name=value" or "--name": what follows
// at most two dashes, up to any '=', when that is a word of letters, digits, '_', '.' and '-'
// starting with a letter or '_'; else empty ("---x", "a b=c", "x==y" and "=v" have none).
std::string_view argument_name(std::string_view arg) {
  size_t dashes = std::min(arg.find_first_not_of('-'), arg.size());
  if (dashes > 2) return {};
  size_t eq = arg.find('=');  // never among the dashes
  std::string_view name = arg.substr(dashes, eq == std::string_view::npos ? eq : eq - dashes);
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    return {};
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') return {};
  return name;
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
    if (word == "TOKEN" ? holds_secret_token_word(all) : squeezed.find(word) != std::string::npos)
      return true;
  for (const auto& t : tokens(name))
    if (secret_token(t)) return true;
  return false;
}

std::string redact_urls(std::string_view value) {
  std::string out;
  size_t done = 0;
  const curl::Api* api = nullptr;
  bool curl_tried = false;
  for (size_t sep = value.find("://"); sep != std::string_view::npos;
       sep = value.find("://", sep + 3)) {
    if (sep < done) continue;
    size_t start = sep;
    while (start > done && scheme_char(value[start - 1])) --start;
    if (start == sep || !std::isalpha(static_cast<unsigned char>(value[start]))) continue;
    size_t end = sep + 3;
    while (end < value.size() && !url_end(value[end])) ++end;
    // libcurl is loaded only now, for the first text that holds a URL (most hold none); without
    // it every URL is redacted conservatively.
    if (!curl_tried) {
      curl_tried = true;
      if (auto loaded = curl::load(); loaded.ok()) api = *loaded;
    }
    out += value.substr(done, start - done);
    out += redact_one(api, value.substr(start, end - start), sep + 3 - start);
    done = end;
  }
  out += value.substr(done);
  return out;
}

std::string redact_text(std::string_view text) {
  std::string in = redact_value(text);
  std::string out;
  size_t done = 0;
  for (size_t eq = in.find('='); eq != std::string::npos; eq = in.find('=', eq + 1)) {
    if (eq < done) continue;
    // The name: the word before '=' ("--api-key", "DB_PASS", a URL's "token"), without dashes.
    size_t start = eq;
    while (start > done && (std::isalnum(static_cast<unsigned char>(in[start - 1])) ||
                            in[start - 1] == '_' || in[start - 1] == '-' || in[start - 1] == '.'))
      --start;
    std::string_view name = std::string_view(in).substr(start, eq - start);
    name.remove_prefix(std::min(name.find_first_not_of('-'), name.size()));
    size_t end = eq + 1;
    while (end < in.size() && !url_end(in[end])) ++end;
    std::string_view value = std::string_view(in).substr(eq + 1, end - eq - 1);
    if (name.empty() || value.empty() || value.starts_with(kRedacted) || !is_secret_name(name))
      continue;
    out += in.substr(done, eq + 1 - done);
    out += kRedacted;
    done = end;
  }
  out += in.substr(done);
  return out;
}

std::vector<std::string> redact_argv(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  out.reserve(argv.size());
  bool value_next = false;  // the previous argument was a secret-named option without "="
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (value_next && !arg.starts_with("--")) {
      out.emplace_back(kRedacted);
      value_next = false;
      continue;
    }
    value_next = false;
    // argv[0] is the program, never an option or an assignment.
    std::string_view name = i == 0 ? std::string_view() : argument_name(arg);
    size_t eq = arg.find('=');
    if (!name.empty() && is_secret_name(name)) {
      // A positional HF_TOKEN=... (env, make, hydra) holds a secret as much as --api-key=... does.
      if (eq != std::string::npos) {
        out.push_back(arg.substr(0, eq + 1) + std::string(kRedacted));
        continue;
      }
      if (arg.starts_with('-')) value_next = true;
    }
    // Free text, a script for sh -c above all, may set NAME=... inside; redact_text finds those.
    out.push_back(i == 0 ? redact_value(arg) : redact_text(arg));
  }
  return out;
}

std::string redact_env_value(std::string_view name, std::string_view value) {
  if (is_secret_name(name)) return std::string(kRedacted);
  return redact_value(value);
}

std::string redact_value(std::string_view value) {
  std::string out = redact_token_shapes(redact_headers(redact_jwts(redact_urls(value))));
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
