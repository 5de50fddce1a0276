# nodus's zero-change instrumentation for PyTorch jobs. nodus puts the folder holding this file
# first on the job's PYTHONPATH, so Python imports it at start-up as `sitecustomize`. It
#   1. runs the sitecustomize it shadows (Debian ships one), so nothing the system set up is lost;
#   2. once torch.utils.data.dataloader is imported, wraps _BaseDataLoaderIter.__next__ to time
#      how long the loop is blocked waiting for each batch (data wait), the time between batches
#      (step) and the samples in each batch (leading dimension of the first tensor in it);
#   3. with NODUS_PROFILE set (nodus run/sweep --profile), runs torch.profiler over a few
#      DataLoader batches (schedule wait/warmup/active from NODUS_PROFILE, "5,2,5" by default;
#      one profiler step per batch, started before the batch is fetched so that each step holds
#      its own data wait), CPU and, where CUDA is available, CUDA activity, with Python stacks;
#      the Chrome trace goes to $NODUS_HOOK_DIR/trace-<rank>.json and what was profiled to
#      profile-<rank>.json;
#   4. writes, about every second, one JSON line per interval to
#      $NODUS_HOOK_DIR/auto-<rank>.jsonl (samples_per_sec, data_wait, step_time, batch_size of
#      the most-iterated loader) and a state file loaders-<rank>.json (every loader, the time of
#      the first batch and the end of the warm-up, the node the rank ran on).
#   5. with NODUS_LOADER set (nodus run --loader), sets DataLoader arguments as each DataLoader
#      is built: num_workers, pin_memory, persistent_workers, prefetch_factor, batch_size, for a
#      script that takes none of them as flags; what was set, what was not and why, goes into
#      the state file ("overrides"), never silently.
#   6. with NODUS_TF32=1 (nodus run --tf32), turns on TF32 for FP32 matmuls and cuDNN
#      convolutions at the first batch, over what the program set before its loop; what they
#      were and what they are at the last write go into the state file ("math").
#   7. once torch is imported, counts optimizer steps (each torch.optim.Optimizer's step, on
#      torch 1.13 and 2.x alike: the class's step is wrapped when an optimizer is built), the
#      samples and tokens each step trains on (the leading dimension, and for integer token ids
#      every element, of the first tensor the outermost nn.Module call with grad enabled
#      receives, summed over the step's micro-batches; of several top-level modules the one
#      with the most parameters, so a loss module is not counted twice) and the host time each
#      step spends inside the model's forward, backward (torch.autograd.backward), the
#      optimizer (its step and zero_grad, and the model's zero_grad) and host-device syncs
#      (Tensor.item and tolist, torch.cuda.synchronize). A loop
#      without a DataLoader is measured by its optimizer steps: steps/s, step time, samples/s,
#      tokens/s and the host share outside those calls (fetching the next batch, logging,
#      Python) as its data wait; with NODUS_PROFILE the profiler then steps on optimizer steps.
#      Where a DataLoader drives the loop its figures stay the loop's, with steps/s beside them.
# Beyond what NODUS_LOADER and NODUS_TF32 ask, it never changes what the program does or
# prints: the batch and any exception pass through untouched, and any failure inside the hook
# disables it with one line on stderr.
import sys as _nodus_sys


def _nodus_chain():
    # Run the sitecustomize this file shadows: the next one on sys.path after this folder.
    import os
    import importlib.machinery
    import importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in _nodus_sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


try:
    _nodus_chain()
except Exception as _e:  # what the shadowed file raises, Python would print and carry on too
    _nodus_sys.stderr.write("nodus: the shadowed sitecustomize failed: %r\n" % (_e,))


class _NodusLoaderKnobs(object):
    # NODUS_LOADER ("num_workers=8,pin_memory=true", checked by nodus before the job started),
    # applied to every DataLoader the program builds. A knob is not set where it would change
    # more than it says: an IterableDataset is copied into every worker (without sharding of its
    # own, each worker would yield every sample), a batch_sampler makes its own batches, and
    # prefetch_factor and persistent_workers need workers. Each refusal is recorded with why.
    FLAGS = ("pin_memory", "persistent_workers")
    COUNTS = {"num_workers": 0, "prefetch_factor": 1, "batch_size": 1}  # knob -> least value

    def __init__(self, spec):
        self.asked = {}
        for part in spec.split(","):
            key, _, value = part.partition("=")
            key, value = key.strip(), value.strip()
            if key in self.FLAGS and value in ("true", "false"):
                self.asked[key] = value == "true"
            elif key in self.COUNTS and value.isdigit() and int(value) >= self.COUNTS[key]:
                self.asked[key] = int(value)
            else:
                raise ValueError("NODUS_LOADER: %r is not a loader knob nodus sets" % part)
        self.built = {}  # id(dataset) -> what happened to the loader built on it

    def apply(self, arguments, parameters, iterable_type, site):
        def value(k):
            if k in arguments:
                return arguments[k]
            p = parameters.get(k)
            return None if p is None else p.default

        dataset = arguments.get("dataset")
        record = {"site": site, "dataset": type(dataset).__name__, "was": {}, "applied": {},
                  "refused": {}}
        iterable = iterable_type is not None and isinstance(dataset, iterable_type)
        for k, v in self.asked.items():
            if k not in parameters:
                record["refused"][k] = "this torch's DataLoader has no %s" % k
            elif k == "num_workers" and iterable and v != value(k):
                record["refused"][k] = ("an IterableDataset is copied into every worker: unless "
                                        "it splits itself by worker, each would yield every "
                                        "sample")
            elif k == "batch_size" and arguments.get("batch_sampler") is not None:
                record["refused"][k] = "the loader takes a batch_sampler, whose batches are its own"
            elif k == "batch_size" and value(k) is None:
                record["refused"][k] = "the loader does not batch (batch_size=None)"
            else:
                record["was"][k] = value(k)
                arguments[k] = v
                record["applied"][k] = v
        # What needs workers, with none: asked for, refused; set by the program and left
        # invalid by the num_workers asked for, dropped (torch would refuse the loader).
        if not value("num_workers"):
            for k in ("prefetch_factor", "persistent_workers"):
                if k in record["applied"]:
                    arguments[k] = record["was"].pop(k)
                    del record["applied"][k]
                    record["refused"][k] = "needs num_workers > 0 (batches load in the main process)"
                elif "num_workers" in record["applied"] and k in arguments and k in parameters:
                    off = parameters[k].default  # what torch takes without workers
                    if arguments[k] != off:
                        record["was"][k] = arguments[k]
                        arguments[k] = off
                        record["applied"][k] = off
        self.built[id(dataset)] = record

    def state(self, iterated):
        # iterated: id(dataset) -> name of every loader the hook saw iterate. A loader iterated
        # but never seen being built got nothing of what was asked.
        loaders = []
        for key, record in self.built.items():
            r = dict(record)
            r["name"] = iterated.get(key)
            loaders.append(r)
        for key, name in iterated.items():
            if key not in self.built:
                loaders.append({"name": name, "site": None, "was": {}, "applied": {},
                                "refused": dict((k, "built where the hook could not see it")
                                                for k in self.asked)})
        return {"asked": self.asked, "loaders": loaders}


