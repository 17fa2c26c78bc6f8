"""Stack shapes a sampler must get right: deep recursion, a generator and a coroutine doing work.

Usage: shapes.py SECONDS DEPTH
Each part runs for SECONDS/3: recurse to DEPTH then spin at the bottom; pull values from a
generator that computes them; run a coroutine under asyncio that computes between awaits.
"""
import asyncio
import sys
import time

clock = time.perf_counter


def spin(seconds):
    end = clock() + seconds
    x = 0
    while clock() < end:
        for _ in range(1000): x += 1  # SPIN-LINE
    return x


def recurse(depth, seconds):
    if depth <= 1:
        return spin(seconds)
    return recurse(depth - 1, seconds) + 1


def numbers(seconds):
    end = clock() + seconds
    while clock() < end:
        x = 0
        for _ in range(2000): x += 1  # GEN-LINE
        yield x


def consume(seconds):
    total = 0
    for value in numbers(seconds):
        total += value
    return total


async def crunch(seconds):
    end = clock() + seconds
    x = 0
    while clock() < end:
        for _ in range(2000): x += 1  # ASYNC-LINE
        await asyncio.sleep(0)
    return x


async def coroutine_main(seconds):
    return await crunch(seconds)


def main():
    seconds = float(sys.argv[1]) / 3
    depth = int(sys.argv[2])
    sys.setrecursionlimit(depth + 200)
    recurse(depth, seconds)
    consume(seconds)
    asyncio.run(coroutine_main(seconds))


if __name__ == "__main__":
    main()
