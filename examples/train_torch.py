"""A small PyTorch CPU training job: the example sprof's tests, demo and overhead benchmark use.

A two-layer MLP learns a synthetic regression task from a map-style Dataset served by
DataLoader(num_workers=2) worker processes; a few epochs finish in well under a minute on CPU.

    sprof record --subprocesses -- python3 examples/train_torch.py [--epochs N] [--workers N]
        [--eval-batches N] [--step-log FILE]

--eval-batches N evaluates N batches in eval mode after each epoch; --step-log FILE appends the
script's own step boundaries (time.monotonic_ns(), the clock of sprof's samples and markers) as
JSON lines, so tests can compare them with the steps sprof detects.

Faults to find with `sprof analyze` / `sprof rules`: --init-sleep S (a slow start, e.g. a data
download), --slow-loader S (every item takes S more seconds to load) and --sleep-steps 5,40
--step-sleep S (those training steps take S seconds longer, between forward and backward).
"""
import argparse
import json
import math
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SyntheticRegression(Dataset):
    """y = sin(x . w) + noise, computed per item in Python so the workers have work to do."""

    def __init__(self, size, features, seed=0, item_sleep=0.0):
        self.item_sleep = item_sleep
        generator = torch.Generator().manual_seed(seed)
        self.x = torch.randn(size, features, generator=generator)
        self.w = torch.randn(features, generator=generator)
        self.size = size

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        if self.item_sleep:
            time.sleep(self.item_sleep)
        x = self.x[index]
        y = math.sin(float(x @ self.w)) + 0.01 * math.cos(index)
        return x, torch.tensor([y])


class Regressor(nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x)


class StepLog:
    """The script's own step boundaries: a TRAIN step from the model call to the end of
    optimizer.step(), an EVAL step from the model call to its return (sprof's PyTorch rules)."""

    def __init__(self, path):
        self.file = open(path, "a") if path else None

    def write(self, mode, begin_ns, end_ns):
        if self.file:
            self.file.write(json.dumps({"mode": mode, "begin": begin_ns, "end": end_ns}) + "\n")

    def close(self):
        if self.file:
            self.file.close()


def train(epochs, workers, batch_size, size, features, hidden, eval_batches=0, step_log=None, item_sleep=0.0,
          sleep_steps=(), step_sleep=0.0):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    loader = DataLoader(SyntheticRegression(size, features, item_sleep=item_sleep), batch_size=batch_size,
                        shuffle=True, num_workers=workers)
    model = Regressor(features, hidden)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.MSELoss()
    log = StepLog(step_log)
    began = time.perf_counter()
    global_step = 0
    for epoch in range(epochs):
        start = time.perf_counter()
        total = 0.0
        model.train()
        for step, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            begin = time.monotonic_ns()
            loss = loss_fn(model(x), y)
            if global_step in sleep_steps:
                time.sleep(step_sleep)  # a deliberately slow step (inside it: after forward, before backward)
            loss.backward()
            optimizer.step()
            log.write("train", begin, time.monotonic_ns())
            total += loss.item()
            global_step += 1
        print("epoch %d: loss %.4f (%d steps, %.2f s)" % (epoch, total / (step + 1), step + 1,
                                                       time.perf_counter() - start), flush=True)
        if eval_batches > 0:
            model.eval()
            with torch.no_grad():
                for step, (x, y) in enumerate(loader):
                    if step == eval_batches:
                        break
                    begin = time.monotonic_ns()
                    out = model(x)
                    log.write("eval", begin, time.monotonic_ns())
                    loss_fn(out, y)
    log.close()
    print("trained in %.3f s" % (time.perf_counter() - began), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--eval-batches", type=int, default=0, help="batches to evaluate after each epoch")
    parser.add_argument("--step-log", help="append the script's own step boundaries to this file (JSON lines)")
    parser.add_argument("--init-sleep", type=float, default=0.0, help="seconds to sleep before training")
    parser.add_argument("--slow-loader", type=float, default=0.0, help="extra seconds per item loaded")
    parser.add_argument("--sleep-steps", default="", help="comma-separated global steps that sleep")
    parser.add_argument("--step-sleep", type=float, default=0.5, help="seconds each of --sleep-steps sleeps")
    args = parser.parse_args()
    sleep_steps = {int(s) for s in args.sleep_steps.split(",") if s.strip()}
    if args.init_sleep:
        time.sleep(args.init_sleep)
    train(args.epochs, args.workers, args.batch_size, args.size, args.features, args.hidden, args.eval_batches,
          args.step_log, args.slow_loader, sleep_steps, args.step_sleep)


if __name__ == "__main__":
    main()
