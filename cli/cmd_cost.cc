// nodus cost: what was spent, by day, GPU type, sweep or job name, over a time range.

#include <ctime>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/parse.h"
#include "core/table_fields.h"
#include "engine/reconcile.h"

namespace nodus::cli {

namespace {

// --since / --until: a duration back from now (7d, 36h) or a local date YYYY-MM-DD (its
// midnight). Returns unix seconds.
Result<double> parse_time_bound(const std::string& text, const std::string& flag) {
  int y = 0, m = 0, d = 0;
  char tail = 0;
  if (text.size() == 10 && std::sscanf(text.c_str(), "%4d-%2d-%2d%c", &y, &m, &d, &tail) == 3) {
    std::tm tm{};
    tm.tm_year = y - 1900;
    tm.tm_mon = m - 1;
    tm.tm_mday = d;
    tm.tm_isdst = -1;
    std::tm check = tm;
    time_t t = std::mktime(&check);
    if (t != -1 && check.tm_mday == d && check.tm_mon == m - 1) return static_cast<double>(t);
  }
  auto ago = parse_duration(text, flag);
  if (!ago.ok())
    return Error::permanent(flag + ": invalid value '" + text +
                            "': expected a duration back from now (7d, 36h) or a date YYYY-MM-DD");
  return unix_now() - ago->count() / 1000.0;
}

CLI::Validator time_bound_value() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        auto r = parse_time_bound(value, "");
        if (r.ok()) return "";
        std::string msg = r.error().message;
        return msg.substr(msg.find("invalid value"));
      },
      "", "");
}

// One grouping of `nodus cost`: the key column and how to read a spend row's key.
struct Grouping {
  const char* by;      // --by value
  const char* key;     // json/csv key of the group column
  const char* header;  // table header
  const char* none;    // what an empty key means, for the table ("-" in the cell)
};
constexpr Grouping kGroupings[] = {
    {"day", "day", "DAY", ""},
    {"gpu", "gpu_type", "GPU TYPE", "no GPU"},
    {"sweep", "sweep_id", "SWEEP", "not in a sweep"},
    {"name", "name", "NAME", "unnamed"},
};

using Row = store::Store::SpendRow;

// The columns of one grouping's listing.
std::vector<Field<Row>> spend_fields(const Grouping& g) {
  auto hours = [](const Row& r) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", r.gpu_hours);
    return std::string(buf);
  };
  return {
      {{g.key, g.header},
       [](const Row& r) { return r.key.empty() ? "-" : r.key; },
       [](const Row& r) { return or_null(r.key); }},
      {{"jobs", "JOBS", true},
       [](const Row& r) { return std::to_string(r.jobs); },
       [](const Row& r) { return nlohmann::json(r.jobs); }},
      {{"gpu_hours", "GPU-HOURS", true},
       hours,
       [](const Row& r) { return nlohmann::json(r.gpu_hours); }},
      {{"cost_usd", "COST", true},
       [](const Row& r) { return format_usd(r.cost); },
       [](const Row& r) { return nlohmann::json(r.cost); }},
  };
}

// A grouping's rows, handed to `each` one at a time, `passes` times over: from memory (day,
// GPU type: a few rows) or from the store as it sorts them (sweep, name: a row per group).
using Rows = std::function<void(int passes, const std::function<void(int pass, const Row&)>& each)>;

Rows from_memory(const std::vector<Row>& rows) {
  return [&rows](int passes, const std::function<void(int, const Row&)>& each) {
    for (int pass = 0; pass < passes; ++pass)
      for (const auto& r : rows) each(pass, r);
  };
}

// Writes the listing of one grouping to `sink` row by row, never holding it whole; `total` adds
// the human-only total line (never json or csv). `many`: rows dear to hand over twice (the
// store's), which table and md then keep in a temporary file as they measure them. Returns the
// rows' sum (what the json total shows), keyed "total".
Row write_spend(const Grouping& g, const Rows& rows, bool many, bool total, Format f,
                const TableWriter::Sink& sink) {
  const auto fields = spend_fields(g);
  TableWriter writer(columns_of(fields), f, sink);
  if (many) writer.keep_measured_rows();
  Row sum{"total"};
  bool any = false;
  int pass_fed = -1;  // the pass whose rows are being fed: the total line ends each
  auto end_pass = [&] {
    if (total && any) feed_row(writer, fields, pass_fed, sum);
  };
  rows(writer.passes(), [&](int pass, const Row& r) {
    if (pass != pass_fed) {
      if (pass_fed >= 0) end_pass();
      pass_fed = pass;
    }
    if (pass == 0) {
      any = true;
      sum.jobs += r.jobs;
      sum.gpu_hours += r.gpu_hours;
      sum.cost += r.cost;
    }
    feed_row(writer, fields, pass, r);
  });
  if (pass_fed >= 0) end_pass();
  writer.finish();
  return sum;
}

