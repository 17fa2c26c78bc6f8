"""The programs scripts/gpu-check runs, under sprof, under torch.profiler, or alone.

  train    a small CNN trained on random data: host-to-device copies, a memset, forward,
           backward and an optimizer step per step; each of those on a line of its own, tagged
           with a "# LINE:<name>" comment that gpu-check looks up. Times the steps after the
           warm-up and writes {"steps", "seconds", "steps_per_s", ...} as JSON to --result.
           --profiler torch runs the whole program (model creation included, so that it sees
           the same kernels sprof does) under torch.profiler and writes its trace to --trace.
           --starve S sleeps S seconds in the data path of every step (an input-bound job).
           --plant N multiplies two 1024x1024 matrices N times after the optimizer step (more
           GPU time per step, in a kernel the model does not run: a planted regression).
  steady   the same loop for --seconds, writing the steps of every --window to --result as
           [[monotonic start, end, steps], ...]: a profiler attached and detached while it runs
           costs what the windows under it lose (on the CPU without CUDA, for tests).
  never-cuda   imports torch, computes on the CPU, exits 3.
  fork     initialises CUDA, forks a child that computes on the CPU and exits normally
           (running its atexit handlers), launches more kernels, exits 5.
  exit-in-flight  queues thousands of kernels and calls sys.exit(7) without synchronising.
  abrupt   queues kernels and ends with os._exit(9): no atexit handler runs.
"""
import argparse
import ctypes
import json
import os
import sys
import time


def driver_memset():
    """The driver's cuMemsetD8Async (a CUPTI MEMSET record; torch itself fills with kernels)."""
    fn = ctypes.CDLL("libcuda.so.1").cuMemsetD8Async
    fn.argtypes = [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t, ctypes.c_void_p]
    return fn


def make_model(device):
    """The small CNN both loops train, and its optimizer (SGD with momentum)."""
    import torch
    import torch.nn as nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)).to(device)
    return model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def train(args):
    import torch
    import torch.nn as nn

    profiler = None
    if args.profiler == "torch":
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        # A schedule that records every step, so that prof.step() writes ProfilerStep#N.
        profiler = torch.profiler.profile(activities=activities,
                                          schedule=torch.profiler.schedule(wait=0, warmup=0, active=1 << 30))
        profiler.__enter__()

    model, opt = make_model("cuda")
    data = [(torch.randn(64, 3, 32, 32).pin_memory(), torch.randint(0, 10, (64,)).pin_memory()) for _ in range(4)]
    scratch = torch.empty(1 << 20, dtype=torch.uint8, device="cuda")
    memset = driver_memset()
    stream = torch.cuda.current_stream().cuda_stream
    square = torch.randn(1024, 1024, device="cuda") if args.plant else None

    def load(step):
        if args.starve:
            time.sleep(args.starve)  # LINE:starve
        return data[step % len(data)]

    def train_step(x, y):
        x = x.cuda(non_blocking=True)  # LINE:copy_x
        y = y.cuda(non_blocking=True)  # LINE:copy_y
        memset(scratch.data_ptr(), 0, scratch.numel(), stream)  # LINE:memset
        loss = nn.functional.cross_entropy(model(x), y)  # LINE:forward
        opt.zero_grad(set_to_none=True)
        loss.backward()  # LINE:backward
        opt.step()  # LINE:optimizer
        for _ in range(args.plant):
            torch.mm(square, square)  # LINE:plant
        return loss

    total = args.warmup + args.steps
    start = None
    for step in range(total):
        if step == args.warmup:
            torch.cuda.synchronize()
            start = time.perf_counter()
        x, y = load(step)
        loss = train_step(x, y)
        if step % 10 == 9:
            loss.item()  # LINE:item
        if profiler is not None:
            profiler.step()
    torch.cuda.synchronize()  # LINE:sync
    seconds = time.perf_counter() - start
    result = {"steps": args.steps, "warmup": args.warmup, "seconds": seconds, "steps_per_s": args.steps / seconds,
              "torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(0)}
    if profiler is not None:
        profiler.__exit__(None, None, None)
        if args.trace:
            profiler.export_chrome_trace(args.trace)
    if args.result:
        with open(args.result, "w") as f:
            json.dump(result, f)
    print(json.dumps(result))


def steady(args):
    import torch
    import torch.nn as nn
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model, opt = make_model(device)
    x, y = torch.randn(64, 3, 32, 32, device=device), torch.randint(0, 10, (64,), device=device)
    windows = []
    print("ready", os.getpid(), flush=True)
    end = time.monotonic() + args.seconds
    start, steps = time.monotonic(), 0
    while start < end:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        steps += 1
        if steps % 10 == 0:
            loss.item()  # no more than 10 steps queued: the GPU's pace, not the launch queue's
            now = time.monotonic()
            if now - start >= args.window:
                windows.append([start, now, steps])
                start, steps = now, 0
    with open(args.result, "w") as f:
        json.dump(windows, f)


def never_cuda(_):
    import torch
    x = torch.randn(256, 256)
    for _ in range(50):
        x = torch.tanh(x @ x.T / 256)
    sys.exit(3)


def fork(_):
    import torch
    x = torch.randn(1024, 1024, device="cuda")
    for _ in range(20):
        x = torch.tanh(x @ x)
    torch.cuda.synchronize()
    pid = os.fork()
    if pid == 0:
        # The child must not touch CUDA (a forked CUDA context is unusable); it exits through
        # sys.exit, so the atexit handlers it inherited run.
        y = sum(i * i for i in range(200000))
        sys.exit(0 if y > 0 else 1)
    for _ in range(20):
        x = torch.tanh(x @ x)
    _, status = os.waitpid(pid, 0)
    torch.cuda.synchronize()
    print("child exit status", os.waitstatus_to_exitcode(status))
    sys.exit(5 if os.waitstatus_to_exitcode(status) == 0 else 1)


def exit_in_flight(_):
    import torch
    x = torch.randn(2048, 2048, device="cuda")
    for _ in range(3000):
        x = torch.tanh(x @ x)
    sys.exit(7)  # kernels still queued and CUPTI's buffers unflushed


def abrupt(_):
    import torch
    x = torch.randn(2048, 2048, device="cuda")
    for _ in range(1000):
        x = torch.tanh(x @ x)
    sys.stdout.flush()
    os._exit(9)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("workload", choices=["train", "steady", "never-cuda", "fork", "exit-in-flight", "abrupt"])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--profiler", choices=["none", "torch"], default="none")
    parser.add_argument("--trace")
    parser.add_argument("--starve", type=float, default=0.0)
    parser.add_argument("--plant", type=int, default=0)
    parser.add_argument("--result")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--window", type=float, default=0.25)
    args = parser.parse_args()
    {"train": train, "steady": steady, "never-cuda": never_cuda, "fork": fork, "exit-in-flight": exit_in_flight,
     "abrupt": abrupt}[args.workload](args)


if __name__ == "__main__":
    main()
