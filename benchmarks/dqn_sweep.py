"""DQN on CartPole over seeds: the final params' greedy score, wall time and, with ``--diag``,
the diagnostics of ``rlcourse.algos.dqn_diagnostics`` recorded during training.

One run per seed: ``rc.dqn`` for ``--steps`` steps on ``rc.CartPole()`` (one copy) with
``rc.DQN_CARTPOLE`` updated by ``--set key=value`` options, a ReLU net ``4-H-...-H-2``
(``--net``, default 64 64) initialised from the seed. Recorded per seed (one JSON line appended
to ``--out``):

- ``final``: the returned (final) params' greedy score, the mean of 20 episodes of
  ``rc.CartPole(n=10)`` from ``reset(seed=12345)``, seeds that no evaluation during training
  uses; ``final_returns`` the 20 episodes;
- ``evals``: (step, greedy score on 10 episodes from ``reset(seed=1000)``) every 2,560 steps;
- ``wall``, ``cpu``: training seconds (wall clock, and this process's CPU time, which other
  processes sharing the cores do not inflate), with the time spent in the callback
  (evaluations, diagnostics) subtracted; the training itself is bit-identical with or without;
- with ``--dense-from STEP``, ``dense_evals``: the same evaluation after every training phase
  from ``STEP`` on, to see how much one phase changes the greedy policy's score;
- with ``--diag``, after every training phase, on the last 1,000 states the training env
  visited: median action gap, median relative change of the phase (``relative_change``),
  share of greedy actions flipped by the phase, mean max Q; and every 2,560 steps, on 100 of
  those states, mean max Q against the greedy policy's realised discounted return from them.

    python benchmarks/dqn_sweep.py --tag preset --seeds 0 1 2 --out /tmp/dqn.jsonl [--diag]
    python benchmarks/dqn_sweep.py --tag constant-lr --set anneal_lr=False --out /tmp/dqn.jsonl
    python benchmarks/dqn_sweep.py --tag lr1e-3 --set lr=1e-3 --seeds 0 1 2 --out /tmp/dqn.jsonl
    python benchmarks/dqn_sweep.py --summary /tmp/dqn.jsonl
"""

from __future__ import annotations

import argparse
import ast
import json
import time
from collections import defaultdict

import numpy as np

import rlcourse as rc
from rlcourse.algos import dqn_diagnostics as dd

FRESH_SEED = 12_345
FRESH_EPISODES = 20
EVAL_EVERY = 2_560
PROBE = 1_000
MARK = 475.0


def q_net(params, obs):
    return rc.mlp(params, obs, "relu")


def fresh_score(params) -> np.ndarray:
    return rc.evaluate(rc.CartPole(n=10), rc.greedy_policy(q_net, params), FRESH_EPISODES,
                       seed=FRESH_SEED).returns


