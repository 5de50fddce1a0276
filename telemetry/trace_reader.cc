#include "telemetry/trace_reader.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <unordered_map>

#include "core/json_input.h"

namespace nodus::telemetry {
namespace {

enum Kind : uint8_t { kStep, kCpuOp, kPy, kKernel, kMemcpy, kMemset, kSyncCall };

// One kept event: 40 bytes whatever the trace's text for it was.
struct Rec {
  double ts = 0, dur = 0;
  int64_t ext = 0;  // "External id": links a kernel to the op that launched it
  uint32_t name = 0, tid = 0;
  Kind kind = kCpuOp;
};

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool has(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_sync_call(std::string_view n) {
  return n == "cudaStreamSynchronize" || n == "cudaDeviceSynchronize" ||
         n == "cudaEventSynchronize" || n == "cudaMemcpy" || n == "cuStreamSynchronize" ||
         n == "cuCtxSynchronize";
}

bool is_sync_op(std::string_view n) {
  return n == "aten::item" || n == "aten::_local_scalar_dense";
}

// "/home/u/train.py(42): main" -> "train.py, in main()" for the job's own frames; "" for the
// interpreter's, torch's and installed packages' frames. The line is left out: for a frame
// already running when the profiler started (the training loop's own function) torch records
// the line it was at then, not the line of the call inside it.
std::string user_site(std::string_view n) {
  auto paren = n.find(".py(");
  if (paren == std::string_view::npos) return "";
  std::string_view path = n.substr(0, paren + 3);
  for (std::string_view skip : {"site-packages", "dist-packages", "/torch/", "<frozen",
                                "/lib/python3", "<built-in", "sitecustomize.py"})
    if (has(path, skip)) return "";
  auto colon = n.find("): ", paren);
  if (colon == std::string_view::npos) return "";
  auto slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return std::string(base) + ", in " + std::string(n.substr(colon + 3)) + "()";
}

// Streams the events, keeping what the measures need.
class Collector : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit Collector(size_t max_events) : max_(max_events) { names_.push_back(""); }

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t v) override { return num(static_cast<double>(v)); }
  bool number_unsigned(number_unsigned_t v) override { return num(static_cast<double>(v)); }
  bool number_float(number_float_t v, const string_t&) override { return num(v); }
  bool binary(binary_t&) override { return true; }
  bool string(string_t& v) override {
    if (at_event_field()) {
      if (key_ == "name")
        ev_name_ = std::move(v);
      else if (key_ == "cat")
        ev_cat_ = v;
      else if (key_ == "ph")
        ev_ph_ = v;
      else if (key_ == "tid")
        ev_tid_ = v;
      else if (key_ == "ts")
        ev_ts_ = std::strtod(v.c_str(), nullptr);
      else if (key_ == "dur")
        ev_dur_ = std::strtod(v.c_str(), nullptr);
    }
    return true;
  }
  bool start_object(std::size_t) override {
    if (too_deep()) return false;
    stack_.push_back('{');
    if (events_level_ && stack_.size() == events_level_ + 1) begin_event();
    return true;
  }
  bool end_object() override {
    if (in_event_ && stack_.size() == events_level_ + 1) end_event();
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    if (too_deep()) return false;
    // The events: a bare top-level array (legacy) or the top-level object's "traceEvents".
    if (!events_level_ && (stack_.empty() || (stack_.size() == 1 && key_ == "traceEvents")))
      events_level_ = stack_.size() + 1;
    stack_.push_back('[');
    return true;
  }
  bool end_array() override {
    stack_.pop_back();
    return true;
  }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  // One more level would pass the JSON input limit: the reading stops there.
  bool too_deep() {
    if (stack_.size() < kJsonMaxDepth) return false;
    error_ = "not a Chrome trace: " + json_depth_words();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& e) override {
    error_ = "not a Chrome trace at byte " + std::to_string(position) + ": " + e.what();
    return false;
  }

  std::string error_;
  std::vector<Rec> recs_;
  std::vector<std::string> names_;
  uint64_t events_ = 0;
  bool truncated_ = false;

 private:
  bool at_event_field() const { return in_event_ && stack_.size() == events_level_ + 1; }
  bool at_args_field() const { return in_event_ && in_args_ && stack_.size() == events_level_ + 2; }

