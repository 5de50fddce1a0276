#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "billing/catalog.h"
#include "billing/remote_catalog.h"
#include "core/http_test_server.h"

namespace nodus::billing {
namespace {

using nodus::testing::http_response;
using nodus::testing::TestHttpServer;

const char* kLabCatalog = R"({"gpus": [{"type": "LAB-GPU", "usd_per_gpu_hour": 0.5,
                                        "source": "lab", "checked": "2026-11-01"}]})";

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/nodus-billing-XXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string write(const std::string& name, const std::string& text) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p) << text;
    return p;
  }

 private:
  std::string path_;
};

// Sets an environment variable for one test and restores the old value after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { old_ ? setenv(name_, old_->c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A Client that answers from a script, for the fallback rules.
class FakeClient : public http::Client {
 public:
  explicit FakeClient(Result<http::Response> answer) : answer_(std::move(answer)) {}
  Result<http::Response> send(const http::Request& request) override {
    urls.push_back(request.url);
    return answer_;
  }
  std::vector<std::string> urls;

 private:
  Result<http::Response> answer_;
};

int unused_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

TEST(CatalogLoad, MissingFileNamesThePathAndTheReason) {
  auto r = Catalog::load("/nonexistent/prices.json", "/tmp");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "cannot read price catalog '/nonexistent/prices.json': No such file or directory");
}

TEST(CatalogLoad, FolderIsNotACatalog) {
  TempDir dir;
  auto r = Catalog::load(dir.path(), dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("it is a folder"), std::string::npos) << r.error().message;
}

