# %% [markdown]
# # 00 · How this course works
#
# *Prerequisites:* none (Python and numpy; derivatives from calculus)
# *Time:* 75 minutes
# *You will build:* a central-difference gradient check, the vector-Jacobian product of a matrix product, backpropagation by hand through a small network, and one Adam step; then the same pieces, from `rlcourse`, fit a small network.

# %% [markdown]
# This lesson has two halves. The first shows how the course works: the loop that
# reinforcement-learning (RL) methods live in, the map of the lessons, how you do the "Build it"
# steps and the exercises and how they are graded, and where the cheat sheets are. The second
# half is the one tool deep RL needs that numpy lacks: gradients. It already follows the template
# every lesson uses: the problem, the idea, build it, check it, use it, pitfalls, exercises, key
# terms and further reading.
#
# First, make sure the package you have is the one this lesson was written for.

# %%
import inspect
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import rlcourse as rc

WRITTEN_FOR = "0.1.0"
if rc.__version__ == WRITTEN_FOR:
    print(f"rlcourse {rc.__version__}: the version this lesson was written for.")
else:
    print(f"rlcourse {rc.__version__} is installed but this lesson expects {WRITTEN_FOR}. "
          f'Fix: run  pip install -e ".[dev]"  in the course folder, then restart the kernel.')
SEED = 0
rng = np.random.default_rng(SEED)

# %% [markdown]
# ## The agent-environment loop
#
# An **agent** acts in an **environment**. At each step it sees an **observation**, chooses an
# **action**, and the environment answers with a **reward**, the next observation, and two flags:
# **terminated** (the episode reached an end state: the pole fell, the goal was reached) and
# **truncated** (a time limit cut the episode short). An **episode** runs from a reset to the step
# where one of the flags is set; its **return** is the sum of its rewards. The agent's rule for
# choosing actions is its **policy**; RL searches for a policy with a high return, learning from
# the rewards it receives.
#
# ```
#          observation, reward, terminated, truncated
#      +--------------------------------------------------+
#      v                                                  |
#   agent (policy) ------------- action ------------> environment
# ```
#
# The environments with episodes in `rlcourse` (CartPole, the grid worlds) run `n` copies at
# once (every array has a first axis of size `n`) and share these members:
#
# - `rc.CartPole(n, seed=...)` makes one; the seed fixes every random start it draws;
# - `env.reset(seed=None) -> obs` starts every copy (a seed here restarts the random starts);
# - `env.step(actions) -> Step(obs, reward, terminated, truncated, final_obs)`;
# - `env.episode_returns` and `env.episode_lengths`: lists to which each finished episode's
#   return and length are appended.
#
# (Lesson 01's bandit has no states, so its `step` returns only rewards; lesson 15's tic-tac-toe
# is a two-player game.) Here is CartPole, the task the deep-RL lessons learn: a pole hinged on a
# cart. The observation is the cart's position $x$ and velocity, and the pole's angle $\theta$
# and angular velocity; action 0 pushes the cart left, 1 pushes it right; every step earns
# reward 1; the episode terminates when the pole leans more than 12 degrees or the cart leaves
# the track, and is truncated after 500 steps. A policy that always pushes right:

# %%
env = rc.CartPole(n=1, seed=SEED)
obs = env.reset()
print(f"{'t':>2}  {'x':>6} {'x_dot':>6} {'theta':>6} {'th_dot':>6}  action  reward  terminated  truncated")
print(f"{0:>2}  " + " ".join(f"{v:6.3f}" for v in obs[0]))
for t in range(1, 501):
    action = np.array([1])  # push right
    step = env.step(action)
    flags = f"{step.reward[0]:6.1f}  {step.terminated[0]!s:>10}  {step.truncated[0]!s:>9}"
    print(f"{t:>2}  " + " ".join(f"{v:6.3f}" for v in step.obs[0]) + f"  {action[0]:>6}  {flags}")
    if step.terminated[0] or step.truncated[0]:
        break
print("final_obs:  " + " ".join(f"{v:6.3f}" for v in step.final_obs[0]))
print(f"env.episode_returns: {env.episode_returns}, env.episode_lengths: {env.episode_lengths}")

twelve_degrees = 12 * np.pi / 180
assert step.terminated[0] and not step.truncated[0]
assert abs(step.final_obs[0, 2]) > twelve_degrees      # the pole was past 12 degrees ...
assert np.all(np.abs(step.obs[0]) <= 0.05)             # ... and obs is already a fresh start

# %% [markdown]
# Read the last rows of the table. On the step where the episode ends, `obs` is **already the
# first observation of the next episode**: the environment resets that copy in the same step.
# The last observation of the finished episode, the one where the pole is past 12 degrees, is in
# `final_obs`. Which of the two you learn from matters: from a terminated episode there is no
# future to value; from a truncated one there is, and it starts at `final_obs` (lessons 05 and
# 09 build on this).
#
# Resetting in the same step is what lets `n` copies run side by side: a copy that finishes
# starts over at once while the others carry on, and no copy waits. Four copies, all pushing
# right, from different random starts:

# %%
env4 = rc.CartPole(n=4, seed=SEED)
obs4 = env4.reset()
print(f"start angles (rad): {np.round(obs4[:, 2], 3)}")
events = []
for t in range(1, 60):
    before = obs4.copy()
    step = env4.step(np.ones(4, dtype=int))
    done = step.terminated | step.truncated
    for k in np.flatnonzero(done):
        events.append((t, k, step.final_obs[k, 2], step.obs[k, 2]))
        others = [j for j in range(4) if not done[j]]
        print(f"step {t:2d}: copy {k} terminated, final_obs angle {step.final_obs[k, 2]:+.3f} "
              f"(past 12 deg = {twelve_degrees:.3f}), its obs angle {step.obs[k, 2]:+.3f} "
              f"(a fresh start); copies {others} go on")
        assert abs(step.final_obs[k, 2]) > twelve_degrees and np.all(np.abs(step.obs[k]) <= 0.05)
        assert not np.array_equal(step.final_obs[k], step.obs[k])
    assert np.array_equal(step.final_obs[~done], step.obs[~done])  # no reset: final_obs = obs
    obs4 = step.obs
    if len(events) >= 4:
        break
print(f"episode lengths, in the order the episodes ended: {env4.episode_lengths}")
assert len({t for t, *_ in events}) > 1  # the copies finished at different steps

# %% [markdown]
# (Gymnasium's vector environments reset by default on the *following* call to `step`, its
# `NEXT_STEP` autoreset mode; its `SAME_STEP` mode does what `rlcourse` does, with the last
# observation in `info["final_obs"]`.) Where a copy did not finish, `final_obs` is simply its
# `obs`.
#
# How good a policy is shows in its return. `rc.evaluate(env, policy, episodes, seed)` runs
# `policy(obs) -> actions` until that many whole episodes have finished and returns their
# `.returns` (an array) and `.mean`. Three policies, 20 episodes each, one per copy of a
# 20-copy CartPole:

# %%
policies = {
    "always push right": lambda obs: np.ones(len(obs), dtype=int),
    "push toward the lean": lambda obs: (obs[:, 2] > 0).astype(int),
    "push toward the lean and its motion": lambda obs: (obs[:, 2] + 0.5 * obs[:, 3] > 0).astype(int),
}
scores = {}
for name, policy in policies.items():
    scores[name] = rc.evaluate(rc.CartPole(n=20), policy, episodes=20, seed=SEED)
    r = scores[name].returns
    print(f"{name:<36} return over 20 episodes: mean {r.mean():6.1f}, min {r.min():4.0f}, max {r.max():4.0f}")

