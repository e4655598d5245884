# %% [markdown]
# # 07 · Function approximation and DQN
#
# *Prerequisites:* 00, 05, 06
# *Time:* 60 minutes (the four 50,000-step training runs in *Use it* take under a minute of CPU; the time is printed there)
# *You will build:* DQN's targets (terminal-aware, plain and Double), the Huber loss, the replay buffer's ring index, and the two diagnostics that show how little a greedy policy rests on (the action gap and the change per training phase); then you train DQN on CartPole and read them.

# %% [markdown]
# Q-learning (lesson 06) keeps one number per state and action. This lesson replaces the table
# with a neural network $Q_\theta(s, a)$, sees why that makes Q-learning unstable, adds the two
# pieces that made it work on Atari (a replay buffer and a target network), and then measures
# what decides whether the *final* greedy policy of a run is a good one.

# %%
import inspect
import time

import matplotlib.pyplot as plt
import numpy as np

import rlcourse as rc

SEED = 0
rng = np.random.default_rng(SEED)
plt.rcParams.update({"font.size": 10, "legend.fontsize": 9, "figure.dpi": 100})

# %% [markdown]
# ## The problem
#
# CartPole's state is four real numbers. To use a table you must cut each into bins. Run a
# random policy for 20,000 steps and count how many cells of the table it ever visits:

# %%
walker = rc.CartPole(n=1, seed=SEED)
obs = walker.reset(seed=SEED)
visited = []
for _ in range(20_000):
    visited.append(obs[0])
    obs = walker.step(rng.integers(0, 2, size=1)).obs
visited = np.array(visited)
scale = np.array([2.4, 3.0, 0.21, 3.5])  # rough ranges of x, x_dot, theta, theta_dot
for bins in (6, 10, 20):
    cells = np.clip(((visited / scale + 1) / 2 * bins).astype(int), 0, bins - 1)
    ids = np.ravel_multi_index(cells.T, (bins,) * 4)
    seen = len(np.unique(ids))
    print(f"{bins:2d} bins per dimension: {bins**4:7,d} cells, {seen:5,d} visited ({seen / bins**4:.1%})")

# %% [markdown]
# A table has to choose: a few wide bins, which lump together states as different as a pole
# leaning left and one standing upright, or narrow bins, most of which these 20,000 steps never
# visited (printed above); a table learns nothing about a cell it has not visited. A function
# $Q_\theta(s, a)$ with shared parameters behaves differently: a gradient step on one state also
# moves the estimates of other states. Take one step of gradient descent that pulls $Q(s, 1)$
# of a single state towards 10, and see what happens at a state close to it and at one far away:

# %%
probe_net = rc.mlp_init([4, 64, 64, 2], seed=SEED)
here = np.array([[0.0, 0.0, 0.02, 0.0]], dtype=np.float32)
near = here + np.array([[0.01, 0.0, 0.005, 0.0]], dtype=np.float32)
far = np.array([[2.0, -1.5, -0.18, 2.5]], dtype=np.float32)
step_grad = rc.grad(lambda p: 0.5 * rc.sum((10.0 - rc.mlp(p, here, "relu")[:, 1]) ** 2))(probe_net)
stepped = rc.tree_map(lambda p, g: p - 1e-3 * g, probe_net, step_grad)
moved = {}
for name, state in (("the state updated", here), ("a state nearby", near), ("a state far away", far)):
    before, after = rc.mlp(probe_net, state, "relu")[0], rc.mlp(stepped, state, "relu")[0]
    moved[name] = after - before
    print(f"{name:18s}: Q(s, 1) moved by {moved[name][1]:+.4f}, Q(s, 0) by {moved[name][0]:+.4f}")
near_share = moved["a state nearby"][1] / moved["the state updated"][1]
far_share = moved["a state far away"][1] / moved["the state updated"][1]
other_share = max(abs(m[0]) for m in moved.values()) / moved["the state updated"][1]
print(f"Q(s, 1) moved, as a share of the updated state's move: nearby {near_share:.2f}, far away {far_share:.2f}; "
      f"Q(s, 0) at most {other_share:.2f} of it")
assert abs(near_share - 1) < 0.1 and far_share > 0.5 and other_share < 0.2

# `here` sits near the origin, a special place (see below). The same kind of step from three
# initialisations, now updating at five states the random walk visited (picked with a generator
# of their own): how far Q(s, 1) moved at each of the 20,000 visited states, as a share of the
# updated state's move; and which parameters made each state's move (the step applied to the
# output layer's bias alone, or to its weights alone; the hidden layers make the rest)
picked = visited[np.random.default_rng(1).choice(len(visited), 5, replace=False)].astype(np.float32)
for init in (0, 1, 2):
    net = rc.mlp_init([4, 64, 64, 2], seed=init)
    shares, by_bias, by_weights = [], [], []
    for updated in picked[:, None]:
        g = rc.grad(lambda p, s=updated: 0.5 * rc.sum((10.0 - rc.mlp(p, s, "relu")[:, 1]) ** 2))(net)
        full = rc.tree_map(lambda p, g: p - 1e-3 * g, net, g)
        bias_only = net[:-1] + [{"w": net[-1]["w"], "b": full[-1]["b"]}]
        weights_only = net[:-1] + [{"w": full[-1]["w"], "b": net[-1]["b"]}]
        states = np.concatenate([updated, visited]).astype(np.float32)
        q0, q_full, q_bias, q_weights = (rc.mlp(p, states, "relu")[:, 1]
                                         for p in (net, full, bias_only, weights_only))
        move = q_full - q0
        shares.append(move[1:] / move[0])
        by_bias.append(np.median((q_bias - q0)[1:] / move[1:]))
        by_weights.append(np.median((q_weights - q0)[1:] / move[1:]))
    shares = np.concatenate(shares)
    print(f"init {init}: at the visited states Q(s, 1) moved {shares.min():.2f} to {shares.max():.2f} times the "
          f"updated state's move (median {np.median(shares):.2f}); of each state's move the output bias made "
          f"a median {min(by_bias):.0%}-{max(by_bias):.0%}, the output weights {min(by_weights):.0%}-{max(by_weights):.0%}")
    assert shares.min() > 0 and min(by_bias) > 0.3

# %% [markdown]
# The nearby state moved almost exactly as much as the updated one, but the far state moved by
# most of that too (the shares are printed). The other action's value, $Q(s, 0)$, barely moved
# anywhere (printed): the last layer has separate weights per action, so the step changed
# $Q(s, 1)$'s output weights and not $Q(s, 0)$'s, and the only path to $Q(s, 0)$ is through the
# shared hidden layers. One step from a random start, taken at any of five visited states,
# moved $Q(s, 1)$ at every one of the 20,000 visited states the same way as at the updated state,
# by between about a quarter and two and a half times as much (printed for three
# initialisations; the direction asserted). Much of each state's move is the output layer's
# *bias* for action 1: one number added to $Q(s, 1)$ at every state, so a step on it moves every
# state alike (about half to two thirds of the move, printed). The output weights, which read the
# hidden features, add a twentieth to a fifth, and the hidden layers the rest. All three ranges
# are for these five updated states and change with the states picked; the direction and a bias
# share above 30% are what the asserts check. `here` is a special case:
# it sits near the origin, where this net (its biases start at 0) has hidden features near 0, so
# the output weights can add nothing there. So this shows that an
# update moves the values of states it never saw, through parameters every state shares, not
# yet that it moves near states more than
# far ones. A table could not do either; a network does the first, wanted or not (whether it moves
# near states more than far ones depends on the features it learns), and that is where the
# trouble below starts.

# %% [markdown]
# Does the table really fail, or is coverage only a worry? Run tabular Q-learning (lesson 06's
# update) on the binned CartPole with DQN's budget below: 50,000 transitions per table, the same
# epsilon schedule (1 to 0.04 over the first 16% of the steps), $\alpha = 0.1$, $\gamma = 0.99$,
# four tables for each of 6 and 10 bins per dimension, and four with a binning chosen by hand, the
# common one in tutorials: $x$ and $\dot x$ ignored (one bin each), 6 bins of $\theta$ and 12 of
# $\dot\theta$ over $\pm 0.87$. The budget matched is *transitions*: DQN also replays each one
# about 32 times (128 gradient steps of 64 per 256 new transitions), the table learns from each
# once. Each table learns from 10 copies of the
# environment stepping together (5,000 vector steps, as a vector env would); where two copies
# hit the same cell and action in one step, their updates are averaged. Then score each greedy
# table as DQN's final params are scored: 20 episodes from `reset(seed=12345)`.

# %%
TABLES, COPIES, TABLE_STEPS = 4, 10, 50_000


BINNINGS = {"6 bins per dimension": ((6, 6, 6, 6), scale),
            "10 bins per dimension": ((10, 10, 10, 10), scale),
            "by hand: 1, 1, 6, 12": ((1, 1, 6, 12), np.array([2.4, 3.0, 0.21, 0.87]))}


def cell_of(obs, binning):
    bins, ranges = binning
    cells = np.clip(((obs / ranges + 1) / 2 * np.array(bins)).astype(int), 0, np.array(bins) - 1)
    return np.ravel_multi_index(cells.T, bins)


def greedy_table(q_rows, binning):
    return lambda obs: q_rows[cell_of(obs, binning)].argmax(axis=1)


