"""Microseconds per environment step of every tabular learner, against the environment alone.

The floor is ``env.step`` called in a bare loop with a fixed action: what any learner built on
the vector protocol must pay. Run: ``python benchmarks/tabular.py``. Prints, per method, the
median over repeats of microseconds per step and the overhead over the floor, on CliffWalking
(control) and the 19-state random walk (prediction, one step size and 20 at once).
"""

import time

import numpy as np

import rlcourse as rc

REPEATS = 5


def random_walk(k=19):
    S = k + 2
    P, R = np.zeros((S, 1, S)), np.zeros((S, 1, S))
    for s in range(1, S - 1):
        P[s, 0, s - 1] = P[s, 0, s + 1] = 0.5
    P[0, 0, 0] = P[S - 1, 0, S - 1] = 1.0
    R[1, 0, 0], R[S - 2, 0, S - 1] = -1.0, 1.0
    terminal = np.zeros(S, dtype=bool)
    terminal[[0, S - 1]] = True
    start = np.zeros(S)
    start[S // 2] = 1.0
    return rc.TabularMDP(P, R, terminal, start)


def per_step(run) -> float:
    """Median over repeats of microseconds per environment step; ``run()`` returns steps."""
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        steps = run()
        times.append((time.perf_counter() - t0) / steps * 1e6)
    return float(np.median(times))


def floor(env, steps=20_000) -> float:
    env.reset(seed=0)
    action = np.zeros(1, dtype=np.int64)

    def run():
        for _ in range(steps):
            env.step(action)
        return steps

    return per_step(run)


def main():
    cliff, walk, lake = rc.CliffWalking(), random_walk(), rc.FrozenLake()
    one = np.ones((walk.num_states, 1))
    alphas = np.linspace(0.05, 1.0, 20)
    rows = {
        "CliffWalking env.step (floor)": floor(cliff),
        "q_learning, 200 episodes": per_step(
            lambda: rc.q_learning(cliff, 200, gamma=1.0).episode_lengths.sum()),
        "sarsa, 200 episodes": per_step(
            lambda: rc.sarsa(cliff, 200, gamma=1.0).episode_lengths.sum()),
        "expected_sarsa, 200 episodes": per_step(
            lambda: rc.expected_sarsa(cliff, 200, gamma=1.0).episode_lengths.sum()),
        "mc_control (FrozenLake), 500 episodes": per_step(
            lambda: rc.mc_control(lake, 500, gamma=0.99).episode_lengths.sum()),
        "FrozenLake env.step (floor)": floor(lake),
        "random walk env.step (floor)": floor(walk),
        "td0, 100 episodes": per_step(
            lambda: rc.td0(walk, one, 100, 0.1, 1.0).episode_lengths.sum()),
        "td0, 20 step sizes at once": per_step(
            lambda: rc.td0(walk, one, 100, alphas, 1.0).episode_lengths.sum()),
        "n_step_td n=8, 100 episodes": per_step(
            lambda: rc.n_step_td(walk, one, 100, 8, 0.1, 1.0).episode_lengths.sum()),
        "td_lambda, 100 episodes": per_step(
            lambda: rc.td_lambda(walk, one, 100, 0.9, 0.1, 1.0).episode_lengths.sum()),
        "mc_prediction, 100 episodes": per_step(
            lambda: rc.mc_prediction(walk, one, 100, 1.0).episode_lengths.sum()),
    }
    floors = {"cliff": rows["CliffWalking env.step (floor)"],
              "lake": rows["FrozenLake env.step (floor)"],
              "walk": rows["random walk env.step (floor)"]}
    print(f"{'method':40s} {'us/step':>8s} {'x floor':>8s}")
    for name, us in rows.items():
        if "FrozenLake" in name:
            base = floors["lake"]
        elif name.split(",")[0] in {"q_learning", "sarsa", "expected_sarsa"} or "Cliff" in name:
            base = floors["cliff"]
        else:
            base = floors["walk"]
        print(f"{name:40s} {us:8.1f} {us / base:8.2f}")


if __name__ == "__main__":
    main()
