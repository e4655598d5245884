"""Env-steps per second: our CartPole against Gymnasium's CartPole implementations.

Run:  python benchmarks/envs.py [--steps 3000]

Ours at n = 1, 8, 1024; when gymnasium is installed, in the same run: Gymnasium's single
CartPole-v1 (``gymnasium.make``, with its default wrappers, reset by hand when done),
``SyncVectorEnv`` of 8 copies, and Gymnasium's array-vectorised CartPole
(``make_vec(..., vectorization_mode="vector_entry_point")``) at n = 8 and 1024. Random actions
are drawn before timing. Every measurement is the best of a few repeats (the least disturbed
by other processes). Goals: at n = 8, >= 2x SyncVectorEnv and >= 1.5x Gymnasium's vector
CartPole; at n = 1024, faster than Gymnasium's vector CartPole.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from rlcourse.envs import CartPole


def steps_per_second(step, actions, repeats: int = 3) -> float:
    """Best env-steps/s over ``repeats`` runs of ``step(a)`` for every row ``a`` of actions."""
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        for a in actions:
            step(a)
        best = min(best, time.perf_counter() - start)
    return actions.size / best


def ours(n: int, actions: np.ndarray) -> float:
    env = CartPole(n=n, seed=0)
    env.reset()
    return steps_per_second(env.step, actions)


def gym_single(gym, actions: np.ndarray) -> float:
    env = gym.make("CartPole-v1")
    env.reset(seed=0)

    def step(a):
        _, _, terminated, truncated, _ = env.step(int(a[0]))
        if terminated or truncated:
            env.reset()

    return steps_per_second(step, actions)


def gym_vector(gym, n: int, mode: str, actions: np.ndarray) -> float:
    env = gym.make_vec("CartPole-v1", num_envs=n, vectorization_mode=mode)
    env.reset(seed=0)
    result = steps_per_second(env.step, actions)
    env.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000, help="vector steps per measurement")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    actions = {n: rng.integers(0, 2, size=(args.steps if n < 1024 else args.steps // 4, n))
               for n in (1, 8, 1024)}
    try:
        import gymnasium as gym
    except ImportError:
        gym = None

    rows = []  # (n, ours, [(peer name, peer steps/s)])
    for n in (1, 8, 1024):
        peers = []
        if gym is not None:
            if n == 1:
                peers.append(("gymnasium make (single env)", gym_single(gym, actions[1])))
            if n == 8:
                peers.append(("gymnasium SyncVectorEnv", gym_vector(gym, 8, "sync", actions[8])))
            if n in (8, 1024):
                peers.append(("gymnasium vector CartPole",
                              gym_vector(gym, n, "vector_entry_point", actions[n])))
        rows.append((n, ours(n, actions[n]), peers))

    print(f"CartPole env-steps per second (best of 3; {args.steps} vector steps per run)")
    print(f"{'n':>5} {'rlcourse':>12}   {'peer':<30} {'peer steps/s':>12} {'ours/peer':>9}")
    for n, mine, peers in rows:
        if not peers:
            print(f"{n:>5} {mine:>12,.0f}")
        for k, (name, theirs) in enumerate(peers):
            first = f"{n:>5} {mine:>12,.0f}" if k == 0 else " " * 18
            print(f"{first}   {name:<30} {theirs:>12,.0f} {mine / theirs:>8.2f}x")
    if gym is None:
        print("(gymnasium not installed: no peers measured)")


if __name__ == "__main__":
    main()