class _NodusSteps(object):
    # The loop as its optimizer steps see it. Host time is split into "inside" (the model's
    # outermost forward, backward, the optimizer's step, host-device syncs) and the rest; each
    # optimizer keeps where the counters stood at its last step's end, and a step of the driving
    # optimizer (most steps, the first built on ties) spans from its previous step's end to its
    # own: its time, the inside time, samples and tokens in between.
    def __init__(self):
        self.inside = 0.0  # host seconds in forward, backward, optimizer and syncs, cumulative
        self.samples = 0
        self.tokens = 0
        self.model = None  # id of the module counted as the model
        self.params = {}  # id(module) -> parameter count, for top-level modules seen
        self.marks = {}  # id(optimizer) -> [steps, t_end, inside, samples, tokens]
        self.order = []
        self.interval = None
        self.new_interval()
        self.last = None  # the driving optimizer's last step: (samples, tokens)
        self.total = 0  # the driving optimizer's steps, counted steps only
        self.step_s = 0.0
        self.inside_s = 0.0

    def new_interval(self):
        self.interval = {"steps": 0, "step_s": 0.0, "inside_s": 0.0, "samples": 0, "tokens": 0,
                         "opt_steps": 0}

    def driver(self):
        best = None
        for key in self.order:
            if best is None or self.marks[key][0] > self.marks[best][0]:
                best = key
        return best

    def counted(self, module, samples, tokens):
        key = id(module)
        if key != self.model:
            n = self.params.get(key)
            if n is None:
                n = sum(p.numel() for p in module.parameters())
                self.params[key] = n
            if self.model is not None and n <= self.params.get(self.model, 0):
                return
            self.model = key  # a larger model than the one counted so far: it is the model
        self.samples += samples
        self.tokens += tokens

    def step_end(self, optimizer, t):
        # True when this was a step of the driving optimizer with a step before it.
        key = id(optimizer)
        mark = self.marks.get(key)
        if mark is None:
            mark = [0, None, 0.0, 0, 0]
            self.marks[key] = mark
            self.order.append(key)
        mark[0] += 1
        counted = False
        if key == self.driver():
            self.interval["opt_steps"] += 1
            if mark[1] is not None:
                i = self.interval
                dt = t - mark[1]
                i["steps"] += 1
                i["step_s"] += dt
                i["inside_s"] += min(dt, self.inside - mark[2])
                i["samples"] += self.samples - mark[3]
                i["tokens"] += self.tokens - mark[4]
                self.last = (self.samples - mark[3], self.tokens - mark[4])
                self.total += 1
                self.step_s += dt
                self.inside_s += min(dt, self.inside - mark[2])
                counted = True
        mark[1], mark[2], mark[3], mark[4] = t, self.inside, self.samples, self.tokens
        return counted

    def restart(self, optimizer, t, pending_inside):
        # The optimizer's last step ends at t instead (the hook's own work after it left out);
        # pending_inside: host time the wrapper around it will still add to inside for it.
        mark = self.marks.get(id(optimizer))
        if mark is not None:
            mark[1], mark[2] = t, self.inside + pending_inside

    def steps_seen(self):
        key = self.driver()
        return self.marks[key][0] if key is not None else 0

    def row(self, span):
        # A line of a loop driven by optimizer steps; None for an interval without a step.
        i = self.interval
        if i["steps"] == 0 or i["step_s"] <= 0 or span <= 0:
            return None
        # The interval's totals beside its rates: nodus sums them over the steady state, so its
        # figures are total over total, as a script's own timing of the same steps is.
        row = {"source": "steps", "batches": self.total, "interval_s": round(i["step_s"], 6),
               "n_steps": i["steps"], "n_samples": i["samples"], "n_tokens": i["tokens"],
               "outside_s": round(max(0.0, i["step_s"] - i["inside_s"]), 6),
               "samples_per_sec": round(i["samples"] / span, 3),
               "steps_per_sec": round(i["steps"] / span, 5),
               "step_time": round(i["step_s"] / i["steps"], 6),
               "data_wait": round(min(1.0, max(0.0, 1.0 - i["inside_s"] / i["step_s"])), 5),
               "batch_size": self.last[0] if self.last else 0}
        if i["tokens"] > 0:
            row["tokens_per_sec"] = round(i["tokens"] / span, 3)
            row["tokens_per_step"] = self.last[1] if self.last else 0
        return row

    def add_to_loader_row(self, row, span):
        # A DataLoader drives: its figures stand; the optimizer's steps and tokens go beside.
        i = self.interval
        if i["opt_steps"] > 0 and span > 0:
            row["steps_per_sec"] = round(i["opt_steps"] / span, 5)
        if i["tokens"] > 0 and span > 0:
            row["tokens_per_sec"] = round(i["tokens"] / span, 3)

    def state(self):
        out = {"optimizers": len(self.order), "steps": self.steps_seen(),
               "model_seen": self.model is not None, "samples": self.samples,
               "tokens": self.tokens}
        if self.total and self.step_s > 0:
            out["step_s"] = round(self.step_s / self.total, 6)
            out["outside_share"] = round(max(0.0, 1.0 - self.inside_s / self.step_s), 5)
        return out