def run(seed: int, steps: int, settings: dict, net: list[int], diag: bool,
        dense_from: int | None = None) -> dict:
    env = rc.CartPole()
    if diag:
        env = rc.RecentStates(env, keep=PROBE)
    gamma = settings.get("gamma", 0.99)
    record = defaultdict(list)
    state = {"prev": None, "cb": 0.0, "cb_cpu": 0.0}
    rng = np.random.default_rng(10_000 + seed)  # picks the overestimation states; not training's
    rollout_env = rc.CartPole(n=100, max_steps=None, seed=777)

    def callback(info):
        t0, c0 = time.perf_counter(), time.process_time()
        step, params = info["steps"], info["params"]
        if step % EVAL_EVERY == 0:
            score = rc.evaluate(rc.CartPole(n=10), rc.greedy_policy(q_net, params), 10, seed=1_000).mean
            record["evals"].append((step, score))
        if dense_from is not None and step >= dense_from:
            score = rc.evaluate(rc.CartPole(n=10), rc.greedy_policy(q_net, params), 10, seed=1_000).mean
            record["dense_evals"].append((step, score))
        if diag:
            states = env.states()
            q = np.asarray(q_net(params, states), dtype=np.float64)
            if state["prev"] is not None and step > settings.get("learning_starts", 1_000):
                q_prev = np.asarray(q_net(state["prev"], states), dtype=np.float64)
                gap_prev = dd.action_gap(q_prev)
                change = dd.relative_change(q_prev, q)
                record["phase"].append((step, float(np.median(dd.action_gap(q))),
                                        float(np.median(change)),
                                        float(dd.greedy_flips(q_prev, q).mean()),
                                        float(q.max(axis=1).mean()),
                                        float(np.mean(change >= gap_prev))))
            state["prev"] = rc.tree_map(np.copy, params)
            if step % EVAL_EVERY == 0:
                pick = states[rng.choice(len(states), 100, replace=False)]
                returns = dd.greedy_discounted_returns(rollout_env, q_net, params, pick, gamma)
                q_pick = np.asarray(q_net(params, pick), dtype=np.float64)
                record["over"].append((step, float(q_pick.max(axis=1).mean()), float(returns.mean()),
                                       float(np.median(dd.action_gap(q_pick)))))
        state["cb"] += time.perf_counter() - t0
        state["cb_cpu"] += time.process_time() - c0
        return True

    params = rc.mlp_init([4, *net, 2], seed=seed)
    start, cpu_start = time.perf_counter(), time.process_time()
    result = rc.dqn(env, q_net, params, steps, **settings, seed=seed, callback=callback)
    wall = time.perf_counter() - start - state["cb"]
    cpu = time.process_time() - cpu_start - state["cb_cpu"]
    final = fresh_score(result.params)
    out = dict(seed=seed, final=float(final.mean()), final_returns=final.tolist(), wall=wall, cpu=cpu,
               last20=float(result.episode_returns[-20:].mean()), evals=record["evals"],
               q_mean_last=float(result.history["q_mean"][-1]))
    if dense_from is not None:
        out["dense_evals"] = record["dense_evals"]
    if diag:
        out["phase"] = record["phase"]
        out["over"] = record["over"]
        final_states = env.states()[rng.choice(len(env.states()), 100, replace=False)]
        returns = dd.greedy_discounted_returns(rollout_env, q_net, result.params, final_states, gamma)
        q_final = np.asarray(q_net(result.params, final_states), dtype=np.float64)
        out["over_final"] = (float(q_final.max(axis=1).mean()), float(returns.mean()))
    return out


