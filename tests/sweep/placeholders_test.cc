#include "sweep/placeholders.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace nodus::sweep {
namespace {

using V = std::vector<std::string>;

Grid grid_of(const V& specs) {
  auto grid = parse_grid(specs);
  EXPECT_TRUE(grid.ok()) << grid.error().message;
  return *grid;
}

std::string parse_error(const V& argv, const Grid& grid) {
  auto t = ArgvTemplate::parse(argv, grid);
  EXPECT_FALSE(t.ok());
  return t.ok() ? "" : t.error().message;
}

TEST(SweepPlaceholders, ReplacesNamesInAnyArgument) {
  Grid grid = grid_of({"num_workers=0,4", "batch_size=128"});
  auto t = ArgvTemplate::parse({"python", "train.py", "--num-workers", "{num_workers}",
                                "--bs={batch_size}", "w{num_workers}b{batch_size}"},
                               grid);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->resolve(cell_at(grid, 1)),
            (V{"python", "train.py", "--num-workers", "4", "--bs=128", "w4b128"}));
  EXPECT_EQ(t->resolve(cell_at(grid, 0))[3], "0");
}

TEST(SweepPlaceholders, DoubledBracesAreLiteral) {
  Grid grid = grid_of({"n=1"});
  auto t = ArgvTemplate::parse({"--cfg={{\"n\": {n}}}", "{{n}}", "}}{{"}, grid);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->resolve(cell_at(grid, 0)), (V{"--cfg={\"n\": 1}", "{n}", "}{"}));
}

TEST(SweepPlaceholders, ArgumentsWithoutPlaceholdersAreKeptExactly) {
  Grid grid = grid_of({"n=1"});
  V argv{"", "a b", "$HOME", "\"q\"", "tab\there"};
  auto t = ArgvTemplate::parse(argv, grid);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->resolve(cell_at(grid, 0)), argv);
}

TEST(SweepPlaceholders, UnknownPlaceholderNamesArgumentAndParams) {
  Grid grid = grid_of({"num_workers=0,4", "batch_size=128"});
  EXPECT_EQ(parse_error({"python", "train.py", "--bs={batch}"}, grid),
            "unknown placeholder {batch} in argument 3 '--bs={batch}'; params: num_workers, "
            "batch_size");
}

TEST(SweepPlaceholders, PlaceholdersAreCaseSensitive) {
  Grid grid = grid_of({"num_workers=0"});
  EXPECT_NE(parse_error({"x", "{NUM_WORKERS}"}, grid).find("unknown placeholder {NUM_WORKERS}"),
            std::string::npos);
}

TEST(SweepPlaceholders, UnclosedBraceIsAnError) {
  Grid grid = grid_of({"n=1"});
  EXPECT_EQ(parse_error({"cmd", "--x={n"}, grid),
            "unclosed '{' in argument 2 '--x={n'; write {{ for a literal brace");
  EXPECT_NE(parse_error({"{"}, grid).find("unclosed '{' in argument 1"), std::string::npos);
}

TEST(SweepPlaceholders, SingleClosingBraceIsAnError) {
  Grid grid = grid_of({"n=1"});
  EXPECT_NE(parse_error({"cmd", "a}b"}, grid).find("single '}' in argument 2"), std::string::npos);
  EXPECT_NE(parse_error({"cmd", "{n}}"}, grid).find("single '}'"), std::string::npos);
}

TEST(SweepPlaceholders, MalformedPlaceholdersAreErrors) {
  Grid grid = grid_of({"n=1"});
  for (const char* arg : {"{}", "{\"a\":1}", "{ n }", "{n-1}", "{a{n}"})
    EXPECT_NE(parse_error({"cmd", arg}, grid).find("invalid placeholder"), std::string::npos)
        << arg;
}

TEST(SweepPlaceholders, ErrorsStayOnOneLineAndShort) {
  Grid grid = grid_of({"n=1"});
  std::string msg = parse_error({"cmd", "line1\nline2 " + std::string(500, 'x') + "{zz}"}, grid);
  EXPECT_EQ(msg.find('\n'), std::string::npos);
  EXPECT_LT(msg.size(), 200u);
}

TEST(SweepPlaceholders, HostileValuesStayOneLiteralArgument) {
  Grid grid = grid_of({"v=$(rm -rf ~),;reboot,`id`,a b,'q',{n},--flag=1 --other", "n=7"});
  auto t = ArgvTemplate::parse({"echo", "{v}", "x{v}y"}, grid);
  ASSERT_TRUE(t.ok());
  V expected{"$(rm -rf ~)", ";reboot", "`id`", "a b", "'q'", "{n}", "--flag=1 --other"};
  for (size_t i = 0; i < expected.size(); ++i) {
    auto argv = t->resolve(cell_at(grid, static_cast<int>(i)));
    ASSERT_EQ(argv.size(), 3u);
    EXPECT_EQ(argv[1], expected[i]);
    EXPECT_EQ(argv[2], "x" + expected[i] + "y");  // {n} inside a value is not expanded again
  }
}

TEST(SweepPlaceholders, EnvHasEveryParamUppercasedAndTheCellNumberFromOne) {
  Grid grid = grid_of({"num_workers=0,4", "model=vit"});
  auto env = cell_env(cell_at(grid, 1));  // the second cell: "cell 2" wherever nodus shows it
  EXPECT_EQ(env, (std::map<std::string, std::string>{{"NODUS_PARAM_NUM_WORKERS", "4"},
                                                     {"NODUS_PARAM_MODEL", "vit"},
                                                     {"NODUS_SWEEP_CELL", "2"}}));
}

TEST(SweepPlaceholders, LabelListsParamsInAxisOrder) {
  Grid grid = grid_of({"num_workers=4", "batch_size=128"});
  EXPECT_EQ(cell_label(cell_at(grid, 0).params), "num_workers=4 batch_size=128");
}

TEST(SweepPlaceholders, ParamsJsonKeepsNumbersAsNumbers) {
  auto j = params_json(
      {{"n", "4"}, {"lr", "0.001"}, {"m", "vit"}, {"z", "007"}, {"b", "true"}, {"e", "1e999"}});
  EXPECT_EQ(j["n"], 4);
  EXPECT_DOUBLE_EQ(j["lr"].get<double>(), 0.001);
  EXPECT_EQ(j["m"], "vit");
  EXPECT_EQ(j["z"], "007");
  EXPECT_EQ(j["b"], "true");
  EXPECT_EQ(j["e"], "1e999");
}

TEST(SweepPlaceholders, ParamsJsonKeepsTheTextTyped) {
  auto j = params_json({{"a", "1e5"}, {"b", "1.50"}, {"c", "-3"}, {"d", "0.5"}, {"e", "+2"}});
  EXPECT_EQ(j["a"], "1e5");
  EXPECT_EQ(j["b"], "1.50");
  EXPECT_EQ(j["c"], -3);
  EXPECT_DOUBLE_EQ(j["d"].get<double>(), 0.5);
  EXPECT_EQ(j["e"], "+2");
}

}  // namespace
}  // namespace nodus::sweep
