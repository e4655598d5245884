"""DQN on CartPole-v1 with ``rc.DQN_CARTPOLE`` and a 4-64-64-2 ReLU network, over three seeds.

Prints, per seed: the environment steps and training wall time until the mean of the last 20
training episodes first reaches 475 and until the greedy policy first scores 475 on 10 fresh
episodes (evaluated every 2,560 steps; evaluation time is not counted as training time); the
wall time of all 50,000 steps; the final greedy evaluation; and the process's peak memory.
Compares with Stable-Baselines3's DQN only if that package happens to be installed.

    python benchmarks/dqn_cartpole.py [--steps 50000] [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

import rlcourse as rc

EVAL_EVERY = 2_560
MARK = 475.0


def q_net(params, obs):
    return rc.mlp(params, obs, "relu")


def run_seed(seed: int, steps: int) -> dict:
    clock = {"eval": 0.0, "start": time.perf_counter()}
    marks = {"trained": [], "eval_first": None}

    def callback(info):
        now = time.perf_counter()
        marks["trained"].append((info["step"], now - clock["start"] - clock["eval"]))
        if info["step"] % EVAL_EVERY == 0 and marks["eval_first"] is None:
            score = rc.evaluate(rc.CartPole(n=10), rc.greedy_policy(q_net, info["params"]), 10,
                                seed=1_000).mean
            if score >= MARK:
                marks["eval_first"] = (info["step"], now - clock["start"] - clock["eval"])
            clock["eval"] += time.perf_counter() - now
        return True

    result = rc.dqn(rc.CartPole(), q_net, rc.mlp_init([4, 64, 64, 2], seed=seed), steps,
                    **rc.DQN_CARTPOLE, seed=seed, callback=callback)
    total = time.perf_counter() - clock["start"] - clock["eval"]
    final = rc.evaluate(rc.CartPole(n=10), rc.greedy_policy(q_net, result.params), 10, seed=12_345).mean
    returns, ends = result.episode_returns, result.episode_end_steps
    mean20 = np.array([returns[max(0, i - 19):i + 1].mean() for i in range(len(returns))])
    reached = np.flatnonzero((np.arange(len(returns)) >= 19) & (mean20 >= MARK))
    train_mark = None
    if reached.size:
        step = int(ends[reached[0]])
        # Training time at that step: the first callback time at or after it (every 256 steps).
        train_mark = (step, next(t for s, t in marks["trained"] if s >= step))
    return {"seed": seed, "total": total, "final": final, "train_mark": train_mark,
            "eval_mark": marks["eval_first"], "grad_steps": len(result.losses)}


def fmt(mark):
    return "not reached" if mark is None else f"{mark[0]:>6,d} steps {mark[1]:6.1f} s"


def sb3_time(steps: int) -> float | None:
    try:
        import gymnasium as gym
        from stable_baselines3 import DQN
    except ImportError:
        return None
    model = DQN("MlpPolicy", gym.make("CartPole-v1"), learning_rate=2.3e-3, batch_size=64,
                buffer_size=100_000, learning_starts=1_000, gamma=0.99, target_update_interval=10,
                train_freq=256, gradient_steps=128, exploration_fraction=0.16,
                exploration_final_eps=0.04, policy_kwargs=dict(net_arch=[256, 256]), seed=0)
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    print(f"DQN on CartPole, {args.steps:,d} steps, settings {rc.DQN_CARTPOLE}")
    print(f"{'seed':>4}  {'last-20 mean >= 475':>26}  {'greedy eval >= 475':>26}  "
          f"{'all steps':>9}  {'final eval':>10}  {'peak RSS':>8}")
    totals = []
    for seed in args.seeds:
        r = run_seed(seed, args.steps)
        totals.append(r["total"])
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{seed:>4}  {fmt(r['train_mark']):>26}  {fmt(r['eval_mark']):>26}  "
              f"{r['total']:>7.1f} s  {r['final']:>10.1f}  {peak_mb:>5.0f} MB", flush=True)
    print(f"mean wall time for {args.steps:,d} steps: {np.mean(totals):.1f} s "
          f"(reference: SB3's DQN took 70 s for 50k steps on this machine)")
    sb3 = sb3_time(args.steps)
    print("stable-baselines3 not installed: no live comparison" if sb3 is None
          else f"stable-baselines3 DQN, same settings, 256-256 net: {sb3:.1f} s")


if __name__ == "__main__":
    main()