table_scores = {}
for name, binning in BINNINGS.items():
    n, size = TABLES * COPIES, int(np.prod(binning[0]))
    offset = np.repeat(np.arange(TABLES), COPIES) * size  # table i owns rows i * size ...
    q_table = np.zeros((TABLES * size, 2))
    env = rc.CartPole(n=n, seed=SEED)
    obs = env.reset(seed=SEED)
    for t in range(TABLE_STEPS // COPIES):
        epsilon = max(0.04, 1 - 0.96 * t / (0.16 * TABLE_STEPS / COPIES))
        s = offset + cell_of(obs, binning)
        a = np.where(rng.random(n) < epsilon, rng.integers(0, 2, n), q_table[s].argmax(axis=1))
        out = env.step(a)
        next_value = q_table[offset + cell_of(out.final_obs, binning)].max(axis=1)
        target = out.reward + 0.99 * (1 - out.terminated) * next_value
        hits = np.bincount(s * 2 + a, minlength=q_table.size)[s * 2 + a]  # copies on this cell and action
        np.add.at(q_table, (s, a), 0.1 * (target - q_table[s, a]) / hits)
        obs = out.obs
    table_scores[name] = [rc.evaluate(rc.CartPole(n=10), greedy_table(q_table[i * size:(i + 1) * size], binning),
                                      20, seed=12_345).mean for i in range(TABLES)]

# %% tags=["nbval-ignore-output"]
for name, scores in table_scores.items():
    print(f"tabular Q-learning, {name:21s}, 50,000 steps per table: greedy scores "
          f"{[round(x) for x in scores]} (500 is the most)")

# %%
uniform = [x for name, scores in table_scores.items() if name.endswith("dimension") for x in scores]
best_table = max(uniform)
hand = table_scores["by hand: 1, 1, 6, 12"]
print(f"every one of the {len(uniform)} uniformly binned tables scores below 300: {best_table < 300}; "
      f"every hand-binned table scores above every one of them: {min(hand) > best_table}; "
      f"some hand-binned table stays below 475: {min(hand) < 475}")
assert best_table < 300 and min(hand) > best_table and min(hand) < 475

# %% [markdown]
# None of the uniformly binned tables balances the pole for long (the scores are printed; an
# episode lasts at most 500 steps). Every hand-binned table beats every uniform one, but not
# every hand-binned table balances the pole (the four scores are printed; both halves are
# asserted): it works because someone already knew that the pole's angle and
# angular velocity matter and the cart's position hardly does. Choosing the bins is choosing the
# features by hand, the work a network takes over. DQN's final params on the same 50,000
# transitions are scored in *Use it*, beside the uniform tables. We did not tune $\alpha$.

# ## The idea
#
# **Semi-gradient Q-learning.** Fit $Q_\theta$ to the Q-learning target by gradient descent on
#
# $$L(\theta) = \tfrac12\big(y - Q_\theta(s, a)\big)^2, \qquad y = r + \gamma\,(1 - \text{terminated})\,\max_{a'} Q_{\theta}(s', a'),$$
#
# treating $y$ as a constant. It is not: $y$ depends on $\theta$. Ignoring that dependence is
# what "semi-gradient" means, and it is why the method can chase its own tail.
#
# **The deadly triad** (Sutton & Barto, ch. 11): function approximation, bootstrapping and
# off-policy updates together can make the estimates diverge even when each alone is safe.
# The smallest example: two states with one shared weight $w$, features 1 and 2, so
# $V = w$ and $V = 2w$; the first leads to the second with reward 0. Update only on that
# transition (off-policy: the data distribution is not the policy's):
# $w \leftarrow w + \alpha\,(\gamma\cdot 2w - w)\cdot 1$.

# %%
for gamma in (0.4, 0.9):
    w = 1.0
    for _ in range(50):
        w += 0.1 * (gamma * 2 * w - w)
    print(f"gamma {gamma}: w after 50 updates = {w:.3g}")

# %% [markdown]
# With $\gamma > 0.5$ every update raises the target faster than the estimate, and $w$ grows
# without bound although the true values are 0. DQN (Mnih et al., 2015) tames this with:
#
# - a **replay buffer**: store transitions and train on uniformly sampled minibatches, so
#   consecutive, correlated steps do not dominate an update and old experience is reused;
# - a **target network** $\theta^-$, a copy of $\theta$ frozen for a while: $y$ uses
#   $Q_{\theta^-}$, so the target stops moving during many gradient steps;
# - the **Huber loss**: quadratic for small errors, linear for large ones, so one huge TD error
#   cannot produce a huge step.
#
# **Double DQN** (van Hasselt et al., 2016) fixes a bias of the max: $\max_{a'} Q(s', a')$ over
# *noisy* estimates is, on average, larger than the max of the true values. It picks the action
# with the online net and evaluates it with the target net:
# $y = r + \gamma\,(1-\text{terminated})\,Q_{\theta^-}\big(s', \arg\max_{a'} Q_\theta(s', a')\big)$.
#
# **What the greedy policy rests on.** The policy DQN hands you is $\arg\max_a Q(s, a)$. It
# depends only on the *differences* between the actions' values, not on the values themselves,
# so two numbers matter at each state:
#
# - the **action gap**, the best value minus the second best,
#   $\text{gap}(s) = Q(s, a^*) - \max_{a \ne a^*} Q(s, a)$;
# - the **change of a training phase** (the 128 gradient steps between two stretches of data
#   collection), measured on the differences: with $d(s, a) = Q_{\text{after}}(s, a) -
#   Q_{\text{before}}(s, a)$, $\Delta(s) = \max_a d(s, a) - \min_a d(s, a)$. A phase that moves
#   every action's value alike has $\Delta = 0$ and changes no decision.
#
# A phase can flip the greedy action at $s$ only if $\Delta(s) \ge \text{gap}(s)$. And a value
# has a ceiling: with rewards of at most 1 per step, no return exceeds
# $\sum_t \gamma^t = 1/(1-\gamma)$, which is 100 for CartPole's $\gamma = 0.99$. A pole
# balanced for the rest of the episode is worth close to that ceiling *whichever* action you
# take now, so on CartPole the gaps are tiny next to the values. The smallest example, one state:

# %%
q_before = np.array([[90.0, 90.3]])  # action 1 is better by 0.3
q_after = q_before + np.array([[0.2, -0.15]])  # one phase later
print(f"gap {(q_before[0, 1] - q_before[0, 0]):.2f} at values near {q_before.max():.0f}; "
      f"the phase moved the difference by {abs((q_after - q_before)[0, 1] - (q_after - q_before)[0, 0]):.2f}; "
      f"greedy action {int(q_before.argmax())} -> {int(q_after.argmax())}")

# %% [markdown]
# A change of 0.35 in values near 90, less than 0.4%, flipped the decision. You will measure
# both numbers on a real run.

# %% [markdown]
# ## Build it
#
# Five small steps, each a function you write and check. **Step 1: targets.** Batched:
# `rewards [B]`, `terminated [B]`, the two networks' Q-values at the next observation `[B, A]`.
# The next observation of a finished episode is `final_obs` (its last state), never the first
# state of the next episode. Only `terminated` stops the bootstrap: a time-limit truncation is
# passed as `terminated=False`. With `double=False` the target is plain DQN's
# $r + \gamma(1-\text{terminated})\max_{a'} Q_{\theta^-}(s', a')$.

# %% tags=["solution"]
def my_dqn_targets(rewards, terminated, next_q_online, next_q_target, gamma, double=True):
    if double:
        best = np.argmax(next_q_online, axis=1)
        next_value = next_q_target[np.arange(len(rewards)), best]
    else:
        next_value = next_q_target.max(axis=1)
    return rewards + gamma * (1.0 - terminated) * next_value


# %%
assert rc.exercises.check("dqn_targets", my_dqn_targets)

# %% [markdown]
# The reference on three transitions with three actions: in the first, the online net prefers
# action 1, whose target value is 2, neither the target net's max (10) nor its min (-6): Double
# DQN takes the target's value at the online net's choice, whatever its rank. The third is
# terminal, so its target is the reward alone.

# %%
r = np.array([1.0, 1.0, 1.0])
done = np.array([False, False, True])
online = np.array([[1.0, 5.0, 3.0], [3.0, 2.0, 0.0], [9.0, 9.0, 9.0]])
target = np.array([[10.0, 2.0, -6.0], [-4.0, 7.0, 1.0], [9.0, 9.0, 9.0]])
print("Double DQN targets:", np.round(rc.dqn_targets(r, done, online, target, 0.5), 3))
print("plain DQN targets: ", np.round(rc.dqn_targets(r, done, online, target, 0.5, double=False), 3))

# %% [markdown]
# **Step 2: the Huber loss**, elementwise: $\tfrac12 x^2$ for $|x| \le \delta$, else
# $\delta(|x| - \tfrac12\delta)$. The two pieces meet at $|x| = \delta$ with the same value and
# slope.

# %% tags=["solution"]
def my_huber(x, delta=1.0):
    return np.where(np.abs(x) <= delta, 0.5 * x**2, delta * (np.abs(x) - 0.5 * delta))


# %%
assert rc.exercises.check("huber", my_huber)

# %% [markdown]
# Its gradient is the TD error clipped to $[-\delta, \delta]$ (autodiff of the reference):

# %%
x = np.linspace(-3, 3, 13)
huber_grad = rc.grad(lambda p: rc.sum(rc.huber(p["x"])))({"x": x})["x"]
print("x:             ", x)
print("Huber gradient:", np.round(huber_grad, 2) + 0.0)

# %% [markdown]
# **Step 3: the replay buffer's ring.** The buffer is a set of preallocated arrays with
# `capacity` rows; `pos` is the row the next transition goes to and `size` how many rows hold
# data. Write `my_ring_write(pos, size, k, capacity)`: the rows that `k` new transitions go to
# (an int array), and the new `pos` and `size`. Once full, the newest transition overwrites
# the oldest.

# %% tags=["solution"]
def my_ring_write(pos, size, k, capacity):
    rows = (pos + np.arange(k)) % capacity
    return rows, (pos + k) % capacity, min(size + k, capacity)


# %%
assert rc.exercises.check("ring_write", my_ring_write)

# %% [markdown]
# **Step 4: the action gap** of each state, `q [N, A]` in, `[N]` out: the best value minus the
# second best (0 where two actions tie for best).

# %% tags=["solution"]
def my_action_gap(q):
    ordered = np.sort(q, axis=1)
    return ordered[:, -1] - ordered[:, -2]


# %%
assert rc.exercises.check("action_gap", my_action_gap)

# %% [markdown]
# **Step 5: the change of a phase**, $\Delta(s)$ from *The idea*: `q_before` and `q_after`
# `[N, A]` are the same states' values before and after, the result `[N]`.

# %% tags=["solution"]
def my_relative_change(q_before, q_after):
    d = q_after - q_before
    return d.max(axis=1) - d.min(axis=1)


# %%
assert rc.exercises.check("relative_change", my_relative_change)

# %% [markdown]
# The reference puts these together. `rc.dqn_targets` computes the targets as you did after
# checking its inputs, `rc.dqn_loss` is the semi-gradient loss (the targets arrive as plain
# arrays, so no gradient reaches them), and here is the loop of `rc.dqn`: act, store, and every
# `train_freq` steps a training phase on minibatches from the buffer. The buffer has
# `min(buffer_size, total_steps)` rows.

# %%
print(inspect.getsource(rc.dqn_loss))
loop = inspect.getsource(rc.dqn).splitlines()
buffer_line = next(line for line in loop if "buffer = ReplayBuffer(" in line)
start = next(i for i, line in enumerate(loop) if "while step < total_steps" in line)
stop = next(i for i, line in enumerate(loop) if "if step >= next_update" in line)
print("\n".join([buffer_line, "    ..."] + loop[start:stop]))

# %% [markdown]
# ## Check it
#
# The invariants: a terminal transition never bootstraps, a non-terminal one does, and Double
# DQN takes the online argmax but the target's value. (That a time-limit truncation is *stored*
# as non-terminal, with the last observation as its next state, is the loop's job: its
# `buffer.add(..., out.final_obs, out.terminated)` is printed above, and
# `tests/test_dqn.py::test_loop_stores_final_obs_and_only_true_terminations` checks it on runs
# with a 15-step time limit.) Further: the ring keeps the newest rows; the Huber
# gradient is the clipped error; a phase that shifts every action alike changes nothing, and a
# greedy action flips only where the phase's change reached the gap.

# %%
next_q = np.array([[3.0, 8.0], [3.0, 8.0]])
y = rc.dqn_targets(np.zeros(2), np.array([True, False]), next_q, next_q, 0.9)
assert y[0] == 0.0, "terminal must not bootstrap"
assert y[1] == 0.9 * 8.0, "a non-terminal transition bootstraps"
y = rc.dqn_targets(np.zeros(1), np.array([False]), np.array([[0.0, 1.0, 0.5]]), np.array([[5.0, 2.0, -3.0]]), 1.0)
assert y[0] == 2.0, "Double DQN: argmax from the online net, value from the target net (not its max or min)"

buffer = rc.ReplayBuffer(4, (1,))
for i in range(6):
    buffer.add(np.array([[i]]), np.array([i % 2]), np.array([1.0]), np.array([[i + 1]]), np.array([False]))
print("a buffer of 4 rows after 6 transitions holds", sorted(buffer.obs[:, 0].astype(int).tolist()),
      "and writes next to row", buffer.pos)
assert sorted(buffer.obs[:, 0].tolist()) == [2, 3, 4, 5] and buffer.pos == 2 and len(buffer) == 4

assert np.allclose(huber_grad, np.clip(x, -1.0, 1.0))

q_states = rng.normal(size=(5_000, 3))
shift = rng.normal(size=(5_000, 1))
assert np.allclose(rc.relative_change(q_states, q_states + shift), 0.0)
moved_q = q_states + rng.normal(scale=0.5, size=(5_000, 3))
flips = rc.greedy_flips(q_states, moved_q)
reached = rc.relative_change(q_states, moved_q) >= rc.action_gap(q_states)
print(f"random states: {flips.sum()} greedy flips; change >= gap at {reached.sum()} states")
assert not (flips & ~reached).any() and reached.sum() > flips.sum()
print("invariants hold")

# %% [markdown]
# Every flip happened where the change reached the gap; the converse does not hold (a change
# can also push the best action further ahead), which is why more states reached the gap than
# flipped.

# %% [markdown]
# ## Use it
#
# **DQN on CartPole.** `rc.DQN_CARTPOLE` follows the RL Zoo's settings: 256 steps of data,
# then a training phase of 128 gradient steps on minibatches of 64, the target network frozen
# for each phase, epsilon from 1 to 0.04 over the first 16% of the steps, the gradient clipped
# to norm 10 (SB3's default, inside the `learner.step` of the loop above). The Zoo's
# `target_update_interval: 10` counts environment steps, and SB3 checks it only while
# collecting, so its target too changes only between the 128-step phases: our
# `target_update=128` counts gradient steps to the same effect. It differs from the
# Zoo's in three ways: the learning rate falls linearly from 2.3e-3 to 0 over the run
# (`anneal_lr=True`), the targets are Double DQN's (`double=True`; SB3's DQN, which the Zoo
# runs, takes the plain max), and the network is 4-64-64-2 (the Zoo's hidden layers have 256
# units).

# %% [markdown]
# Train for 50,000 steps on seeds 0, 1 and 2, the seeds the preset was *chosen* on (see
# below), and on seed 3, a seed the benchmark behind the preset recorded as ending badly: it is
# here to be looked at beside the good ones, not as a fair sample. The four runs train side by
# side with `rc.dqn_sweep`: one call that steps the four environments, one batched pass of the
# four networks per gradient step. Each member is, bit for bit, the run `rc.dqn` makes with its
# settings, unless a callback asks it to stop early, which a sweep refuses (it raises);
# `tests/test_sweep.py` checks it, and the next cell shows it on short runs, with the CPU time
# of both. While each run trains, a callback measures, on the last 1,000 states the run visited
# (`rc.RecentStates` keeps them): after every phase the median action gap, the median change of
# that phase, the share of those states whose greedy action the phase flipped and the share
# where the change reached the gap; every 5,120 steps the greedy policy's score on 10 episodes,
# and $\max_a Q$ against the discounted return the greedy policy really collects from 100 of
# those states (`rc.greedy_discounted_returns`).

# %%
print(rc.DQN_CARTPOLE)
SEEDS, KNOWN_BAD, STEPS, EVAL_EVERY = (0, 1, 2), 3, 50_000, 5_120
CEILING = rc.value_ceiling(rc.DQN_CARTPOLE["gamma"])


def q_net(params, obs):
    return rc.mlp(params, obs, "relu")


def same_tree(a, b):
    """Same structure, same leaf types, the same values to the last bit (NaN equal to NaN)."""
    leaves_a, leaves_b = rc.tree_leaves(a), rc.tree_leaves(b)
    return len(leaves_a) == len(leaves_b) and all(
        type(x) is type(y) and np.array_equal(x, y, equal_nan=True) for x, y in zip(leaves_a, leaves_b))


# Is a sweep member rc.dqn's run? Three members of 3,000 steps, one with the preset, one an
# ablation (no target network, plain DQN) and one with a small buffer, each on a RecentStates env
# with a callback that keeps every info dict; then the same three runs with rc.dqn, one by one.
short = {**rc.DQN_CARTPOLE, "learning_starts": 500, "gradient_steps": 16}
members = [dict(seed=0), dict(seed=1, target_update=1, double=False), dict(seed=2, buffer_size=256)]
alone_infos, swept_infos = [[] for _ in members], [[] for _ in members]
cpu = time.process_time()
alone = [rc.dqn(rc.RecentStates(rc.CartPole()), q_net, rc.mlp_init([4, 64, 64, 2], seed=m["seed"]), 3_000,
                **{**short, **m}, callback=kept.append) for m, kept in zip(members, alone_infos)]
alone_cpu = time.process_time() - cpu
cpu = time.process_time()
swept = rc.dqn_sweep([rc.RecentStates(rc.CartPole()) for _ in members],
                     [rc.mlp_init([4, 64, 64, 2], seed=m["seed"]) for m in members], 3_000, members,
                     **short, callbacks=[kept.append for kept in swept_infos])
sweep_cpu = time.process_time() - cpu
for m, a, b, infos_a, infos_b in zip(members, alone, swept, alone_infos, swept_infos):
    agree = {"params": same_tree(a.params, b.params), "target net": same_tree(a.extras, b.extras),
             "history": same_tree(a.history, b.history),
             "episode returns": same_tree(a.episode_returns, b.episode_returns),
             f"{len(infos_a)} callback infos": len(infos_a) == len(infos_b) and all(
                 x.keys() == y.keys() and all(same_tree(x[k], y[k]) for k in x)
                 for x, y in zip(infos_a, infos_b))}
    print(f"{str(m):48s} identical: " + ", ".join(f"{k} {v}" for k, v in agree.items()))
    assert all(agree.values())

# %% tags=["nbval-ignore-output"]
print(f"CPU time: three rc.dqn calls {alone_cpu:.2f} s, the sweep of the three {sweep_cpu:.2f} s "
      f"(ratio {alone_cpu / sweep_cpu:.1f})")

# %%
class Watch:
    """A dqn callback: after every training phase, on the states the run visits, the action gap,
    the change of the phase, and the shares of states it flipped and where the change reached
    the gap; every EVAL_EVERY steps the greedy score and Q against the realised return."""

    def __init__(self, env, rng):
        self.env, self.rng, self.prev = env, rng, None
        self.phases, self.evals, self.values = [], [], []

    def __call__(self, info):
        params, step = info["params"], info["steps"]
        states = self.env.states()
        if self.prev is not None and not np.isnan(info["loss"]):
            q0 = np.asarray(q_net(self.prev, states), dtype=np.float64)
            q1 = np.asarray(q_net(params, states), dtype=np.float64)
            gap, change = rc.action_gap(q0), rc.relative_change(q0, q1)
            # the net at the phase's start was the target net during it: how far below plain
            # DQN's bootstrap max_a Q_target is Double's, Q_target at the online net's argmax?
            double_drop = q0.max(axis=1) - q0[np.arange(len(q0)), q1.argmax(axis=1)]
            self.phases.append((step, np.median(gap), np.median(change), q1.max(axis=1).mean(),
                                rc.greedy_flips(q0, q1).mean(), (change >= gap).mean(),
                                double_drop.mean()))
        self.prev = params
        if step % EVAL_EVERY == 0 or info["last"]:
            score = rc.evaluate(rc.CartPole(n=10), rc.greedy_policy(q_net, params), 10, seed=1_000)
            self.evals.append((step, score.mean))
            pick = states[self.rng.choice(len(states), 100, replace=False)]
            realised = rc.greedy_discounted_returns(rc.CartPole(n=100, max_steps=None), q_net, params,
                                                    pick, rc.DQN_CARTPOLE["gamma"])
            q_pick = np.asarray(q_net(params, pick), dtype=np.float64)
            self.values.append((step, q_pick.max(axis=1).mean(), realised.mean()))


# Watch reads the net of the previous phase as the target net of the phase just ended: true when
# the target is copied once per phase, after its last gradient step
assert rc.DQN_CARTPOLE["target_update"] == rc.DQN_CARTPOLE["gradient_steps"] and rc.DQN_CARTPOLE["tau"] == 1
ALL = SEEDS + (KNOWN_BAD,)
envs = [rc.RecentStates(rc.CartPole(), keep=1_000) for _ in ALL]
watches = [Watch(env, child) for env, child in zip(envs, rng.spawn(len(ALL)))]
started = time.perf_counter()
results = rc.dqn_sweep(envs, [rc.mlp_init([4, 64, 64, 2], seed=seed) for seed in ALL], STEPS,
                       [dict(seed=seed) for seed in ALL], **rc.DQN_CARTPOLE, callbacks=watches)
runs = {}
for seed, result, watch in zip(ALL, results, watches):
    final = rc.evaluate(rc.CartPole(n=10), rc.greedy_policy(q_net, result.params), 20, seed=12_345)
    runs[seed] = dict(result=result, watch=watch, final=final.mean,
                      phases=np.array(watch.phases), evals=np.array(watch.evals),
                      values=np.array(watch.values))

training_seconds = time.perf_counter() - started
# the final params' scores that benchmarks/dqn_cartpole.py recorded for this preset on seeds 0-9
# (the comment above DQN_CARTPOLE in rlcourse/algos/dqn.py)
BENCHMARK_FINAL = [500, 500, 500, 156, 500, 500, 500, 186, 500, 349]

# %% tags=["nbval-ignore-output"]
print(f"four runs of {STEPS:,d} steps with the callback: {training_seconds:.0f} s of wall time")
for seed, run in runs.items():
    print(f"seed {seed}{' (known to end badly)' if seed == KNOWN_BAD else ''}: greedy score every "
          f"{EVAL_EVERY:,d} steps and at the end {[int(s) for _, s in run['evals']]}; final params on "
          f"20 fresh episodes {run['final']:.1f} (the benchmark recorded {BENCHMARK_FINAL[seed]})")

# %%
ended_well = sum(runs[seed]["final"] >= 475 for seed in SEEDS)
dqn_median = np.median([run["final"] for run in runs.values()])
print(f"final params scoring >= 475 on 20 fresh episodes: at least 2 of seeds 0-2: {ended_well >= 2}; "
      f"seed {KNOWN_BAD}: {runs[KNOWN_BAD]['final'] >= 475}")
print(f"median final score of the four DQN runs above the best of the {len(uniform)} uniformly "
      f"binned tables of The problem (same 50,000 transitions): {dqn_median > best_table}")
unselected = BENCHMARK_FINAL[3:]
print(f"benchmark, this preset on seeds 3-9 (no part in choosing it): >= 475 on "
      f"{sum(x >= 475 for x in unselected)} of {len(unselected)}; on seeds 0-9: "
      f"{sum(x >= 475 for x in BENCHMARK_FINAL)} of {len(BENCHMARK_FINAL)}")
assert ended_well >= 2 and runs[KNOWN_BAD]["final"] < 475 and dqn_median > best_table
assert all(run["evals"][-1, 0] == STEPS for run in runs.values())
# the target net was copied from the online net at the end of the last phase (with the assert
# before the runs, at every phase's end)
assert all(same_tree(run["result"].extras["target_params"], run["result"].params) for run in runs.values())

# %% [markdown]
# The score that matters is the last one: the parameters the run *returns*, scored on 20
# episodes no evaluation during training used (printed per seed above, beside the score the
# benchmark recorded for the same seed; the last evaluation during training is at step 50,000,
# the params the run returns). The median of the four runs ended above the best of the eight
# uniformly binned tables of *The problem*, on the same 50,000 transitions (checked above).

# %% [markdown]
# Know what seeds 0-2 are worth: **the preset was chosen on them**. The comment above
# `DQN_CARTPOLE` in `rlcourse/algos/dqn.py` records, on seeds 0-9, the Zoo's constant learning
# rate of 2.3e-3 (final params at 475 or more on 2 of 10) and three settings that did about
# equally well: the rate annealed from 2.3e-3 to 0 (this preset, 7 of 10), a constant rate of
# 1e-3 (8 of 10, failing seed 0) and 64 gradient steps per phase with `target_update=64` (8 of
# 10, failing seed 2). Annealing became the preset because it is the one of the three that ends
# well on all of seeds 0-2, which the course's learning test checks. So count only seeds 3-9,
# which played no part in the choice: the preset ends at 475 or more on 4 of 7 (printed), the
# other two on 6 of 7 each (8 of 10 minus the one selection seed each fails). On the seeds that
# were not used to choose it, the preset is not the best of the three, and seven seeds are too
# few to rank them. These figures come from `python benchmarks/dqn_cartpole.py` and, for the
# other settings, `python benchmarks/dqn_sweep.py --set lr=1e-3 --seeds 0 1 2 3 4 5 6 7 8 9`.
# `benchmarks/dqn_sweep.py` is a script that runs one `rc.dqn` per seed, one after another, and
# records each run's final score; it is not `rc.dqn_sweep`, the lockstep trainer this lesson
# uses. Seed 3 is one of the three seeds that end badly in the benchmark, and it did here too.
# Can the diagnostics tell why a run ends well or badly? Look at them with seed 3 beside the
# others.

# %%
MID, END = (0.5 * STEPS, 0.7 * STEPS), 0.9 * STEPS  # 25-35k and 45-50k steps
MID_LABEL, END_LABEL = f"{MID[0] / 1e3:.0f}-{MID[1] / 1e3:.0f}k", f"{END / 1e3:.0f}-{STEPS / 1e3:.0f}k"
fig, axes = plt.subplots(1, 2, figsize=(9, 3.5), layout="constrained")
colours = {0: "C0", 1: "C1", 2: "C2", 3: "C3"}


def running_median(x, half=10):
    return np.array([np.median(x[max(0, i - half):i + half + 1]) for i in range(len(x))])


for seed, run in runs.items():
    ph = run["phases"]
    tag = f"seed {seed}" + (" (bad)" if seed == KNOWN_BAD else "")
    axes[0].plot(*run["evals"].T, "o-", ms=3, color=colours[seed], label=tag)
    axes[1].plot(ph[:, 0], running_median(ph[:, 4]), color=colours[seed], lw=1.2, label=tag)
    axes[1].plot(ph[:, 0], running_median(ph[:, 5]), color=colours[seed], lw=0.9, ls="--")
axes[0].axhline(475, color="gray", ls="--", lw=1, label="475 (solved)")
axes[0].set(xlabel="environment steps", ylabel="greedy score (10 episodes)",
            title="Greedy score during training")
axes[0].legend(loc="center left", fontsize=9)
axes[1].plot([], [], color="gray", lw=1.2, label="action flipped")
axes[1].plot([], [], color="gray", lw=0.9, ls="--", label="change >= gap")
axes[1].set_ylim(0, 1)
axes[1].set(xlabel="environment steps", ylabel="share of the 1,000 visited states",
            title="What one phase does to the visited states\n(running median of up to 21 phases)")
axes[1].legend(loc="upper center", fontsize=9, ncol=3, columnspacing=0.6, handlelength=1.2)
plt.show()

# %%
late = {}
for seed, run in runs.items():  # seeds 0-2 and the seed known to end badly
    ph = run["phases"]
    mid = ph[(ph[:, 0] >= MID[0]) & (ph[:, 0] < MID[1])]
    end = ph[ph[:, 0] >= END]
    late[seed] = dict(gap_mid=np.median(mid[:, 1]), change_mid=np.median(mid[:, 2]),
                      flip_mid=np.median(mid[:, 4]), reach_mid=np.median(mid[:, 5]),
                      gap_end=np.median(end[:, 1]), change_end=np.median(end[:, 2]),
                      flip_end=np.median(end[:, 4]), reach_end=np.median(end[:, 5]),
                      q_end=np.median(end[:, 3]))

# %% tags=["nbval-ignore-output"]
print("median over the phases of each window; gap and change: the median over 1,000 visited states;")
print("flipped, reached: the share of those states whose greedy action the phase flipped / where change >= gap")
columns = [("gap", "gap_mid"), ("change", "change_mid"), ("flipped", "flip_mid"), ("reached", "reach_mid"),
           ("gap", "gap_end"), ("change", "change_end"), ("flipped", "flip_end"), ("reached", "reach_end")]
print(f"{'':4} {MID_LABEL:^32s} | {END_LABEL:^32s}")
print(f"{'seed':>4} " + " ".join(f"{name:>7s}" for name, _ in columns[:4]) + " | "
      + " ".join(f"{name:>7s}" for name, _ in columns[4:]) + f" {'max Q':>6s} {'final':>6s}")
for seed, m in late.items():
    print(f"{seed:>4} " + " ".join(f"{m[key]:>7.3f}" for _, key in columns[:4]) + " | "
          + " ".join(f"{m[key]:>7.3f}" for _, key in columns[4:])
          + f" {m['q_end']:>6.1f} {runs[seed]['final']:>6.1f}")

# %% tags=["nbval-ignore-output"]
ratio = {seed: m["gap_end"] / m["q_end"] for seed, m in late.items()}
mid_share = {seed: m["change_mid"] / m["gap_mid"] for seed, m in late.items()}
end_share = {seed: m["change_end"] / m["gap_end"] for seed, m in late.items()}
shrink = {seed: m["change_end"] / m["change_mid"] for seed, m in late.items()}
for name, values in ((f"late gap / late max Q ({END_LABEL})", ratio),
                     (f"median change / median gap, {MID_LABEL}", mid_share),
                     (f"median change / median gap, {END_LABEL}", end_share),
                     (f"change {END_LABEL} / change {MID_LABEL}", shrink)):
    print(f"{name:38s} " + "  ".join(f"seed {seed}: {v:.3f}" for seed, v in values.items()))

# %%
good = [seed for seed in runs if runs[seed]["final"] >= 475]
others = [seed for seed in runs if seed != KNOWN_BAD]
stands_apart = (late[KNOWN_BAD]["gap_end"] > max(late[g]["gap_end"] for g in others)
                and end_share[KNOWN_BAD] < min(end_share[g] for g in others)
                and late[KNOWN_BAD]["flip_end"] < min(late[g]["flip_end"] for g in others))
flips_kept = all(late[g]["flip_end"] > 0.8 * late[g]["flip_mid"] for g in good)
print(f"late gap below 1% of late max Q on every seed: {max(ratio.values()) < 0.01}")
print(f"{MID_LABEL}: median change above 0.3 x the median gap, and a phase flips the greedy action at "
      f"more than 5% of the visited states, on every seed: "
      f"{min(mid_share.values()) > 0.3 and min(m['flip_mid'] for m in late.values()) > 0.05}")
gap_shrank = all(m["gap_end"] < m["gap_mid"] for m in late.values())
print(f"median gap at {END_LABEL} below that at {MID_LABEL} on every seed: {gap_shrank}")
print(f"median change at {END_LABEL} below half of that at {MID_LABEL} on every seed: {max(shrink.values()) < 0.5}; "
      f"share flipped at {END_LABEL} above 0.8 x that at {MID_LABEL} on the seeds that ended well: {flips_kept}")
print(f"seed {KNOWN_BAD} has the largest late gap, the smallest late change / gap and the smallest late "
      f"share flipped of the four: {stands_apart}")
assert max(ratio.values()) < 0.01 and max(shrink.values()) < 0.5 and flips_kept and gap_shrank
assert min(mid_share.values()) > 0.3 and min(m["flip_mid"] for m in late.values()) > 0.05
assert runs[KNOWN_BAD]["final"] < 475 and runs[KNOWN_BAD]["evals"][:, 1].max() >= 475 and stands_apart

# %% [markdown]
# **One phase redraws many decisions.** The greedy policy rests on gaps of a few tenths or less
# at values near the ceiling of 100: less than 1% of the value (asserted). In the middle of the
# run the median change of one phase is a good fraction of the median gap (more than 0.3 of it
# on every seed; a ratio of two medians, not a figure for any one state), and a typical phase
# flips the greedy action at more than one in twenty of the visited states on every seed
# (asserted; the table gives the shares; the right panel follows them over the run). A flip
# where both actions are worth about the same need not change the score: the share says how
# much the policy is redrawn, not what that costs.

# %% [markdown]
# **The end of the run.** While the learning rate anneals towards 0, the median change per
# phase falls below half of its mid-run size on every seed, but the median gap shrinks too, and
# on the seeds that ended well a phase flips about as large a share of the states over 45-50k
# as in the middle (above 0.8 of it); all three asserted. This run has no constant-rate
# control, so it shows the change falling *while* the rate anneals, not that annealing causes
# it.

# %% [markdown]
# **Seed 3.** At the end it stands apart from the three that ended well, but not as a policy
# that is redrawn too much would: it has the widest late gap, the smallest late change relative
# to the gap and the fewest flips (all three asserted). Its greedy policy changed *least*, and
# it was a bad one: it scored 500 at one evaluation, fell at the next and did not come back
# (printed above, asserted). One bad run among four shows nothing general. The benchmark's ten
# seeds bear on the learning rate: with the Zoo's constant rate 2 of 10 end at 475 or more,
# annealed 7 of 10, a constant 1e-3 (about half the change per phase, by the benchmark's
# comment) 8 of 10. That a smaller
# step redraws the policy less and so ends better more often is a *hypothesis* these counts are
# consistent with, not a finding of this lesson. (These asserts pin facts of this one run; a
# change to the library's random streams would need them re-derived.) What do the values do
# during a bad spell?

# %% [markdown]
# **Q against what the policy really gets.** $\max_a Q(s, a)$ estimates the discounted return
# from $s$. Compare it with the return the greedy policy collects from the same states, and
# with the ceiling $1/(1-\gamma)$:

# %%
fig, ax = plt.subplots(figsize=(8, 3.5), layout="constrained")
for seed, run in runs.items():
    v = run["values"]
    ax.plot(v[:, 0], v[:, 1], "o-", ms=3, color=colours[seed], label=f"seed {seed}: mean max Q")
    ax.plot(v[:, 0], v[:, 2], "s--", ms=3, color=colours[seed], lw=0.8,
            label=f"seed {seed}: realised return")
ax.axhline(CEILING, color="k", lw=1, label=f"ceiling 1/(1-gamma) = {CEILING:.0f}")
ax.set(xlabel="environment steps", ylabel="discounted return",
       title="Q climbs towards the ceiling;\nin the bad spells the realised return falls below Q")
ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
plt.show()

# %% tags=["nbval-ignore-output"]
print("per checkpoint from 10,240 steps on: greedy score / mean max Q - realised return")
for seed, run in runs.items():
    v, e = run["values"], run["evals"]
    print(f"seed {seed}: " + "  ".join(f"{score:.0f}/{q - g:+.1f}" for (step, score), (_, q, g)
                                       in zip(e, v) if step >= 10_000))

# %%
pairs = np.array([(score, q - g) for run in runs.values()
                  for (step, score), (_, q, g) in zip(run["evals"], run["values"]) if step >= 10_000])
ranks = np.argsort(np.argsort(pairs, axis=0), axis=0).astype(float)
spearman = np.corrcoef(ranks[:, 0], ranks[:, 1])[0, 1]
# the two halves of Q - realised on their own: mean max Q, and the realised return
parts = np.array([(q, g) for run in runs.values()
                  for (step, _), (_, q, g) in zip(run["evals"], run["values"]) if step >= 10_000])
part_ranks = np.argsort(np.argsort(parts, axis=0), axis=0).astype(float)
spearman_q, spearman_realised = (np.corrcoef(ranks[:, 0], part_ranks[:, j])[0, 1] for j in (0, 1))
low, high = pairs[pairs[:, 0] < 300, 1], pairs[pairs[:, 0] >= 475, 1]
q_end_max = max(m["q_end"] for m in late.values())
# a control that has learned nothing: the same statistics with Q held at 80 everywhere
constant = np.column_stack([pairs[:, 0], 80.0 - parts[:, 1]])
constant_ranks = np.argsort(np.argsort(constant, axis=0), axis=0).astype(float)
spearman_constant = np.corrcoef(constant_ranks[:, 0], constant_ranks[:, 1])[0, 1]
low_constant, high_constant = constant[constant[:, 0] < 300, 1], constant[constant[:, 0] >= 475, 1]
# the falls: consecutive checkpoints where the greedy score dropped by 200 or more
falls = [(seed, step, q1 - q0, g1 - g0) for seed, run in runs.items()
         for (_, s0), (step, s1), (_, q0, g0), (_, q1, g1)
         in zip(run["evals"][:-1], run["evals"][1:], run["values"][:-1], run["values"][1:])
         if s0 - s1 >= 200]

# %% tags=["nbval-ignore-output"]
print(f"{len(pairs)} checkpoints over {len(runs)} seeds; rank correlation of greedy score with "
      f"Q - realised: {spearman:+.2f}; with the realised return alone: {spearman_realised:+.2f}; "
      f"with mean max Q alone: {spearman_q:+.2f}")
print(f"Q - realised, median where the score is below 300 ({len(low)} checkpoints): {np.median(low):+.1f}; "
      f"share of them positive {np.mean(low > 0):.0%}; median where it is 475 or more "
      f"({len(high)}): {np.median(high):+.1f}")
print(f"the same with Q held at 80: rank correlation {spearman_constant:+.2f}; medians {np.median(low_constant):+.1f} "
      f"and {np.median(high_constant):+.1f}; share positive {np.mean(low_constant > 0):.0%}")
for seed, step, dq, dg in falls:
    print(f"seed {seed}, score fell at {step:,.0f} steps: mean max Q moved {dq:+.1f}, the realised return {dg:+.1f}")

# %%
print(f"rank correlation below -0.3: {spearman < -0.3}; median Q - realised more than 10 higher where the "
      f"score is below 300 than where it is 475 or more: {np.median(low) > np.median(high) + 10}; "
      f"positive at most of the low-score checkpoints: {np.mean(low > 0) > 0.5}")
print(f"mean max Q over the visited states at {END_LABEL} below the ceiling on every seed: {q_end_max < CEILING}")
print(f"the realised return alone follows the score more closely than Q - realised: "
      f"{spearman_realised > abs(spearman)}; Q alone less closely than the realised return: {spearman_q < spearman_realised}")
separation = np.median(low) - np.median(high)
separation_constant = np.median(low_constant) - np.median(high_constant)
print(f"a Q held at 80: rank correlation stronger: {spearman_constant < spearman}; medians further apart: "
      f"{separation_constant > separation}")
print(f"{len(falls)} falls of the score by 200 or more; at every one the realised return fell by more than 15 "
      f"and Q fell by less than a third of that (or rose): "
      f"{all(dg < -15 and dq > dg / 3 for _, _, dq, dg in falls)}")
assert spearman < -0.3 and np.median(low) > np.median(high) + 10 and np.mean(low > 0) > 0.5
assert spearman_constant < spearman and separation_constant > separation
assert spearman_realised > abs(spearman) and spearman_q < spearman_realised
assert len(falls) >= 3 and all(dg < -15 and dq > dg / 3 for _, _, dq, dg in falls)
assert q_end_max < CEILING

# %% [markdown]
# Early on the network *under*estimates: the values start near 0 and can only climb through
# bootstrapping. Later, at the checkpoints where the greedy score is low, the mean max Q is well
# above the return the greedy policy really collects from the same states, and where the score
# is near 500 Q is mostly at or below it (a few such checkpoints sit slightly above; the rank
# correlation and the medians above, over all four seeds). Seed 3 ends in a bad spell. Q *tends*
# to claim more than the policy delivers when the policy is bad: at most of the low-score
# checkpoints, not all (the share is printed; at 10,240 steps every seed scores low and Q is
# still below the return).

# %% [markdown]
# Know where that signal comes from. The realised return alone follows the score closely, more
# closely than Q - realised does (rank correlations printed, asserted): both come from rollouts
# of the same greedy policy, so the realised return is itself a score. A Q that has learned
# nothing, held at 80, passes the first three tests even more strongly (its ranks are the
# realised return's reversed; rank correlation and medians printed and asserted), so they say
# nothing about Q's quality. What the values do shows at the falls: at every checkpoint where
# the score fell by 200 or more, the realised return fell by more than 15, and Q did not follow
# it down: it moved by between -3 and +12 (printed; it fell by less than a third of the realised
# return's drop, asserted). A constant Q would not follow either: the falls show that the values
# are blind to the policy's fall, not that Q knows something the score does not. So Q - realised
# is a *symptom*, a sign that the values and the policy they induce disagree, not the cause of
# the bad spell; to watch the policy itself, watch the greedy score on fresh episodes. The ceiling only catches gross overestimation (a mean max Q above it is
# wrong whatever the policy, since no return can exceed it). Over the states visited late in
# training (the table) every seed stays below it, but at single checkpoints, over 100 states, a
# seed can touch or pass it (seed 0 at the end, in the figure): these values sit right at the
# limit.

# %% [markdown]
# **Ablations, three seeds each.** Change one thing at a time and train 5,000 steps on seeds
# 0-2 (the learning rate anneals over those 5,000 steps): no target network (`target_update=1`:
# the target is copied after *every* gradient step, so $y$ moves with $\theta$, as in the
# two-state example), and a small buffer (`buffer_size=256`: each phase trains only on the 256
# transitions just collected, so consecutive, correlated states make up every minibatch). The
# small buffer still replays: a phase draws 128 × 64 = 8,192 samples from those 256 rows, about
# 32 each, as the preset does on average. What it removes is *old* experience. (Mnih et al.'s
# "no replay" trains on each transition once, as it arrives; it is not run here.) For each run:
# the highest mean Q of a phase's minibatches and the final params' greedy score on 10 episodes. Each variant is judged by the same standard: a lower score than
# the preset's on every seed. (Plain DQN, `double=False`, is not ablated at this budget; the end
# of this section says what is known about it on CartPole.)

# %%
ABLATION_STEPS = 5_000
ABLATIONS = {"preset": {}, "no target network": {"target_update": 1}, "small buffer (256 rows)": {"buffer_size": 256}}
# all nine runs (three settings x three seeds) side by side, each the run rc.dqn makes
grid = [(label, seed) for label in ABLATIONS for seed in SEEDS]
ablated = rc.dqn_sweep([rc.CartPole() for _ in grid],
                       [rc.mlp_init([4, 64, 64, 2], seed=seed) for _, seed in grid], ABLATION_STEPS,
                       [dict(seed=seed, **ABLATIONS[label]) for label, seed in grid], **rc.DQN_CARTPOLE)
peak_q, short_score = {label: [] for label in ABLATIONS}, {label: [] for label in ABLATIONS}
for (label, _), run in zip(grid, ablated):
    peak_q[label].append(np.nanmax(run.history["q_mean"]))
    short_score[label].append(rc.evaluate(rc.CartPole(n=10), rc.greedy_policy(q_net, run.params),
                                          10, seed=1_000).mean)
lower = {label: sum(a < b for a, b in zip(short_score[label], short_score["preset"]))
         for label in ABLATIONS if label != "preset"}

# %% tags=["nbval-ignore-output"]
print(f"{'':22s} {'highest mean Q, seeds 0-2':>34s} {'greedy score, seeds 0-2':>26s}")
for label in ABLATIONS:
    print(f"{label:22s} {str([f'{q:.3g}' for q in peak_q[label]]):>34s} "
          f"{str([round(x) for x in short_score[label]]):>26s}")
print("greedy score lower than the preset's, seeds of 3: "
      + ", ".join(f"{label} {count}" for label, count in lower.items()))

# %%
no_target_over = min(peak_q["no target network"]) > CEILING
print(f"no target network: Q passed the ceiling {CEILING:.0f} on every seed: {no_target_over}; "
      f"score lower than the preset's on every seed: {lower['no target network'] == len(SEEDS)}")
print(f"small buffer: score lower than the preset's on every seed: {lower['small buffer (256 rows)'] == len(SEEDS)}")
assert no_target_over and all(count == len(SEEDS) for count in lower.values())

# %% [markdown]
# **The target network** is the ablation with the clearest effect: without the frozen copy the
# values shoot past the ceiling within a few thousand steps, values no policy can earn, and the
# greedy policy is useless: the deadly triad on a real task. (With it, the values at 45-50k
# stayed below the ceiling, checked above.)
#
# **Old experience**: training each phase on only the newest 256 transitions scored lower than
# the preset on every one of the three seeds at this budget, with as many replays of each
# transition. Three seeds and 5,000 steps are a small sample: this is a sign that keeping older
# experience in the buffer helps early in training here, not a measurement of how much at
# 50,000 steps (`python benchmarks/dqn_sweep.py --set buffer_size=256 --seeds 0 1 2
# 3 4`, one `rc.dqn` run per seed, measures that).
#
# **Double DQN** fixes a bias of the max over *noisy* estimates. Here is that bias on its own,
# with noise of size 1 on each action's true value of 0. First the two nets' errors are
# independent, which makes Double DQN's bias zero by construction: the target net's error at the
# action the online net picked is fresh noise of mean 0. Then they are correlated 0.9, as when
# the two nets share most of their errors:

# %%
action_counts = [2, 4, 8, 16, 32]
plain_bias, double_bias, shared_bias = [], [], []
for count in action_counts:
    online_q, fresh = rng.normal(size=(2, 20_000, count))
    shared_q = 0.9 * online_q + np.sqrt(1 - 0.9**2) * fresh  # noise of size 1, correlated 0.9
    zeros = np.zeros(20_000)
    no_end = np.zeros(20_000, dtype=bool)
    plain_bias.append(rc.dqn_targets(zeros, no_end, online_q, fresh, 1.0, double=False).mean())
    double_bias.append(rc.dqn_targets(zeros, no_end, online_q, fresh, 1.0, double=True).mean())
    shared_bias.append(rc.dqn_targets(zeros, no_end, online_q, shared_q, 1.0, double=True).mean())
    print(f"{count:2d} actions: max bias {plain_bias[-1]:+.2f}, Double DQN bias {double_bias[-1]:+.2f} "
          f"(independent errors, zero by construction), {shared_bias[-1]:+.2f} (errors correlated 0.9)")
assert min(plain_bias) > 0.5 and max(np.abs(double_bias)) < 0.05
assert all(0.8 * p < s < p for p, s in zip(plain_bias, shared_bias))

# %% [markdown]
# That is the case where every action is worth the same. When the true values differ, give the
# same noise to actions worth, say, 0 and 0.5, and measure each estimate against the best true
# value:

# %%
unequal_double = []
for true_q in ([0.0, 0.5], [0.0, 1.0], [0.0, 0.0, 0.0, 0.0, 0.5, 1.0]):
    online_q, target_q = np.array(true_q) + rng.normal(size=(2, 20_000, len(true_q)))
    zeros, no_end = np.zeros(20_000), np.zeros(20_000, dtype=bool)
    plain = rc.dqn_targets(zeros, no_end, online_q, target_q, 1.0, double=False).mean() - max(true_q)
    unequal_double.append(rc.dqn_targets(zeros, no_end, online_q, target_q, 1.0).mean() - max(true_q))
    print(f"true values {true_q}: max bias {plain:+.2f}, Double DQN bias {unequal_double[-1]:+.2f}")
assert max(unequal_double) < -0.05

# %%
fig, ax = plt.subplots(figsize=(8, 3.5), layout="constrained")
ax.plot(action_counts, plain_bias, "o-", label="max over noisy Q (plain DQN)")
ax.plot(action_counts, shared_bias, "^-", label="Double DQN, the nets' errors correlated 0.9")
ax.plot(action_counts, double_bias, "s-", label="Double DQN, independent errors")
ax.set_xscale("log", base=2)
ax.set_xlabel("number of actions")
ax.set_ylabel("bias of the target (true value 0)")
ax.set_title("Equal true values: Double DQN removes the max's bias only if the nets' errors are independent")
ax.legend(loc="upper left")
plt.show()

# %% [markdown]
# With independent errors Double DQN is not biased *up*; when the actions' true values differ it
# is biased *down* (the rows above; van Hasselt, 2010, proves that the double estimator never
# overestimates in expectation: it is unbiased when the true values are equal, the line at 0,
# and can underestimate). It trades an overestimate that grows with the number of actions for
# an underestimate (what repeated bootstrapping then does with each is measured by van Hasselt
# et al., 2016, not here). That is the fix when the two nets' errors are independent. When they
# are correlated, most of the bias comes back: with correlation 0.9 Double DQN keeps nine tenths
# of the max's bias (the figure; for Gaussian noise it is exactly the correlation times the
# max's bias).
#
# How much does Double DQN change the targets in the real runs above? During a phase the target
# net is the online net as it was at the phase's start (the preset copies it once per phase,
# asserted before the runs). So at the end of each phase the callback took that net as the
# target and the net at the end as the online net, and measured at the 1,000 recently visited
# states how far Double's bootstrap, $Q_{\theta^-}(s', \arg\max_a Q_\theta(s', a))$, lies below
# plain DQN's, $\max_a Q_{\theta^-}(s', a)$: the mean over the states. It is measured at the
# phase's end and at recently visited states, not on the phase's own minibatch targets (the two
# nets start each phase equal, so early in a phase the difference is smaller):

# %% tags=["nbval-ignore-output"]
drops = {seed: run["phases"][:, 6] for seed, run in runs.items()}
for seed, d in drops.items():
    print(f"seed {seed}: Double's bootstrap below plain's, over all {len(d)} phases: mean {d.mean():.4f}, "
          f"median {np.median(d):.4f}, largest {d.max():.4f}")
for seed, run in runs.items():
    late_drop = run["phases"][run["phases"][:, 0] >= END, 6].mean()
    print(f"seed {seed}: at {END_LABEL}, mean drop / median action gap: {late_drop / late[seed]['gap_end']:.2f}")
# the bad spells: checkpoints scoring below 300 after the seed's first score of 500
after_500 = [q - g for run in runs.values()
             for i, ((step, score), (_, q, g)) in enumerate(zip(run["evals"], run["values"]))
             if score < 300 and (run["evals"][:i, 1] >= 500).any()]
print(f"median Q - realised at the {len(after_500)} checkpoints that scored below 300 after their seed's "
      f"first 500: {np.median(after_500):+.1f}")

# %%
gamma = rc.DQN_CARTPOLE["gamma"]
mean_drop = max(d.mean() for d in drops.values())
late_q = min(m["q_end"] for m in late.values())
print(f"mean drop times gamma / (1 - gamma) = {gamma / (1 - gamma):.0f}, on every seed below 5% of the "
      f"mean max Q at {END_LABEL} (at least {late_q:.0f}): {mean_drop * gamma / (1 - gamma) < 0.05 * late_q}")
assert mean_drop * gamma / (1 - gamma) < 0.05 * late_q

# %% [markdown]
# At a phase's end Double's bootstrap was on average about 0.02 below plain's over the recently
# visited states (printed), at values near 90: the target net and the online net disagree about
# the best action at a minority of the states (the flipped shares above), and there the
# difference is the target net's action gap. A bootstrap lowered by that much on average at
# every step lowers the values, on average, by about $\gamma/(1-\gamma) = 99$ times as much (the
# sum of $\gamma^t$ over the steps ahead): about 2 value points, under 5% of the values (asserted).
# This is an average, not a bound: at single states the drop is far larger (up to the gap). So on
# CartPole Double DQN changes the targets little *against the values*. Against the action gaps,
# which the greedy policy rests on, it is not negligible: over 45-50k the mean drop is a few
# hundredths to a fifth of the median gap (printed), and it falls only where the two nets
# disagree (whether it reorders actions there is not measured). It is also no cure for the bad
# spells: at the checkpoints that scored below 300 after their seed had reached 500, Q stood a
# median of about 50 above what the policy collected (printed), and at the falls that gap opened
# because the realised return dropped while Q did not follow it (asserted above). Whether Q also
# rose above the optimal values there is not measured; a fix of the max's bias addresses only
# that part.

# %% [markdown]
# What would plain DQN do instead? Over the full 50,000 steps on seeds 0-4, plain DQN's final
# params reached 475 on 3 seeds against Double DQN's 4 (the comment above `DQN_CARTPOLE`; `python
# benchmarks/dqn_sweep.py --set double=False --seeds 0 1 2 3 4`, one `rc.dqn` run per seed):
# five seeds cannot tell them apart. Use Double DQN because it costs one extra forward pass of the online net per gradient
# step and was measured to help on Atari, with many actions (van Hasselt et al.), not because
# this lesson showed it on CartPole.

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | Q-values shoot past $1/(1-\gamma)$ | the target moves with every gradient step (no target network; shown above) | a target network frozen for hundreds of gradient steps (the preset: 128); or Polyak targets after every step, with a `tau` matched to that period (exercise 1 derives it) and, in `rc.dqn`, `target_update=1`, since it applies `tau` only every `target_update` steps. Polyak targets are not measured on CartPole here; the benchmark behind the preset found tau 0.005 per step worse |
# | the greedy score reaches 500, then falls and comes back | not settled (above): one phase flips the greedy action at many states, since the action gaps are tiny | anneal or lower the learning rate; watch the greedy score on fresh episodes (Q will not follow it down); keep the best params with `rc.Checkpoints` and re-evaluate them on fresh episodes |
# | blaming the replay buffer for a collapse | assuming old states were overwritten | check the arithmetic: `rc.dqn` keeps `min(buffer_size, total_steps)` rows, so a 50k run with a 100k buffer never overwrites one |
# | values near the end of episodes too high | bootstrapping through `terminated` | multiply the bootstrap by `1 - terminated` |
# | values near the time limit too low | treating `truncated` as terminal | store `terminated` only; truncation bootstraps from `final_obs` |
# | next state is a fresh start state | storing `obs` after an autoreset | store `final_obs` as the next observation |
# | a "solved" run that does not reproduce | quoting the best evaluation of many | score the *final* params on fresh episodes; re-evaluate a kept best on other seeds |
# | nothing learned for a long time | epsilon decays too slowly or learning starts late | decay epsilon over ~10-20% of training (common practice: the Zoo's 16%; not measured here) |

# %% [markdown]
# ## Exercises
#
# 1. **Easy: Polyak averaging against a hard copy.** Instead of copying the online net into the
#    target every $N$ gradient steps, many implementations (SB3's `tau`, DDPG, SAC) move the
#    target a little after every step: $\theta^- \leftarrow (1-\tau)\,\theta^- + \tau\,\theta$
#    (the `tau` branch of the loop printed above; `rc.dqn` runs it every `target_update` gradient
#    steps, so Polyak after every step needs `target_update=1`). A hard copy every $N$ steps leaves the target
#    $0, 1, \dots, N-1$ steps behind the online net, $(N-1)/2$ on average. The Polyak target is
#    a weighted average of past online nets, the one $k$ steps old with weight
#    $\tau(1-\tau)^k$. Write `polyak_mean_lag(tau)`, the mean age $k$ under those weights, and
#    `tau_for_period(N)`, the `tau` whose mean lag equals that of a hard copy every $N$ steps.
#    Confirm both by letting the online weight drift ($\theta_t = t$) and running both targets.
# 2. **Medium: the deadly triad's stable range.** In the two-state example each update multiplies
#    $w$ by $1 + \alpha(2\gamma - 1)$. Write `stable_gamma_range(alpha)` returning the pair
#    `(lowest, highest)` of the discounts in $[0, 1]$ for which $w$ stays bounded, derived
#    exactly from that factor. Confirm it by running the update. Then explain: why does a large
#    step size make *small* discounts diverge too? Choose (`triad_why`):
#    - A: the target moves away faster than the estimate follows, as for large gamma;
#    - B: each update overshoots: the factor is below -1, so $w$ changes sign at every update and its size grows;
#    - C: a small gamma makes the TD target negative, and negative values diverge;
#    - D: the features 1 and 2 are too far apart for a large step.
# 3. **Hard: n-step targets across episode ends.** Rainbow and R2D2 bootstrap after $n$
#    rewards instead of one: $y = \sum_{k=0}^{n-1}\gamma^k r_{t+k} + \gamma^n \max_{a'}
#    Q_{\theta^-}(s_{t+n}, a')$. In a replay buffer fed by a vector env, a window of $n$ steps can
#    cross the end of an episode, and it must treat both kinds of end as the one-step loop
#    above does. Write `n_step_dqn_targets(rewards, terminated, truncated, next_q_target, gamma)`
#    for windows `rewards`, `terminated`, `truncated [B, n]` (step $k$ of window $b$ ended the
#    episode, or hit the time limit) and `next_q_target [B, n, A]`, the target net's values at
#    the state after each step (its `final_obs` where the step ended an episode). The sum stops
#    at the first end in the window: later entries belong to later episodes, even if one of them
#    ends too. A termination bootstraps nothing; a time limit at step $k$ bootstraps
#    $\gamma^{k+1}\max_{a'} Q_{\theta^-}$ at the state after step $k$ (a step can be both: then
#    the termination wins); a window with no end bootstraps $\gamma^n$ at the state after its
#    last step.
#
#    Then check your vectorised code against a plain loop that walks each window step by step,
#    on a real run: step `rc.CartPole(n=1, max_steps=15)` with random actions (the short time
#    limit makes truncations common, and some steps both terminate and truncate), score each
#    next state with any fixed Q (a random linear one will do), and compare the two on every
#    window of 3 steps. (This checks the vectorisation against your own reading of the rules;
#    the checker checks the rules.)

# %% tags=["solution"]
def polyak_mean_lag(tau):
    # sum_k k tau (1 - tau)^k: the mean of a geometric distribution on 0, 1, 2, ...
    return (1 - tau) / tau


def tau_for_period(period):
    # (1 - tau) / tau = (N - 1) / 2  =>  tau = 2 / (N + 1)
    return 2 / (period + 1)


period = 128
tau = tau_for_period(period)
polyak, hard, lags = 0.0, 0.0, []
for t in range(1, 20 * period + 1):  # the online weight is t after step t
    polyak = (1 - tau) * polyak + tau * t
    hard = t if t % period == 0 else hard
    lags.append((t - polyak, t - hard))
polyak_lag, hard_lag = np.mean(lags[-10 * period:], axis=0)  # over the last 10 periods
print(f"N = {period}: tau {tau:.4f}; mean lag simulated: Polyak {polyak_lag:.2f}, hard copy {hard_lag:.2f}; "
      f"polyak_mean_lag(tau) {polyak_mean_lag(tau):.2f}")

# %%
assert rc.exercises.check("polyak_mean_lag", polyak_mean_lag)
assert rc.exercises.check("tau_for_period", tau_for_period)

# %% [markdown]
# Compare your `tau_for_period(N)` with the rule of thumb "a soft update with `tau` is like a
# hard copy every $1/\tau$ steps": by your `polyak_mean_lag`, how far behind does `tau = 1/N`
# leave the target, against the hard copy's $(N-1)/2$? Answer for $N = 128$ as
# `lag_one_over_n` (in steps). The two targets still differ in kind: the hard copy jumps and
# then stands still, the Polyak target never stands still.

# %% tags=["solution"]
lag_one_over_n = polyak_mean_lag(1 / 128)
print(f"tau = 1/128: mean lag {lag_one_over_n:.1f} steps, against the hard copy's {(128 - 1) / 2}")

# %%
assert rc.exercises.check("polyak_lag_one_over_n", lag_one_over_n)

# %% tags=["solution"]
def stable_gamma_range(alpha):
    # bounded iff -1 <= 1 + alpha (2 gamma - 1) <= 1, i.e. 1/2 - 1/alpha <= gamma <= 1/2
    return max(0.0, 0.5 - 1.0 / alpha), 0.5


def w_after(gamma, alpha, steps=200):
    """w after ``steps`` updates of the two-state example, from w = 1."""
    w = 1.0
    for _ in range(steps):
        w += alpha * (gamma * 2 * w - w)
    return w


for alpha in (0.1, 3.0):
    low, high = stable_gamma_range(alpha)
    bounded = [g for g in np.linspace(0, 1, 101).tolist() if abs(w_after(g, alpha)) <= 1.0]
    print(f"alpha {alpha}: derived range [{low:.3f}, {high:.3f}], "
          f"bounded on a grid of 101 gammas: [{min(bounded):.2f}, {max(bounded):.2f}]")
triad_why = "B"

# %%
assert rc.exercises.check("stable_gamma_range", stable_gamma_range)
assert rc.exercises.check("triad_overshoot_why", triad_why)

# %% tags=["solution"]
def n_step_dqn_targets(rewards, terminated, truncated, next_q_target, gamma):
    n = rewards.shape[1]
    ended = terminated | truncated
    ended_before = np.cumsum(ended, axis=1) - ended  # an earlier step of the window ended it
    total = (np.where(ended_before == 0, rewards, 0.0) * gamma ** np.arange(n)).sum(axis=1)
    last = np.where(ended.any(axis=1), ended.argmax(axis=1), n - 1)  # the window's own last step
    rows = np.arange(len(rewards))
    bootstrap = gamma ** (last + 1) * next_q_target[rows, last].max(axis=1)
    return total + np.where(terminated[rows, last], 0.0, bootstrap)


def n_step_by_walking(rewards, terminated, truncated, next_q_target, gamma):
    """The same targets, one window and one step at a time."""
    out = []
    for r, term, trunc, q in zip(rewards, terminated, truncated, next_q_target):
        total, discount = 0.0, 1.0
        for k in range(len(r)):
            total, discount = total + discount * r[k], discount * gamma
            if term[k] or trunc[k]:
                total += 0.0 if term[k] else discount * q[k].max()
                break
        else:
            total += discount * q[-1].max()
        out.append(total)
    return np.array(out)


walk_rng = np.random.default_rng(0)
walker = rc.CartPole(n=1, max_steps=15, seed=0)
walker.reset(seed=0)
steps = []
for _ in range(200):
    out = walker.step(walk_rng.integers(0, 2, size=1))
    steps.append((out.reward[0], out.terminated[0], out.truncated[0], out.final_obs[0]))
q_weights = walk_rng.normal(size=(4, 2))  # a fixed, random linear Q
r_all, term_all, trunc_all, next_all = (np.array(x) for x in zip(*steps))
windows = np.arange(len(steps) - 2)[:, None] + np.arange(3)  # every window of 3 steps
args = (r_all[windows], term_all[windows], trunc_all[windows], next_all[windows] @ q_weights, 0.9)
print(f"{len(windows)} windows, {int(trunc_all.sum())} truncations and {int(term_all.sum())} terminations "
      f"among the steps, {int((trunc_all & term_all).sum())} steps with both; vectorised and walked targets agree: "
      f"{np.allclose(n_step_dqn_targets(*args), n_step_by_walking(*args))}")


# %%
assert rc.exercises.check("n_step_dqn_targets", n_step_dqn_targets)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | function approximation | "a neural Q" | $Q_\theta(s,a)$ with shared parameters, so learning on one state changes others |
# | semi-gradient | "TD with a network" | the gradient of $\frac12(y - Q_\theta)^2$ with the target $y$ held constant |
# | deadly triad | "DQN is unstable" | approximation + bootstrapping + off-policy data can diverge together |
# | replay buffer | "experience replay" | a ring of past transitions sampled uniformly for each minibatch |
# | target network | "the frozen copy" | $\theta^-$, used only inside $y$, copied from $\theta$ every so many gradient steps |
# | Double DQN | "fixes overestimation" | select $a'$ with $Q_\theta$, evaluate it with $Q_{\theta^-}$; removes the max's *upward* bias when the two nets' errors are independent (it can underestimate instead) |
# | Huber loss | "smooth L1" | quadratic within $\delta$, linear outside: the TD error's gradient is clipped (PyTorch's smooth L1 is Huber divided by $\delta$) |
# | action gap | "how sure the policy is" | the best action's value minus the second best; the greedy policy depends only on such differences |
# | change per phase | "how much an update moves Q" | how far one training phase moves the *differences* between a state's action values; a flip needs it to reach the gap |
# | value ceiling | "the max return" | $r_{\max}/(1-\gamma)$: no state's true value exceeds it, so a Q above it is overestimation |
# | epsilon-greedy | "exploration" | a random action with probability $\epsilon$, decayed from 1 to a small floor |

# %% [markdown]
# ## Further reading
#
# - Mnih et al. (2015), *Human-level control through deep reinforcement learning*, Nature: DQN
#   with replay and a target network, with their own ablation of both.
# - van Hasselt (2010), *Double Q-learning*, NeurIPS: the double estimator, and the proof that
#   it never overestimates in expectation.
# - van Hasselt, Guez & Silver (2016), *Deep Reinforcement Learning with Double Q-learning*,
#   AAAI: the overestimation and the fix used here.
# - Bellemare, Ostrovski, Guez, Thomas & Munos (2016), *Increasing the Action Gap: New Operators
#   for Reinforcement Learning*, AAAI: why small action gaps make greedy policies fragile, and
#   operators that widen them.
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed., chapters 9-11:
#   semi-gradient methods and the deadly triad (the two-state example is from section 11.2).
# - van Hasselt, Doron, Strub, Hessel, Sonnerat & Modayil (2018), *Deep Reinforcement Learning
#   and the Deadly Triad*, arXiv:1812.02648: the triad measured on Atari, with the target-network
#   and Double DQN ablations at scale.
# - Hessel et al. (2018), *Rainbow: Combining Improvements in Deep Reinforcement Learning*,
#   AAAI: n-step targets, prioritised replay and the rest, each ablated.
# - Raffin et al. (2021), *Stable-Baselines3*, JMLR, and the RL Baselines3 Zoo: the CartPole
#   settings `DQN_CARTPOLE` follows.
