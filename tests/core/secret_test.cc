#include "core/secret.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <string>

namespace nodus {
namespace {

TEST(SecretName, CatchesTheUnionOfBothOldListsAndTheNewWords) {
  for (const char* name : {"HF_TOKEN",
                           "AWS_SECRET_ACCESS_KEY",
                           "DB_PASSWORD",
                           "PASSWD",
                           "JWT",
                           "WANDB_API_KEY",
                           "APIKEY",
                           "AWS_ACCESS_KEY_ID",
                           "SSH_PRIVATE_KEY",
                           "GOOGLE_CREDENTIALS",
                           "AUTH_HEADER",
                           "DB_PASS",
                           "HF_KEY",
                           "OPENAI_KEY",
                           "PASSPHRASE",
                           "PRIVATE",
                           "GH_PAT",
                           "SESSION",
                           "SESSION_ID",
                           "COOKIE",
                           "X-Amz-Signature",
                           "sig",
                           "key",
                           "apiKey",
                           "accessToken",
                           "token",
                           "pat",
                           "MY_PAT_2"})
    EXPECT_TRUE(is_secret_name(name)) << name;
}

TEST(SecretName, LeavesOrdinaryNamesAlone) {
  for (const char* name :
       {"PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "HOME", "KEYBOARD", "SIGMA", "PASSES",
        "CUDA_VISIBLE_DEVICES", "NUM_WORKERS", "PATTERN", "MONKEY", "DATABASE_URL", "lr", "PWD"})
    EXPECT_FALSE(is_secret_name(name)) << name;
}

// Issue 28: the password variables of MySQL, PostgreSQL and Stripe, and their look-alikes.
TEST(SecretName, CatchesPwdPassAndSkNames) {
  for (const char* name : {"MYSQL_PWD", "DB_PWD", "MYSQLPWD", "pwd", "PGPASS", "SMTPPASS",
                           "REDIS_PASS_2", "STRIPE_SK", "stripeSk", "SK", "DB_PW", "LDAP_PW"})
    EXPECT_TRUE(is_secret_name(name)) << name;
}

TEST(SecretName, LeavesTheShellsFoldersAndWordsWithPassOrSkInside) {
  for (const char* name :
       {"PWD", "OLDPWD", "PGPASSFILE", "PASSENGER", "PASSES", "PASSTHROUGH", "COMPASS_DIR",
        "BYPASS_CACHE", "DISK", "TASK_ID", "MASK", "SKIP", "POWER", "PWM"})
    EXPECT_FALSE(is_secret_name(name)) << name;
}

TEST(RedactUrls, ReplacesUserinfoPasswordsAndSecretParameters) {
  EXPECT_EQ(redact_urls("postgres://u:SECRET@h/db"), "postgres://u:<redacted>@h/db");
  EXPECT_EQ(redact_urls("https://ghp_abc@github.com/x.git"), "https://<redacted>@github.com/x.git");
  EXPECT_EQ(redact_urls("https://h/p?a=1&token=xyz#access_token=q"),
            "https://h/p?a=1&token=<redacted>#access_token=<redacted>");
  EXPECT_EQ(redact_urls("a=redis://:pw@h:6379/0 b=mysql://me:pw2@db"),
            "a=redis://:<redacted>@h:6379/0 b=mysql://me:<redacted>@db");
  EXPECT_EQ(redact_urls("no urls here: user@host"), "no urls here: user@host");
  EXPECT_EQ(redact_urls("https://example.com/a@b"), "https://example.com/a@b");
  EXPECT_EQ(redact_urls("://x"), "://x");
}

// Issue 28: URLs are parsed by libcurl's URL API: where the userinfo, query and fragment lie.
TEST(RedactUrls, CurlFindsThePartsOfHardUrls) {
  EXPECT_EQ(redact_urls("https://u:p@[::1]:8080/x?token=a"),
            "https://u:<redacted>@[::1]:8080/x?token=<redacted>");
  EXPECT_EQ(redact_urls("https://u%40x:p%3Aw@h/"), "https://u%40x:<redacted>@h/");
  EXPECT_EQ(redact_urls("https://h/x?email=a@b&token=t"), "https://h/x?email=a@b&token=<redacted>");
  EXPECT_EQ(redact_urls("https://h?email=a@b&token=t"), "https://h?email=a@b&token=<redacted>");
  EXPECT_EQ(redact_urls("s3://key:secret@bucket/x"), "s3://key:<redacted>@bucket/x");
  EXPECT_EQ(redact_urls("postgres://u:p@db:5432/x?password=p"),
            "postgres://u:<redacted>@db:5432/x?password=<redacted>");
  EXPECT_EQ(redact_urls("imap://user;AUTH=*:pass@h/"), "imap://user;AUTH=*:<redacted>@h/");
  EXPECT_EQ(redact_urls("https://u:@h"), "https://u:<redacted>@h");
  EXPECT_EQ(redact_urls("https://u:p:q@h"), "https://u:<redacted>@h");
  // A parameter's name is judged decoded: api%5Fkey is api_key.
  EXPECT_EQ(redact_urls("https://h/x?api%5Fkey=k&X-Amz-Signature=s"),
            "https://h/x?api%5Fkey=<redacted>&X-Amz-Signature=<redacted>");
  // A URL inside a parameter's value is one too (the span ran to the end, so it was not found).
  EXPECT_EQ(redact_urls("https://h/login?next=https://u:p@x/y?sig=s&n=1"),
            "https://h/login?next=https://u:<redacted>@x/y?sig=<redacted>&n=1");
}

// What curl refuses to parse is redacted conservatively: never a credential shown. The old hand
// parser ended the userinfo at the first '/', '?' or '#' and showed "p#w" whole.
TEST(RedactUrls, WhatCurlRefusesIsRedactedConservatively) {
  EXPECT_EQ(redact_urls("https://u:p#w@h/x"), "https://u:<redacted>@h/x");
  EXPECT_EQ(redact_urls("https://u:p?w@h/x"), "https://u:<redacted>@h/x");
  EXPECT_EQ(redact_urls("https://u:p/w@h/x?sig=s"), "https://u:<redacted>@h/x?sig=<redacted>");
  EXPECT_EQ(redact_urls("postgres://u:p@h1,h2/db?sslpassword=z"),
            "postgres://u:<redacted>@h1,h2/db?sslpassword=<redacted>");
  EXPECT_EQ(redact_urls("mongodb://u:p@h1:27017,h2:27017/db"),
            "mongodb://u:<redacted>@h1:27017,h2:27017/db");
  EXPECT_EQ(redact_urls("https://a@b@h/"), "https://<redacted>@h/");
  // A bad port: the '@' of the query may be taken for the userinfo's, but the token stays hidden.
  std::string odd = redact_urls("https://h:bad/x?email=a@b&token=t");
  EXPECT_EQ(odd.find("token=t"), std::string::npos) << odd;
  EXPECT_TRUE(is_redacted(odd)) << odd;
}

// Redaction happens in the URL's own text: curl's rendering (a lowercased scheme, an added '/',
// dot segments resolved, re-encoding) never reaches the output.
TEST(RedactUrls, AUrlComesBackByteForByteButForItsCredentials) {
  for (const char* url : {"HTTPS://Host/a/../b?x=1#f", "https://h", "https://h/%7Eu?q=a%20b#",
                          "s3://bucket/a/./b", "https://h/x?"})
    EXPECT_EQ(redact_urls(url), url) << url;
  EXPECT_EQ(redact_urls("HTTPS://Host/a/../b?x=1&token=t#f"),
            "HTTPS://Host/a/../b?x=1&token=<redacted>#f");
  EXPECT_EQ(redact_urls("HTTPS://U:P@Host"), "HTTPS://U:<redacted>@Host");
  EXPECT_EQ(redact_urls("see https://h/%7Eu?q=a%20b&sig=s then"),
            "see https://h/%7Eu?q=a%20b&sig=<redacted> then");
}

// A secret query parameter is one marker, not two: the value shown is redacted again before it
// is printed, and that pass must change nothing (it saw "?access_token=" end at the '<').
TEST(RedactUrls, ASecretParameterGetsOneMarkerHoweverOftenItIsRedacted) {
  for (const char* name : {"access_token", "api_key", "password"}) {
    std::string url = std::string("https://h/x?") + name + "=p5secret";
    std::string once = redact_env_value("U", url);
    EXPECT_EQ(once, std::string("https://h/x?") + name + "=<redacted>") << url;
    EXPECT_EQ(redact_env_value("U", once), once) << url;
    EXPECT_EQ(redact_text(once), once) << url;
  }
  EXPECT_EQ(redact_urls("https://h/x?token=&a=1"), "https://h/x?token=&a=1");
  for (const char* shown : {"https://u:<redacted>@h/x", "https://<redacted>@h/x?sig=<redacted>#f"})
    EXPECT_EQ(redact_value(shown), shown) << shown;
}

// Issue: an error message quotes what the user typed; whatever credential that held is not shown,
// and the rest of the message is, byte for byte.
TEST(RedactText, CredentialsInsideAMessageAreRedacted) {
  EXPECT_EQ(redact_text("command not found: 'https://u:ccc333pw@host/x'"),
            "command not found: 'https://u:<redacted>@host/x'");
  EXPECT_EQ(redact_text("unknown option '--api-keyy=sk_live_aaa111'"),
            "unknown option '--api-keyy=<redacted>'");
  EXPECT_EQ(redact_text("bad env DB_PASS=hunter2 here"), "bad env DB_PASS=<redacted> here");
  EXPECT_EQ(redact_text("-e \"HF_TOKEN=hf_x y\" is odd"), "-e \"HF_TOKEN=<redacted> y\" is odd");
  EXPECT_EQ(redact_text("--gpu 'https://h/x?token=t&n=1': unknown"),
            "--gpu 'https://h/x?token=<redacted>&n=1': unknown");
  std::string jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl";
  EXPECT_EQ(redact_text("token " + jwt + " expired"), "token <redacted> expired");
}

TEST(RedactText, OrdinaryMessagesStayAsTheyAre) {
  for (const char* text :
       {"command not found: 'pyhton'", "unknown option '--lr=0.1'", "--param 'a': missing '='",
        "--env NAME=VALUE: NAME is empty", "--timeout 'https://h/x': expected a duration",
        "key= is empty", "a password= with nothing", "cannot open /x/y=z: No such file"})
    EXPECT_EQ(redact_text(text), text) << text;
}

TEST(RedactEnvValue, NameFirstThenUrls) {
  EXPECT_EQ(redact_env_value("DB_PASS", "x"), "<redacted>");
  EXPECT_EQ(redact_env_value("DATABASE_URL", "postgres://u:p@h/db"),
            "postgres://u:<redacted>@h/db");
  EXPECT_EQ(redact_env_value("LR", "0.1"), "0.1");
  EXPECT_TRUE(is_redacted(redact_env_value("DATABASE_URL", "postgres://u:p@h/db")));
  EXPECT_FALSE(is_redacted("plain"));
}

// Issue 28: a command's arguments are redacted by the same names and URL rules as --env.
TEST(RedactArgv, OptionValuesWithSecretNamesAndUrls) {
  using V = std::vector<std::string>;
  EXPECT_EQ(redact_argv({"tool", "--password=x", "-token=y", "--api-key", "z", "--lr=0.1"}),
            (V{"tool", "--password=<redacted>", "-token=<redacted>", "--api-key", "<redacted>",
               "--lr=0.1"}));
  EXPECT_EQ(redact_argv({"tool", "--url", "https://u:p@h/x", "https://h/x?sig=s&n=1"}),
            (V{"tool", "--url", "https://u:<redacted>@h/x", "https://h/x?sig=<redacted>&n=1"}));
  // An option right after a secret-named flag is not its value. Since issue 62 a positional
  // name=value is judged by its name as an option is, and free text by redact_text.
  EXPECT_EQ(redact_argv({"tool", "--token", "--verbose", "key=v", "---key=v"}),
            (V{"tool", "--token", "--verbose", "key=<redacted>", "---key=<redacted>"}));
  EXPECT_EQ(redact_argv({"--token=x"}), (V{"--token=x"}));  // argv[0] is the program
  V plain = {"python", "train.py", "--keyboard=us", "--path", "/data", std::string("A\xff")};
  EXPECT_EQ(redact_argv(plain), plain);
}

// Issue 62: counts of tokens and tokenizers are not credentials; a token still is.
TEST(SecretName, TokensAndTokenizersAreNotSecret) {
  for (const char* name : {"tokens", "MAX_TOKENS", "max-new-tokens", "num_tokens", "TOKENS_PER_SEC",
                           "tokenizer", "TOKENIZERS_PARALLELISM", "tokenize"})
    EXPECT_FALSE(is_secret_name(name)) << name;
  for (const char* name :
       {"token", "HF_TOKEN", "GITHUB_TOKEN_2", "tokenSecret", "TOKEN_TOKENS", "TOKEN_S3"})
    EXPECT_TRUE(is_secret_name(name)) << name;
}

// Issue 62, item 7: what a red team found stored in clear when given as a job's arguments.
TEST(RedactArgv, PositionalAssignmentsWithSecretNames) {
  using V = std::vector<std::string>;
  EXPECT_EQ(
      redact_argv({"env", "AWS_SECRET_ACCESS_KEY=aws11", "HF_TOKEN=hf_x", "--api-key=k",
                   "--password=p", "db.password=p", "LR=0.1", "x==y", "a b=c"}),
      (V{"env", "AWS_SECRET_ACCESS_KEY=<redacted>", "HF_TOKEN=<redacted>", "--api-key=<redacted>",
         "--password=<redacted>", "db.password=<redacted>", "LR=0.1", "x==y", "a b=c"}));
}

TEST(RedactArgv, AFlagsValueInTheNextArgument) {
  using V = std::vector<std::string>;
  EXPECT_EQ(redact_argv({"tool", "--password", "hunter2", "--token", "abc", "--api-key", "abc",
                         "--tokens", "2000", "-pw", "x"}),
            (V{"tool", "--password", "<redacted>", "--token", "<redacted>", "--api-key",
               "<redacted>", "--tokens", "2000", "-pw", "<redacted>"}));
}

TEST(RedactArgv, AssignmentsInsideAScript) {
  using V = std::vector<std::string>;
  EXPECT_EQ(redact_argv({"sh", "-c", "cd /w && HF_TOKEN=abc python train.py --lr=0.1"}),
            (V{"sh", "-c", "cd /w && HF_TOKEN=<redacted> python train.py --lr=0.1"}));
  // A whole argument that starts as an assignment is one: its value runs to the end.
  EXPECT_EQ(redact_argv({"env", "PASSWORD=two words"}), (V{"env", "PASSWORD=<redacted>"}));
}

TEST(RedactValue, CredentialHeaders) {
  using V = std::vector<std::string>;
  EXPECT_EQ(redact_argv({"curl", "-H", "Authorization: Bearer bear12", "-H",
                         "authorization:Basic dXNlcjpwYXNz", "-H",
                         "Proxy-Authorization: Basic cHJveHk6cHc=", "-H", "X-Api-Key: k1", "-H",
                         "Cookie: session=s1; theme=dark", "-H", "Authorization: tok1", "-H",
                         "Accept: application/json", "https://h/x"}),
            (V{"curl", "-H", "Authorization: Bearer <redacted>", "-H",
               "authorization:Basic <redacted>", "-H", "Proxy-Authorization: Basic <redacted>",
               "-H", "X-Api-Key: <redacted>", "-H", "Cookie: <redacted>", "-H",
               "Authorization: <redacted>", "-H", "Accept: application/json", "https://h/x"}));
  // Inside text: up to the quotes around it, and only once.
  std::string text = "curl -H 'Authorization: Bearer bear12' https://h/x";
  std::string shown = "curl -H 'Authorization: Bearer <redacted>' https://h/x";
  EXPECT_EQ(redact_text(text), shown);
  EXPECT_EQ(redact_text(shown), shown);
  EXPECT_EQ(redact_env_value("H", "X-Auth-Token: t1"), "X-Auth-Token: <redacted>");
}

TEST(RedactValue, HeaderLookAlikesStay) {
  for (const char* value : {"{token: 3}", "key: value", "time 12:30", "https://h:8443/x",
                            "Content-Type: application/json", "--api-key: x", "a_Cookie: c"})
    EXPECT_EQ(redact_value(value), value) << value;
}

// Tokens whose issuer's prefix gives them away, under any name or none.
TEST(RedactValue, WellKnownTokenShapesAnywhere) {
  const std::string body36 = "R3dT3amT0kenAbCdEfGhIjKlMnOpQrStUv12";
  for (const std::string& token :
       {"ghp_" + body36, "gho_" + body36, "ghu_" + body36, "ghs_" + body36, "ghr_" + body36,
        "github_pat_11ABCDEFG0" + body36 + "_" + body36,
        std::string("sk-") + "T3BlbkFJ" + body36 + "0123",
        std::string("sk-proj-") + body36 + "-" + body36 + "_xY9",
        std::string("xoxb-1234567890-1234567890123-") + "AbCdEfGhIjKlMnOpQrStUvWx",
        std::string("xoxp-1234567890-1234567890-1234567890-abcdef0123456789abcdef0123456789"),
        std::string("xoxa-2-abcdef0123"), std::string("xoxr-abcdef0123456"),
        std::string("xoxs-abcdef0123456"), std::string("AKIAIOSFODNN7EXAMPLE"),
        std::string("ASIAY34FZKBOKMUTVV7A"), "hf_" + body36.substr(0, 34)}) {
    EXPECT_EQ(redact_value(token), "<redacted>") << token;
    EXPECT_EQ(redact_value("--gh=" + token + ",x"), "--gh=<redacted>,x") << token;
    EXPECT_EQ(redact_argv({"tool", "plain_name=" + token, token})[1], "plain_name=<redacted>");
    EXPECT_EQ(redact_argv({"tool", token})[1], "<redacted>") << token;
  }
}

// Issue 62: ordinary arguments stay as typed.
TEST(RedactArgv, OrdinaryArgumentsStay) {
  std::vector<std::string> plain = {"python",
                                    "train.py",
                                    "--lr=1e-3",
                                    "--task-id",
                                    "7",
                                    "sk-learn",
                                    "scikit-learn",
                                    "/data/sk-resnet-50-imagenet-pretrained/model.pt",
                                    "./runs/ghp_/x",
                                    "--tokens",
                                    "2000",
                                    "--max-new-tokens=512",
                                    "--tokenizer",
                                    "gpt2",
                                    "TOKENIZERS_PARALLELISM=false",
                                    "hf_hub",
                                    "AKIA1234",
                                    "AKIAIOSFODNN7EXAMPLE2",
                                    "task-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abc",
                                    "sk-abcdefghijklmnopqrstuvwxyz",
                                    "xoxb-short",
                                    "model.hidden_dim=64",
                                    "Content-Type: application/json"};
  EXPECT_EQ(redact_argv(plain), plain);
}

// Issue 30: a JWT (what `scontrol token` mints) or the configured token is a credential wherever
// it appears, whatever the variable or option is called.
constexpr const char* kJwt =
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJleHAiOjE3OTk5OTk5OTksImlhdCI6MTcwMDAwMDAwMCwic3VuIjoi"
    "cm9vdCJ9.Xq3b2k9c-Qe_4ZJ1aYtV0wQm5mJx0n2pXr8sZ1yK3aE";

// Sets (or unsets) SLURM_JWT for one test and puts the old value back.
class TokenEnv {
 public:
  explicit TokenEnv(const char* value) {
    if (const char* old = getenv("SLURM_JWT")) old_ = old;
    value ? setenv("SLURM_JWT", value, 1) : unsetenv("SLURM_JWT");
  }
  ~TokenEnv() { old_ ? setenv("SLURM_JWT", old_->c_str(), 1) : unsetenv("SLURM_JWT"); }

