"""REINFORCE runs one after another against the same runs side by side (``rc.reinforce_sweep``).

The runs of lesson 08: four estimators (no baseline, leave-one-out, a learned critic, gamma^t G_t
with leave-one-out) on seeds 0 .. ``--seeds - 1``, each ``rc.reinforce`` on ``rc.CartPole(n=16)``
with lr 1e-2 for ``--steps`` steps and a 4-32-2 tanh policy (the critic run adds a 4-32-1 critic).
Then one ``rc.reinforce_sweep`` of the same runs. Prints the CPU time of each (this process's,
which other processes sharing the cores inflate less than wall time), the speed-up, and whether
every run's final parameters, episode returns and history equal its single run's, bit for bit.

    python benchmarks/reinforce_lockstep.py --seeds 3 --steps 200000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import rlcourse as rc

VARIANTS = {"no baseline": dict(baseline=False), "leave-one-out": dict(baseline=True),
            "learned critic": dict(baseline="value"),
            "gamma^t G_t, leave-one-out": dict(baseline=True, discount_steps=True)}


def policy_net(params, obs):
    return rc.mlp(params, obs, "tanh")


def network(kind, seed):
    if kind["baseline"] == "value":
        return rc.make_actor_critic(4, 2, hidden=(32,), seed=seed)
    return policy_net, rc.mlp_init([4, 32, 2], seed=seed, out_scale=0.01)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=50_000)
    args = parser.parse_args()
    members = [dict(seed=seed, **kind) for kind in VARIANTS.values() for seed in range(args.seeds)]

    start_cpu, start_wall = time.process_time(), time.perf_counter()
    alone = [rc.reinforce(rc.CartPole(n=16), *network(m, m["seed"]), args.steps, lr=1e-2,
                          progress=False, **m) for m in members]
    alone_cpu, alone_wall = time.process_time() - start_cpu, time.perf_counter() - start_wall

    start_cpu, start_wall = time.process_time(), time.perf_counter()
    swept = rc.reinforce_sweep([rc.CartPole(n=16) for _ in members],
                               [network(m, m["seed"])[1] for m in members], args.steps, members,
                               lr=1e-2)
    sweep_cpu, sweep_wall = time.process_time() - start_cpu, time.perf_counter() - start_wall

    same = all(
        all(np.array_equal(a, b) for a, b in zip(rc.tree_leaves(one.params), rc.tree_leaves(many.params)))
        and np.array_equal(one.episode_returns, many.episode_returns)
        and all(np.array_equal(one.history[k], many.history[k], equal_nan=True) for k in one.history)
        for one, many in zip(alone, swept))
    print(f"{len(members)} runs of {args.steps:,d} steps")
    print(f"one after another: {alone_cpu:6.1f} s CPU ({alone_wall:6.1f} s wall)")
    print(f"side by side:      {sweep_cpu:6.1f} s CPU ({sweep_wall:6.1f} s wall)")
    print(f"speed-up (CPU): {alone_cpu / sweep_cpu:.2f}x; identical params, returns and histories: "
          f"{same}")


if __name__ == "__main__":
    main()