means = [s.mean for s in scores.values()]
assert means[0] < means[1] < means[2] == 500.0  # the last one reaches the time limit every time

# %% [markdown]
# The third policy keeps the pole up until the time limit truncates every episode: its minimum
# is 500, the most an episode can give. Here we wrote that rule ourselves. The course is about
# **learning** such rules from rewards, from bandits (one state, lesson 01) to a neural network
# that learns CartPole (lessons 07-10) and a small language model that learns from a verifier
# (lesson 14).

# %% [markdown]
# ## The course map
#
# In a terminal, `rlcourse lessons` prints the map; here is the same command called from Python,
# on the notebooks in this folder. It reads each notebook's title cell when it runs, so the
# times and the total are those of the lessons you have (the printed copy stored with this
# notebook is not compared by the tests; the facts below it are):

# %% tags=["nbval-ignore-output"]
from rlcourse.course.cli import main as rlcourse_command

_ = rlcourse_command(["lessons", "--lessons", "."])

# %%
from rlcourse.course.notebooks import find_lessons, lesson_info

course = [lesson_info(path) for path in find_lessons(".")]
assert [int(info.number) for info in course] == list(range(len(course)))
assert all(p < info.number for info in course for p in info.prerequisites)
print(f"{len(course)} lesson(s), numbered 00 to {course[-1].number}; every lesson's "
      f"prerequisites come before it")

# %% [markdown]
# Lessons 01-06 are **tabular** RL: small worlds whose states fit in a table (bandits, MDPs and
# Bellman equations, dynamic programming, Monte Carlo, temporal-difference learning, Q-learning
# and SARSA). Lessons 07-10 are **deep** RL: a network replaces the table (DQN, REINFORCE,
# actor-critic, PPO). Lessons 11-14 turn to **language models**: importance sampling, reward
# models and RLHF, DPO, GRPO. Lesson 15 is **search** (tree search and decoding). Each lesson's
# title cell names the lessons it builds on.

# %% [markdown]
# ## How you work: Build it, exercises, grading
#
# You work in your own copy of the lessons, the **student edition**: `rlcourse start` makes it
# once (in `my-rlcourse/`) and never overwrites it afterwards. It is the same notebooks with your
# part left blank:
#
# - In **Build it** you write the core of the lesson's method, one small step at a time. Each step
#   is a cell `def my_something(...)`, a stub in your copy that raises `NotImplementedError` and
#   names a hint. The cell after it grades your function: `rc.exercises.check("name", my_something)`
#   runs it and `rlcourse`'s reference on the same small inputs and prints a verdict per case.
#   Everything after Build it uses the reference (`rc.something`), so the notebook runs top to
#   bottom even while steps are unwritten.
# - The **Exercises** at the end go further than the lesson (easy, medium, hard), graded the same
#   way. A question that asks *why* or *how much* takes a letter or a number as its answer,
#   graded too.
#
# A worked example. The exercise `episode_return` asks for the return of one episode from its
# list of rewards. Not written yet:

# %%
def unwritten(rewards):
    raise NotImplementedError("Exercise: write this.")


passed = rc.exercises.check("episode_return", unwritten)
assert not passed

# %% [markdown]
# A tempting shortcut, since in CartPole the return equals the episode's length:

# %%
def count_steps(rewards):
    return len(rewards)


passed = rc.exercises.check("episode_return", count_steps)
assert not passed

# %% [markdown]
# The shortcut passes the CartPole-like case and fails the two others, and the check says why, in
# the lesson's terms rather than "arrays differ". This lesson's checkers are built the same way:
# their cases tell the usual wrong answers (a one-sided difference, a missing transpose, a
# missing bias correction, ...) apart from the right one, and each is named when it fails. The
# right answer:

# %%
def sum_of_rewards(rewards):
    return float(np.sum(rewards))


assert rc.exercises.check("episode_return", sum_of_rewards)

# %% [markdown]
# `check` returns True only when every case passes and the code is yours. Two rules keep a grade
# honest:
#
# - A function that calls what the exercise asks you to write (`rlcourse`'s own version, such as
#   `rc.numerical_grad` inside `my_numerical_grad`, or anything the exercise lists, such as
#   `rc.Adam` for an Adam step) is marked `[reference]` and does not pass, even when its cases do.
#   Using `rc.` functions for the other parts is fine.
# - A question is graded on the **first** answer checked in a run of the notebook. A later answer
#   in the same run is shown with its verdict, marked "not graded".
#
# `rlcourse progress` (in a terminal; `rlcourse progress --only 00` for this lesson alone) runs
# your notebooks and gives each exercise one of these states:
#
# | state | means |
# |---|---|
# | pass | every case passed, with your own code |
# | fail | checked, and some case failed |
# | todo | still the stub |
# | used the reference | passed by calling the reference (or what the exercise forbids) |
# | not run | the notebook stopped (an error, or out of time) before the check ran |
# | missing (stale copy) | your copy has no such check: the lesson changed after you copied it |
#
# Each copy records the version of the lesson it was made from. When a lesson changes, `rlcourse
# start` and `rlcourse progress` say so, and `rlcourse start --refresh NN` writes the new version
# beside yours as `NN_..._new.ipynb` (yours is never overwritten). An instructor runs
# `rlcourse grade DIR1 DIR2 ... --csv grades.csv` on the students' folders and gets a table and a
# CSV file with one row per student, lesson and exercise, holding these states.

# %% [markdown]
# ## Where things are
#
# | you see | where it lives | what it is for |
# |---|---|---|
# | your notebooks | `my-rlcourse/` (made by `rlcourse start`) | reading, running, writing Build it and the exercises |
# | the teacher's edition | `lessons/` in the course folder | every step and exercise filled in |
# | `rc.some_function` | `rlcourse/` (read it with `inspect.getsource`) | the tested reference each lesson compares with |
# | `rc.exercises.check("name", fn)` | `rlcourse/course/` | grades a function and says *why* it is wrong |
# | cheat sheets | `cheatsheets/` (a copy sits in your workspace) | formulas, defaults, troubleshooting, one page each |
# | `pytest` | `tests/`, and nbval over `lessons/` | tests the reference, re-runs every lesson and compares its printed output |
#
# The cheat sheets, with their titles:

# %% tags=["nbval-ignore-output"]
sheets = next((p for p in (Path("cheatsheets"), Path("..") / "cheatsheets") if p.is_dir()), None)
if sheets is None:
    print("no cheatsheets/ folder here: they are in the course folder, beside lessons/")
else:
    for sheet in sorted(sheets.glob("*.md")):
        title = sheet.read_text(encoding="utf-8").splitlines()[0].lstrip("# ")
        print(f"{sheet.name:<34} {title}")

# %% [markdown]
# From here on, the second half: gradients.