 private:
  std::optional<std::string> old_;
};

TEST(RedactValue, AJwtIsRedactedWhereverItIs) {
  TokenEnv none(nullptr);
  const std::string jwt = kJwt;
  EXPECT_EQ(redact_env_value("COPY", jwt), "<redacted>");
  EXPECT_EQ(redact_env_value("HEADER", "Authorization: Bearer " + jwt),
            "Authorization: Bearer <redacted>");
  EXPECT_EQ(redact_env_value("BOTH", jwt + "," + jwt), "<redacted>,<redacted>");
  using V = std::vector<std::string>;
  EXPECT_EQ(redact_argv({"curl", "-H", "X-SLURM-USER-TOKEN: " + jwt, jwt}),
            (V{"curl", "-H", "X-SLURM-USER-TOKEN: <redacted>", "<redacted>"}));
}

TEST(RedactValue, LookAlikesOfAJwtStay) {
  TokenEnv none(nullptr);
  for (const char* value : {"eyJ", "eyJabc", "eyJabc.def", "eyJabc..def", "heyJabc.def.ghi",
                            "v1.2.3", "eyJ.a.b", "model.eyJ", "keyJson.x.y"})
    EXPECT_EQ(redact_env_value("V", value), value) << value;
}

TEST(RedactValue, TheConfiguredTokenIsRedactedWhateverItsForm) {
  TokenEnv token("site-token-0123456789");
  EXPECT_EQ(redact_env_value("COPY", "site-token-0123456789"), "<redacted>");
  EXPECT_EQ(redact_env_value("COPY", "x=site-token-0123456789;y"), "x=<redacted>;y");
  EXPECT_EQ(redact_argv({"tool", "site-token-0123456789"})[1], "<redacted>");
  EXPECT_EQ(redact_env_value("OTHER", "site-token-9"), "site-token-9");
}

TEST(RedactValue, AShortConfiguredTokenDoesNotRedactEverything) {
  TokenEnv token("x");  // under 8 characters: redacting it would take every x of every value
  EXPECT_EQ(redact_env_value("V", "max_steps=xx"), "max_steps=xx");
  TokenEnv odd("redacted");  // the marker's own text: no endless replacing
  EXPECT_EQ(redact_env_value("V", "a redacted b"), "a <redacted> b");
}

}  // namespace
}  // namespace nodus
