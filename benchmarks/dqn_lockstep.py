"""DQN runs one after another against the same runs side by side (``rc.dqn_sweep``).

For each of ``--members`` seeds, ``rc.dqn`` on ``rc.CartPole()`` with ``rc.DQN_CARTPOLE`` for
``--steps`` steps, a 4-64-64-2 ReLU net; then one ``rc.dqn_sweep`` of the same runs. Prints the
CPU time of each (this process's, which other processes sharing the cores inflate less than
wall time), the speed-up, and whether every member's final parameters equal its single run's
bit for bit.

    python benchmarks/dqn_lockstep.py --members 4 --steps 50000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import rlcourse as rc


def q_net(params, obs):
    return rc.mlp(params, obs, "relu")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=4)
    parser.add_argument("--steps", type=int, default=10_000)
    args = parser.parse_args()
    seeds = list(range(args.members))

    start_cpu, start_wall = time.process_time(), time.perf_counter()
    alone = [rc.dqn(rc.CartPole(), q_net, rc.mlp_init([4, 64, 64, 2], seed=s), args.steps,
                    **rc.DQN_CARTPOLE, seed=s) for s in seeds]
    alone_cpu, alone_wall = time.process_time() - start_cpu, time.perf_counter() - start_wall

    start_cpu, start_wall = time.process_time(), time.perf_counter()
    swept = rc.dqn_sweep([rc.CartPole() for _ in seeds],
                         [rc.mlp_init([4, 64, 64, 2], seed=s) for s in seeds], args.steps,
                         [dict(seed=s) for s in seeds], **rc.DQN_CARTPOLE)
    sweep_cpu, sweep_wall = time.process_time() - start_cpu, time.perf_counter() - start_wall

    same = all(np.array_equal(a, b) for one, many in zip(alone, swept)
               for a, b in zip(rc.tree_leaves(one.params), rc.tree_leaves(many.params)))
    print(f"{args.members} runs of {args.steps:,d} steps")
    print(f"one after another: {alone_cpu:6.1f} s CPU ({alone_wall:6.1f} s wall)")
    print(f"side by side:      {sweep_cpu:6.1f} s CPU ({sweep_wall:6.1f} s wall)")
    print(f"speed-up (CPU): {alone_cpu / sweep_cpu:.2f}x; identical final params: {same}")


if __name__ == "__main__":
    main()