# %% [markdown]
# ## The problem
#
# Deep RL trains networks: it needs the gradient of a loss with respect to every parameter.
# PyTorch or JAX would compute it; this course stays in numpy, with its own small
# automatic-differentiation module, plain numpy you can read. But why not derive gradients by
# hand? Take the loss of a linear model. Stack the $N$ inputs $x_i \in \mathbb{R}^3$ as the rows
# of a matrix $X$ ($N \times 3$), the targets in $y$:
#
# $$L(w, b) = \frac{1}{N}\sum_{i=1}^N (x_i \cdot w + b - y_i)^2, \qquad
# \nabla_w L = \frac{2}{N} X^\top (Xw + b - y), \qquad \frac{\partial L}{\partial b} =
# \frac{2}{N}\sum_i (x_i \cdot w + b - y_i).$$
#
# Two slips are easy to make: forgetting the factor 2, and leaving $b$ out of the residual in
# $\nabla_w L$ (copying the formula of a model without a bias). Here is each, trained with plain
# gradient descent (`rc.SGD`) and with Adam (`rc.Adam`, the optimiser of every deep lesson), 300
# steps from zero, on 32 points whose features lie between 0 and 2:

# %%
N = 32
X = rng.uniform(0, 2, size=(N, 3))
y = X @ np.array([1.5, -2.0, 0.5]) + 1.0 + 0.1 * rng.normal(size=N)


def linear_loss(w, b):
    return np.mean((X @ w + b - y) ** 2)


def right_grads(w, b):
    residual = X @ w + b - y
    return 2 * X.T @ residual / N, 2 * np.mean(residual)


def no_two_grads(w, b):  # slip 1: the factor 2 dropped from both
    residual = X @ w + b - y
    return X.T @ residual / N, np.mean(residual)


def no_b_grads(w, b):  # slip 2: b left out of dL/dw's residual
    residual = X @ w + b - y
    return 2 * X.T @ (X @ w - y) / N, 2 * np.mean(residual)


def train(grads_of, optimiser, steps=300):
    params = {"w": np.zeros(3), "b": np.array(0.0)}
    state = optimiser.init(params)
    for _ in range(steps):
        gw, gb = grads_of(params["w"], params["b"])
        params, state = optimiser.step(params, {"w": gw, "b": np.asarray(gb)}, state)
    return params


slips = {"right": right_grads, "factor 2 missing": no_two_grads, "b missing from dL/dw": no_b_grads}
finals = {}
print(f"{'gradient':<22} {'loss after SGD (lr 0.1)':>24} {'after Adam (lr 0.05)':>22}")
for name, grads_of in slips.items():
    finals[name] = {"SGD": train(grads_of, rc.SGD(lr=0.1)), "Adam": train(grads_of, rc.Adam(lr=0.05))}
    losses = [linear_loss(p["w"], p["b"]) for p in finals[name].values()]
    print(f"{name:<22} {losses[0]:24.4f} {losses[1]:22.4f}")

loss_of = {name: {opt: linear_loss(p["w"], p["b"]) for opt, p in runs.items()} for name, runs in finals.items()}
assert loss_of["factor 2 missing"]["SGD"] > 1.2 * loss_of["right"]["SGD"]            # slower ...
assert abs(loss_of["factor 2 missing"]["Adam"] / loss_of["right"]["Adam"] - 1) < 1e-3  # ... or not at all
assert all(loss_of["b missing from dL/dw"][opt] > 5 * loss_of["right"][opt] for opt in ("SGD", "Adam"))

stuck = finals["b missing from dL/dw"]["Adam"]
slipped_here = np.linalg.norm(no_b_grads(stuck["w"], stuck["b"])[0])
true_here = np.linalg.norm(right_grads(stuck["w"], stuck["b"])[0])
print(f"with b missing from dL/dw, Adam's final loss is {loss_of['b missing from dL/dw']['Adam'] / loss_of['right']['Adam']:.0f} "
      f"times the right gradient's; where it stopped, |slipped dL/dw| = {slipped_here:.1e} but "
      f"|true dL/dw| = {true_here:.3f}")
assert slipped_here < 1e-3 < 0.05 < true_here

# %% [markdown]
# A wrong scale is the mild case: gradient descent with the factor 2 missing is gradient descent
# with half the learning rate, slower; Adam divides each step by the gradient's running size, so
# it does not notice at all. A wrong *direction* is not mild: both optimisers converge, steadily
# and without an error, to the point where the slipped gradient is zero, which is not where the
# loss is smallest (the true gradient there is far from zero), and the loss stays many times
# too high. Nothing in the training tells you. You need a way to check any gradient, and a way
# to get gradients without deriving them at all.

# %% [markdown]
# ## The idea
#
# **Check** a gradient with central finite differences: for each coordinate $i$, with $e_i$ the
# $i$-th unit vector,
#
# $$\frac{\partial L}{\partial w_i} \approx \frac{L(w + \epsilon e_i) - L(w - \epsilon e_i)}{2\epsilon}.$$
#
# Taylor's theorem gives its error: the even terms cancel, leaving $\epsilon^2 L'''/6$, while the
# forward difference $(L(w + \epsilon e_i) - L(w))/\epsilon$ keeps an error of $\epsilon L''/2$. A
# smaller $\epsilon$ is not always better, though: each value of $L$ carries a rounding error of
# about $10^{-16}$ of its size in float64 ($10^{-7}$ in float32), and dividing by $\epsilon$
# magnifies it. Measured on $f(x) = e^x$ at 20 points, against the exact $f'(x) = e^x$:

# %%
points = rng.uniform(-1, 1, size=20)
epsilons = 10.0 ** -np.arange(1, 13)


def median_error(estimate, x):
    return float(np.median(np.abs(estimate / np.exp(x) - 1)))  # relative to the true derivative


sweep = {"forward, float64": [], "central, float64": [], "central, float32": []}
p32 = points.astype(np.float32)
for eps in epsilons:
    e32 = np.float32(eps)
    sweep["forward, float64"].append(median_error((np.exp(points + eps) - np.exp(points)) / eps, points))
    sweep["central, float64"].append(median_error((np.exp(points + eps) - np.exp(points - eps)) / (2 * eps), points))
    central32 = (np.exp(p32 + e32) - np.exp(p32 - e32)) / (2 * e32)
    sweep["central, float32"].append(median_error(central32.astype(np.float64), points))
sweep = {k: np.array(v) for k, v in sweep.items()}

print("where rounding is negligible (eps from 1e-1 to 1e-4), the median relative error:")
print(f"{'eps':>6}  {'forward':>9}  {'central':>9}")
for k in range(4):
    print(f"{epsilons[k]:6.0e}  {sweep['forward, float64'][k]:9.1e}  {sweep['central, float64'][k]:9.1e}")
shrink_fwd = sweep["forward, float64"][1] / sweep["forward, float64"][2]
shrink_cen = sweep["central, float64"][1] / sweep["central, float64"][2]
print(f"eps 10x smaller: the forward error shrinks {shrink_fwd:.0f}x, the central error {shrink_cen:.0f}x")
assert 9 < shrink_fwd < 11 and 90 < shrink_cen < 110

# %% [markdown]
# For smaller steps rounding starts to count, and its size depends on the last bits of `np.exp` on
# your CPU, so the next cell's printed numbers are not compared by the course's tests; the
# assertions after it are.

# %% tags=["nbval-ignore-output"]
best = {name: (epsilons[np.argmin(err)], err.min()) for name, err in sweep.items()}
for name, (eps, err) in best.items():
    print(f"{name}: smallest median error {err:.1e}, at eps = {eps:.0e}")
print(f"the best central difference is {best['forward, float64'][1] / best['central, float64'][1]:.0f} "
      f"times more accurate than the best forward one")
