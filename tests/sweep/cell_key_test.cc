#include "sweep/cell_key.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "sweep/placeholders.h"
#include "sweep/sha256.h"

namespace nodus::sweep {
namespace {

TEST(Sha256, MatchesFipsVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1'000'000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PaddingBoundariesMatchOneShotAndChunkedInput) {
  // 55, 56, 63 and 64 bytes straddle the padding rules; feeding in pieces must not matter.
  for (size_t n : {55u, 56u, 63u, 64u, 65u, 119u, 120u}) {
    std::string data(n, 'x');
    Sha256 chunked;
    for (char c : data) chunked.update(std::string_view(&c, 1));
    Sha256 whole;
    whole.update(data);
    EXPECT_EQ(chunked.finish(), whole.finish()) << n;
  }
  EXPECT_EQ(sha256_hex(std::string(56, 'a')),
            "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
}

CellKeyInput sample() {
  CellKeyInput in;
  in.argv = {"python", "train.py", "--num-workers", "4"};
  in.env = {{"NODUS_PARAM_NUM_WORKERS", "4"}, {"NODUS_SWEEP_CELL", "1"}};
  in.gpu = {"H100", 8};
  in.max_cost = 5;
  in.timeout_ms = 7'200'000;
  return in;
}

TEST(SweepCellKey, IsStableAcrossRunsAndReleases) {
  // Pinned: a change here breaks --resume of sweeps recorded by earlier versions.
  EXPECT_EQ(
      cell_key_text(sample()),
      R"({"argv":["python","train.py","--num-workers","4"],"env":[["NODUS_PARAM_NUM_WORKERS","4"],["NODUS_SWEEP_CELL","1"]],"gpu":{"count":8,"type":"H100"},"max_cost":5.0,"timeout_ms":7200000,"v":1})");
  EXPECT_EQ(cell_key(sample()), sha256_hex(cell_key_text(sample())));
  EXPECT_EQ(cell_key(sample()).size(), 64u);
}

TEST(SweepCellKey, EveryInputChangesTheKey) {
  std::string base = cell_key(sample());
  auto changed = [&](auto edit) {
    CellKeyInput in = sample();
    edit(in);
    return cell_key(in);
  };
  EXPECT_NE(base, changed([](CellKeyInput& in) { in.argv[3] = "8"; }));
  EXPECT_NE(base, changed([](CellKeyInput& in) { in.argv.push_back(""); }));
  EXPECT_NE(base, changed([](CellKeyInput& in) { in.env["X"] = "1"; }));
  EXPECT_NE(base, changed([](CellKeyInput& in) { in.gpu.count = 4; }));
  EXPECT_NE(base, changed([](CellKeyInput& in) { in.gpu.type = "L4"; }));
  EXPECT_NE(base, changed([](CellKeyInput& in) { in.max_cost.reset(); }));
  EXPECT_NE(base, changed([](CellKeyInput& in) { in.max_cost = 5.01; }));
  EXPECT_NE(base, changed([](CellKeyInput& in) { in.timeout_ms = 1; }));
}

TEST(SweepCellKey, ArgumentBoundariesMatter) {
  CellKeyInput a = sample(), b = sample();
  a.argv = {"a b", "c"};
  b.argv = {"a", "b c"};
  EXPECT_NE(cell_key(a), cell_key(b));
}

TEST(SweepCellKey, InvalidUtf8IsEncodedNotReplaced) {
  CellKeyInput a = sample(), b = sample();
  a.argv = {"\xff"};
  b.argv = {"\xfe"};
  EXPECT_NE(cell_key(a), cell_key(b));
  EXPECT_NE(cell_key_text(a).find(R"({"hex":"ff"})"), std::string::npos);
}

TEST(SweepCellKey, SecretValuesAreRedactedBeforeHashing) {
  CellKeyInput a = sample(), b = sample();
  a.env["HF_TOKEN"] = "hf_aaaaaaaa";
  b.env["HF_TOKEN"] = "hf_bbbbbbbb";
  EXPECT_EQ(cell_key(a), cell_key(b));
  EXPECT_EQ(cell_key_text(a).find("hf_aaaa"), std::string::npos);
  EXPECT_NE(cell_key(a), cell_key(sample()));  // the variable's presence still counts
}

TEST(SweepCellKey, CellsOfOneGridGetDistinctKeys) {
  auto grid = parse_grid({"num_workers=0,2,4", "batch_size=64,128"});
  ASSERT_TRUE(grid.ok());
  auto t = ArgvTemplate::parse({"python", "train.py", "--num-workers={num_workers}"}, *grid);
  ASSERT_TRUE(t.ok());
  std::set<std::string> keys;
  for (const auto& cell : expand(*grid)) {
    CellKeyInput in;
    in.argv = t->resolve(cell);
    in.env = cell_env(cell);
    keys.insert(cell_key(in));
  }
  EXPECT_EQ(keys.size(), 6u);
}

TEST(SweepDefinitionHash, ChangesWithTemplateGridOrOptions) {
  auto grid = parse_grid({"n=1,2"});
  auto other = parse_grid({"n=1,2,3"});
  auto renamed = parse_grid({"m=1,2"});
  ASSERT_TRUE(grid.ok() && other.ok() && renamed.ok());
  std::vector<std::string> argv{"train", "{n}"};
  nlohmann::json options = {{"gpu", "H100:8"}, {"max_cost", 5}};
  std::string base = definition_hash(argv, *grid, options);
  EXPECT_EQ(base, definition_hash(argv, *grid, options));
  EXPECT_NE(base, definition_hash({"train", "--n={n}"}, *grid, options));
  EXPECT_NE(base, definition_hash(argv, *other, options));
  EXPECT_NE(base, definition_hash(argv, *renamed, options));
  EXPECT_NE(base, definition_hash(argv, *grid, {{"gpu", "H100:4"}, {"max_cost", 5}}));
}

TEST(SweepDefinitionHash, OptionKeyOrderDoesNotMatter) {
  auto grid = parse_grid({"n=1,2"});
  ASSERT_TRUE(grid.ok());
  auto a = nlohmann::json::parse(R"({"gpu":"H100","timeout":"2h"})");
  auto b = nlohmann::json::parse(R"({"timeout":"2h","gpu":"H100"})");
  EXPECT_EQ(definition_hash({"x"}, *grid, a), definition_hash({"x"}, *grid, b));
  EXPECT_EQ(
      definition_text({"x"}, *grid, a),
      R"({"argv":["x"],"grid":[{"name":"n","values":["1","2"]}],"options":{"gpu":"H100","timeout":"2h"},"v":1})");
}

TEST(SweepDefinitionHash, InvalidUtf8InOptionsDoesNotThrow) {
  auto grid = parse_grid({"n=1"});
  ASSERT_TRUE(grid.ok());
  EXPECT_EQ(definition_hash({"x"}, *grid, {{"env", "\xff"}}).size(), 64u);
}

}  // namespace
}  // namespace nodus::sweep
