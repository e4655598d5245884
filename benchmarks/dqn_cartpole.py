"""DQN on CartPole-v1 with ``rc.DQN_CARTPOLE`` and a 4-64-64-2 ReLU network, over seeds 0-9.

The figure that matters is ``final``: the greedy score of the params the run returns after all
its steps, which is what a student gets. Prints, per seed: the environment steps and training
wall time until the mean of the last 20 training episodes first reaches 475 and until the
greedy policy first scores 475 on 10 fresh episodes (``rc.dqn``'s own evaluation every 2,560
steps, ``seed=1000``; evaluation time is not counted as training time); the wall time and
this process's CPU time of all 50,000 steps (CPU time is what other processes sharing the
cores do not inflate); what the run ends with (the mean of its last 20 training episodes and
the final params' greedy score); and what an ``rc.Checkpoints`` callback keeps (the best recorded score,
and the step it was taken at). Every "final" and "best re-eval" figure is a greedy evaluation
on 20 episodes from ``reset(seed=12345)``, seeds no evaluation during training used, so the
best params' score is not inflated by having been selected on the same episodes. Then the
process's peak memory, and on how many seeds the final params scored >= 475. Compares with
Stable-Baselines3's DQN only if that package happens to be installed.

    python benchmarks/dqn_cartpole.py [--steps 50000] [--seeds 0 1 2 3 4 5 6 7 8 9]
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

import rlcourse as rc

EVAL_EVERY = 2_560
FRESH_SEED = 12_345
FRESH_EPISODES = 20
MARK = 475.0


def q_net(params, obs):
    return rc.mlp(params, obs, "relu")


class TimedEnv:
    """Forwards to a CartPole and adds up the wall time from each ``reset`` to the last ``step``
    after it: the time of one ``rc.evaluate`` call, which resets once and then only steps."""

    def __init__(self, env):
        self.env, self.seconds = env, 0.0
        self.n, self.num_actions = env.n, env.num_actions
        self.observation_shape = env.observation_shape
        self._start = self._last = None

    def reset(self, seed=None):
        if self._start is not None:
            self.seconds += self._last - self._start
        self._start = self._last = time.perf_counter()
        return self.env.reset(seed=seed)

    def step(self, actions):
        out = self.env.step(actions)
        self._last = time.perf_counter()
        return out

    def total(self) -> float:
        return self.seconds + (0.0 if self._start is None else self._last - self._start)


def fresh_score(params) -> float:
    return rc.evaluate(rc.CartPole(n=10), rc.greedy_policy(q_net, params), FRESH_EPISODES,
                       seed=FRESH_SEED).mean


def run_seed(seed: int, steps: int) -> dict:
    eval_env = TimedEnv(rc.CartPole(n=10))
    trained = []  # (step, training seconds so far) at every callback
    start, cpu_start = time.perf_counter(), time.process_time()

    checkpoints = rc.Checkpoints(eval_env, q_net, every=EVAL_EVERY, episodes=10, seed=1_000)

    def callback(info):
        trained.append((info["steps"], time.perf_counter() - start - eval_env.total()))
        return checkpoints(info)

    result = rc.dqn(rc.CartPole(), q_net, rc.mlp_init([4, 64, 64, 2], seed=seed), steps,
                    **rc.DQN_CARTPOLE, seed=seed, callback=callback)
    total = time.perf_counter() - start - eval_env.total()
    # The evaluations' CPU time is not separated out; they are a small part (about 2 s of 50k).
    cpu = time.process_time() - cpu_start

    def seconds_at(step):
        # Training time at that step: the first callback time at or after it (every 256 steps).
        return next((t for s, t in trained if s >= step), total)

    returns, ends = result.episode_returns, result.episode_end_steps
    mean20 = np.array([returns[max(0, i - 19):i + 1].mean() for i in range(len(returns))])
    reached = np.flatnonzero((np.arange(len(returns)) >= 19) & (mean20 >= MARK))
    train_mark = None if not reached.size else (int(ends[reached[0]]), seconds_at(ends[reached[0]]))
    solved = np.flatnonzero(np.asarray(checkpoints.returns) >= MARK)
    eval_mark = None if not solved.size else (int(checkpoints.steps[solved[0]]),
                                              seconds_at(checkpoints.steps[solved[0]]))
    return {"total": total, "cpu": cpu, "train_mark": train_mark, "eval_mark": eval_mark,
            "last20": float(returns[-20:].mean()), "final": fresh_score(result.params),
            "best": checkpoints.best_return, "best_step": checkpoints.best_step,
            "best_fresh": fresh_score(checkpoints.best_params)}


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
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    args = parser.parse_args()
    print(f"DQN on CartPole, {args.steps:,d} steps, settings {rc.DQN_CARTPOLE}")
    print(f"{'seed':>4}  {'last-20 mean >= 475':>26}  {'greedy eval >= 475':>26}  "
          f"{'all steps':>9}  {'cpu':>7}  {'last-20':>7}  {'final':>6}  {'best (step)':>15}  "
          f"{'best re-eval':>12}  {'peak RSS':>8}")
    rows = []
    for seed in args.seeds:
        r = run_seed(seed, args.steps)
        rows.append(r)
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        best = f"{r['best']:.1f} ({r['best_step']:,d})"
        print(f"{seed:>4}  {fmt(r['train_mark']):>26}  {fmt(r['eval_mark']):>26}  "
              f"{r['total']:>7.1f} s  {r['cpu']:>5.1f} s  {r['last20']:>7.1f}  {r['final']:>6.1f}  "
              f"{best:>15}  "
              f"{r['best_fresh']:>12.1f}  {peak_mb:>5.0f} MB", flush=True)
    print(f"mean over seeds: last-20 {np.mean([r['last20'] for r in rows]):.1f}, "
          f"final {np.mean([r['final'] for r in rows]):.1f}, "
          f"best re-eval {np.mean([r['best_fresh'] for r in rows]):.1f}")
    ended_well = sum(r["final"] >= MARK for r in rows)
    print(f"final params >= {MARK:.0f} on {ended_well}/{len(rows)} seeds: "
          f"{[round(r['final']) for r in rows]}")
    print(f"mean wall time for {args.steps:,d} steps: {np.mean([r['total'] for r in rows]):.1f} s, "
          f"CPU time {np.mean([r['cpu'] for r in rows]):.1f} s")
    sb3 = sb3_time(args.steps)
    print("stable-baselines3 not installed: no live comparison" if sb3 is None
          else f"stable-baselines3 DQN, same settings, 256-256 net: {sb3:.1f} s")


if __name__ == "__main__":
    main()