fig, ax = plt.subplots(figsize=(8, 3.5), dpi=100)
for (name, err), style in zip(sweep.items(), ["o-", "s-", "^--"]):
    ax.loglog(epsilons, err, style, label=name, ms=4)
ax.set(xlabel="step eps (smaller to the right)", ylabel="median relative error of f'(x)",
       title="Central differences are far more accurate, until rounding takes over")
ax.invert_xaxis()
ax.legend(loc="lower left", fontsize=9)
ax.grid(alpha=0.3)
plt.tight_layout()
plt.show()

# %%
central_best = sweep["central, float64"].min()
forward_best = sweep["forward, float64"].min()
float32_best = sweep["central, float32"].min()
assert central_best < 1e-10 and forward_best > 1e-9       # central reaches what forward cannot
assert central_best > 1e-12                                 # but not 12 digits
assert float32_best > 1e-6                                  # float32 never gets close
assert sweep["central, float64"][-1] > 100 * central_best  # too small an eps is worse again
for eps, err in zip(epsilons, sweep["central, float32"]):  # an error of exactly 1: the estimate
    if err == 1.0:                                         # was 0, x + eps rounded back to x
        assert np.mean(p32 + np.float32(eps) == p32) > 0.5
print("asserted: the best float64 central difference is below 1e-10 (but above 1e-12), the best "
      "forward one above 1e-9, the best float32 one above 1e-6, and eps = 1e-12 is 100x worse "
      "than the best eps; where the float32 error is 1, x + eps == x for most points")

# %% [markdown]
# (Where the float32 curve sits at 1, `x + eps` rounded back to `x`: the difference was 0.)
# So a gradient check uses central differences in float64, with $\epsilon$ near $10^{-5}$
# (exercise 2b predicts the best $\epsilon$). It needs two evaluations of the loss per
# parameter: too slow to train a network with (a network has thousands of parameters), but good
# for testing.
#
# **Compute** gradients with reverse-mode automatic differentiation (autodiff). Run the loss once,
# recording every operation. Each operation knows its local derivative as a **vector-Jacobian
# product** (vjp): a function that turns the gradient of its output into the gradients of its
# inputs. Walking the recorded operations backwards applies the chain rule to the whole program.
# The smallest example, $L = \tanh(w x)$: forward, $u = wx$ and $L = \tanh(u)$; backward,
# $\bar L = 1$, $\bar u = \bar L\,(1 - \tanh^2 u)$, $\bar w = \bar u\, x$ (a bar is the gradient
# of $L$ with respect to that quantity).

# %%
w_scalar, x_scalar = 0.7, 2.0
by_hand = (1 - np.tanh(w_scalar * x_scalar) ** 2) * x_scalar
value, by_autodiff = rc.value_and_grad(lambda w: rc.tanh(w * x_scalar))(np.array(w_scalar))
print(f"L = {value:.6f}   dL/dw by hand = {by_hand:.6f}   by value_and_grad = {float(by_autodiff):.6f}")
assert np.isclose(by_hand, by_autodiff, rtol=1e-12)

# %% [markdown]
# `rc.value_and_grad(f)` returns a function that gives both the value of `f` and the gradient with
# respect to its first argument. That argument can be a nested dict or list of arrays (the
# parameters of a network); the gradient comes back with the same structure. Inside `f`, use the
# `rc` versions of operations (`rc.tanh`, `rc.mean`, `rc.square`, `rc.log_softmax`, ...) and the
# operators `+ - * / @ **`: they record themselves. How? Here is `rc.tanh` and the helper every
# one-input operation uses:

# %%
print(inspect.getsource(rc.tanh))
print(inspect.getsource(rc.core.autodiff._unary))
print(inspect.getsource(rc.core.autodiff._record))
try:
    rc.tanh("0.5")
except TypeError as err:
    print(f"rc.tanh('0.5') raises TypeError: {err}")

# %% [markdown]
# The last argument of `_unary` is tanh's vjp, `g * (1 - y * y)`: the output's gradient `g` times
# the local derivative $1 - \tanh^2$, written with the output `y` it already computed. On a traced
# value (a `Tensor`) `_unary` stores, in the result's `parents`, the input and this vjp;
# `_record` also appends the result to the **tape** of the `value_and_grad` call in progress.
# Two details are input checking, not differentiation: on an untraced input, `_real` refuses
# anything that is not real numbers (a string, as the last line above shows, or a complex
# array); and `_record` makes the result with `Tensor.__new__(Tensor)`, which creates the
# object without running `Tensor(...)`'s checks of its arguments, because an operation's
# result is already a valid array.
# You can follow the chain by hand, without a tape, through each result's `parents`:

# %%
w_traced = rc.Tensor(np.array(w_scalar))
u = w_traced * x_scalar          # a multiplication, recorded with its vjp
L = rc.tanh(u)                   # tanh, recorded with its vjp
(u_again, tanh_vjp), = L.parents
grad_u = tanh_vjp(np.array(1.0))     # dL/du from dL/dL = 1
(w_again, times_x_vjp), = u.parents
grad_w = times_x_vjp(grad_u)         # dL/dw from dL/du
print(f"L.parents holds u: {u_again is u};  u.parents holds w: {w_again is w_traced}")
print(f"dL/du = {float(grad_u):.6f}   dL/dw = {float(grad_w):.6f}   (by hand: {by_hand:.6f})")
assert u_again is u and w_again is w_traced and np.isclose(float(grad_w), by_hand, rtol=1e-12)

# %% [markdown]
# `value_and_grad` does exactly this for a whole program: it wraps the parameters in `Tensor`s,
# runs `f` while `_record` fills the tape (in the order the operations ran, so every result
# comes after its inputs), and then one pass visits the tape in reverse, adding up each node's
# incoming gradients and handing them to its parents' vjps:

# %%
print(inspect.getsource(rc.core.autodiff._backward))

# %% [markdown]
# ## Build it
#
# Four steps, each graded by the cell after it: a gradient check, one operation's vjp, the
# backward pass of a small network by hand, and the optimiser that uses the gradients.
#
# **Step 1: a finite-difference gradient.** `my_numerical_grad(f, x, eps=1e-6)` returns the
# central-difference estimate of the gradient of `f` (a function from an array to a number) at
# `x`, an array of any shape; the result has `x`'s shape, and `x` is left as it was. It is the
# tool for testing any gradient.