class _NodusLines(object):
    # Where the loop's thread is while a profiled step runs outside forward, backward, the
    # optimizer and syncs: a thread looks at the main thread's innermost frame in the user's own
    # files every millisecond and puts the time since its last look down to that line, and each
    # sync (Tensor.item, tolist, torch.cuda.synchronize) is put down to the line that called it.
    # Works where the trace has no Python stacks (torch 1.13's CPU profiler). Runs only over the
    # profiler's active steps.
    SKIP = ("site-packages", "dist-packages", "/torch/", "/lib/python3", "sitecustomize.py")

    def __init__(self, hook):
        import threading
        self.hook = hook
        self.threading = threading
        self.main = threading.get_ident()
        self.lines = {}  # (file:line, function) -> seconds
        self.syncs = {}  # (what, file:line) -> [count, seconds]
        self.stop_event = threading.Event()
        self.thread = None
        self.t0 = None
        self.t1 = None

    @classmethod
    def user_frame(cls, frame):
        while frame is not None:
            name = frame.f_code.co_filename
            if not name.startswith("<") and not any(s in name for s in cls.SKIP):
                return frame
            frame = frame.f_back
        return None

    @staticmethod
    def where(frame):
        import os
        return "%s:%d" % (os.path.basename(frame.f_code.co_filename), frame.f_lineno)

    def start(self):
        self.t0 = self.hook.clock()
        self.thread = self.threading.Thread(target=self.run, name="nodus-lines", daemon=True)
        self.thread.start()

    def run(self):
        clock = self.hook.clock
        frames = _nodus_sys._current_frames
        hook = self.hook

        def inside(now):  # host time inside the step so far, the call under way included
            return hook.steps.inside + (now - hook.busy_since if hook.busy else 0.0)

        last = clock()
        was_inside = inside(last)
        before = None  # the last line seen outside the step
        while not self.stop_event.wait(0.001):
            now = clock()
            now_inside = inside(now)
            # Of the time since the last look, what was outside the step (the hook's own counts
            # say exactly how much) goes to the line the thread is at now, or, while it is
            # inside a call, to the line it was last seen at outside.
            outside = max(0.0, (now - last) - (now_inside - was_inside))
            last, was_inside = now, now_inside
            key = before
            if not hook.busy:
                frame = self.user_frame(frames().get(self.main))
                if frame is not None:
                    key = before = (self.where(frame), frame.f_code.co_name)
            if key is not None and outside > 0:
                self.lines[key] = self.lines.get(key, 0.0) + outside

    def sync(self, what, seconds):
        frame = self.user_frame(_nodus_sys._getframe(2))
        key = (what, self.where(frame) if frame is not None else "")
        entry = self.syncs.setdefault(key, [0, 0.0])
        entry[0] += 1
        entry[1] += seconds

    def finish(self, steps):
        self.t1 = self.hook.clock()
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join(1.0)
        span = self.t1 - self.t0
        # By function (file and name), each with its busiest line: get_batch at train.py:116.
        functions = {}
        for (site, function), v in self.lines.items():
            key = (site.rsplit(":", 1)[0], function)
            f = functions.setdefault(key, {"host_s": 0.0, "site": site, "top": 0.0})
            f["host_s"] += v
            if v > f["top"]:
                f["site"], f["top"] = site, v
        functions = sorted(functions.items(), key=lambda kv: -kv[1]["host_s"])[:10]
        lines = sorted(self.lines.items(), key=lambda kv: -kv[1])[:10]
        syncs = sorted(self.syncs.items(), key=lambda kv: -kv[1][1])[:10]
        return {"steps": steps, "span_s": round(span, 6),
                "functions": [{"function": k[1], "site": f["site"],
                               "host_s": round(f["host_s"], 6),
                               "share": round(f["host_s"] / span, 5) if span > 0 else 0.0}
                              for k, f in functions],
                "lines": [{"site": k[0], "function": k[1], "host_s": round(v, 6),
                           "share": round(v / span, 5) if span > 0 else 0.0}
                          for k, v in lines],
                "syncs": [{"what": k[0], "site": k[1], "count": v[0],
                           "per_step": round(v[0] / float(max(1, steps)), 4),
                           "host_s": round(v[1], 6),
                           "share": round(v[1] / span, 5) if span > 0 else 0.0}
                          for k, v in syncs]}