  bool num(double v) {
    if (at_event_field()) {
      if (key_ == "ts")
        ev_ts_ = v;
      else if (key_ == "dur")
        ev_dur_ = v;
      else if (key_ == "tid")
        ev_tid_ = std::to_string(static_cast<int64_t>(v));
    } else if (at_args_field() && key_ == "External id") {
      ev_ext_ = static_cast<int64_t>(v);
    }
    return true;
  }

  void begin_event() {
    in_event_ = true;
    ev_name_.clear(), ev_cat_.clear(), ev_ph_.clear(), ev_tid_.clear();
    ev_ts_ = ev_dur_ = 0;
    ev_ext_ = 0;
    in_args_ = false;
  }

  uint32_t intern(const std::string& s, std::unordered_map<std::string, uint32_t>& ids,
                  std::vector<std::string>& out) {
    auto it = ids.find(s);
    if (it != ids.end()) return it->second;
    uint32_t id = static_cast<uint32_t>(out.size());
    out.push_back(s);
    ids.emplace(s, id);
    return id;
  }

  void end_event() {
    in_event_ = false;
    if (ev_ph_ != "X") return;
    ++events_;
    std::string cat = lower(ev_cat_);
    Kind kind;
    std::string name = ev_name_;
    if (cat.empty() || cat == "cpu_op" || cat == "user_annotation" || cat == "operator") {
      kind = starts_with(name, "ProfilerStep#") ? kStep : kCpuOp;
    } else if (cat == "python_function") {
      std::string site = user_site(name);
      if (site.empty()) return;
      kind = kPy;
      name = site;
    } else if (cat == "kernel") {
      kind = kKernel;
    } else if (cat == "gpu_memcpy" || cat == "memcpy") {
      kind = kMemcpy;
    } else if (cat == "gpu_memset" || cat == "memset") {
      kind = kMemset;
    } else if (cat == "cuda_runtime" || cat == "runtime" || cat == "cuda_driver") {
      if (!is_sync_call(name)) return;
      kind = kSyncCall;
    } else {
      return;
    }
    if (recs_.size() >= max_) {
      truncated_ = true;
      return;
    }
    Rec r;
    r.ts = ev_ts_;
    r.dur = ev_dur_;
    r.ext = ev_ext_;
    r.kind = kind;
    r.name = intern(name, name_ids_, names_);
    r.tid = intern(ev_tid_, tid_ids_, tids_);
    recs_.push_back(r);
  }

 public:
  // For ArgsAwareCollector, which tells the event's "args" object apart from its fields.
  void set_args(bool on) { in_args_ = on; }
  size_t depth() const { return stack_.size(); }
  size_t events_level() const { return events_level_; }
  bool in_event() const { return in_event_; }
  const std::string& last_key() const { return key_; }

 private:
  size_t max_;
  std::vector<char> stack_;
  size_t events_level_ = 0;  // depth of the events array (1 or 2); 0 until found
  std::string key_;
  bool in_event_ = false, in_args_ = false;
  std::string ev_name_, ev_cat_, ev_ph_, ev_tid_;
  double ev_ts_ = 0, ev_dur_ = 0;
  int64_t ev_ext_ = 0;
  std::unordered_map<std::string, uint32_t> name_ids_, tid_ids_;
  std::vector<std::string> tids_;
};

// Tracks whether the nested object being opened is the event's "args".
class ArgsAwareCollector : public Collector {
 public:
  using Collector::Collector;
  bool start_object(std::size_t n) override {
    bool args = in_event() && depth() == events_level() + 1 && last_key() == "args";
    bool ok = Collector::start_object(n);
    if (args) set_args(true);
    return ok;
  }
  bool end_object() override {
    if (in_event() && depth() == events_level() + 2) set_args(false);
    return Collector::end_object();
  }
};

using Interval = std::pair<double, double>;

std::vector<Interval> merge(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& i : v) {
    if (!out.empty() && i.first <= out.back().second)
      out.back().second = std::max(out.back().second, i.second);
    else
      out.push_back(i);
  }
  return out;
}

// Merges intervals closer than `gap` and drops the rest beyond `max_n` by coarsening: the
// report draws at most a few hundred boxes a row.
std::vector<Interval> coarsen(std::vector<Interval> v, double gap, size_t max_n) {
  v = merge(std::move(v));
  for (int round = 0; round < 12 && !v.empty(); ++round) {
    std::vector<Interval> out;
    for (const auto& i : v) {
      if (!out.empty() && i.first - out.back().second < gap)
        out.back().second = std::max(out.back().second, i.second);
      else
        out.push_back(i);
    }
    v = std::move(out);
    if (v.size() <= max_n) break;
    gap *= 2;
  }
  return v;
}