// A sink for a json listing nested one level into an object: each line after the first
// indented two more spaces, and the listing's last newline left out, as dump_json prints an
// array member of an object.
struct NestedJson {
  TableWriter::Sink out;
  bool newline = false;  // a newline held back: the next byte decides
  void operator()(std::string_view text) {
    std::string nested;
    for (char c : text) {
      if (newline) nested += "\n  ";
      newline = c == '\n';
      if (!newline) nested += c;
    }
    out(nested);
  }
};

struct CostCommand {
  std::string by;
  std::string since;
  std::string until;
  std::string format = "table";

  int operator()() const {
    Format f = format_from(format);
    std::optional<double> from, to;
    if (!since.empty()) from = value_or_throw(parse_time_bound(since, "--since"));
    if (!until.empty()) to = value_or_throw(parse_time_bound(until, "--until"));
    if (from && to && *from >= *to)
      throw Fatal("--since " + since + " --until " + until + ": the range is empty");
    std::vector<const Grouping*> groupings;
    for (const auto& g : kGroupings)
      if (by.empty() ? (g.by == std::string("day") || g.by == std::string("gpu")) : by == g.by)
        groupings.push_back(&g);
    if (groupings.empty())
      throw Fatal("--by: invalid value '" + by + "': expected day, gpu, sweep or name");

    auto store = open_store_to_read();
    reconcile_to_read(*store);
    std::vector<std::vector<Row>> held;  // day and GPU type: a few rows each
    std::vector<Rows> results;
    if (groupings.size() == 2 && groupings[0]->by == std::string("day") &&
        groupings[1]->by == std::string("gpu")) {  // the default: one walk of the jobs for both
      auto [days, gpus] = store->spend_by_day_and_gpu(from, to, true);
      held.push_back(std::move(days));
      held.push_back(std::move(gpus));
    } else if (by == "day") {
      held.push_back(store->spend_by_day(from, to));
    } else if (by == "gpu") {
      held.push_back(store->spend_by_gpu(from, to, true));
    }
    for (const auto& rows : held) results.push_back(from_memory(rows));
    const bool many = by == "sweep" || by == "name";
    if (by == "sweep")
      results.push_back([&](int passes, const std::function<void(int, const Row&)>& each) {
        store->each_spend_by_sweep(from, to, passes, each);
      });
    if (by == "name")
      results.push_back([&](int passes, const std::function<void(int, const Row&)>& each) {
        store->each_spend_by_name(from, to, passes, each);
      });

    const TableWriter::Sink out = [](std::string_view text) {
      std::fwrite(text.data(), 1, text.size(), stdout);
    };
    if (f == Format::kJson) {
      // An object: the groupings asked for, the range, and the totals of the first beside (not
      // among) its rows; its members in dump_json's order (by key), the rows written as they go.
      out("{\n");
      Row total;
      for (size_t i = 0; i < groupings.size(); ++i) {
        out(std::string("  \"by_") + groupings[i]->by + "\": ");
        Row sum = write_spend(*groupings[i], results[i], many, false, f, NestedJson{out});
        if (i == 0) total = sum;
        out(",\n");
      }
      nlohmann::json rest = {
          {"schema_version", kSchemaVersion},
          {"since", or_null(from)},
          {"until", or_null(to)},
          {"total",
           {{"jobs", total.jobs}, {"gpu_hours", total.gpu_hours}, {"cost_usd", total.cost}}}};
      out(dump_json(rest).substr(2) + "\n");  // its members after the groupings' ("by_...")
      return 0;
    }
    if (f == Format::kCsv)  // one grouping: csv has one header
      return write_spend(*groupings.front(), results.front(), many, false, f, out), 0;
    for (size_t i = 0; i < groupings.size(); ++i) {
      if (i) out("\n");
      write_spend(*groupings[i], results[i], many, true, f, out);
    }
    return 0;
  }
};
}  // namespace

Command add_cost(CLI::App& app) {
  auto cmd = std::make_shared<CostCommand>();
  CLI::App* sub = app.add_subcommand("cost", "spend by day, GPU type, sweep or job name");
  set_examples(sub, {"nodus cost", "nodus cost --since 7d --by gpu",
                     "nodus cost --by sweep --since 2026-11-01 --until 2026-12-01",
                     "nodus cost --by name --format csv"});
  sub->add_option("--by", cmd->by, "day, gpu, sweep or name (default: day and gpu; csv: day)")
      ->type_name("day|gpu|sweep|name")
      ->check(one_of({"day", "gpu", "sweep", "name"}));
  sub->add_option("--since", cmd->since,
                  "only jobs started since DURATION ago (7d, 24h) or a date YYYY-MM-DD")
      ->type_name("DURATION|DATE")
      ->check(time_bound_value());
  sub->add_option("--until", cmd->until,
                  "only jobs started before DURATION ago or a date YYYY-MM-DD (its midnight)")
      ->type_name("DURATION|DATE")
      ->check(time_bound_value());
  add_format_flag(sub, cmd->format);
  return {sub, [cmd] { return (*cmd)(); }};
}

}  // namespace nodus::cli