class _NodusFlops(object):
    # The FLOPs of one optimizer step, counted by PyTorch itself over a whole step (every
    # micro-batch of it): torch.utils.flop_counter where torch has it (2.1 and later), else the
    # profiler's with_flops (torch 1.13). The counted step runs slower, so the loop's figures
    # leave it out. Also notes the precision the model's matmuls run in.
    def __init__(self, hook):
        self.hook = hook
        self.mode = None
        self.prof = None
        self.counter = None
        self.precision = None
        self.step = None

    def start(self, step):
        import torch
        self.step = step
        try:
            from torch.utils.flop_counter import FlopCounterMode
            self.mode = FlopCounterMode(display=False)
            self.mode.__enter__()
            self.counter = "torch.utils.flop_counter"
            return
        except ImportError:
            pass
        import torch.profiler as tp
        activities = [tp.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(tp.ProfilerActivity.CUDA)
        self.prof = tp.profile(activities=activities, with_flops=True)
        self.prof.start()
        self.counter = "torch.profiler with_flops"

    def note_precision(self, module):
        if self.precision is not None:
            return
        import torch
        dtype = None
        cuda = False
        for p in module.parameters():
            dtype, cuda = p.dtype, p.is_cuda
            break
        if dtype is None:
            return  # a module without parameters (a loss) says nothing of the model's math
        if cuda and torch.is_autocast_enabled():
            dtype = torch.get_autocast_gpu_dtype()
        elif not cuda and getattr(torch, "is_autocast_cpu_enabled", lambda: False)():
            dtype = torch.get_autocast_cpu_dtype()
        names = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
        name = names.get(dtype, str(dtype).replace("torch.", ""))
        if name == "fp32" and cuda and torch.backends.cuda.matmul.allow_tf32:
            name = "tf32"
        self.precision = name

    def stop(self):
        # The step's FLOPs (None when nothing was counted).
        total = None
        if self.mode is not None:
            mode, self.mode = self.mode, None
            mode.__exit__(None, None, None)
            total = mode.get_total_flops()
        elif self.prof is not None:
            prof, self.prof = self.prof, None
            prof.stop()
            total = sum((e.flops or 0) for e in prof.key_averages())
        return int(total) if total else None


class _NodusHook(object):
    def __init__(self, out_dir):
        import os
        import time
        self.os = os
        self.time = time
        self.clock = time.perf_counter
        self.out_dir = out_dir
        self.pid = os.getpid()
        self.rank = 0  # known at the first batch: a launcher may set it after start-up
        self.world = 1
        self.on = True
        # Offset from the monotonic clock to unix time, taken once.
        self.unix_offset = time.time() - self.clock()
        warm = os.environ.get("NODUS_WARMUP", "5s").strip()
        self.warm_batches = None
        self.warm_seconds = None
        if warm.endswith("s"):
            self.warm_seconds = float(warm[:-1])
        else:
            self.warm_batches = int(warm)
        self.loaders = {}  # key -> dict of counters
        self.order = []
        self.first_batch = None  # monotonic time the first batch of any loader arrived
        self.last_batch = None  # and the latest one
        self.steady = None  # monotonic time the warm-up of the driving loader ended
        self.next_emit = None
        self.lines = None
        self.iter_key = {}  # id(iterator) -> loader key, for iterators seen this interval
        self.profile = None  # (wait, warmup, active) with NODUS_PROFILE
        spec = os.environ.get("NODUS_PROFILE", "")
        if spec:
            parts = [int(x) for x in spec.split(",")]
            if len(parts) != 3 or min(parts) < 0 or parts[2] < 1:
                raise ValueError("NODUS_PROFILE must be wait,warmup,active: %r" % spec)
            self.profile = tuple(parts)
        self.knobs = None
        if os.environ.get("NODUS_LOADER"):
            self.knobs = _NodusLoaderKnobs(os.environ["NODUS_LOADER"])
        self.tf32 = os.environ.get("NODUS_TF32") == "1"
        self.math = None
        self.prof = None
        self.prof_steps = 0
        self.prof_done = False
        self.stopping = False
        # What drives the loop, decided by its first event: "loader" (a DataLoader batch came
        # first) or "steps" (an optimizer step ended before any batch).
        self.mode = None
        self.steps = _NodusSteps()
        self.depth = 0  # inside the outermost nn.Module call
        self.busy = 0  # inside a call whose host time counts as the step's own
        self.busy_since = 0.0  # when that call began
        self.in_step = False  # inside an optimizer's step
        self.flops = None  # _NodusFlops while one step is counted
        self.flops_out = None  # {"per_step", "counter", "step", "precision"} once counted
        self.sampler = None  # _NodusLines over the profiled steps of a loop driven by steps
        self.sampled = None  # what it found, for profile-<rank>.json

    def find_rank(self):
        # torchrun and accelerate set RANK / WORLD_SIZE; a job that spawns its own processes
        # may only have an initialized process group.
        env = self.os.environ
        if "RANK" in env:
            self.rank = int(env["RANK"])
            self.world = int(env.get("WORLD_SIZE", "1"))
            return
        dist = _nodus_sys.modules.get("torch.distributed")
        if dist is not None and dist.is_available() and dist.is_initialized():
            self.rank = dist.get_rank()
            self.world = dist.get_world_size()

    def fail(self, error):
        self.on = False
        try:
            _nodus_sys.stderr.write("nodus: instrumentation off after an error in its hook: %r\n"
                                    % (error,))
        except Exception:
            pass
        # Nothing of the hook's is left running: a profiler never stopped hangs the exit.
        sampler, self.sampler = self.sampler, None
        prof, self.prof = self.prof, None
        flops, self.flops = self.flops, None
        try:
            if flops is not None:
                flops.stop()
        except Exception:
            pass
        self.prof_done = True
        try:
            if sampler is not None:
                sampler.stop_event.set()
            if prof is not None:
                prof.stop()
        except Exception:
            pass

    def loader_for(self, it, frame):
        dataset = getattr(it, "_dataset", None)
        key = id(dataset)
        entry = self.loaders.get(key)
        if entry is None:
            site = "?"
            if frame is not None:
                site = "%s:%d" % (self.os.path.basename(frame.f_code.co_filename), frame.f_lineno)
            name = "%s@%s" % (type(dataset).__name__, site)
            # num_workers == 0: batches are loaded in the main process (the first fix then is
            # workers, whatever the CPU shows: torch's own threads can fill the cores).
            workers = getattr(it, "_num_workers", None)
            entry = {"name": name, "batches": 0, "samples": 0, "wait": 0.0, "step": 0.0,
                     "workers": workers if isinstance(workers, int) else None,
                     "steps": 0, "iw": 0.0, "istep": 0.0, "isteps": 0, "isamples": 0,
                     "ibatches": 0, "last_bs": 0, "dataset": dataset}
            self.loaders[key] = entry
            self.order.append(key)
        return entry

    @staticmethod
    def batch_size(batch, depth=0):
        shape = getattr(batch, "shape", None)
        if shape is not None and hasattr(batch, "dim"):
            return int(shape[0]) if len(shape) > 0 else 1
        if depth > 3:
            return None
        if isinstance(batch, dict):
            for v in batch.values():
                n = _NodusHook.batch_size(v, depth + 1)
                if n is not None:
                    return n
        elif isinstance(batch, (list, tuple)):
            for v in batch:
                n = _NodusHook.batch_size(v, depth + 1)
                if n is not None:
                    return n
        return None

    def driver(self):
        best = None
        for key in self.order:
            e = self.loaders[key]
            if best is None or e["batches"] > best["batches"]:
                best = e
        return best

    def before(self):
        # One profiler step per batch, begun before the batch is fetched.
        if self.os.getpid() != self.pid or self.prof_done or self.mode == "steps":
            return
        if self.prof is None:
            self.start_profiler()
        else:
            self.prof.step()
        self.prof_steps += 1

    def start_profiler(self):
        import torch
        import torch.profiler as tp
        wait, warmup, active = self.profile
        cuda = bool(torch.cuda.is_available())
        activities = [tp.ProfilerActivity.CPU]
        if cuda:
            activities.append(tp.ProfilerActivity.CUDA)
        self.prof_meta = {"schedule": {"wait": wait, "warmup": warmup, "active": active},
                          "cuda": cuda, "torch": torch.__version__,
                          "device": torch.cuda.get_device_name(0) if cuda else "cpu"}
        self.prof = tp.profile(activities=activities,
                               schedule=tp.schedule(wait=wait, warmup=warmup, active=active,
                                                    repeat=1),
                               on_trace_ready=self.trace_ready, with_stack=True)
        self.prof.start()

    def trace_ready(self, prof):
        import json
        self.find_rank()
        path = self.os.path.join(self.out_dir, "trace-%d.json" % self.rank)
        t0 = self.clock()
        prof.export_chrome_trace(path)
        meta = dict(self.prof_meta)
        meta.update({"trace": path, "batches": self.prof_steps, "unit": self.prof_unit(),
                     "export_s": round(self.clock() - t0, 3), "complete": not self.stopping})
        if self.sampled is not None:
            meta["lines"] = self.sampled
        tmp = self.os.path.join(self.out_dir, "profile-%d.json.tmp" % self.rank)
        with open(tmp, "w") as f:
            f.write(json.dumps(meta))
        self.os.replace(tmp, tmp[:-4])
        self.prof_done = True

    def prof_unit(self):
        return "optimizer step" if self.mode == "steps" else "batch"

    def profile_failed(self, error):
        # The profiler's failure ends profiling only: the loader figures carry on.
        self.profile = None
        self.prof = None
        self.prof_done = True
        try:
            import json
            _nodus_sys.stderr.write("nodus: profiler off after an error: %r\n" % (error,))
            with open(self.os.path.join(self.out_dir, "profile-%d.json" % self.rank), "w") as f:
                f.write(json.dumps({"complete": False, "why": "profiler failed: %r" % (error,)}))
        except Exception:
            pass

    def stop_profiler(self, stopping):
        # After the schedule's last step (the trace is written by then) or at exit (stop()
        # writes what the active steps recorded so far; nothing when they had not begun).
        if self.prof is None:
            return
        if self.sampler is not None:  # the loop ended inside the active steps
            self.finish_lines(max(0, self.prof_steps - self.profile[0] - self.profile[1]))
        self.stopping = stopping
        prof, self.prof = self.prof, None
        written = self.prof_done
        try:
            prof.stop()
        finally:
            self.prof_done = True
        if not written and not self.os.path.exists(
                self.os.path.join(self.out_dir, "trace-%d.json" % self.rank)):
            import json
            meta = dict(self.prof_meta)
            meta.update({"batches": self.prof_steps, "unit": self.prof_unit(),
                         "complete": False,
                         "why": "the loop ended after %d %s, before the profiled ones"
                                % (self.prof_steps, "optimizer steps" if self.mode == "steps"
                                   else "batches")})
            with open(self.os.path.join(self.out_dir, "profile-%d.json" % self.rank), "w") as f:
                f.write(json.dumps(meta))

    def step_end(self, optimizer, t):
        # An optimizer step ended at t: the loop's beat when no DataLoader drives it.
        if self.os.getpid() != self.pid:
            return
        counted = self.steps.step_end(optimizer, t)
        if self.mode is None:
            self.mode = "steps"
        if counted and self.flops_out is None:
            try:
                t = self.count_flops(optimizer, t)
            except Exception as error:  # FLOPs are left out; the loop's figures carry on
                self.flops = None
                self.flops_out = {"per_step": None, "error": repr(error)[:300]}
        if self.mode != "steps":
            return
        self.last_batch = t
        if self.profile is not None and not self.prof_done:
            try:
                self.prof_tick()
            except Exception as error:
                self.profile_failed(error)
        if self.first_batch is None:
            self.start(t)
            self.steps.new_interval()  # the first step's end is where the figures start
            return
        if counted:  # as with batches, n counts the steps begun: this one's end begins the next
            self.beat(t, self.steps.steps_seen() + 1)

    def start(self, t):
        # The loop's first batch or step: the figures start here.
        self.find_rank()
        self.first_batch = t
        self.next_emit = t + 1.0
        self.interval_start = t
        self.write_state()

    def beat(self, t, n):
        # The driving loop reached t with its n-th batch or step begun: past the warm-up (more
        # than --warmup batches or steps, so "10" leaves steps 1-10 out) what was counted
        # so far is emitted as warm-up and the next interval starts clean, so that no line mixes
        # the two phases; after it, a line about every second.
        if self.steady is None:
            if (self.warm_batches is not None and n > self.warm_batches) or (
                    self.warm_seconds is not None and t - self.first_batch >= self.warm_seconds):
                self.emit(t)
                self.steady = t
                self.write_state()
                return
        if t >= self.next_emit:
            self.emit(t)

    def count_flops(self, optimizer, t):
        # One optimizer step (flops_due says which), counted whole; the interval it falls in is
        # dropped from the figures, and so is the counter's own work after it: the loop starts
        # again when that is done, the time returned.
        if self.flops is not None:
            flops, self.flops = self.flops, None
            per_step = flops.stop()
            self.flops_out = {"per_step": per_step, "counter": flops.counter, "step": flops.step,
                              "precision": flops.precision}
            self.write_state()
            now = self.clock()
            self.steps.restart(optimizer, now, now - t)
            self.new_interval(now)
            return now
        if self.flops_due():
            self.emit(t)  # what came before the counted step stands
            self.flops = _NodusFlops(self)
            self.flops.start(self.steps.steps_seen() + 1)
        return t

    def flops_due(self):
        # Whether the step that begins now is the one to count: with a warm-up of N steps in a
        # loop of steps, the N-th (the warm-up's last, which no steady figure holds, nor a
        # script's own timing that leaves its first N steps out); else the first after the
        # warm-up. Never while the profiler runs.
        if self.flops_out is not None or self.prof is not None:
            return False
        if self.profile is not None and not self.prof_done:
            return False
        if self.mode == "steps" and self.steady is None and self.warm_batches:
            return self.steps.steps_seen() + 1 == self.warm_batches
        return self.steady is not None

    def new_interval(self, t):
        # The next interval starts at t: what the current one counted is forgotten (written by
        # emit, or dropped because it held the FLOP-counted step).
        for e in self.loaders.values():
            e["iw"] = 0.0
            e["istep"] = 0.0
            e["isteps"] = 0
            e["isamples"] = 0
            e["ibatches"] = 0
        self.steps.new_interval()
        self.interval_start = t
        self.next_emit = t + 1.0

    def prof_tick(self):
        # One profiler step per optimizer step, from one step's end to the next's.
        wait, warmup, active = self.profile
        if self.prof is None:
            self.start_profiler()
        else:
            if self.prof_steps == sum(self.profile):  # this step() ends the last active one
                self.finish_lines(active)
            self.prof.step()
        self.prof_steps += 1
        if self.prof_steps == wait + warmup + 1:
            self.sampler = _NodusLines(self)
            self.sampler.start()
        if self.prof_steps > sum(self.profile):
            self.stop_profiler(False)

    def finish_lines(self, steps):
        if self.sampler is not None:
            sampler, self.sampler = self.sampler, None
            self.sampled = sampler.finish(steps)

    def record(self, it, t0, t1, batch, frame):
        if self.os.getpid() != self.pid:  # a forked child (a loader worker): not the loop
            return
        e = self.loader_for(it, frame)
        n = self.batch_size(batch)
        if n is None:
            n = 1
        e["batches"] += 1
        e["ibatches"] += 1
        e["samples"] += n
        e["isamples"] += n
        e["last_bs"] = n
        e["wait"] += t1 - t0
        e["iw"] += t1 - t0
        prev = getattr(it, "_nodus_prev", None)
        if prev is not None:
            step = t1 - prev
            e["step"] += step
            e["istep"] += step
            e["steps"] += 1
            e["isteps"] += 1
        else:
            e["iw"] -= t1 - t0  # a first batch's wait has no step to share: keep shares honest
            e["wait"] -= t1 - t0
        try:
            it._nodus_prev = t1
        except Exception:
            pass
        if self.mode is None:
            self.mode = "loader"
        elif self.mode != "loader":
            return  # a loader beside a loop its optimizer steps drive (an evaluation)
        self.last_batch = t1
        if self.prof is not None and self.prof_steps > sum(self.profile):
            self.stop_profiler(False)  # the schedule is over: its trace was written
        if self.first_batch is None:
            self.start(t1)
        self.beat(t1, self.driver()["batches"])

    def emit(self, now):
        span = now - self.interval_start
        row = None
        if self.mode == "steps":
            row = self.steps.row(span)
        else:
            d = self.driver()
            if d is not None and d["ibatches"] > 0 and span > 0:
                row = {"samples_per_sec": round(d["isamples"] / span, 3),
                       "batch_size": d["last_bs"], "batches": d["batches"]}
                if d["isteps"] > 0 and d["istep"] > 0:
                    row["data_wait"] = round(min(1.0, max(0.0, d["iw"] / d["istep"])), 5)
                    row["step_time"] = round(d["istep"] / d["isteps"], 6)
                self.steps.add_to_loader_row(row, span)
        if row is not None:
            row["t"] = round(now + self.unix_offset, 3)
            row["phase"] = 1 if self.steady is not None else 0
            import json
            if self.lines is None:
                path = self.os.path.join(self.out_dir, "auto-%d.jsonl" % self.rank)
                self.lines = open(path, "a", buffering=1)
            self.lines.write(json.dumps(row) + "\n")
        self.new_interval(now)
        self.write_state()

    def set_tf32(self):
        # NODUS_TF32 (nodus run --tf32): FP32 matmuls and convolutions on TF32 tensor cores from
        # the first batch on, over what the program set before its loop; what it was is kept.
        try:
            import torch
            matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
            was = {"matmul": bool(matmul.allow_tf32), "cudnn": bool(cudnn.allow_tf32)}
            matmul.allow_tf32 = True
            cudnn.allow_tf32 = True
            self.math = {"was": was, "set_at": "first batch"}
        except Exception as error:
            self.math = {"refused": "%r" % (error,)}

    def math_state(self):
        m = dict(self.math) if self.math is not None else {"refused": "no DataLoader batch"}
        try:
            import torch
            m["last"] = {"matmul": bool(torch.backends.cuda.matmul.allow_tf32),
                         "cudnn": bool(torch.backends.cudnn.allow_tf32)}
        except Exception:
            pass
        return m

    def write_state(self):
        import json
        loaders = []
        for key in self.order:
            e = self.loaders[key]
            loaders.append({"name": e["name"], "batches": e["batches"], "samples": e["samples"],
                            "wait_s": round(e["wait"], 6), "step_s": round(e["step"], 6),
                            "steps": e["steps"], "workers": e["workers"]})
        d = self.driver()
        # The node a rank ran on: Slurm's name for it, else the host's.
        node = self.os.environ.get("SLURMD_NODENAME") or self.os.uname().nodename
        state = {"rank": self.rank, "world_size": self.world, "pid": self.pid, "node": node,
                 "loaders": loaders, "driver": d["name"] if d else None,
                 "warmup": self.os.environ.get("NODUS_WARMUP", "5s")}
        if self.first_batch is not None:
            state["first_batch_t"] = round(self.first_batch + self.unix_offset, 3)
        if self.steady is not None:
            state["steady_t"] = round(self.steady + self.unix_offset, 3)
        if self.knobs is not None:
            state["overrides"] = self.knobs.state(
                dict((key, self.loaders[key]["name"]) for key in self.order))
        if self.tf32:
            state["math"] = self.math_state()
        state["mode"] = self.mode
        state["steps"] = self.steps.state()
        if self.flops_out is not None:
            state["flops"] = self.flops_out
        path = self.os.path.join(self.out_dir, "loaders-%d.json" % self.rank)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(json.dumps(state))
        self.os.replace(tmp, path)

    def at_exit(self):
        if not self.on or self.os.getpid() != self.pid:
            return
        if self.first_batch is None:
            if self.knobs is not None or self.tf32:  # what was asked; no loader ran a batch
                try:
                    self.find_rank()
                    self.write_state()
                except Exception as error:
                    self.fail(error)
            return
        try:
            if self.flops is not None:  # the loop ended inside the counted step: nothing counted
                flops, self.flops = self.flops, None
                flops.stop()
        except Exception as error:
            self.fail(error)
        try:
            # A loop that ended inside the schedule: what was recorded is written, marked.
            self.stop_profiler(True)
        except Exception as error:
            self.fail(error)
        try:
            # The last interval ends with the last batch: time after the loop is not the loop's.
            self.emit(max(self.last_batch, self.interval_start))
            if self.lines is not None:
                self.lines.close()
        except Exception as error:
            self.fail(error)


def _nodus_patch(module, hook):
    cls = module._BaseDataLoaderIter
    original = cls.__next__
    clock = hook.clock
    getframe = _nodus_sys._getframe

    def __next__(self):
        if not hook.on:
            return original(self)
        if hook.tf32 and hook.math is None:
            hook.set_tf32()
        if hook.profile is not None:
            try:
                hook.before()
            except Exception as error:
                hook.profile_failed(error)
        t0 = clock()
        batch = original(self)  # StopIteration and the loader's errors pass through as they are
        t1 = clock()
        try:
            hook.record(self, t0, t1, batch, getframe(1))
        except Exception as error:
            hook.fail(error)
        return batch

    __next__.__wrapped__ = original
    __next__.__doc__ = original.__doc__
    cls.__next__ = __next__
    if hook.knobs is not None:
        _nodus_patch_loader(module, hook)


def _nodus_timed(hook, original, sync=None):
    # original, with its host time counted inside the step (not nested in another counted call);
    # a sync (named) is also put down to the line that called it while steps are profiled.
    clock = hook.clock

    def timed(*args, **kwargs):
        if hook.busy or not hook.on:
            return original(*args, **kwargs)
        hook.busy = 1
        t0 = hook.busy_since = clock()
        try:
            return original(*args, **kwargs)
        finally:
            hook.busy = 0
            dt = clock() - t0
            hook.steps.inside += dt
            if sync is not None and hook.sampler is not None:
                try:
                    hook.sampler.sync(sync, dt)
                except Exception:
                    pass

    return timed


def _nodus_patch_torch(torch, hook):
    # Optimizer steps, the model's forward, backward and syncs (item 7 of the header).
    import functools
    steps = hook.steps
    clock = hook.clock
    integer = set(getattr(torch, name) for name in ("int64", "int32", "int16", "int8", "uint8")
                  if hasattr(torch, name))
    is_grad_enabled = torch.is_grad_enabled
    Module = torch.nn.Module

    def first_tensor(args, kwargs):
        for a in args:
            if hasattr(a, "dim") and hasattr(a, "shape"):
                return a
        x = kwargs.get("input_ids")
        if x is not None and hasattr(x, "dim"):
            return x
        for v in kwargs.values():
            if hasattr(v, "dim") and hasattr(v, "shape"):
                return v
        return None

    original_call = Module.__call__

    def __call__(self, *args, **kwargs):
        if hook.depth or not hook.on:
            return original_call(self, *args, **kwargs)
        hook.depth = 1
        timed = not hook.busy
        t0 = clock()
        if timed:
            hook.busy, hook.busy_since = 1, t0
        try:
            return original_call(self, *args, **kwargs)
        finally:
            hook.depth = 0
            try:
                if hook.flops is not None:
                    hook.flops.note_precision(self)
                if is_grad_enabled():
                    x = first_tensor(args, kwargs)
                    if x is not None and x.dim() > 0:
                        tokens = x.numel() if x.dim() > 1 and x.dtype in integer else 0
                        steps.counted(self, int(x.shape[0]), tokens)
            except Exception as error:
                hook.fail(error)
            if timed:  # the hook's own counting is not the loop's time outside the step
                hook.busy = 0
                steps.inside += clock() - t0

    functools.update_wrapper(__call__, original_call)
    Module.__call__ = __call__

    torch.autograd.backward = functools.update_wrapper(
        _nodus_timed(hook, torch.autograd.backward), torch.autograd.backward)
    for name in ("item", "tolist"):
        original = getattr(torch.Tensor, name)
        setattr(torch.Tensor, name, functools.update_wrapper(
            _nodus_timed(hook, original, "Tensor." + name), original))
    for cls in (torch.optim.Optimizer, Module):  # zero_grad is the optimizer's work too
        original = cls.zero_grad
        cls.zero_grad = functools.update_wrapper(_nodus_timed(hook, original), original)
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and hasattr(cuda, "synchronize"):
        cuda.synchronize = functools.update_wrapper(
            _nodus_timed(hook, cuda.synchronize, "torch.cuda.synchronize"), cuda.synchronize)

    Optimizer = torch.optim.Optimizer
    original_init = Optimizer.__init__

    def wrap_step(cls):
        step = cls.__dict__.get("step")
        if step is None or getattr(step, "_nodus", False):
            return

        def wrapped(self, *args, **kwargs):
            if hook.in_step or not hook.on:
                return step(self, *args, **kwargs)
            hook.in_step = True
            timed = not hook.busy
            t0 = clock()
            if timed:
                hook.busy, hook.busy_since = 1, t0
            try:
                return step(self, *args, **kwargs)
            finally:
                hook.in_step = False
                t1 = clock()
                if timed:
                    steps.inside += t1 - t0
                try:
                    hook.step_end(self, t1)
                except Exception as error:
                    hook.fail(error)
                if timed:  # the hook's own bookkeeping counts in the next step, as inside
                    hook.busy = 0
                    steps.inside += clock() - t1

        functools.update_wrapper(wrapped, step)  # keeps torch's own "hooked" mark
        wrapped._nodus = True
        cls.step = wrapped

    def __init__(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        try:
            # After torch's own wrapping of the class's step (its profiler hook): ours is outside.
            for cls in type(self).__mro__:
                if cls is Optimizer:
                    break
                if "step" in cls.__dict__:
                    wrap_step(cls)
                    break
        except Exception as error:
            hook.fail(error)

    functools.update_wrapper(__init__, original_init)
    Optimizer.__init__ = __init__


def _nodus_patch_loader(module, hook):
    # DataLoader.__init__ with the knobs of NODUS_LOADER set in its arguments (they were checked
    # when the hook started; a failure here leaves that loader as the program built it, said).
    import inspect
    cls = module.DataLoader
    original = cls.__init__
    signature = inspect.signature(original)
    parameters = signature.parameters
    iterable_type = getattr(module, "IterableDataset", None)
    getframe = _nodus_sys._getframe

    def __init__(self, *args, **kwargs):
        try:
            bound = signature.bind(self, *args, **kwargs)
            frame = getframe(1)
            site = "%s:%d" % (hook.os.path.basename(frame.f_code.co_filename), frame.f_lineno)
            hook.knobs.apply(bound.arguments, parameters, iterable_type, site)
            args, kwargs = bound.args[1:], bound.kwargs
        except Exception as error:
            _nodus_sys.stderr.write("nodus: --loader not applied to a DataLoader: %r\n" % (error,))
        original(self, *args, **kwargs)

    __init__.__wrapped__ = original
    __init__.__doc__ = original.__doc__
    cls.__init__ = __init__


class _NodusFinder(object):
    # A post-import hook: when a target module is first imported, let the normal finders load
    # it, then patch it. Nothing else is touched and nothing is imported early. The targets:
    # torch.utils.data.dataloader (the DataLoader) and torch itself (once `import torch` is
    # done: optimizers, modules, autograd).

    def __init__(self, hook, targets):
        self.hook = hook
        self.targets = dict(targets)  # module name -> patch(module, hook)

    def find_spec(self, fullname, path=None, target=None):
        patch = self.targets.get(fullname)
        if patch is None:
            return None
        import importlib.machinery
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        loader = spec.loader
        hook = self.hook
        exec_module = loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            try:
                patch(module, hook)
            except Exception as error:
                hook.fail(error)

        try:
            loader.exec_module = exec_and_patch
        except Exception as error:
            hook.fail(error)
            return None
        del self.targets[fullname]
        if not self.targets:
            try:
                _nodus_sys.meta_path.remove(self)
            except ValueError:
                pass
        return spec

    # Python < 3.4 finders API, never used on 3.x but harmless.
    def find_module(self, fullname, path=None):
        return None


def _nodus_install():
    import os
    out_dir = os.environ.get("NODUS_HOOK_DIR")
    if not out_dir or os.environ.get("NODUS_INSTRUMENT", "1") == "0":
        return
    hook = _NodusHook(out_dir)
    import atexit
    atexit.register(hook.at_exit)
    targets = {}
    for name, patch in (("torch.utils.data.dataloader", _nodus_patch), ("torch",
                                                                       _nodus_patch_torch)):
        module = _nodus_sys.modules.get(name)
        if module is not None:
            patch(module, hook)
        else:
            targets[name] = patch
    if targets:
        _nodus_sys.meta_path.insert(0, _NodusFinder(hook, targets))


try:
    _nodus_install()
except Exception as _e:
    try:
        _nodus_sys.stderr.write("nodus: instrumentation off after an error in its hook: %r\n"
                                % (_e,))
    except Exception:
        pass