double overlap(const Interval& a, double lo, double hi) {
  return std::max(0.0, std::min(a.second, hi) - std::max(a.first, lo));
}

}  // namespace

std::string gemm_precision(std::string_view kernel_name) {
  std::string n = lower(kernel_name);
  bool conv = false;
  for (size_t at = n.find("conv"); at != std::string::npos; at = n.find("conv", at + 1))
    if (n.compare(at, 7, "convert") != 0) conv = true;
  bool gemm = has(n, "gemm") || has(n, "matmul") || has(n, "cutlass") || has(n, "xmma") ||
              starts_with(n, "nvjet") || has(n, "wgmma") || has(n, "cublas");
  if (!(gemm || conv || has(n, "cudnn") || has(n, "fprop") || has(n, "dgrad") || has(n, "wgrad")))
    return "";
  if (starts_with(n, "nvjet_")) {
    // cuBLASLt's Hopper kernels: nvjet_[smNN_]<A><compute><D>_...: h fp16, t bf16 (a bf16
    // autocast run on the H200 gave nvjet_sm90_tst_...), s fp32, e fp8.
    std::string_view rest = std::string_view(n).substr(6);
    if (starts_with(rest, "sm") && rest.find('_') != std::string_view::npos)
      rest = rest.substr(rest.find('_') + 1);
    if (!rest.empty()) {
      switch (rest[0]) {
        case 'h':
          return "fp16";
        case 't':
          return "bf16";
        case 's':
          return "fp32";
        case 'e':
          return "fp8";
      }
    }
  }
  if (has(n, "bf16") || has(n, "bfloat16")) return "bf16";
  if (has(n, "e4m3") || has(n, "e5m2") || has(n, "fp8")) return "fp8";
  if (has(n, "tf32")) return "tf32";
  if (has(n, "f16") || has(n, "fp16") || has(n, "half") || has(n, "hgemm") || has(n, "h884") ||
      has(n, "h1688") || has(n, "h16816"))
    return "fp16";
  if (has(n, "s1688") || has(n, "s16816")) return "tf32";  // Ampere's TF32 tensor-core tiles
  if (has(n, "sgemm") || has(n, "f32f32_f32") || has(n, "fp32") || has(n, "float") ||
      has(n, "simt") || has(n, "scudnn"))
    return "fp32";
  return "unknown";
}

