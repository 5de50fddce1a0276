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
  // An option right after a secret-named flag is not its value; positional a=b is data.
  EXPECT_EQ(redact_argv({"tool", "--token", "--verbose", "key=v", "---key=v"}),
            (V{"tool", "--token", "--verbose", "key=v", "---key=v"}));
  EXPECT_EQ(redact_argv({"--token=x"}), (V{"--token=x"}));  // argv[0] is the program
  V plain = {"python", "train.py", "--keyboard=us", "--path", "/data", std::string("A\xff")};
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
