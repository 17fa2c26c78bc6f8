"""A small pure-Python training job that profiles itself the way SageMaker Debugger's cProfile
python profiler does, writing one pstats file per profiled interval in smdebug's layout:

  <out>/framework/<framework>/cprofile/<node_id>/<start>_<end>/python_stats

where <start> and <end> are <mode>-<step>-<phase>-<epoch microseconds>. Profiled: before the
first step (prestepzero), every training and evaluation step (stepstart -> stepend), the gaps
between steps (stepend -> next stepstart), and the end of the job after the last step
(posthookclose). `sprof list-stats OUT` and `sprof fetch-by-step OUT --start-step N` read it.

Usage: python3 train_cprofile_demo.py OUT [--epochs 2] [--steps 8] [--node-id 0-algo-1]
Stdlib only.
"""
import argparse
import cProfile
import math
import os
import pstats
import random
import time


class StepProfiler:
    """Starts a fresh cProfile profiler at every step boundary and dumps the previous one."""

    def __init__(self, out, framework, node_id):
        self.base = os.path.join(out, "framework", framework, "cprofile", node_id)
        self.profiler = None
        self.start = None
        self.count = 0

    def boundary(self, mode, step, phase):
        """A step boundary: closes the running interval there and opens the next one."""
        now = time.time() * 1000000
        if self.profiler is not None:
            self.profiler.disable()
            name = "{}-{}-{}-{}_{}-{}-{}-{}".format(*(self.start + (mode, step, phase, now)))
            directory = os.path.join(self.base, name)
            os.makedirs(directory)
            pstats.Stats(self.profiler).dump_stats(os.path.join(directory, "python_stats"))
            self.count += 1
        if phase == "end":
            self.profiler = None
            return
        self.start = (mode, step, phase, time.time() * 1000000)
        self.profiler = cProfile.Profile()
        self.profiler.enable()


# --- a tiny two-layer network trained with plain Python lists

def make_dataset(n, rng):
    data = []
    for _ in range(n):
        x = [rng.uniform(-1, 1) for _ in range(4)]
        y = 1.0 if x[0] * x[1] + 0.5 * x[2] - x[3] > 0 else 0.0
        data.append((x, y))
    return data


def init_params(rng, hidden=16):
    w1 = [[rng.gauss(0, 0.5) for _ in range(4)] for _ in range(hidden)]
    w2 = [rng.gauss(0, 0.5) for _ in range(hidden)]
    return w1, w2


def sigmoid(z):
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def relu(z):
    return z if z > 0 else 0.0


def forward(params, x):
    w1, w2 = params
    h = [relu(sum(wi * xi for wi, xi in zip(row, x))) for row in w1]
    return h, sigmoid(sum(a * b for a, b in zip(w2, h)))


def backward(params, x, h, p, y):
    w1, w2 = params
    d_out = p - y
    g2 = [d_out * hj for hj in h]
    g1 = [[(d_out * w2[j] if h[j] > 0 else 0.0) * xi for xi in x] for j in range(len(w1))]
    return g1, g2


def sgd_update(params, grads, lr):
    w1, w2 = params
    g1, g2 = grads
    w1 = [[w - lr * g for w, g in zip(row, grow)] for row, grow in zip(w1, g1)]
    w2 = [w - lr * g for w, g in zip(w2, g2)]
    return w1, w2


def train_step(params, batch, lr=0.1):
    total = [[[0.0] * 4 for _ in params[0]], [0.0] * len(params[1])]
    loss = 0.0
    for x, y in batch:
        h, p = forward(params, x)
        loss -= y * math.log(p + 1e-12) + (1 - y) * math.log(1 - p + 1e-12)
        g1, g2 = backward(params, x, h, p, y)
        for j, row in enumerate(g1):
            for k, g in enumerate(row):
                total[0][j][k] += g / len(batch)
        for j, g in enumerate(g2):
            total[1][j] += g / len(batch)
    return sgd_update(params, total, lr), loss / len(batch)


def eval_step(params, batch):
    correct = 0
    for x, y in batch:
        _, p = forward(params, x)
        correct += (p > 0.5) == (y > 0.5)
    return correct / len(batch)


def load_batch(data, step, size):
    start = (step * size) % len(data)
    batch = data[start:start + size]
    return [(list(x), y) for x, y in batch]


def main():
    parser = argparse.ArgumentParser(description="pure-Python training job profiled per step")
    parser.add_argument("out")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--steps", type=int, default=8, help="training steps per epoch")
    parser.add_argument("--eval-steps", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--node-id", default="0-algo-1")
    parser.add_argument("--framework", default="pytorch")
    args = parser.parse_args()

    prof = StepProfiler(args.out, args.framework, args.node_id)
    prof.boundary("prestepzero", "*", "start")
    rng = random.Random(0)
    data = make_dataset(2048, rng)
    params = init_params(rng)

    train_step_no = eval_step_no = 0
    for epoch in range(args.epochs):
        for _ in range(args.steps):
            prof.boundary("train", train_step_no, "stepstart")
            params, loss = train_step(params, load_batch(data, train_step_no, args.batch))
            prof.boundary("train", train_step_no, "stepend")
            train_step_no += 1
        for _ in range(args.eval_steps):
            prof.boundary("eval", eval_step_no, "stepstart")
            accuracy = eval_step(params, load_batch(data, 1000 + eval_step_no, args.batch))
            prof.boundary("eval", eval_step_no, "stepend")
            eval_step_no += 1
        print("epoch %d: loss %.4f, accuracy %.3f" % (epoch, loss, accuracy))
    prof.boundary("posthookclose", "*", "end")
    print("wrote %d stats files under %s" % (prof.count, prof.base))


if __name__ == "__main__":
    main()
