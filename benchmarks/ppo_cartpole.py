"""PPO on CartPole: steps and time until the mean of the last 20 training episodes reaches 475.

    python benchmarks/ppo_cartpole.py [--seeds 0 1 2] [--configs preset 200k]

For each configuration and seed it prints: env steps and wall/CPU seconds when the mark was
first reached (checked after every update), total wall and CPU time, the greedy policy's mean
return over 10 evaluation episodes, and the peak memory traced by ``tracemalloc`` during a
separate run of seed 0. Configurations: ``preset`` (``rc.PPO_CARTPOLE``, 50k steps) and
``200k`` (8 copies, 200k steps, 10 epochs, lr 1e-3, other options at their defaults).

If ``stable_baselines3`` is importable (never a dependency), the same settings run in SB3 in
the same process and the ratios are printed. BLAS is pinned to one thread, as in the reference
measurements.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402

import rlcourse as rc  # noqa: E402

MARK = 475.0
CONFIGS = {
    "preset": dict(rc.PPO_CARTPOLE),
    "200k": dict(total_steps=200_000, epochs=10, lr=1e-3),
}
# Stable-Baselines3 on this machine with one thread (figures given with the task), used only
# when SB3 itself is not installed, to print the ratio against them.
SB3_REFERENCE = {"preset": {"steps": 32_000, "seconds": 11.0}, "200k": {"total_seconds": 43.0}}


def run_ours(settings, seed):
    model, params = rc.make_actor_critic(4, 2, hidden=(64, 64), seed=seed)
    marks = {}
    start_wall, start_cpu = time.perf_counter(), time.process_time()

    def note_mark(info):
        if "steps" not in marks and info["mean_return"] >= MARK:
            marks.update(steps=info["steps"], wall=time.perf_counter() - start_wall,
                         cpu=time.process_time() - start_cpu)

    result = rc.ppo(rc.CartPole(n=8, seed=seed), model, params, seed=seed, progress=False,
                    callback=note_mark, **settings)
    total_wall, total_cpu = time.perf_counter() - start_wall, time.process_time() - start_cpu
    score = rc.evaluate(rc.CartPole(n=1), rc.greedy_policy(model, result.params), episodes=10,
                     seed=1000 + seed).mean
    return dict(marks, total_wall=total_wall, total_cpu=total_cpu, eval=score)


def peak_memory_mb(settings):
    model, params = rc.make_actor_critic(4, 2, seed=0)
    tracemalloc.start()
    rc.ppo(rc.CartPole(n=8, seed=0), model, params, seed=0, progress=False, **settings)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def run_sb3(settings, seed):
    """The same settings in Stable-Baselines3 (only if installed)."""
    import gymnasium as gym
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    torch.set_num_threads(1)
    marks, start = {}, time.perf_counter()

    class Mark(BaseCallback):
        def _on_step(self):
            infos = self.model.ep_info_buffer
            if "steps" not in marks and len(infos) >= 20:
                if np.mean([e["r"] for e in list(infos)[-20:]]) >= MARK:
                    marks.update(steps=self.num_timesteps, wall=time.perf_counter() - start)
            return True

    total = settings.get("total_steps", 100_000)
    lr, clip = settings.get("lr", 3e-4), settings.get("clip", 0.2)
    anneal = settings.get("anneal_lr", True)
    model = PPO(
        "MlpPolicy", make_vec_env("CartPole-v1", n_envs=8, seed=seed),
        n_steps=settings.get("rollout", 128), batch_size=settings.get("minibatch", 256),
        n_epochs=settings.get("epochs", 4), gamma=settings.get("gamma", 0.99),
        gae_lambda=settings.get("lam", 0.95), ent_coef=settings.get("ent_coef", 0.0),
        learning_rate=(lambda f: f * lr) if anneal else lr,
        clip_range=(lambda f: f * clip) if settings.get("anneal_clip", False) else clip,
        policy_kwargs=dict(net_arch=dict(pi=[64, 64], vf=[64, 64]), activation_fn=torch.nn.Tanh),
        seed=seed, device="cpu",
    )
    model.learn(total, callback=Mark())
    total_wall = time.perf_counter() - start
    env = gym.make("CartPole-v1")
    scores = []
    for episode in range(10):
        obs, _ = env.reset(seed=1000 + seed + episode)
        done, ret = False, 0.0
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, reward, terminated, truncated, _ = env.step(action)
            ret, done = ret + reward, terminated or truncated
        scores.append(ret)
    return dict(marks, total_wall=total_wall, eval=float(np.mean(scores)))


def fmt(value, spec):
    return "   -  " if value is None else format(value, spec)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    args = parser.parse_args()
    try:
        import stable_baselines3  # noqa: F401
        have_sb3 = True
    except ImportError:
        have_sb3 = False
    for name in args.configs:
        settings = CONFIGS[name]
        print(f"\n== {name}: {settings}")
        rows = []
        for seed in args.seeds:
            row = run_ours(settings, seed)
            rows.append(row)
            print(f"  seed {seed}: mark at {fmt(row.get('steps'), '>7,')} steps, "
                  f"{fmt(row.get('wall'), '6.1f')} s wall / {fmt(row.get('cpu'), '6.1f')} s CPU; "
                  f"total {row['total_wall']:6.1f} s wall / {row['total_cpu']:6.1f} s CPU; "
                  f"greedy eval {row['eval']:.1f}", flush=True)
        reached = [r for r in rows if "steps" in r]
        print(f"  reached the mark: {len(reached)}/{len(rows)} seeds")
        if reached:
            print(f"  mean to the mark: {np.mean([r['steps'] for r in reached]):,.0f} steps, "
                  f"{np.mean([r['wall'] for r in reached]):.1f} s wall, "
                  f"{np.mean([r['cpu'] for r in reached]):.1f} s CPU")
        mean_total = np.mean([r["total_wall"] for r in rows])
        print(f"  mean total: {mean_total:.1f} s wall, "
              f"{np.mean([r['total_cpu'] for r in rows]):.1f} s CPU")
        print(f"  peak traced memory (seed 0): {peak_memory_mb(settings):.1f} MiB")
        if have_sb3:
            sb3 = [run_sb3(settings, seed) for seed in args.seeds]
            sb3_reached = [r for r in sb3 if "steps" in r]
            print(f"  SB3: reached {len(sb3_reached)}/{len(sb3)}; total "
                  f"{np.mean([r['total_wall'] for r in sb3]):.1f} s; ratio ours/SB3 total "
                  f"{mean_total / np.mean([r['total_wall'] for r in sb3]):.2f}")
            if reached and sb3_reached:
                steps_ratio = (np.mean([r["steps"] for r in reached])
                               / np.mean([r["steps"] for r in sb3_reached]))
                time_ratio = (np.mean([r["wall"] for r in reached])
                              / np.mean([r["wall"] for r in sb3_reached]))
                print(f"  ratio ours/SB3 to the mark: steps {steps_ratio:.2f}, time {time_ratio:.2f}")
        else:
            ref = SB3_REFERENCE[name]
            if "seconds" in ref and reached:
                print(f"  SB3 not installed; against the reference (SB3 {ref['steps']:,} steps, "
                      f"{ref['seconds']:.0f} s to the mark): steps ratio "
                      f"{np.mean([r['steps'] for r in reached]) / ref['steps']:.2f}, time ratio "
                      f"{np.mean([r['wall'] for r in reached]) / ref['seconds']:.2f} (wall), "
                      f"{np.mean([r['cpu'] for r in reached]) / ref['seconds']:.2f} (CPU)")
            if "total_seconds" in ref:
                print(f"  SB3 not installed; against the reference (SB3 {ref['total_seconds']:.0f} s "
                      f"total): time ratio {mean_total / ref['total_seconds']:.2f} (wall), "
                      f"{np.mean([r['total_cpu'] for r in rows]) / ref['total_seconds']:.2f} (CPU)")


if __name__ == "__main__":
    main()