# %% tags=["solution"]
def my_numerical_grad(f, x, eps=1e-6):
    x = np.array(x, dtype=np.float64)  # a copy: the caller's x is never touched
    grad = np.zeros_like(x)
    for i in range(x.size):
        step = np.zeros_like(x)
        step.flat[i] = eps
        grad.flat[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


# %%
assert rc.exercises.check("numerical_grad", my_numerical_grad)

# %% [markdown]
# With a gradient check (here the reference's, `rc.numerical_grad`), the slip from "The problem"
# shows at once, at the point where its training stopped:

# %%
w_stuck, b_stuck = stuck["w"], float(stuck["b"])
numeric = rc.numerical_grad(lambda w: linear_loss(w, b_stuck), w_stuck)
slipped = no_b_grads(w_stuck, b_stuck)[0]
print("dL/dw by finite differences:", np.round(numeric, 4) + 0.0)
print("dL/dw by the slipped formula:", np.round(slipped, 4) + 0.0)
relative = np.linalg.norm(numeric - slipped) / np.linalg.norm(numeric)
print(f"relative error |numeric - slipped| / |numeric| = {relative:.2f}")
assert relative > 0.5
assert np.allclose(numeric, right_grads(w_stuck, b_stuck)[0], rtol=1e-6, atol=1e-9)

# %% [markdown]
# **Step 2: one operation's vjp.** For a matrix product $C = AB$ ($A$ is $n \times k$, $B$ is
# $k \times m$) and $G = \partial L / \partial C$ (shaped like $C$), the vjp returns
# $(\partial L/\partial A, \partial L/\partial B)$, each shaped like its input. Write
# `my_matmul_vjp(G, A, B)`. Start from one entry, $C_{ij} = \sum_k A_{ik} B_{kj}$: which entries of
# $C$ does $A_{ik}$ touch, and with which factor? The check compares with autodiff on four pairs
# of shapes, one of them square (where shapes alone cannot tell a missing transpose).

# %% tags=["solution"]
def my_matmul_vjp(G, A, B):
    return G @ B.T, A.T @ G


# %%
assert rc.exercises.check("matmul_vjp", my_matmul_vjp)

# %% [markdown]
# **Step 3: backpropagation by hand.** A network with one hidden layer of tanh units,
#
# $$z = X W_1 + b_1,\quad h = \tanh(z),\quad \hat y = h W_2 + b_2,\quad
# L = \frac{1}{N}\sum_{i} (\hat y_i - y_i)^2,$$
#
# with $X$ of shape $N \times d$, $W_1$ $d \times k$, $b_1$ of length $k$ (added to every row),
# $W_2$ $k \times 1$, $b_2$ of length 1 and $y$ of shape $N \times 1$. The parameters come as
# `rlcourse` stores them, `params = [{"w": W1, "b": b1}, {"w": W2, "b": b2}]`. Write
# `my_backprop(params, X, y)` returning the gradients in the same structure: run the network
# forward keeping $z$, $h$ and $\hat y$, then go backwards from $\partial L/\partial \hat y$, one
# vjp per operation (a matrix product's is step 2's, tanh's is the one `_unary` stores above, and
# a bias added to every row receives the sum of its rows' gradients). This is what
# `value_and_grad` does for you from here on; the check compares with it.

# %% tags=["solution"]
def my_backprop(params, X, y):
    (W1, b1), (W2, b2) = (params[0]["w"], params[0]["b"]), (params[1]["w"], params[1]["b"])
    h = np.tanh(X @ W1 + b1)
    pred = h @ W2 + b2
    grad_pred = 2 * (pred - y) / len(X)
    grad_h, grad_W2 = my_matmul_vjp(grad_pred, h, W2)
    grad_z = grad_h * (1 - h**2)
    _, grad_W1 = my_matmul_vjp(grad_z, X, W1)
    return [{"w": grad_W1, "b": grad_z.sum(axis=0)}, {"w": grad_W2, "b": grad_pred.sum(axis=0)}]


# %%
assert rc.exercises.check("backprop", my_backprop)

# %% [markdown]
# **Step 4: one Adam step.** Adam keeps, per parameter, a running mean of the gradient ($m$) and
# of its square ($v$); both start at zero, so early averages are biased toward zero, and Adam
# divides that out. At step $t = 1, 2, \dots$ with gradient $g$:
#
# $$m \leftarrow \beta_1 m + (1-\beta_1) g,\quad v \leftarrow \beta_2 v + (1-\beta_2) g^2,\quad
# \hat m = \frac{m}{1-\beta_1^t},\quad \hat v = \frac{v}{1-\beta_2^t},\quad
# p \leftarrow p - \text{lr}\,\frac{\hat m}{\sqrt{\hat v} + \epsilon}.$$
#
# `my_adam_step(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8)` returns `(new_p, new_m, new_v)`
# for arrays `p, g, m, v`; the state it returns is the raw $m$ and $v$. (`rlcourse`'s optimisers
# hold this state for you: `opt = rc.Adam(lr)`, `state = opt.init(params)`, then
# `params, state = opt.step(params, grads, state)` at each step.)

# %% tags=["solution"]
def my_adam_step(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g**2
    m_hat, v_hat = m / (1 - b1**t), v / (1 - b2**t)
    return p - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


# %%
assert rc.exercises.check("adam_step", my_adam_step)

# %% [markdown]
# At $t = 1$, $\hat m = g$ and $\hat v = g^2$, so the first step is
# $\text{lr}\cdot g/(|g| + \epsilon)$: where $|g| \gg \epsilon$, every parameter moves by `lr`
# against the sign of its gradient, whatever the gradient's size. Adam's learning rate is a step
# *length*; this is also why it did not notice the missing factor 2 in "The problem".

# %% [markdown]
# ## Check it
#
# The invariants, asserted on `rlcourse`'s reference: autodiff agrees with central differences
# on every parameter array of a small network (in float64, where the differences are accurate);
# Adam's first step is `lr` times the sign of the gradient where $|g| \gg \epsilon$; the same seed
# gives the same network bit for bit. The network comes from `rc.mlp_init(sizes, seed)`: a list
# of `{"w", "b"}` layers, the structure `my_backprop` took, with tanh between layers;
# `rc.mlp(params, x)` runs it and `rc.tree_leaves(params)` lists its arrays.

# %%
net = rc.mlp_init([3, 16, 1], seed=SEED, dtype=np.float64)
inputs = rng.normal(size=(8, 3))
targets = rng.normal(size=(8, 1))


def net_loss(params):
    return rc.mean(rc.square(rc.mlp(params, inputs) - targets))


_, net_grads = rc.value_and_grad(net_loss)(net)
check_errors = {}
for layer in range(len(net)):
    for key in net[layer]:
        def loss_of_leaf(leaf, layer=layer, key=key):
            trial = [dict(p) for p in net]
            trial[layer][key] = leaf
            return net_loss(trial)

        numeric_leaf = rc.numerical_grad(loss_of_leaf, net[layer][key])
        scale = np.max(np.abs(numeric_leaf)) + 1e-12
        check_errors[f"layer {layer} {key}"] = np.max(np.abs(numeric_leaf - net_grads[layer][key])) / scale
n_params = sum(leaf.size for leaf in rc.tree_leaves(net))
print(f"{len(check_errors)} parameter arrays, {n_params} numbers checked")

# %% [markdown]
# The measured errors (rounding-level numbers: not compared by the tests, bounded by the assert):

# %% tags=["nbval-ignore-output"]
for name, err in check_errors.items():
    print(f"{name}: largest error {err:.1e} (relative to the array's largest gradient)")
print(f"worst: {max(check_errors.values()):.1e}")

# %%
assert max(check_errors.values()) < 1e-7, check_errors

opt = rc.Adam(lr=0.01)
moved_net, _ = opt.step(net, net_grads, opt.init(net))
smallest_g = min(np.min(np.abs(g)) for g in rc.tree_leaves(net_grads))
for before, after, g in zip(rc.tree_leaves(net), rc.tree_leaves(moved_net), rc.tree_leaves(net_grads)):
    assert np.allclose(after - before, -0.01 * g / (np.abs(g) + 1e-8), rtol=1e-9, atol=0)  # t = 1
    assert np.allclose(after - before, -0.01 * np.sign(g), rtol=1e-4, atol=0)  # as |g| >> eps
same = rc.mlp_init([3, 16, 1], seed=SEED, dtype=np.float64)
assert all(np.array_equal(a, b) for a, b in zip(rc.tree_leaves(net), rc.tree_leaves(same)))
print(f"every parameter array passes the gradient check (error below 1e-7); Adam's first step "
      f"moved all {n_params} parameters by lr against their gradient's sign, to within 1e-4 "
      f"(the smallest |g| is {smallest_g:.0e}, far above eps = 1e-8); the same seed gave the same "
      f"network")

# %% [markdown]
# A gradient check can also fail when nothing is wrong. `relu`, `max`, `clip` (PPO's loss in
# lesson 10 clips) have kinks, where the derivative jumps. If a point lies within $\epsilon$ of
# a kink, the central difference straddles it:

# %%
relu_sum = lambda v: rc.sum(rc.relu(v))  # noqa: E731
near_kink = np.array([3e-7, 0.5])        # the first entry is 3e-7 from relu's kink at 0
numeric_kink = rc.numerical_grad(lambda v: float(relu_sum(v)), near_kink, eps=1e-6)
_, exact_kink = rc.value_and_grad(relu_sum)(near_kink)
print(f"relu at x = 3e-7 and x = 0.5: central differences (eps = 1e-6) give "
      f"{numeric_kink[0]:.2f} and {numeric_kink[1]:.2f}; autodiff gives {exact_kink[0]:.2f} and {exact_kink[1]:.2f}")
assert abs(numeric_kink[0] - exact_kink[0]) > 0.3 and np.isclose(numeric_kink[1], exact_kink[1])

# %% [markdown]
# Relu's slope is 1 just right of 0 and 0 left of it; the difference quotient over
# $[x - \epsilon, x + \epsilon]$ averages the two. Not a bug in the gradient: check such
# functions at points farther than $\epsilon$ from their kinks. (For a network too large to
# check every parameter, the usual practice is a random subset of coordinates, and an error
# relative to the gradients' size, as above.)

# %% [markdown]
# ## Use it
#
# Fit a small network to a noisy curve: 128 points $x \in [-1, 1]$, targets
# $\sin(3x)$ plus Gaussian noise of standard deviation 0.1, a 1-32-32-1 tanh network, Adam, 400
# full-batch steps. This is the loop every deep-RL lesson repeats: a loss, `value_and_grad`, an
# optimiser step. Six seeds (each a different initialisation and noise draw). Each fit is then
# measured on held-out data: fresh noisy targets at 1001 points $x$ on a dense grid, all but the
# two ends between the training points.

# %%
NOISE = 0.1
SEEDS = range(6)
x_fit = np.linspace(-1, 1, 128)[:, None]
x_dense = np.linspace(-1, 1, 1001)[:, None]
runs = []
for seed in SEEDS:
    noise_rng = np.random.default_rng(seed)
    y_fit = np.sin(3 * x_fit) + NOISE * noise_rng.normal(size=x_fit.shape)
    y_held_out = np.sin(3 * x_dense) + NOISE * noise_rng.normal(size=x_dense.shape)
    params = rc.mlp_init([1, 32, 32, 1], seed=seed, dtype=np.float64)
    opt = rc.Adam(lr=1e-2)
    state = opt.init(params)
    loss_and_grad = rc.value_and_grad(lambda p, y=y_fit: rc.mean(rc.square(rc.mlp(p, x_fit) - y)))
    losses = []
    for _ in range(400):
        loss, grads = loss_and_grad(params)
        params, state = opt.step(params, grads, state)
        losses.append(loss)
    fit = rc.mlp(params, x_dense)
    # a model that memorises: it joins the noisy training targets with straight lines
    memoriser = np.interp(x_dense[:, 0], x_fit[:, 0], y_fit[:, 0])[:, None]
    runs.append({"losses": np.array(losses), "params": params, "y": y_fit,
                 "train": float(np.mean(losses[-20:])),
                 "held_out": float(np.mean((fit - y_held_out) ** 2)),
                 "truth": float(np.mean((fit - np.sin(3 * x_dense)) ** 2)),
                 "memoriser_held_out": float(np.mean((memoriser - y_held_out) ** 2)),
                 "spike": float(np.max(losses[200:]) / np.mean(losses[-20:]))})

# %% [markdown]
# The loss is Adam's, so it is not monotone: it spikes now and then (the plot below shows them),
# and a single step can land on a spike. The training loss reported is therefore the mean of
# the last 20 steps. Each seed's numbers (trained networks' last bits vary between CPUs, so
# these are not compared by the tests; the summary after them is):

# %% tags=["nbval-ignore-output"]
print(f"{'seed':>4}  {'train (last 20)':>15}  {'held-out':>9}  {'vs sin(3x)':>10}  "
      f"{'memoriser held-out':>18}  {'largest spike, steps 200-399':>29}")
for seed, run in zip(SEEDS, runs):
    print(f"{seed:>4}  {run['train']:15.4f}  {run['held_out']:9.4f}  {run['truth']:10.4f}  "
          f"{run['memoriser_held_out']:18.4f}  {run['spike']:26.1f} x")

# %%
def summary(key):
    values = np.array([run[key] for run in runs])
    return values, f"median {np.median(values):.4f} (range {values.min():.4f}-{values.max():.4f})"


train, train_text = summary("train")
held_out, held_text = summary("held_out")
truth, truth_text = summary("truth")
memorised, memorised_text = summary("memoriser_held_out")
spikes, _ = summary("spike")
print(f"noise variance {NOISE**2:.4f}; over {len(runs)} seeds:")
print(f"  training loss (mean of the last 20 steps): {train_text}")
print(f"  error on held-out noisy points:            {held_text}")
print(f"  error against sin(3x) itself:              {truth_text}")
print(f"  a memoriser's error on the held-out points: {memorised_text} (its training loss is 0)")
print(f"  largest loss in steps 200-399: median {np.median(spikes):.1f} times the final level "
      f"(range {spikes.min():.1f}-{spikes.max():.1f})")
assert np.all(train < 1.5 * NOISE**2)               # not underfit
assert np.all(held_out - train < NOISE**2)          # what it learned carries over to new points,
assert np.all(held_out - train < memorised)         # a smaller gap than a memoriser's (its train is 0),
assert np.all(held_out < memorised)                 # and a smaller held-out error, seed by seed
assert np.all(truth < NOISE**2)                     # closer to sin(3x) than the noisy targets are
assert np.all(spikes > 1.05)                        # the loss is not monotone near the end

# %% [markdown]
# On every seed the training loss ends near the noise variance, and the error on fresh noisy
# points is higher by less than the noise variance: what the network learned carries over to
# points it never saw. A model that memorises, joining the noisy training targets with straight
# lines, has training loss 0 and a larger error on the same held-out points than the network of
# the same seed. The seeds differ, though: the table shows some networks fitting part of the
# noise (a lower training loss, a higher held-out error) more than others. Against $\sin(3x)$
# itself, every network's error is below the noise variance: it is closer to the curve than the
# noisy targets are. (The asserted bounds are loose on purpose, so that they do not depend on
# these six seeds.)

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5), dpi=100)
for seed, run in zip(SEEDS, runs):
    ax1.semilogy(run["losses"], lw=1, label=f"seed {seed}")
