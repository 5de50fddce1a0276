#include "core/secret.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace nodus
