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
        if self.os.getpid() != self.pid or self.prof_done:
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
        meta.update({"trace": path, "batches": self.prof_steps,
                     "export_s": round(self.clock() - t0, 3), "complete": not self.stopping})
        tmp = self.os.path.join(self.out_dir, "profile-%d.json.tmp" % self.rank)
        with open(tmp, "w") as f:
            f.write(json.dumps(meta))
        self.os.replace(tmp, tmp[:-4])
        self.prof_done = True

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
            meta.update({"batches": self.prof_steps, "complete": False,
                         "why": "the loop ended after %d batches, before the profiled ones"
                                % self.prof_steps})
            with open(self.os.path.join(self.out_dir, "profile-%d.json" % self.rank), "w") as f:
                f.write(json.dumps(meta))

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
        self.last_batch = t1
        if self.prof is not None and self.prof_steps > sum(self.profile):
            self.stop_profiler(False)  # the schedule is over: its trace was written
        if self.first_batch is None:
            self.find_rank()
            self.first_batch = t1
            self.next_emit = t1 + 1.0
            self.interval_start = t1
            self.write_state()
        if self.steady is None:
            d = self.driver()
            if (self.warm_batches is not None and d["batches"] > self.warm_batches) or (
                    self.warm_seconds is not None and t1 - self.first_batch >= self.warm_seconds):
                # Warm-up over: what was counted so far is emitted as warm-up, the next
                # interval starts clean so that no line mixes the two phases.
                self.emit(t1)
                self.steady = t1
                self.write_state()
                return
        if t1 >= self.next_emit:
            self.emit(t1)

    def emit(self, now):
        d = self.driver()
        span = now - self.interval_start
        if d is not None and d["ibatches"] > 0 and span > 0:
            row = {"t": round(now + self.unix_offset, 3),
                   "samples_per_sec": round(d["isamples"] / span, 3),
                   "batch_size": d["last_bs"], "batches": d["batches"],
                   "phase": 1 if self.steady is not None else 0}
            if d["isteps"] > 0 and d["istep"] > 0:
                row["data_wait"] = round(min(1.0, max(0.0, d["iw"] / d["istep"])), 5)
                row["step_time"] = round(d["istep"] / d["isteps"], 6)
            import json
            if self.lines is None:
                path = self.os.path.join(self.out_dir, "auto-%d.jsonl" % self.rank)
                self.lines = open(path, "a", buffering=1)
            self.lines.write(json.dumps(row) + "\n")
        for e in self.loaders.values():
            e["iw"] = 0.0
            e["istep"] = 0.0
            e["isteps"] = 0
            e["isamples"] = 0
            e["ibatches"] = 0
        self.interval_start = now
        self.next_emit = now + 1.0
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
    # A post-import hook: when torch.utils.data.dataloader is first imported, let the normal
    # finders load it, then patch it. Nothing else is touched and nothing is imported early.
    target = "torch.utils.data.dataloader"

    def __init__(self, hook):
        self.hook = hook

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.target:
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
                _nodus_patch(module, hook)
            except Exception as error:
                hook.fail(error)

        try:
            loader.exec_module = exec_and_patch
        except Exception as error:
            hook.fail(error)
            return None
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
    module = _nodus_sys.modules.get(_NodusFinder.target)
    if module is not None:
        _nodus_patch(module, hook)
    else:
        _nodus_sys.meta_path.insert(0, _NodusFinder(hook))


try:
    _nodus_install()
except Exception as _e:
    try:
        _nodus_sys.stderr.write("nodus: instrumentation off after an error in its hook: %r\n"
                                % (_e,))
    except Exception:
        pass