ax1.axhline(NOISE**2, color="gray", ls="--", label="noise variance")
ax1.set(xlabel="Adam step", ylabel="mean squared error (log scale)",
        title="The loss falls to the noise level, with spikes")
ax1.set_yticks([0.01, 0.02, 0.05, 0.1, 0.2, 0.5], ["0.01", "0.02", "0.05", "0.1", "0.2", "0.5"])
ax1.legend(fontsize=9, ncol=2)
ax2.scatter(x_fit, runs[0]["y"], s=6, color="gray", label="noisy targets")
ax2.plot(x_dense, rc.mlp(runs[0]["params"], x_dense), color="C1", lw=4, alpha=0.6, label="network (seed 0)")
ax2.plot(x_dense, np.sin(3 * x_dense), color="black", ls="--", lw=1.2, label="sin(3x)")
ax2.set(xlabel="x", ylabel="y", title="The fit follows sin(3x), not the noise")
ax2.legend(fontsize=9, loc="upper left")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | `TypeError: operand 'Tensor' does not support ufuncs`, or `TypeError: Tensor.mean() got an unexpected keyword argument 'dtype'` (`'out'` for `np.sum`) | a numpy function (`np.tanh`, `np.exp`; `np.mean`, `np.sum`) applied to traced parameters | use the `rc` version: `rc.tanh`, `rc.mean`, `rc.sum`, `rc.log_softmax` |
# | `the function must return a scalar loss` | the loss is still an array | reduce it: `rc.mean(...)` or `rc.sum(...)` |
# | a gradient that is exactly zero | the path from the parameters to the loss was cut (`rc.stop_gradient`, `.value`, a comparison) | keep that path in `rc` operations |
# | training converges, to a loss that stays too high | a hand-derived gradient with a wrong direction (a term left out, a transpose) | check it against central differences ("Build it" after step 1) |
# | a gradient check fails in float32 | float32 rounding, magnified by 1/eps: the float32 curve in "The idea" never comes near float64's | check in float64: `dtype=np.float64` |
# | a gradient check fails at a few entries of a relu network | a point within eps of a kink ("Check it") | check at points away from kinks, or with a smaller eps |
# | a bug in one layer goes unnoticed | only one parameter array was checked | check every array, as "Check it" does |
# | the last state of an episode gets the value of a start state | learning from `obs` of the step that ended the episode: it already starts the next one | the last observation is `final_obs` |
#
# The first three, shown:

# %% tags=["raises-exception"]
rc.value_and_grad(lambda p: np.mean(rc.tanh(p["w"])))({"w": np.ones(3)})

# %% tags=["raises-exception"]
rc.value_and_grad(lambda p: rc.tanh(p["w"]))({"w": np.ones(3)})

# %%
_, cut = rc.value_and_grad(lambda p: rc.mean(rc.stop_gradient(p["w"]) ** 2))({"w": np.ones(3)})
print("gradient through stop_gradient:", cut["w"])
assert not np.any(cut["w"])

# %% [markdown]
# ## Exercises
#
# Each is new work: an optimiser, a derivative without a rounding floor, the best step of a
# gradient check, and a second-order step, none of which the lesson built.
#
# **1. Easy: SGD with momentum.** Plain gradient descent crawls along a long, narrow valley: the
# steep direction limits the step size (past lr = 2/curvature it diverges), and the shallow one
# then takes many steps. Here is the reference `rc.SGD` on $f(w) = (w_1^2 + 100\, w_2^2)/2$
# (curvatures 1 and 100), counting the steps to get within $10^{-3}$ of the minimum:

# %%
def steps_to_minimum(optimiser, limit=5000):
    """Steps until |w| < 1e-3 from w = (1, 1); None if |w| grows past 1e3 (diverged)."""
    w = {"w": np.array([1.0, 1.0])}
    state = optimiser.init(w)
    for k in range(1, limit + 1):
        w, state = optimiser.step(w, {"w": w["w"] * np.array([1.0, 100.0])}, state)
        if np.linalg.norm(w["w"]) < 1e-3:
            return k
        if np.linalg.norm(w["w"]) > 1e3:
            return None
    return limit


plain = steps_to_minimum(rc.SGD(lr=0.015))
plain_edge = steps_to_minimum(rc.SGD(lr=0.0199))  # just below 2/100
too_big = steps_to_minimum(rc.SGD(lr=0.021))      # just above 2/100
heavy = steps_to_minimum(rc.SGD(lr=0.015, momentum=0.9))
print(f"steps to |w| < 1e-3: plain SGD {plain} (lr 0.015), {plain_edge} (lr 0.0199); "
      f"SGD with momentum 0.9 {heavy} (lr 0.015); plain SGD with lr 0.021: "
      f"{'diverges' if too_big is None else too_big}")
assert too_big is None and heavy < min(plain, plain_edge) / 3

# %% [markdown]
# Momentum keeps a **velocity**: a running sum of the gradients in which the newest enters with
# weight 1 and every older one is multiplied by $\beta$ once per step; the parameters then move
# by `lr` times the velocity, against it. (This is `rc.SGD`'s and PyTorch's convention; some
# texts fold `lr` into the velocity or average with weight $1 - \beta$.) Write
# `sgd_momentum_step(params, grads, velocity, lr, beta=0.9)` returning
# `(new_params, new_velocity)`. Then the number `momentum_speedup`: on a long stretch where the
# gradient stays the same, $g$, how many times longer than plain SGD's step ($\text{lr}\cdot g$)
# does the step become, for $\beta = 0.9$?

# %% tags=["solution"]
def sgd_momentum_step(params, grads, velocity, lr, beta=0.9):
    velocity = beta * velocity + grads
    return params - lr * velocity, velocity


momentum_speedup = 1 / (1 - 0.9)

# %%
assert rc.exercises.check("sgd_momentum_step", sgd_momentum_step)
assert rc.exercises.check("momentum_speedup", momentum_speedup)

# %% [markdown]
# **2. Medium: a derivative with no rounding floor.** The complex-step derivative of a function
# that also works on complex numbers (sums, products, `np.exp`, `np.sin`, ...) is
# $f'(x) \approx \operatorname{Im} f(x + i h)/h$: Taylor's theorem gives
# $f(x + ih) = f(x) + ih f'(x) - h^2 f''(x)/2 + \dots$, so the imaginary part holds $h f'(x)$ with
# an error of order $h^2$, and no subtraction. Write `complex_step_grad(f, x, h=1e-20)`: the
# gradient of `f` at `x` (any shape), one coordinate at a time, as a real array shaped like `x`.
# The check wants agreement to 12 digits, which central differences cannot reach.

# %% tags=["solution"]
def complex_step_grad(f, x, h=1e-20):
    x = np.asarray(x, dtype=np.float64)
    grad = np.zeros(x.shape)
    for i in range(x.size):
        z = x.astype(np.complex128)
        z.flat[i] += 1j * h
        grad.flat[i] = np.imag(f(z)) / h
    return grad


# %%
assert rc.exercises.check("complex_step_grad", complex_step_grad)

# %% [markdown]
# **2b. The best step of a central difference.** "The idea" measured the central difference's
# error falling as $\epsilon$ shrinks and then rising again. Model it: truncation contributes
# $\epsilon^2 |f'''(x)|/6$, and rounding contributes $u|f(x)|/\epsilon$, where $u$ is the
# precision's unit roundoff ($2^{-53} \approx 1.1 \times 10^{-16}$ in float64, $2^{-24}$ in
# float32). Write `best_eps(f_x, f3_x, u=2**-53)`: the $\epsilon$ that minimises
# $E(\epsilon) = \epsilon^2 |f'''|/6 + u |f|/\epsilon$, given the values $f(x)$ and $f'''(x)$. The
# check tries four cases of the formula, then holds your prediction for $e^x$ against the best
# $\epsilon$ that a fine sweep measures.