namespace {

// 1 us of slack: the legacy profiler rounds start and duration to whole microseconds, so a
// child can seem to end just after its parent.
bool contains(const Rec* outer, const Rec* inner) {
  return outer != inner && outer->ts <= inner->ts &&
         outer->ts + outer->dur + 1.0 >= inner->ts + inner->dur;
}

// The parsed trace, sorted, and the indexes the steps below read.
struct Trace {
  Trace(const std::vector<std::string>& names, const std::vector<Rec>& recs)
      : names(names), recs(recs) {}
  const std::vector<std::string>& names;
  const std::vector<Rec>& recs;  // by start; outer before inner at equal starts
  std::vector<Rec> steps;        // the ProfilerStep windows
  std::vector<Interval> busy;    // when the GPU ran anything (kernels, copies, sets), merged
  std::map<uint32_t, double> kernel_time;           // by kernel name
  std::unordered_map<int64_t, uint32_t> op_of_ext;  // an op's External id -> its name
  std::vector<const Rec*> ops, frames, syncs;       // the loop thread's ops, Python frames, syncs
  std::vector<int> frame_parent;  // the index in `frames` of the frame around each, or -1
  bool cuda = false;
};

// Sorts the records and indexes them. The loop thread is the one with the most steps.
Trace index_trace(std::vector<Rec>& recs, const std::vector<std::string>& names) {
  std::sort(recs.begin(), recs.end(), [](const Rec& a, const Rec& b) {
    return a.ts != b.ts ? a.ts < b.ts : a.dur > b.dur;  // outer before inner at equal starts
  });
  Trace t(names, recs);
  std::map<uint32_t, int> step_tids;
  std::vector<Interval> gpu;
  for (const auto& r : recs) {
    if (r.kind == kStep) t.steps.push_back(r), ++step_tids[r.tid];
    if (r.kind == kKernel || r.kind == kMemcpy || r.kind == kMemset) {
      gpu.push_back({r.ts, r.ts + r.dur});
      t.cuda = true;
    }
    if (r.kind == kKernel) t.kernel_time[r.name] += r.dur;
    if (r.kind == kCpuOp && r.ext != 0) t.op_of_ext.emplace(r.ext, r.name);
  }
  if (t.steps.empty()) return t;
  uint32_t main_tid = std::max_element(step_tids.begin(), step_tids.end(), [](auto& a, auto& b) {
                        return a.second < b.second;
                      })->first;
  t.busy = merge(gpu);
  for (const auto& r : recs) {
    if (r.tid != main_tid) continue;
    if (r.kind == kCpuOp) t.ops.push_back(&r);
    if (r.kind == kPy) t.frames.push_back(&r);
    if (r.kind == kSyncCall || (r.kind == kCpuOp && is_sync_op(names[r.name])))
      t.syncs.push_back(&r);
  }
  std::vector<int> open;  // the frames around the one being indexed, outermost first
  for (size_t i = 0; i < t.frames.size(); ++i) {
    while (!open.empty() && !contains(t.frames[static_cast<size_t>(open.back())], t.frames[i]))
      open.pop_back();
    t.frame_parent.push_back(open.empty() ? -1 : open.back());
    open.push_back(static_cast<int>(i));
  }
  return t;
}

// The job's own frame the loop's thread was in over [lo, hi): the innermost (latest-starting)
// frame that covers more than half of it; failing that, the one that covers most of it (ties:
// the latest-starting); null when none overlaps it. Only the frames open at `lo` (the last one
// begun before it and those around it) and those begun inside are looked at, so a trace's
// thousands of gaps cost no more than its frames.
const Rec* frame_over(const Trace& t, double lo, double hi) {
  const auto& fr = t.frames;
  auto before = [](const Rec* r, double x) { return r->ts < x; };
  const auto from = std::lower_bound(fr.begin(), fr.end(), lo, before) - fr.begin();
  const auto to = std::lower_bound(fr.begin(), fr.end(), hi, before) - fr.begin();
  const double half = (hi - lo) / 2;
  long most = -1, inner = -1;  // indexes in `frames`: a later one began later or inside
  double most_us = 0;
  auto consider = [&](long i) {
    const Rec* r = fr[static_cast<size_t>(i)];
    double us = overlap({r->ts, r->ts + r->dur}, lo, hi);
    if (us <= 0) return;
    if (us > half && i > inner) inner = i;
    if (us > most_us || (us == most_us && i > most)) most = i, most_us = us;
  };
  for (long i = from - 1; i >= 0; i = t.frame_parent[static_cast<size_t>(i)]) consider(i);
  for (long i = from; i < to; ++i) consider(i);
  long pick = inner >= 0 ? inner : most;
  return pick >= 0 ? fr[static_cast<size_t>(pick)] : nullptr;
}

// The syncs of a step that count: only the outermost of nested ones (aten::item holds
// _local_scalar_dense, which holds cudaStreamSynchronize); with CUDA, only those that hold a
// sync call (an aten::item on a CPU tensor, a loader's transform say, waits for nothing).
std::vector<const Rec*> counted_syncs(const std::vector<const Rec*>& step_syncs, bool cuda) {
  std::vector<const Rec*> outer;
  for (const Rec* y : step_syncs) {
    bool inner = false;
    for (const Rec* z : step_syncs)
      inner = inner || (contains(z, y) && !(z->ts == y->ts && z->dur == y->dur && z > y));
    if (!inner) outer.push_back(y);
  }
  if (!cuda) return outer;
  std::vector<const Rec*> real;
  for (const Rec* y : outer) {
    bool holds = y->kind == kSyncCall;
    for (const Rec* z : step_syncs) holds = holds || (z->kind == kSyncCall && contains(y, z));
    if (holds) real.push_back(y);
  }
  return real;
}

constexpr const char* kNoFrame = "(no Python frame)";
constexpr const char* kFetchWhat = "DataLoader __next__";

// Sums over every step.
struct StepTotals {
  double step = 0, busy = 0, fetch_idle = 0, sync_idle = 0, inside_idle = 0, fetch = 0;
  int kernels = 0, syncs = 0, ops = 0;
  std::map<std::pair<std::string, std::string>, SyncSite> sites;  // by what and where
  // GPU idle by where the loop's thread was (IdleSite's site, kind, what)
  std::map<std::tuple<std::string, std::string, std::string>, double> idle_us;
  std::vector<double> kernel_durs;
};

// A sync's what (a sync call named with the aten op it ran in: aten::to, aten::copy_, ...) and
// site (the innermost of the job's own frames around it, or "").
struct SyncWhere {
  std::string what, site;
};

SyncWhere sync_where(const Trace& t, const Rec* y) {
  SyncWhere w{t.names[y->name], ""};
  if (y->kind == kSyncCall) {
    for (const Rec* o : t.ops)
      if (contains(o, y) && starts_with(t.names[o->name], "aten::")) {
        w.what += " in " + t.names[o->name];
        break;
      }
  }
  const Rec* best = nullptr;
  for (const Rec* p : t.frames)
    if (p->ts <= y->ts && p->ts + p->dur >= y->ts + y->dur && (!best || p->ts >= best->ts))
      best = p;
  if (best) w.site = t.names[best->name];
  return w;
}

// Puts the GPU's idle over [lo, hi) down to the frame the loop's thread was in then.
void add_idle_at(const Trace& t, double lo, double hi, const char* kind, const char* what,
                 StepTotals& tot) {
  if (hi <= lo) return;
  const Rec* p = frame_over(t, lo, hi);
  tot.idle_us[{p ? t.names[p->name] : kNoFrame, kind, what}] += hi - lo;
}

// The GPU-idle gaps of the step [a, b), each split into the time spent fetching the next batch,
// the time after a sync (the first sync that overlaps a gap owns the idle from its start to the
// gap's end) and the rest, each part put down to a site (the sync's; the frame the loop's thread
// was in for the others). Returns each sync's share, in the order of `syncs`.
std::vector<double> split_idle(const Trace& t, double a, double b,
                               const std::vector<Interval>& fetch,
                               const std::vector<const Rec*>& syncs,
                               const std::vector<SyncWhere>& where, StepTotals& tot) {
  std::vector<double> sync_idle(syncs.size(), 0);
  if (!t.cuda) return sync_idle;
  auto first =
      std::lower_bound(t.busy.begin(), t.busy.end(), Interval{a, a},
                       [](const Interval& x, const Interval& y) { return x.second < y.first; });
  double cursor = a;
  std::vector<Interval> gaps;
  for (auto it = first; it != t.busy.end() && it->first < b; ++it) {
    if (it->first > cursor) gaps.push_back({cursor, it->first});
    cursor = std::max(cursor, it->second);
  }
  if (cursor < b) gaps.push_back({cursor, b});
  for (const auto& g : gaps) {
    double len = g.second - g.first, in_fetch = 0;
    for (const auto& fi : fetch) {
      in_fetch += overlap(fi, g.first, g.second);
      add_idle_at(t, std::max(fi.first, g.first), std::min(fi.second, g.second), "fetch",
                  kFetchWhat, tot);
    }
    double rest = len - in_fetch, host_end = g.second;
    for (size_t k = 0; k < syncs.size() && rest > 0; ++k) {
      const Rec* y = syncs[k];
      if (y->ts <= g.second && y->ts + y->dur >= g.first) {
        double from = std::max(g.first, y->ts);
        double idle = g.second - from;
        for (const auto& fi : fetch) idle -= overlap(fi, from, g.second);
        idle = std::clamp(idle, 0.0, rest);
        sync_idle[k] += idle;
        rest -= idle;
        host_end = from;
        if (idle > 0)
          tot.idle_us[{where[k].site.empty() ? kNoFrame : where[k].site, "sync", where[k].what}] +=
              idle;
        break;
      }
    }
    // The rest: the gap before the sync, less the fetches (merged, in order), piece by piece.
    double cursor = g.first;
    for (const auto& fi : fetch) {
      if (fi.second <= cursor) continue;
      if (fi.first >= host_end) break;
      add_idle_at(t, cursor, std::min(fi.first, host_end), "host", "", tot);
      cursor = std::max(cursor, fi.second);
    }
    add_idle_at(t, cursor, host_end, "host", "", tot);
    tot.fetch_idle += in_fetch;
    tot.inside_idle += rest;
  }
  return sync_idle;
}

// Counts a sync where it was made, with the GPU idle it owns.
void add_sync_site(const SyncWhere& w, double idle, StepTotals& tot) {
  auto& entry = tot.sites[{w.what, w.site}];
  entry.what = w.what, entry.site = w.site;
  ++entry.count;
  entry.gpu_idle_us += idle;
}

// One step's ops, batch fetches, syncs, kernels and GPU-idle gaps, into the totals.
void add_step(const Trace& t, const Rec& s, StepTotals& tot) {
  const double a = s.ts, b = s.ts + s.dur;
  tot.step += s.dur;
  std::vector<Interval> fetch;
  for (const Rec* o : t.ops) {
    if (o->ts < a || o->ts >= b) continue;
    ++tot.ops;
    if (starts_with(t.names[o->name], "enumerate(DataLoader)"))
      fetch.push_back({o->ts, std::min(b, o->ts + o->dur)});
  }
  fetch = merge(fetch);
  for (const auto& i : fetch) tot.fetch += i.second - i.first;
  std::vector<const Rec*> step_syncs;
  for (const Rec* y : t.syncs)
    if (y->ts >= a && y->ts < b) step_syncs.push_back(y);
  const std::vector<const Rec*> syncs = counted_syncs(step_syncs, t.cuda);
  tot.syncs += static_cast<int>(syncs.size());
  for (const auto& i : t.busy) tot.busy += overlap(i, a, b);
  for (const auto& r : t.recs)
    if (r.kind == kKernel && r.ts >= a && r.ts < b) ++tot.kernels, tot.kernel_durs.push_back(r.dur);
  std::vector<SyncWhere> where;
  for (const Rec* y : syncs) where.push_back(sync_where(t, y));
  const std::vector<double> sync_idle = split_idle(t, a, b, fetch, syncs, where, tot);
  for (size_t k = 0; k < syncs.size(); ++k) {
    tot.sync_idle += sync_idle[k];
    add_sync_site(where[k], sync_idle[k], tot);
  }
}

// The lines the GPU waited for, most idle first: at most 8.
void add_idle_sites(const StepTotals& tot, TraceFacts& f) {
  for (const auto& [key, us] : tot.idle_us) {
    const auto& [site, kind, what] = key;
    f.idle_sites.push_back({site, kind, what, us / f.steps, tot.step > 0 ? us / tot.step : 0});
  }
  std::stable_sort(f.idle_sites.begin(), f.idle_sites.end(),
                   [](const IdleSite& x, const IdleSite& y) {
                     return x.gpu_idle_us_per_step > y.gpu_idle_us_per_step;
                   });
  if (f.idle_sites.size() > 8) f.idle_sites.resize(8);
}

// The per-step figures: step length, syncs and where they are made, ops, kernels, and the
// shares of the step the GPU was busy, idle fetching, idle after a sync, or idle otherwise.
void measure_steps(const Trace& t, TraceFacts& f) {
  StepTotals tot;
  for (const auto& s : t.steps) add_step(t, s, tot);
  const double n = f.steps;
  f.step_us = tot.step / n;
  f.syncs_per_step = tot.syncs / n;
  f.cpu_ops_per_step = tot.ops / n;
  if (tot.step > 0) {
    f.fetch_share = tot.fetch / tot.step;
    if (f.cuda) {
      f.gpu_busy_share = tot.busy / tot.step;
      f.idle_fetch_share = tot.fetch_idle / tot.step;
      f.idle_sync_share = tot.sync_idle / tot.step;
      f.idle_inside_share = tot.inside_idle / tot.step;
      f.launches_per_s = tot.kernels / (tot.step / 1e6);
    }
  }
  if (f.cuda) add_idle_sites(tot, f);
  for (auto& [key, site] : tot.sites) f.sync_sites.push_back(site);
  std::sort(f.sync_sites.begin(), f.sync_sites.end(), [](const SyncSite& x, const SyncSite& y) {
    return x.gpu_idle_us != y.gpu_idle_us ? x.gpu_idle_us > y.gpu_idle_us : x.count > y.count;
  });
  f.kernels_per_step = tot.kernels / n;
  if (!tot.kernel_durs.empty()) {
    auto mid = tot.kernel_durs.begin() + static_cast<long>(tot.kernel_durs.size() / 2);
    std::nth_element(tot.kernel_durs.begin(), mid, tot.kernel_durs.end());
    f.median_kernel_us = *mid;
  }
}

// GEMM/convolution time by precision, as shares of the GPU's busy time.
void add_gemm_shares(const Trace& t, TraceFacts& f) {
  double busy_all = 0;
  for (const auto& i : t.busy) busy_all += i.second - i.first;
  std::map<std::string, double> by_precision;
  double fp32_top = 0;
  for (const auto& [id, us] : t.kernel_time) {
    std::string p = gemm_precision(t.names[id]);
    if (p.empty()) continue;
    by_precision[p] += us;
    if (p == "fp32" && us > fp32_top) fp32_top = us, f.top_fp32_kernel = t.names[id];
  }
  if (busy_all > 0) {
    for (const auto& [p, us] : by_precision) {
      f.gemm_share_by_precision.push_back({p, us / busy_all});
      f.gemm_share += us / busy_all;
    }
    if (by_precision.count("fp32")) f.fp32_gemm_share = by_precision["fp32"] / busy_all;
  }
}

// The five ops that take most per step: self CUDA time through the kernels' External id;
// without CUDA, self CPU time.
void add_top_ops(const Trace& t, TraceFacts& f) {
  std::map<std::string, double> op_time;
  if (f.cuda) {
    for (const auto& r : t.recs) {
      if (r.kind != kKernel) continue;
      auto it = t.op_of_ext.find(r.ext);
      op_time[it == t.op_of_ext.end() ? std::string("(no op)") : t.names[it->second]] += r.dur;
    }
  } else {
    std::vector<const Rec*> stack;
    for (const Rec* o : t.ops) {
      while (!stack.empty() && !contains(stack.back(), o)) stack.pop_back();
      op_time[t.names[o->name]] += o->dur;
      if (!stack.empty()) op_time[t.names[stack.back()->name]] -= o->dur;
      stack.push_back(o);
    }
  }
  std::vector<TopOp> top;
  for (const auto& [name, us] : op_time) top.push_back({name, us / f.steps});
  std::sort(top.begin(), top.end(),
            [](const TopOp& x, const TopOp& y) { return x.us_per_step > y.us_per_step; });
  if (top.size() > 5) top.resize(5);
  f.top_ops = top;
}

// The median-length step, for the report's timeline: its top-level ops, batch fetches, GPU
// busy time and outermost syncs, coarsened to what an 800-px drawing shows.
void add_timeline(const Trace& t, TraceFacts& f) {
  std::vector<size_t> order(t.steps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t x, size_t y) { return t.steps[x].dur < t.steps[y].dur; });
  const Rec& ms = t.steps[order[order.size() / 2]];
  const double a = ms.ts, b = ms.ts + ms.dur;
  StepTimeline& line = f.timeline;
  line.step_us = ms.dur;
  std::vector<Interval> cpu_rows, gpu_rows, fetch_rows;
  std::vector<const Rec*> top_level;
  for (const Rec* o : t.ops) {
    if (o->ts < a || o->ts >= b) continue;
    if (!top_level.empty() && contains(top_level.back(), o)) continue;
    top_level.push_back(o);
    cpu_rows.push_back({o->ts - a, std::min(b, o->ts + o->dur) - a});
    if (starts_with(t.names[o->name], "enumerate(DataLoader)"))
      fetch_rows.push_back({o->ts - a, std::min(b, o->ts + o->dur) - a});
  }
  for (const auto& i : t.busy)
    if (i.second > a && i.first < b)
      gpu_rows.push_back({std::max(i.first, a) - a, std::min(i.second, b) - a});
  const double px = ms.dur / 800.0;  // one pixel of an 800-px drawing
  line.cpu = coarsen(cpu_rows, px, 400);
  line.gpu = coarsen(gpu_rows, px, 400);
  line.fetch = merge(fetch_rows);
  for (const Rec* y : t.syncs) {
    if (y->ts < a || y->ts >= b) continue;
    bool inner = false;
    for (const Rec* z : t.syncs) inner = inner || (contains(z, y) && z->ts < y->ts);
    if (!inner && line.syncs.size() < 200) line.syncs.push_back({y->ts - a, t.names[y->name]});
  }
}

}  // namespace

