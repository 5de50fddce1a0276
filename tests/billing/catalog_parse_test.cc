#include <gtest/gtest.h>

#include <regex>

#include "billing/catalog.h"

namespace nodus::billing {
namespace {

const std::string kData = std::string(NODUS_TEST_DATA) + "/billing/";

// Loads a test catalog that must be rejected; returns the error message.
std::string rejection(const std::string& file) {
  auto r = Catalog::load(kData + file, "/nonexistent-cache");
  EXPECT_FALSE(r.ok()) << file;
  return r.ok() ? "" : r.error().message;
}

TEST(CatalogParse, SyntaxErrorNamesFileAndLine) {
  std::string msg = rejection("missing_comma_line7.json");
  EXPECT_EQ(msg.rfind(kData + "missing_comma_line7.json:7: invalid JSON: ", 0), 0u) << msg;
  EXPECT_EQ(msg.find("json.exception"), std::string::npos) << msg;
}

TEST(CatalogParse, NegativeRatePointsAtItsLine) {
  std::string msg = rejection("negative_rate_line10.json");
  EXPECT_NE(msg.find("negative_rate_line10.json:10: GPU type 'X2': "), std::string::npos) << msg;
  EXPECT_NE(msg.find("-2.5"), std::string::npos) << msg;
}

TEST(CatalogParse, NonNumericRateIsRejected) {
  std::string msg = rejection("string_rate_line5.json");
  EXPECT_NE(msg.find("string_rate_line5.json:5: GPU type 'X1': \"usd_per_gpu_hour\" must be a "
                     "number, not \"2.60\""),
            std::string::npos)
      << msg;
}

TEST(CatalogParse, MissingRatePointsAtTheEntry) {
  std::string msg = rejection("missing_rate_line7.json");
  EXPECT_NE(msg.find("missing_rate_line7.json:7: GPU type 'X2': missing \"usd_per_gpu_hour\""),
            std::string::npos)
      << msg;
}

TEST(CatalogParse, DuplicateNameIgnoringCaseIsRejected) {
  std::string msg = rejection("duplicate_alias_line9.json");
  EXPECT_NE(
      msg.find(
          "duplicate_alias_line9.json:9: duplicate GPU name 'h100' (already used by H100-SXM)"),
      std::string::npos)
      << msg;
}

TEST(CatalogParse, UnknownFieldIsRejectedAtItsLine) {
  std::string msg = rejection("unknown_field_line6.json");
  EXPECT_NE(msg.find("unknown_field_line6.json:6: GPU type 'X1': unknown field \"usd_per_hour\""),
            std::string::npos)
      << msg;
}

TEST(CatalogParse, ShapeErrorsNameTheOrigin) {
  struct Case {
    const char* text;
    const char* expected;
  };
  for (const Case& c : {
           Case{"[]", "t.json:1: expected an object with a \"gpus\" array"},
           Case{"{\"gpus\": []}", "t.json:1: expected a non-empty \"gpus\" array"},
           Case{"{\n\"gpus\": [{\"type\": \"A\", \"usd_per_gpu_hour\": 1}],\n\"extra\": 1}",
                "t.json:3: unknown field \"extra\" (allowed: gpus)"},
           Case{"{\"gpus\": [{\"type\": \"A B\", \"usd_per_gpu_hour\": 1}]}",
                "t.json:1: \"type\" must be a name"},
           Case{"{\"gpus\": [{\"type\": \"A\", \"usd_per_gpu_hour\": 1, \"checked\": \"6 Nov\"}]}",
                "t.json:1: GPU type 'A': \"checked\" must be a date YYYY-MM-DD"},
           Case{"{\"gpus\": [{\"type\": \"A\", \"usd_per_gpu_hour\": 1, \"aliases\": \"B\"}]}",
                "t.json:1: GPU type 'A': \"aliases\" must be an array of strings"},
           Case{"{\"gpus\": [\n{\"type\": \"A\", \"usd_per_gpu_hour\": 1e999}]}",
                "t.json:2: invalid JSON: number overflow parsing '1e999'"},
           Case{"", "t.json:1: invalid JSON: "},
       }) {
    auto r = Catalog::parse(c.text, "t.json");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().message.rfind(c.expected, 0), 0u)
        << "got: " << r.error().message << "\nwant prefix: " << c.expected;
  }
}

TEST(CatalogParse, ReadsEveryField) {
  auto r = Catalog::load(kData + "small.json", "/nonexistent-cache");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->entries().size(), 1u);
  const PriceEntry& e = r->entries()[0];
  EXPECT_EQ(e.type, "LAB-GPU");
  EXPECT_EQ(e.aliases, std::vector<std::string>{"lab"});
  EXPECT_DOUBLE_EQ(e.usd_per_gpu_hour, 0.5);
  EXPECT_EQ(e.source, "our own hardware, amortised");
  EXPECT_EQ(e.checked, "2026-11-01");
  EXPECT_EQ(e.device_names, std::vector<std::string>{"Lab Card 9000"});
  EXPECT_EQ(r->origin(), kData + "small.json");
}

TEST(CatalogParse, ZeroRateIsAllowedForOwnedHardware) {
  auto r = Catalog::parse(R"({"gpus": [{"type": "MINE", "usd_per_gpu_hour": 0}]})", "t");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->entries()[0].usd_per_gpu_hour, 0.0);
}