# %% tags=["solution"]
def best_eps(f_x, f3_x, u=2.0**-53):
    return (3 * u * abs(f_x) / abs(f3_x)) ** (1 / 3)


# %%
assert rc.exercises.check("best_eps", best_eps)

# %% [markdown]
# **3. Hard: a Newton step without the Hessian.** Newton's method steps by $x = -H^{-1} g$,
# with $g$ the gradient and $H$ the Hessian (the matrix of second derivatives). On a
# regularised logistic regression with 6 weights, forming $H$ from gradients (by central
# differences of `rc.grad`, two gradients per weight) and solving:

# %%
features = rng.normal(size=(200, 6))
labels = (features @ rng.normal(size=6) + 0.5 * rng.normal(size=200) > 0).astype(float)


def logistic_loss(w):
    z = features @ w
    return -rc.mean(labels * rc.log_sigmoid(z) + (1 - labels) * rc.log_sigmoid(-z)) + 0.005 * rc.sum(w * w)


gradient = rc.grad(logistic_loss)


def hessian_by_differences(w, eps=1e-5):
    return np.stack([(gradient(w + eps * e) - gradient(w - eps * e)) / (2 * eps) for e in np.eye(len(w))])


w_newton, w_descent = np.zeros(6), np.zeros(6)
curvature = np.linalg.eigvalsh(hessian_by_differences(w_newton)).max()
newton_steps = descent_steps = None
for k in range(1, 2001):
    if newton_steps is None:
        w_newton = w_newton - np.linalg.solve(hessian_by_differences(w_newton), gradient(w_newton))
        if np.linalg.norm(gradient(w_newton)) < 1e-8:
            newton_steps = k
    w_descent = w_descent - gradient(w_descent) / curvature
    if np.linalg.norm(gradient(w_descent)) < 1e-8:
        descent_steps = k
        break
print(f"steps to |g| < 1e-8: Newton {newton_steps}, gradient descent (lr = 1/largest curvature) "
      f"{descent_steps}")
assert newton_steps is not None and newton_steps < 10 and descent_steps > 10 * newton_steps

# %% [markdown]
# A network's $H$ has (number of parameters)$^2$ entries: too many to form or solve with. But
# **conjugate gradient** (CG) solves $Hx = -g$ using $H$ only through products $Hv$, and $Hv$
# is the derivative of the gradient along $v$, which two autodiff gradients give by a central
# difference, $(\nabla L(w + \epsilon v) - \nabla L(w - \epsilon v))/2\epsilon$. CG from $x = 0$,
# with $r = -g$ and $p = r$, repeats:
#
# $$\alpha = \frac{r^\top r}{p^\top H p},\quad x \leftarrow x + \alpha p,\quad
# r_{\text{new}} = r - \alpha H p,\quad p \leftarrow r_{\text{new}} +
# \frac{r_{\text{new}}^\top r_{\text{new}}}{r^\top r}\, p,\quad r \leftarrow r_{\text{new}}.$$
#
# On a quadratic with $d$ weights it reaches the exact solution in $d$ iterations; stopped
# earlier it gives a **truncated Newton step**, the best step within the directions explored so
# far (Martens' Hessian-free optimisation and TRPO's natural-gradient step use it this way).
# Write `newton_cg(loss, w, iters)`: the step after `iters` CG iterations, for a traced `loss`
# of a 1-D array `w` (`rc.grad(loss)` gives its gradient function). The check compares with the
# same iterations on the exact Hessian, stopped early and run to the end.

# %% tags=["solution"]
def newton_cg(loss, w, iters):
    grad_fn = rc.grad(loss)

    def hessian_times(v, eps=1e-5):
        return (grad_fn(w + eps * v) - grad_fn(w - eps * v)) / (2 * eps)

    x = np.zeros_like(w)
    r = -grad_fn(w)
    p = r.copy()
    for _ in range(iters):
        Hp = hessian_times(p)
        alpha = (r @ r) / (p @ Hp)
        x = x + alpha * p
        r_new = r - alpha * Hp
        p = r_new + (r_new @ r_new) / (r @ r) * p
        r = r_new
    return x


# %%
assert rc.exercises.check("newton_cg", newton_cg)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | agent, environment | "the AI and the world" | the policy that picks actions, and the system that answers each action with a reward and the next observation |
# | return | "the score" | the sum of an episode's rewards (lesson 02 adds a discount) |
# | terminated / truncated | "done" | the episode reached an end state / a time limit cut it; only after `terminated` is there no future to value |
# | `final_obs` | "the next state" | the last observation of a finished episode; `obs` then already starts the next one |
# | gradient check | "finite differences" | comparing a gradient with central differences in float64, away from kinks |
# | autodiff | "the framework computes the gradient" | the program's operations are recorded and their local derivatives chained backwards; exact up to rounding, not numerical |
# | reverse mode | "backprop" | one backward pass gives the gradient of one number with respect to all parameters |
# | vjp | "the backward function" | vector-Jacobian product: maps the gradient of an op's output to the gradients of its inputs |
# | tape | "the graph" | the list of recorded operations of one `value_and_grad` call, in the order they ran, walked backwards |
# | Adam | "the default optimiser" | per-parameter steps of about `lr` (where the gradient is much larger than eps), from bias-corrected running means of the gradient and its square |
# | seed | "random state" | the integer that makes every random draw repeatable |
#
# ## Further reading
#
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed., chapter 3: the
#   agent-environment interface, returns and episodes; the textbook lessons 01-09 follow.
# - Gymnasium's documentation, *Handling time limits*, the `step` API and the vector
#   environments' autoreset modes: why `terminated` and `truncated` are separate flags
#   (`rlcourse`'s CartPole reproduces Gymnasium's CartPole-v1).
# - Baydin, Pearlmutter, Radul, Siskind (2018), *Automatic differentiation in machine learning: a
#   survey*, JMLR: forward and reverse mode, and why reverse mode suits a scalar loss.
# - Karpathy's *micrograd* and the CS231n notes *Backpropagation, Intuitions* and *Neural
#   Networks Part 3* (gradient checks: relative errors, kinks): a scalar autodiff in a hundred
#   lines, and the practice of checking gradients.
# - Kingma & Ba (2015), *Adam: A method for stochastic optimization*, ICLR: the update and its
#   bias correction, in two pages.
# - Squire & Trapp (1998), *Using complex variables to estimate derivatives of real functions*,
#   SIAM Review: the complex step of exercise 2, and the test function its check uses.
# - Nocedal & Wright (2006), *Numerical Optimization*, 2nd ed., chapter 5 (conjugate gradient)
#   and section 7.1 (truncated Newton with Hessian-vector products): exercise 3.
# - Martens (2010), *Deep learning via Hessian-free optimization*, ICML: CG on curvature-vector
#   products for networks.
# - Sutskever, Martens, Dahl, Hinton (2013), *On the importance of initialization and momentum in
#   deep learning*, ICML: momentum and Nesterov's variant (written there with `lr` inside the
#   velocity, the convention exercise 1's checker names).