// The steps, in order: parse (SAX, bounded), index, the per-step figures, GEMM precision, the
// top ops, the median step's timeline.
Result<TraceFacts> read_trace(std::istream& in, size_t max_events) {
  ArgsAwareCollector c(max_events);
  bool ok = nlohmann::json::sax_parse(in, &c, nlohmann::json::input_format_t::json, true, true);
  if (!ok) return Error::permanent(c.error_.empty() ? "not a Chrome trace" : c.error_);
  TraceFacts f;
  f.events = c.events_;
  f.kept = c.recs_.size();
  f.truncated = c.truncated_;
  const Trace t = index_trace(c.recs_, c.names_);
  f.cuda = t.cuda;
  if (t.steps.empty()) return Error::permanent("the trace has no ProfilerStep windows");
  f.steps = static_cast<int>(t.steps.size());
  measure_steps(t, f);
  add_gemm_shares(t, f);
  add_top_ops(t, f);
  add_timeline(t, f);
  if (!f.cuda)
    f.note =
        "CPU-only trace: GPU busy time, the GPU idle after syncs, kernels and their "
        "precision cannot be judged";
  return f;
}

Result<TraceFacts> read_trace_file(const std::string& path, size_t max_events) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::permanent("cannot read the trace " + path);
  auto f = read_trace(in, max_events);
  if (!f) return Error::permanent(path + ": " + f.error().message);
  return f;
}

