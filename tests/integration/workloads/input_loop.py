"""A training loop that times itself: for each step, the wait for its batch (from the previous
step's end to the batch in hand) and the step. Writes {"waits": [...], "steps": [...]} to RESULT.

  input_loop.py torch RESULT --workers N --item-sleep S --width W --items N
      a torch model fed by a DataLoader whose items each sleep S seconds
  input_loop.py plain RESULT --load-sleep S --steps N
      plain Python: load_batch() sleeps S, train_step() computes (run with --step-fn train_step)
"""
import argparse
import json
import time


LOAD_SLEEP = 0.02


def load_batch(i):
    time.sleep(LOAD_SLEEP)
    return i


def train_step(batch):
    x = 0
    for k in range(20000):
        x += k * batch
    return x


def plain(args):
    global LOAD_SLEEP
    LOAD_SLEEP = args.load_sleep
    waits, steps = [], []
    t = time.monotonic()
    for i in range(args.steps):
        batch = load_batch(i)
        t0 = time.monotonic()
        waits.append(t0 - t)
        train_step(batch)
        t = time.monotonic()
        steps.append(t - t0)
    return waits, steps


def torch_loop(args):
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Items(Dataset):
        def __len__(self):
            return args.items

        def __getitem__(self, i):
            if args.item_sleep:
                time.sleep(args.item_sleep)
            return torch.full((args.width,), float(i % 7)), torch.ones(1)

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(args.width, args.width), torch.nn.ReLU(),
                                torch.nn.Linear(args.width, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    loader = DataLoader(Items(), batch_size=8, num_workers=args.workers)
    waits, steps = [], []
    t = time.monotonic()
    for x, y in loader:
        # sprof's automatic TRAIN step opens at the model's forward: the step timed here starts
        # there too (zero_grad before it counted as step here and as wait in sprof, 8 points of
        # the wait share apart on a loaded machine).
        opt.zero_grad()
        t0 = time.monotonic()
        waits.append(t0 - t)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        t = time.monotonic()
        steps.append(t - t0)
    return waits, steps


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["torch", "plain"])
    parser.add_argument("result")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--item-sleep", type=float, default=0.002)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--items", type=int, default=240)
    parser.add_argument("--load-sleep", type=float, default=0.02)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    waits, steps = (torch_loop if args.kind == "torch" else plain)(args)
    with open(args.result, "w") as f:
        json.dump({"waits": waits, "steps": steps}, f)


if __name__ == "__main__":
    main()
