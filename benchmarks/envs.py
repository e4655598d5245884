"""Env-steps per second: our CartPole against Gymnasium's CartPole implementations.

Run:  python benchmarks/envs.py [--steps 3000]

Ours at n = 1, 8, 1024; when gymnasium is installed, in the same run: Gymnasium's single
CartPole-v1 (``gymnasium.make``, with its default wrappers, reset by hand when done),
``SyncVectorEnv`` of 8 copies, and Gymnasium's array-vectorised CartPole
(``make_vec(..., vectorization_mode="vector_entry_point")``) at n = 8 and 1024. Random actions
are drawn before timing. Repeats are interleaved and each configuration keeps its best time
(the least disturbed by other processes). Goals: at n = 8, >= 2x SyncVectorEnv and >= 1.5x Gymnasium's vector
CartPole; at n = 1024, faster than Gymnasium's vector CartPole.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from rlcourse.envs import CartPole


def time_steps(step, actions) -> float:
    """Seconds to call ``step(a)`` for every row ``a`` of ``actions``."""
    start = time.perf_counter()
    for a in actions:
        step(a)
    return time.perf_counter() - start


def ours(n: int):
    env = CartPole(n=n, seed=0)
    env.reset()
    return env.step


def gym_single(gym):
    env = gym.make("CartPole-v1")
    env.reset(seed=0)

    def step(a):
        _, _, terminated, truncated, _ = env.step(int(a[0]))
        if terminated or truncated:
            env.reset()

    return step


def gym_vector(gym, n: int, mode: str):
    env = gym.make_vec("CartPole-v1", num_envs=n, vectorization_mode=mode)
    env.reset(seed=0)
    return env.step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="vector steps per measurement")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved repeats")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    actions = {n: rng.integers(0, 2, size=(args.steps if n < 1024 else args.steps // 4, n))
               for n in (1, 8, 1024)}
    try:
        import gymnasium as gym
    except ImportError:
        gym = None

    # (n, label, step function); our rows first, peers after their n
    runs = []
    for n in (1, 8, 1024):
        runs.append((n, "rlcourse", ours(n)))
        if gym is not None:
            if n == 1:
                runs.append((1, "gymnasium make (single env)", gym_single(gym)))
            if n == 8:
                runs.append((8, "gymnasium SyncVectorEnv", gym_vector(gym, 8, "sync")))
            if n in (8, 1024):
                runs.append((n, "gymnasium vector CartPole",
                             gym_vector(gym, n, "vector_entry_point")))
    # Interleave the repeats so that a burst of load from other processes hits every
    # configuration alike; keep each one's best (least disturbed) time.
    best = [np.inf] * len(runs)
    for _ in range(args.repeats):
        for k, (n, _, step) in enumerate(runs):
            best[k] = min(best[k], time_steps(step, actions[n]))
    rate = {(n, label): actions[n].size / t for (n, label, _), t in zip(runs, best, strict=True)}

    print(f"CartPole env-steps per second (best of {args.repeats} interleaved runs of "
          f"{args.steps} vector steps; {args.steps // 4} at n = 1024)")
    print(f"{'n':>5} {'rlcourse':>12}   {'peer':<30} {'peer steps/s':>12} {'ours/peer':>9}")
    for n in (1, 8, 1024):
        mine = rate[(n, "rlcourse")]
        peers = [(label, r) for (m, label), r in rate.items() if m == n and label != "rlcourse"]
        if not peers:
            print(f"{n:>5} {mine:>12,.0f}")
        for k, (name, theirs) in enumerate(peers):
            first = f"{n:>5} {mine:>12,.0f}" if k == 0 else " " * 18
            print(f"{first}   {name:<30} {theirs:>12,.0f} {mine / theirs:>8.2f}x")
    if gym is None:
        print("(gymnasium not installed: no peers measured)")


if __name__ == "__main__":
    main()