TEST(CatalogLoad, PlainHttpIsRefusedExceptOnLoopback) {
  auto r = Catalog::load("http://user:pw@prices.example.com/p.json?token=abc", "/tmp");
  ASSERT_FALSE(r.ok());
  const std::string& msg = r.error().message;
  EXPECT_NE(msg.find("http://user:<redacted>@prices.example.com/p.json?token=<redacted>"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("use https://"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("pw"), std::string::npos) << msg;
  EXPECT_FALSE(Catalog::load("ftp://example.com/p.json", "/tmp").ok());
}

TEST(CatalogLoad, FetchesFromALocalServerAndCachesIt) {
  TempDir cache;
  TestHttpServer server(http_response(200, kLabCatalog));
  std::string url = server.url("/prices.json");
  auto r = Catalog::load(url, cache.path());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->origin(), url);
  EXPECT_NE(r->find("lab-gpu"), nullptr);
  EXPECT_EQ(server.requests().at(0).rfind("GET /prices.json HTTP/1.1\r\n", 0), 0u);
  std::ifstream cached(catalog_cache_path(url, cache.path()));
  std::stringstream text;
  text << cached.rdbuf();
  EXPECT_EQ(text.str(), kLabCatalog);
}

TEST(CatalogLoad, UsesTheCacheWhenTheServerIsGone) {
  TempDir cache;
  std::string url;
  {
    TestHttpServer server(http_response(200, kLabCatalog));
    url = server.url("/prices.json");
    ASSERT_TRUE(Catalog::load(url, cache.path()).ok());
  }
  // The server is gone: the port now refuses connections.
  auto r = Catalog::load(url, cache.path());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_NE(r->find("LAB-GPU"), nullptr);
}

TEST(FetchCatalog, TransportErrorFallsBackToTheCacheAndSaysWhy) {
  TempDir cache;
  std::string url = "https://prices.example.com/p.json?token=sekrit-123";
  std::ofstream(catalog_cache_path(url, cache.path())) << kLabCatalog;
  FakeClient client(
      Error::retryable("GET https://prices.example.com/p.json?token=<redacted>: "
                       "Couldn't resolve host name"));
  std::ostringstream warn;
  auto r = fetch_catalog(url, cache.path(), client, warn);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_NE(r->find("LAB-GPU"), nullptr);
  EXPECT_NE(warn.str().find("Couldn't resolve host name; using the cached price catalog from "),
            std::string::npos)
      << warn.str();
  EXPECT_EQ(warn.str().find("sekrit"), std::string::npos) << warn.str();
  EXPECT_EQ(client.urls, std::vector<std::string>{url});
}

TEST(FetchCatalog, ErrorStatusAndBadCatalogAlsoFallBack) {
  TempDir cache;
  std::string url = "https://prices.example.com/p.json";
  std::ofstream(catalog_cache_path(url, cache.path())) << kLabCatalog;
  for (auto answer : {http::Response{503, "busy"}, http::Response{200, "{\"gpus\": 7}"}}) {
    FakeClient client(answer);
    std::ostringstream warn;
    auto r = fetch_catalog(url, cache.path(), client, warn);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_NE(warn.str().find("using the cached price catalog"), std::string::npos) << warn.str();
  }
}

TEST(FetchCatalog, NoCacheAndNoServerIsAnErrorNamingBoth) {
  TempDir cache;
  FakeClient client(http::Response{404, "not found"});
  std::ostringstream warn;
  auto r = fetch_catalog("https://prices.example.com/p.json", cache.path(), client, warn);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("answered HTTP 404"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("no cached copy"), std::string::npos) << r.error().message;
  EXPECT_TRUE(warn.str().empty());
}

TEST(FetchCatalog, AGoodFetchReplacesAnOlderCache) {
  TempDir cache;
  std::string url = "https://prices.example.com/p.json";
  std::ofstream(catalog_cache_path(url, cache.path())) << kLabCatalog;
  std::string newer = R"({"gpus": [{"type": "NEW-GPU", "usd_per_gpu_hour": 1.25}]})";
  FakeClient client(http::Response{200, newer});
  std::ostringstream warn;
  auto r = fetch_catalog(url, cache.path(), client, warn);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_NE(r->find("NEW-GPU"), nullptr);
  std::ifstream cached(catalog_cache_path(url, cache.path()));
  std::stringstream text;
  text << cached.rdbuf();
  EXPECT_EQ(text.str(), newer);
}

TEST(CatalogLoad, RefusedWithoutCacheIsAnError) {
  TempDir cache;
  auto r =
      Catalog::load("http://127.0.0.1:" + std::to_string(unused_port()) + "/p.json", cache.path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no cached copy"), std::string::npos) << r.error().message;
}

TEST(CatalogResolve, FlagBeatsEnvironmentBeatsBuiltin) {
  TempDir dir;
  std::string flag_file = dir.write("flag.json", kLabCatalog);
  std::string env_file =
      dir.write("env.json", R"({"gpus": [{"type": "ENV-GPU", "usd_per_gpu_hour": 9}]})");
  {
    ScopedEnv env("NODUS_PRICES", nullptr);
    EXPECT_EQ(Catalog::resolve(std::nullopt, dir.path())->origin(), "built-in");
    EXPECT_EQ(Catalog::resolve(flag_file, dir.path())->origin(), flag_file + " over built-in");
    EXPECT_EQ(Catalog::resolve(flag_file, dir.path(), true)->origin(), flag_file);
  }
  {
    ScopedEnv env("NODUS_PRICES", env_file.c_str());
    EXPECT_EQ(Catalog::resolve(std::nullopt, dir.path())->origin(), env_file + " over built-in");
    EXPECT_EQ(Catalog::resolve(flag_file, dir.path())->origin(), flag_file + " over built-in");
  }
}

TEST(CatalogResolve, AUserCatalogMergesOverTheBuiltInOneUnlessItStandsAlone) {
  TempDir dir;
  std::string mine =
      dir.write("mine.json",
                R"({"gpus": [{"type": "h100-80gb", "aliases": ["MY-H100"], "usd_per_gpu_hour": 1},
                                 {"type": "LAB-GPU", "usd_per_gpu_hour": 0.5}]})");
  ScopedEnv env("NODUS_PRICES", nullptr);
  const Catalog& builtin = Catalog::builtin();
  auto merged = Catalog::resolve(mine, dir.path());
  ASSERT_TRUE(merged.ok()) << merged.error().message;
  // h100-80gb is an alias of the built-in H100-SXM: that entry is replaced, the rest kept.
  EXPECT_EQ(merged->entries().size(), builtin.entries().size() + 1);
  EXPECT_EQ(merged->find("H100-SXM"), nullptr);
  EXPECT_EQ(merged->find("H100"), nullptr);  // an alias of the replaced entry goes with it
  EXPECT_DOUBLE_EQ(merged->find("my-h100")->usd_per_gpu_hour, 1);
  EXPECT_EQ(merged->find("my-h100")->origin, mine);
  EXPECT_EQ(merged->find("L4")->origin, "built-in");
  EXPECT_DOUBLE_EQ(merged->find("LAB-GPU")->usd_per_gpu_hour, 0.5);
  // Alone: only the file's two entries; from the environment too.
  EXPECT_EQ(Catalog::resolve(mine, dir.path(), true)->entries().size(), 2u);
  {
    ScopedEnv only("NODUS_PRICES_ONLY", "1");
    EXPECT_EQ(Catalog::resolve(mine, dir.path())->entries().size(), 2u);
    auto nothing = Catalog::resolve(std::nullopt, dir.path());
    ASSERT_FALSE(nothing.ok());
    EXPECT_NE(nothing.error().message.find("--prices-only"), std::string::npos);
  }
  {
    ScopedEnv bad("NODUS_PRICES_ONLY", "yes");
    auto r = Catalog::resolve(mine, dir.path());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("'yes'"), std::string::npos);
  }
}

TEST(CatalogResolve, BadEnvironmentValueSaysWhereItCameFrom) {
  ScopedEnv env("NODUS_PRICES", "/nonexistent/env-prices.json");
  auto r = Catalog::resolve(std::nullopt, "/tmp");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("/nonexistent/env-prices.json"), std::string::npos);
  EXPECT_NE(r.error().message.find("(from NODUS_PRICES)"), std::string::npos);
}

}  // namespace
}  // namespace nodus::billing
