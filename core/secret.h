#pragma once
// The one secret policy: which environment names hold secrets and how a value is shown without
// the credentials it carries. Everything nodus stores or prints goes through these; the job itself
// always sees the real values.

#include <string>
#include <string_view>
#include <vector>

namespace nodus {

constexpr std::string_view kRedacted = "<redacted>";

// True for names whose values must never be stored or printed. A name is split into tokens at
// '_', '-', '.', digits and lower-to-upper case changes (DB_PASS -> DB PASS, apiKey -> api Key).
// Secret when any token is KEY, PASS, PAT, SIG, SK, PW or PWD, or ends in PASS or PWD (PGPASS,
// MYSQLPWD; not COMPASS, BYPASS, SURPASS, OVERPASS, UNDERPASS), or the name (without separators)
// contains TOKEN, SECRET, PASSWORD, PASSWD, PASSPHRASE, JWT, APIKEY, ACCESSKEY, CREDENTIAL, AUTH,
// SESSION, COOKIE, PRIVATE or SIGNATURE. Short words count only as whole tokens or endings so
// PATH, KEYBOARD, SIGMA, DISK, PASSES and PASSENGER stay visible; PGPASSFILE (a path) too, and
// TOKENS and TOKENIZER (MAX_TOKENS, --tokenizer: counts and text splitters). The shell's own PWD
// and OLDPWD (exactly those names) are folders, not passwords.
bool is_secret_name(std::string_view name);

// `value` with the credentials of every URL-looking part ("scheme://...") replaced: the password
// of its userinfo (postgres://u:<redacted>@h/db; a userinfo without ':' is replaced whole) and
// the values of secret-named query or fragment parameters (?token=<redacted>). nodus finds the
// URLs; libcurl's URL API (loaded on the first "://") parses each, and the redaction is made in
// the URL's own text, so a URL without credentials comes back byte for byte. A URL curl refuses,
// or any URL when libcurl cannot be loaded, is redacted conservatively (core/secret.cc).
std::string redact_urls(std::string_view value);

// `value` with every credential that can be told from the value alone replaced by kRedacted:
// redact_urls, every JWT in it (three base64url segments joined by '.', the first starting "eyJ",
// the encoding of '{"'), the value of every credential HTTP header ("Authorization: Bearer
// <redacted>", Proxy-Authorization, Cookie, and dashed secret names: "X-Api-Key: <redacted>"; to
// the end of the line or the quotes around it), every word with a well-known token's shape
// (GitHub ghp_/gho_/ghu_/ghs_/ghr_/github_pat_, OpenAI sk-, Slack xoxb-/xoxp-/xoxa-/xoxr-/xoxs-,
// AWS key ids AKIA/ASIA, Hugging Face hf_; core/secret.cc has the lengths) and every occurrence
// of the configured Slurm token (SLURM_JWT, when set, 8 characters or more), so that
// `-e COPY=$SLURM_JWT` or `--header "Bearer eyJ..."` is not kept.
std::string redact_value(std::string_view value);

// What may be printed of free text, an error message above all, which may quote any value the
// user typed: redact_value on the whole text, and the value of every name=value in it whose name
// is_secret_name ("--api-key=<redacted>", "DB_PASS=<redacted>"), up to the next space or quote.
// A value already redacted stays as it is, so redacting twice changes nothing.
std::string redact_text(std::string_view text);

// What may be stored or printed for a command's arguments: the value of every argument
// name=value whose name is_secret_name, option or not ("--password=<redacted>", "-token=...",
// "AWS_SECRET_ACCESS_KEY=<redacted>"), the argument after a secret-named option ("--api-key
// <redacted>", unless it is itself an option "--..."), and redact_text on every other argument
// (redact_value on argv[0], the program). Arguments without credentials are returned unchanged,
// so a command without any stores as typed.
std::vector<std::string> redact_argv(const std::vector<std::string>& argv);

// What may be stored or printed for the environment variable name=value: kRedacted when the
// name looks secret, else redact_value(value).
std::string redact_env_value(std::string_view name, std::string_view value);

// True when `value` was redacted by redact_env_value (it holds kRedacted).
bool is_redacted(std::string_view value);

}  // namespace nodus
