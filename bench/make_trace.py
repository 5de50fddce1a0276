#!/usr/bin/env python3
# Writes a synthetic torch.profiler (Kineto) Chrome trace with a known shape, for the trace
# reader's tests and its memory bench. The events look like torch 2.x's: ProfilerStep#N
# (user_annotation), DataLoader __next__ and aten ops (cpu_op, with args), python_function
# frames, cudaLaunchKernel / cudaStreamSynchronize (cuda_runtime), kernels and copies on a GPU
# stream (kernel, gpu_memcpy) linked by "External id".
#
#   make_trace.py KIND OUT.json [--kernels N] [--steps 5]
# KIND: healthy (GPU busy, bf16 GEMMs), sync (aten::item each step, 3 ms of Python after it),
# launch (N tiny 4 us kernels launched 12 us apart), fp32 (FP32 sgemm kernels, GPU busy).
# --pad-mb M appends M MiB worth of extra small ops (for the 100 MB bench).
import argparse
import json
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("kind", choices=["healthy", "sync", "launch", "fp32"])
    p.add_argument("out")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--kernels", type=int, default=0)
    p.add_argument("--pad-mb", type=float, default=0)
    a = p.parse_args()
    out = open(a.out, "w")
    out.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}],\n'
              '"traceEvents": [\n')
    first = [True]
    ext = [1000]
    corr = [1]
    written = [0]

    def ev(e):
        s = json.dumps(e)
        out.write(("" if first[0] else ",\n") + s)
        written[0] += len(s) + 2
        first[0] = False

    def op(name, ts, dur, args=None):
        ext[0] += 1
        ev({"ph": "X", "cat": "cpu_op", "name": name, "pid": 100, "tid": 100, "ts": ts,
            "dur": dur, "args": dict({"External id": ext[0], "Record function id": 0,
                                      "Sequence number": ext[0]}, **(args or {}))})
        return ext[0]

    def kernel(name, ts, dur, e):
        corr[0] += 1
        ev({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100,
            "tid": 100, "ts": ts - 8, "dur": 6,
            "args": {"External id": e, "correlation": corr[0], "cbid": 211}})
        ev({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": {"External id": e, "correlation": corr[0], "device": 0, "stream": 7,
                     "grid": [128, 1, 1], "block": [256, 1, 1]}})

    t = 1_700_000_000_000.0  # microseconds, like Kineto's
    for s in range(a.steps):
        step_start = t
        # The fetch: 200 us in DataLoader __next__ (the GPU may still run the last step).
        op("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", t + 1, 200)
        t += 210
        gpu_t = t + 20
        if a.kind in ("healthy", "fp32", "sync"):
            name = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas"
                    if a.kind != "fp32" else "ampere_sgemm_128x64_nn")
            dur = 900 if a.kind != "fp32" else 2700
            ev({"ph": "X", "cat": "python_function", "name": "/home/u/train.py(40): step",
                "pid": 100, "tid": 100, "ts": t, "dur": 6 * 30 + 10})
            for k in range(6):
                e = op("aten::mm", t + k * 30, 20, {"Input Dims": [[2048, 8192], [8192, 8192]]})
                kernel(name, max(gpu_t, t + k * 30 + 15), dur, e)
                gpu_t = max(gpu_t, t + k * 30 + 15) + dur
            for k in range(40):  # elementwise kernels, each 40 us
                e = op("aten::add_", t + 200 + k * 12, 8)
                kernel("void at::native::vectorized_elementwise_kernel<4, add>", max(gpu_t, t + 200 + k * 12 + 6), 40, e)
                gpu_t = max(gpu_t, t + 200 + k * 12 + 6) + 40
            t += 700
            if a.kind == "sync":
                # loss.item() at train.py:57: waits for the GPU, then 3 ms of Python logging.
                ev({"ph": "X", "cat": "python_function", "name": "/home/u/train.py(57): step",
                    "pid": 100, "tid": 100, "ts": t, "dur": max(0.0, gpu_t - t) + 40})
                wait = max(0.0, gpu_t - t)
                e = op("aten::item", t + 1, wait + 30)
                op("aten::_local_scalar_dense", t + 2, wait + 28)
                ev({"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 100,
                    "tid": 100, "ts": t + 3, "dur": 5, "args": {"External id": ext[0]}})
                ev({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pageable)",
                    "pid": 0, "tid": 7, "ts": gpu_t, "dur": 2, "args": {"External id": ext[0]}})
                ev({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize",
                    "pid": 100, "tid": 100, "ts": t + 9, "dur": wait + 15,
                    "args": {"External id": ext[0]}})
                t = t + wait + 40 + 3000  # the logging
                gpu_t = t
            else:
                t = max(t, gpu_t - 300)  # the CPU runs ahead of the GPU by a little
        else:  # launch
            n = a.kernels or 2000
            for k in range(n):
                e = op("aten::add", t + k * 12, 8)
                kernel("void at::native::vectorized_elementwise_kernel<4, add>", t + k * 12 + 6, 4, e)
            t += n * 12
            gpu_t = t
        t = max(t, gpu_t) + 10
        ev({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % (s + 7), "pid": 100,
            "tid": 100, "ts": step_start, "dur": t - step_start})
    # Padding: small ops in a separate thread, outside every step's thread, until the size.
    pad = int(a.pad_mb * 1024 * 1024)
    k = 0
    while written[0] < pad:
        ext[0] += 1
        ev({"ph": "X", "cat": "cpu_op", "name": "aten::empty_%d" % (k % 5000), "pid": 100,
            "tid": 200, "ts": 1_700_000_000_000.0 + k * 0.5, "dur": 0.3,
            "args": {"External id": ext[0], "Input Dims": [[64, 3, 224, 224]],
                     "Input type": ["float"], "Concrete Inputs": ["", "", "", ""]}})
        k += 1
    out.write('\n],\n"traceName": "synthetic"}\n')
    out.close()


if __name__ == "__main__":
    sys.exit(main())
