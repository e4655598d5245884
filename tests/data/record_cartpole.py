"""Record CartPole-v1 trajectories from Gymnasium for tests/test_envs.py.

Run from the repository root with gymnasium installed:  python tests/data/record_cartpole.py
It writes tests/data/cartpole_gymnasium.npz. Episode k is keyed ``k_<field>``:
``seed`` (reset seed), ``start`` float64 state after reset, ``actions [T]``,
``obs [T, 4]`` float32 observations after each step, ``terminated [T]``, ``truncated [T]``,
``state`` float64 state after the last step. Episodes 0-5 take uniformly random actions
(drawn from ``default_rng(1000 + seed)``) until they terminate; episode 6 follows a PD
controller on the observation, survives, and is truncated at step 500.
"""

from pathlib import Path

import gymnasium
import numpy as np

OUT = Path(__file__).with_name("cartpole_gymnasium.npz")


def pd_controller(obs) -> int:
    """Push towards the side the pole is falling to, damped; keeps the cart near the middle."""
    return int(obs[2] + 0.5 * obs[3] + 0.05 * obs[0] + 0.2 * obs[1] > 0)


def record(seed: int, policy) -> dict:
    env = gymnasium.make("CartPole-v1")
    obs, _ = env.reset(seed=seed)
    start = np.array(env.unwrapped.state, dtype=np.float64)
    actions, observations, terminated, truncated = [], [], [], []
    while True:
        action = policy(obs)
        obs, reward, term, trunc, _ = env.step(action)
        assert reward == 1.0
        actions.append(action)
        observations.append(obs)
        terminated.append(term)
        truncated.append(trunc)
        if term or trunc:
            break
    return {
        "seed": np.array(seed),
        "start": start,
        "actions": np.array(actions, dtype=np.int64),
        "obs": np.array(observations, dtype=np.float32),
        "terminated": np.array(terminated),
        "truncated": np.array(truncated),
        "state": np.array(env.unwrapped.state, dtype=np.float64),
    }


def main() -> None:
    episodes = []
    for seed in range(6):
        rng = np.random.default_rng(1000 + seed)
        episodes.append(record(seed, lambda obs, rng=rng: int(rng.integers(2))))
    episodes.append(record(7, pd_controller))
    assert episodes[-1]["truncated"][-1] and len(episodes[-1]["actions"]) == 500
    arrays = {f"{k}_{name}": v for k, ep in enumerate(episodes) for name, v in ep.items()}
    np.savez_compressed(OUT, gymnasium_version=np.array(gymnasium.__version__), **arrays)
    print(f"wrote {OUT} ({len(episodes)} episodes, lengths "
          f"{[len(ep['actions']) for ep in episodes]})")


if __name__ == "__main__":
    main()