nlohmann::json TraceFacts::to_json() const {
  nlohmann::json j = {{"cuda", cuda},
                      {"steps", steps},
                      {"step_ms", step_us / 1000},
                      {"fetch_share", fetch_share},
                      {"syncs_per_step", syncs_per_step},
                      {"cpu_ops_per_step", cpu_ops_per_step},
                      {"events", events},
                      {"kept", kept},
                      {"truncated", truncated}};
  if (cuda) {
    j["gpu_busy_share"] = gpu_busy_share;
    j["idle_fetch_share"] = idle_fetch_share;
    j["idle_sync_share"] = idle_sync_share;
    j["idle_inside_share"] = idle_inside_share;
    j["kernels_per_step"] = kernels_per_step;
    j["median_kernel_us"] = median_kernel_us;
    j["launches_per_s"] = launches_per_s;
    j["gemm_share"] = gemm_share;
    j["fp32_gemm_share"] = fp32_gemm_share;
    nlohmann::json p = nlohmann::json::object();
    for (const auto& [k, v] : gemm_share_by_precision) p[k] = v;
    j["gemm_share_by_precision"] = p;
    if (!top_fp32_kernel.empty()) j["top_fp32_kernel"] = top_fp32_kernel;
  }
  nlohmann::json s = nlohmann::json::array();
  for (const auto& x : sync_sites)
    s.push_back({{"what", x.what},
                 {"site", x.site},
                 {"count", x.count},
                 {"per_step", x.count / static_cast<double>(std::max(1, steps))},
                 {"gpu_idle_ms_each", x.count ? x.gpu_idle_us / x.count / 1000 : 0.0}});
  j["sync_sites"] = s;
  nlohmann::json idle = nlohmann::json::array();
  for (const auto& x : idle_sites)
    idle.push_back({{"site", x.site},
                    {"kind", x.kind},
                    {"what", x.what},
                    {"gpu_idle_ms_per_step", x.gpu_idle_us_per_step / 1000},
                    {"share", x.share}});
  j["idle_sites"] = idle;
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& o : top_ops)
    ops.push_back({{"name", o.name}, {"ms_per_step", o.us_per_step / 1000}});
  j["top_ops"] = ops;
  j["top_ops_by"] = cuda ? "self CUDA time" : "self CPU time";
  auto rows = [](const std::vector<Interval>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& [x, y] : v) a.push_back({x / 1000, y / 1000});
    return a;
  };
  nlohmann::json tl = {{"step_ms", timeline.step_us / 1000},
                       {"cpu", rows(timeline.cpu)},
                       {"gpu", rows(timeline.gpu)},
                       {"fetch", rows(timeline.fetch)}};
  nlohmann::json sy = nlohmann::json::array();
  for (const auto& [x, what] : timeline.syncs) sy.push_back({{"at_ms", x / 1000}, {"what", what}});
  tl["syncs"] = sy;
  j["timeline"] = tl;
  if (!note.empty()) j["note"] = note;
  return j;
}

}  // namespace nodus::telemetry