TEST(CatalogBuiltin, ParsesAndEveryEntryHasASourceAndADate) {
  Catalog c = Catalog::builtin();
  EXPECT_EQ(c.origin(), "built-in");
  ASSERT_GE(c.entries().size(), 10u);
  const std::regex date(R"(20\d\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]))");
  for (const auto& e : c.entries()) {
    EXPECT_FALSE(e.source.empty()) << e.type;
    EXPECT_TRUE(std::regex_match(e.checked, date)) << e.type << " " << e.checked;
    EXPECT_GT(e.usd_per_gpu_hour, 0) << e.type;
    EXPECT_FALSE(e.device_names.empty()) << e.type;
    // A URL to the page the price is read on, or the page's name where it has no public URL.
    EXPECT_TRUE(e.source.rfind("https://", 0) == 0 ||
                e.note.find("no public URL") != std::string::npos)
        << e.type;
    EXPECT_NE(e.source, "none") << e.type;
  }
}

TEST(CatalogBuiltin, H100SxmIsTheNodusRate) {
  const PriceEntry* e = Catalog::builtin().find("H100-SXM");
  ASSERT_NE(e, nullptr);
  EXPECT_DOUBLE_EQ(e->usd_per_gpu_hour, 2.60);
  EXPECT_EQ(e->source, "Nodus GPU cloud pricing page");  // named: it has no public URL to cite
  EXPECT_NE(e->note.find("no public URL"), std::string::npos) << e->note;
  EXPECT_EQ(e->checked, "2026-11-06");
}

TEST(CatalogBuiltin, MatchesTheJsonFileInTheSourceTree) {
  // Guards the build step that embeds billing/prices.json.
  auto from_file = Catalog::load(std::string(NODUS_SOURCE_DIR) + "/billing/prices.json", "/x");
  ASSERT_TRUE(from_file.ok()) << from_file.error().message;
  Catalog builtin = Catalog::builtin();
  ASSERT_EQ(from_file->entries().size(), builtin.entries().size());
  for (size_t i = 0; i < builtin.entries().size(); ++i) {
    EXPECT_EQ(from_file->entries()[i].type, builtin.entries()[i].type);
    EXPECT_EQ(from_file->entries()[i].usd_per_gpu_hour, builtin.entries()[i].usd_per_gpu_hour);
  }
}

}  // namespace
}  // namespace nodus::billing

namespace nodus::billing {
namespace {

std::string peak_rejection(const std::string& peak) {
  auto r = Catalog::parse(R"({"gpus": [
  {"type": "X1", "usd_per_gpu_hour": 1,
   "peak_tflops": )" + peak + R"(}]})",
                          "peaks.json");
  EXPECT_FALSE(r.ok()) << peak;
  return r.ok() ? "" : r.error().message;
}

TEST(CatalogPeaks, TheBuiltInCatalogHasTheDatasheetsDensePeaks) {
  const Catalog& catalog = Catalog::builtin();
  for (const char* type : {"H100", "H200"}) {
    const PriceEntry* e = catalog.find(type);
    ASSERT_NE(e, nullptr) << type;
    ASSERT_TRUE(e->peak) << type;
    EXPECT_DOUBLE_EQ(e->peak->bf16, 989.4) << type;
    EXPECT_DOUBLE_EQ(e->peak->tf32, 494.7) << type;
    EXPECT_DOUBLE_EQ(e->peak->fp32, 66.9) << type;
    EXPECT_FALSE(e->peak->source.empty()) << type;
    EXPECT_EQ(e->peak->checked.size(), 10u) << type;
  }
  EXPECT_DOUBLE_EQ(catalog.find("A100-80GB")->peak->bf16, 312);
  EXPECT_DOUBLE_EQ(catalog.find("L4")->peak->bf16, 121);  // dense, not the 242 with sparsity
  EXPECT_FALSE(catalog.find("T4")->peak);                 // none given: no MFU, not a guess
}

TEST(CatalogPeaks, ABadPeakIsRefusedNamingItsLineAndWhatIsAllowed) {
  std::string msg = peak_rejection(R"({"bf16": -1, "source": "x"})");
  EXPECT_NE(msg.find("peaks.json:3: GPU type 'X1': \"peak_tflops\".bf16 must be TFLOPS above 0 "
                     "and below 100000, not -1"),
            std::string::npos)
      << msg;
  msg = peak_rejection(R"({"bf16": 10, "sparse": 20, "source": "x"})");
  EXPECT_NE(msg.find("unknown field \"sparse\" in \"peak_tflops\" (allowed: bf16, tf32, fp32, "
                     "source, checked)"),
            std::string::npos)
      << msg;
  msg = peak_rejection(R"({"tf32": 10, "source": "x"})");
  EXPECT_NE(msg.find("\"peak_tflops\" needs \"bf16\""), std::string::npos) << msg;
  msg = peak_rejection(R"({"bf16": 10})");
  EXPECT_NE(msg.find("\"peak_tflops\" needs \"source\""), std::string::npos) << msg;
  msg = peak_rejection(R"("989")");
  EXPECT_NE(msg.find("\"peak_tflops\" must be an object"), std::string::npos) << msg;
}

}  // namespace
}  // namespace nodus::billing