def summary(path: str) -> None:
    """Per tag: final >= 475, mean final, share of late evaluations >= 475, how often a good
    evaluation was followed by a bad one at the next (all, and from step 40k on; the final
    score counts as the last evaluation), the median step of the first good one (over the seeds
    that had one), times; with diagnostics, medians over the phases from step 25k (and over
    the last 5k steps) of the action gap and the change per phase, the share of flipped greedy
    actions, the mean over seeds of (mean max Q - realised return) at the checkpoints from 25k,
    and on how many seeds the mean max Q passed 100 = 1 / (1 - 0.99)."""
    rows = defaultdict(dict)
    meta = {}
    for line in open(path):
        r = json.loads(line)
        rows[r["tag"]][r["seed"]] = r
        meta[r["tag"]] = r["settings_diff"]
    print(f"{'tag':<16} {'>=475':>6} {'mean':>6} {'late':>5} {'drops':>7} {'drops40k':>8} "
          f"{'first':>6} {'wall s':>6} {'cpu s':>5}  final per seed   settings")
    for tag, by_seed in rows.items():
        runs = [by_seed[s] for s in sorted(by_seed)]
        finals = [r["final"] for r in runs]
        # Share of the evaluations from step 40,000 on that reached the mark: how often the
        # policy late in training is a good one, a less noisy figure than one final score.
        late = [score >= MARK for r in runs for step, score in r["evals"] if step >= 40_000]
        drops = {0: [0, 0], 40_000: [0, 0]}
        first = []
        for r in runs:
            ev = [*r["evals"], (r["steps"], r["final"])]
            good = [step for step, score in ev if score >= MARK]
            first.append(good[0] if good else np.nan)
            for (step, a), (_, b) in zip(ev[:-1], ev[1:]):
                for lo in drops:
                    if step >= lo and a >= MARK:
                        drops[lo][0] += b < MARK
                        drops[lo][1] += 1
        per = " ".join(f"{r['seed']}:{r['final']:.0f}" for r in runs)
        reached = [f for f in first if np.isfinite(f)]  # median over the seeds that got there
        first_good = np.median(reached) if reached else np.nan
        print(f"{tag:<16} {sum(f >= MARK for f in finals):>2}/{len(runs):<3} {np.mean(finals):>6.1f} "
              f"{np.mean(late):>5.2f} {drops[0][0]:>3}/{drops[0][1]:<3} {drops[40_000][0]:>4}/"
              f"{drops[40_000][1]:<3} {first_good:>6.0f} "
              f"{np.mean([r['wall'] for r in runs]):>6.1f} "
              f"{np.mean([r.get('cpu', np.nan) for r in runs]):>5.1f}  {per}   {meta[tag]}")
    print(f"\n{'tag':<16} {'gap':>6} {'change':>6} {'flips':>6} {'gap 45k+':>8} {'chg 45k+':>8} "
          f"{'Q - G':>6} {'Q>100':>6}   (diagnostics runs only)")
    for tag, by_seed in rows.items():
        runs = [r for r in by_seed.values() if "phase" in r]
        if not runs:
            continue
        med = defaultdict(list)
        for r in runs:
            ph = np.array(r["phase"])
            for name, lo, col in (("gap", 25_000, 1), ("chg", 25_000, 2), ("flips", 25_000, 3),
                                  ("gap45", 45_000, 1), ("chg45", 45_000, 2)):
                rows_in = ph[ph[:, 0] >= lo, col]
                med[name].append(np.mean(rows_in) if name == "flips" else np.median(rows_in))
            ov = np.array(r["over"])
            late_ov = ov[ov[:, 0] >= 25_000]
            med["over"].append(np.mean(late_ov[:, 1] - late_ov[:, 2]))
            med["above"].append(ph[:, 4].max() > 100)
        print(f"{tag:<16} {np.mean(med['gap']):>6.3f} {np.mean(med['chg']):>6.3f} "
              f"{np.mean(med['flips']):>6.3f} {np.mean(med['gap45']):>8.3f} {np.mean(med['chg45']):>8.3f} "
              f"{np.mean(med['over']):>+6.1f} {sum(med['above']):>3}/{len(runs)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tag", default="run")
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    parser.add_argument("--net", type=int, nargs="+", default=[64, 64])
    parser.add_argument("--diag", action="store_true")
    parser.add_argument("--dense-from", type=int, metavar="STEP",
                        help="also evaluate the greedy policy after every training phase from STEP on")
    parser.add_argument("--out", default="/tmp/dqn_sweep.jsonl")
    parser.add_argument("--summary", metavar="JSONL")
    args = parser.parse_args()
    if args.summary:
        summary(args.summary)
        return
    diff = {k: ast.literal_eval(v) for k, v in (item.split("=", 1) for item in args.set)}
    if args.net != [64, 64]:
        diff["net"] = args.net
    settings = {**rc.DQN_CARTPOLE, **{k: v for k, v in diff.items() if k != "net"}}
    for seed in args.seeds:
        r = run(seed, args.steps, settings, args.net, args.diag, args.dense_from)
        # The full settings too: the preset's values change between commits, the diff does not.
        r.update(tag=args.tag, settings_diff=diff, settings=settings, steps=args.steps)
        with open(args.out, "a") as f:
            f.write(json.dumps(r) + "\n")
        print(f"{args.tag} seed {seed}: final {r['final']:.1f}  wall {r['wall']:.1f} s  "
              f"cpu {r['cpu']:.1f} s  "
              f"evals {[round(s) for _, s in r['evals']]}", flush=True)


if __name__ == "__main__":
    main()
