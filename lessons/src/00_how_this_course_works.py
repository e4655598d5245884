# %% [markdown]
# # 00 · How this course works
#
# *Prerequisites:* none (Python and numpy; derivatives from calculus)
# *Time:* 50 minutes
# *You will build:* a central-difference gradient check, a loss's gradient by hand and through autodiff, and one Adam step; then the same pieces, from `rlcourse`, fit a small network.

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
# The environments with episodes in `rlcourse` (CartPole, the grid worlds) share two calls:
# `env.reset(seed) -> obs` and `env.step(actions) -> Step(obs, reward, terminated, truncated,
# final_obs)`, for `n` copies at once (arrays with a first axis of size `n`). (Lesson 01's bandit
# has no states, so its `step` returns only rewards; lesson 15's tic-tac-toe is a two-player
# game.) Here is CartPole, the task the deep-RL lessons learn: a pole hinged on a cart. The observation is the cart's position $x$ and velocity, and
# the pole's angle $\theta$ and angular velocity; action 0 pushes the cart left, 1 pushes it
# right; every step earns reward 1; the episode terminates when the pole leans more than 12
# degrees or the cart leaves the track, and is truncated after 500 steps. A policy that always
# pushes right:

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
print(f"the episode's return: {env.episode_returns[-1]:.0f} (its length: {env.episode_lengths[-1]} steps)")

twelve_degrees = 12 * np.pi / 180
assert step.terminated[0] and not step.truncated[0]
assert abs(step.final_obs[0, 2]) > twelve_degrees      # the pole was past 12 degrees ...
assert np.all(np.abs(step.obs[0]) <= 0.05)             # ... and obs is already a fresh start

# %% [markdown]
# Read the last two lines of the table. On the step where the episode ends, `obs` is **already the
# first observation of the next episode**: the environment resets itself in the same step, so
# that `n` copies can run side by side without waiting for each other (Gymnasium's vector
# environments instead reset on the following call to `step`). The last observation of
# the finished episode, the one where the pole is past 12 degrees, is in `final_obs`. Which of the
# two you learn from matters: from a terminated episode there is no future to value; from a
# truncated one there is, and it starts at `final_obs` (lessons 05 and 09 build on this).
#
# How good a policy is shows in its return. Three policies, each run for 20 episodes:

# %%
policies = {
    "always push right": lambda obs: np.ones(len(obs), dtype=int),
    "push toward the lean": lambda obs: (obs[:, 2] > 0).astype(int),
    "push toward the lean and its motion": lambda obs: (obs[:, 2] + 0.5 * obs[:, 3] > 0).astype(int),
}
scores = {}
for name, policy in policies.items():
    scores[name] = rc.evaluate(rc.CartPole(n=1), policy, episodes=20, seed=SEED)
    r = scores[name].returns
    print(f"{name:<36} return over 20 episodes: mean {r.mean():6.1f}, min {r.min():4.0f}, max {r.max():4.0f}")

env = rc.CartPole(n=1, seed=SEED)
obs, best, length = env.reset(), policies["push toward the lean and its motion"], 0
while True:
    step = env.step(best(obs))
    obs, length = step.obs, length + 1
    if step.terminated[0] or step.truncated[0]:
        break
print(f"one episode of the last policy: {length} steps, terminated={step.terminated[0]}, truncated={step.truncated[0]}")
means = [s.mean for s in scores.values()]
assert means[0] < means[1] < means[2] == 500.0
assert step.truncated[0] and not step.terminated[0] and length == 500

# %% [markdown]
# The third policy keeps the pole up until the time limit truncates every episode. Here we wrote
# that rule ourselves. The course is about **learning** such rules from rewards, from bandits
# (one state, lesson 01) to a neural network that learns CartPole (lessons 07-10) and a small
# language model that learns from a verifier (lesson 14).

# %% [markdown]
# ## The course map
#
# In a terminal, `rlcourse lessons` prints the map; here is the same command called from Python,
# on the notebooks in this folder:

# %% tags=["nbval-ignore-output"]
from rlcourse.course.cli import main as rlcourse_command

_ = rlcourse_command(["lessons", "--lessons", "."])

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
#   way. A question that asks *why* takes a letter or a number as its answer, graded too.
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
# their cases tell the usual wrong answers (a one-sided difference, a missing factor 2, a missing
# bias correction, ...) apart from the right one, and each is named when it fails. The right
# answer:

# %%
def sum_of_rewards(rewards):
    return float(np.sum(rewards))


assert rc.exercises.check("episode_return", sum_of_rewards)

# %% [markdown]
# `check` returns True only when every case passes. In a terminal, `rlcourse progress` runs your
# notebooks and lists each exercise as pass, fail or todo (`rlcourse progress --only 00` for
# this lesson alone). An instructor runs
# `rlcourse grade DIR1 DIR2 ... --csv grades.csv` on the students' folders and gets the same
# verdicts as a table and a CSV file, one row per student, lesson and exercise.

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
# hand? Take the loss of a linear
# model. Stack the $N$ inputs $x_i \in \mathbb{R}^3$ as the rows of a matrix $X$ ($N \times 3$),
# the targets in $y$:
#
# $$L(w, b) = \frac{1}{N}\sum_{i=1}^N (x_i \cdot w + b - y_i)^2 = \frac{1}{N}\lVert Xw + b - y\rVert^2 .$$
#
# Its gradient is $\nabla_w L = \frac{2}{N} X^\top (Xw + b - y)$. A common slip is to forget the
# factor 2. Nothing crashes:

# %%
N = 32
X = rng.normal(size=(N, 3))
y = X @ np.array([1.5, -2.0, 0.5]) + 0.3 + 0.1 * rng.normal(size=N)


def linear_loss(w, b):
    return np.mean((X @ w + b - y) ** 2)


def slipped_grads(w, b):  # the factor 2 is missing from both
    residual = X @ w + b - y
    return X.T @ residual / N, np.mean(residual)


w0, b0 = np.zeros(3), 0.0
print("slipped dL/dw at w = 0:", np.round(slipped_grads(w0, b0)[0], 4))
print(f"loss at w = 0, b = 0: {linear_loss(w0, b0):.3f}")

w, b = w0.copy(), b0
for _ in range(20):
    gw, gb = slipped_grads(w, b)
    w, b = w - 0.1 * gw, b - 0.1 * gb
print(f"loss after 20 gradient steps (lr 0.1) with the slipped gradient: {linear_loss(w, b):.3f}")
w, b = w0.copy(), b0
for _ in range(20):
    gw, gb = slipped_grads(w, b)
    w, b = w - 0.1 * 2 * gw, b - 0.1 * 2 * gb
print(f"loss after 20 gradient steps (lr 0.1) with the right one:      {linear_loss(w, b):.3f}")

# %% [markdown]
# Training with the slipped gradient still goes down, just more slowly, and you may never learn
# why. You cannot tell a wrong gradient by looking at it. You need a way to check any gradient,
# and a way to get gradients without deriving them at all.

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
ax.set(xlabel="step eps", ylabel="median relative error of f'(x)",
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
print("asserted: the best float64 central difference is below 1e-10 (but above 1e-12), the best "
      "forward one above 1e-9, the best float32 one above 1e-6, and eps = 1e-12 is 100x worse "
      "than the best eps")

# %% [markdown]
# (Where the float32 curve sits at 1, `x + eps` rounded back to `x`: the difference was 0.)
# So a gradient check uses central differences in float64, with $\epsilon$ between $10^{-6}$ and
# $10^{-5}$. It needs two evaluations of the loss per parameter: too slow to train a network with
# (a network has thousands of parameters), but good for testing.
#
# **Compute** gradients with reverse-mode automatic differentiation (autodiff). Run the loss once,
# recording every operation on a *tape*. Each operation knows its local derivative as a
# vector-Jacobian product (vjp): a function that turns the gradient of its output into gradients
# of its inputs. Walking the tape backwards applies the chain rule to the whole program. The
# smallest example, $L = \tanh(w x)$: forward, $u = wx$ and $L = \tanh(u)$; backward,
# $\bar L = 1$, $\bar u = \bar L\,(1 - \tanh^2 u)$, $\bar w = \bar u\, x$.

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
# operators `+ - * / @ **`: they record themselves on the tape. Here is the whole backward pass;
# it visits each recorded operation once, in reverse:

# %%
print(inspect.getsource(rc.core.autodiff._backward))

# %% [markdown]
# ## Build it
#
# Four steps, each graded by the cell after it.
#
# **Step 1: a finite-difference gradient.** `my_numerical_grad(f, x, eps=1e-6)` returns the
# central-difference estimate of the gradient of `f` (a function from an array to a number) at
# `x`, an array of any shape; the result has `x`'s shape. It is the tool for testing any
# gradient.

# %% tags=["solution"]
def my_numerical_grad(f, x, eps=1e-6):
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for i in range(x.size):
        step = np.zeros_like(x)
        step.flat[i] = eps
        grad.flat[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


# %%
assert rc.exercises.check("numerical_grad", my_numerical_grad)

# %% [markdown]
# With a gradient check (here the reference's, `rc.numerical_grad`) the slip from "The problem"
# shows at once:

# %%
numeric = rc.numerical_grad(lambda w: linear_loss(w, b0), w0)
print("finite differences:", np.round(numeric, 4))
print("slipped by hand:   ", np.round(slipped_grads(w0, b0)[0], 4))
ratio = numeric / slipped_grads(w0, b0)[0]
print(f"ratio: {np.round(ratio, 6)}")
assert np.allclose(ratio, 2.0, rtol=1e-6)

# %% [markdown]
# **Step 2: the gradient by hand, right.** `my_mse_grad(X, w, b, y)` returns the pair
# $(\nabla_w L, \partial L / \partial b)$ of the mean squared error $L(w, b)$ above, for `X` of
# shape `[N, d]` ($N$ points, $d$ features).

# %% tags=["solution"]
def my_mse_grad(X, w, b, y):
    residual = X @ w + b - y
    return 2 * X.T @ residual / len(y), 2 * np.mean(residual)


# %%
assert rc.exercises.check("mse_grad", my_mse_grad)

# %% [markdown]
# **Step 3: the same loss, for autodiff.** With autodiff you write only the loss, and write it
# with `rc` operations so it can be traced. `my_mse_loss(params, X, y)` takes
# `params = {"w": ..., "b": ...}` and returns $L$. The check differentiates it with
# `rc.value_and_grad` and compares the value and both gradients with the reference's.

# %% tags=["solution"]
def my_mse_loss(params, X, y):
    return rc.mean(rc.square(X @ params["w"] + params["b"] - y))


# %%
assert rc.exercises.check("mse_loss", my_mse_loss)

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
# for arrays `p, g, m, v`; the state it returns is the raw $m$ and $v$.

# %% tags=["solution"]
def my_adam_step(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g**2
    m_hat, v_hat = m / (1 - b1**t), v / (1 - b2**t)
    return p - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


# %%
assert rc.exercises.check("adam_step", my_adam_step)

# %% [markdown]
# At $t = 1$, $\hat m = g$ and $\hat v = g^2$, so the first step is $\text{lr}\cdot g/|g|$:
# every parameter moves by `lr` against the sign of its gradient, whatever the gradient's size.
# Adam's learning rate is a step *length*; "Check it" asserts this on a network.

# %% [markdown]
# ## Check it
#
# The invariants, asserted on `rlcourse`'s reference: autodiff agrees with central differences
# on every parameter array of a small network (in float64, where the differences are accurate);
# Adam's first step is `lr` times the sign of the gradient; the same seed gives the same network
# bit for bit.

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

opt = rc.Adam(lr=0.01, eps=1e-12)
moved_net, _ = opt.step(net, net_grads, opt.init(net))
for before, after, g in zip(rc.tree_leaves(net), rc.tree_leaves(moved_net), rc.tree_leaves(net_grads)):
    assert np.allclose(after - before, -0.01 * np.sign(g), rtol=1e-6, atol=1e-9)
same = rc.mlp_init([3, 16, 1], seed=SEED, dtype=np.float64)
assert all(np.array_equal(a, b) for a, b in zip(rc.tree_leaves(net), rc.tree_leaves(same)))
print(f"every parameter array passes the gradient check (error below 1e-7); Adam's first step "
      f"moved all {n_params} parameters by lr against their gradient's sign; the same seed "
      f"gave the same network")

# %% [markdown]
# ## Use it
#
# Fit a small network to a noisy curve: 128 points $x \in [-1, 1]$, targets
# $\sin(3x)$ plus Gaussian noise of standard deviation 0.1, a 1-32-32-1 tanh network, Adam, 400
# full-batch steps. This is the loop every deep-RL lesson repeats: a loss, `value_and_grad`, an
# optimiser step. Three seeds (each a different initialisation and noise draw); the fit is then
# measured against the true curve on 1001 points, all but the two ends between the training
# points.

# %%
NOISE = 0.1
x_fit = np.linspace(-1, 1, 128)[:, None]
x_dense = np.linspace(-1, 1, 1001)[:, None]
runs = []
for seed in range(3):
    noise_rng = np.random.default_rng(seed)
    y_fit = np.sin(3 * x_fit) + NOISE * noise_rng.normal(size=x_fit.shape)
    params = rc.mlp_init([1, 32, 32, 1], seed=seed, dtype=np.float64)
    opt = rc.Adam(lr=1e-2)
    state = opt.init(params)
    loss_and_grad = rc.value_and_grad(lambda p, y=y_fit: rc.mean(rc.square(rc.mlp(p, x_fit) - y)))
    losses = []
    for _ in range(400):
        loss, grads = loss_and_grad(params)
        params, state = opt.step(params, grads, state)
        losses.append(loss)
    truth_error = float(np.mean((rc.mlp(params, x_dense) - np.sin(3 * x_dense)) ** 2))
    runs.append({"losses": np.array(losses), "params": params, "y": y_fit, "truth": truth_error})

final = np.array([r["losses"][-1] for r in runs])
truth = np.array([r["truth"] for r in runs])
curve_itself = np.array([np.mean((np.sin(3 * x_fit) - r["y"]) ** 2) for r in runs])
print(f"noise variance: {NOISE**2:.4f}; the true curve's own error on the noisy targets: "
      f"median {np.median(curve_itself):.4f} (range {curve_itself.min():.4f}-{curve_itself.max():.4f})")
print(f"training loss after 400 steps: median {np.median(final):.4f} (range {final.min():.4f}-{final.max():.4f})")
print(f"error against sin(3x) on 1001 points: median {np.median(truth):.4f} (range {truth.min():.4f}-{truth.max():.4f})")
assert np.all(final < 1.5 * NOISE**2) and np.all(final > 0.5 * NOISE**2)
assert np.all(truth < NOISE**2)

# %% [markdown]
# On every seed the training loss ends near the noise variance, neither far above it (underfit)
# nor far below it (the noise memorised), and the network's squared error against $\sin(3x)$,
# on the dense grid between the training points, is below the noise variance: the network is closer to the
# curve than the noisy targets are. (The asserted bounds are loose on purpose, so that they
# hold for other seeds too, not just these three.)

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5), dpi=100)
for seed, run in enumerate(runs):
    ax1.semilogy(run["losses"], label=f"seed {seed}")
ax1.axhline(NOISE**2, color="gray", ls="--", label="noise variance")
ax1.set(xlabel="Adam step", ylabel="mean squared error",
        title="The loss falls to the noise level")
ax1.legend(fontsize=9)
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
# | `TypeError: operand 'Tensor' does not support ufuncs` | a numpy function (`np.tanh`, `np.mean`) applied to traced parameters | use the `rc` version: `rc.tanh`, `rc.mean`, `rc.log_softmax` |
# | `the function must return a scalar loss` | the loss is still an array | reduce it: `rc.mean(...)` or `rc.sum(...)` |
# | a gradient that is exactly zero | the path from the parameters to the loss was cut (`rc.stop_gradient`, `.value`, a comparison) | keep that path in `rc` operations |
# | a gradient check fails in float32 | float32 rounding, magnified by 1/eps: the float32 curve in "The idea" never comes near float64's | check in float64: `dtype=np.float64` |
# | a bug in one layer goes unnoticed | only one parameter array was checked | check every array, as "Check it" does |
# | the last state of an episode gets the value of a start state | learning from `obs` of the step that ended the episode: it already starts the next one | the last observation is `final_obs` |
#
# The first three, shown:

# %% tags=["raises-exception"]
rc.value_and_grad(lambda p: np.mean(np.tanh(p["w"])))({"w": np.ones(3)})

# %% tags=["raises-exception"]
rc.value_and_grad(lambda p: rc.tanh(p["w"]))({"w": np.ones(3)})

# %%
_, cut = rc.value_and_grad(lambda p: rc.mean(rc.stop_gradient(p["w"]) ** 2))({"w": np.ones(3)})
print("gradient through stop_gradient:", cut["w"])
assert not np.any(cut["w"])

# %% [markdown]
# ## Exercises
#
# Each is new work: an optimiser, a derivative and a second derivative the lesson did not build.
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
too_big = steps_to_minimum(rc.SGD(lr=0.021))  # above 2/100
heavy = steps_to_minimum(rc.SGD(lr=0.015, momentum=0.9))
print(f"steps to |w| < 1e-3: plain SGD {plain}, SGD with momentum 0.9 {heavy}; "
      f"plain SGD with lr 0.021: {'diverges' if too_big is None else too_big}")
assert too_big is None and heavy < plain / 3

# %% [markdown]
# Write `sgd_momentum_step(params, grads, velocity, lr, beta=0.9)` returning
# `(new_params, new_velocity)`, in the convention of `rc.SGD` and PyTorch: the velocity is
# $v \leftarrow \beta v + g$ and the step $p \leftarrow p - \text{lr}\, v$.

# %% tags=["solution"]
def sgd_momentum_step(params, grads, velocity, lr, beta=0.9):
    velocity = beta * velocity + grads
    return params - lr * velocity, velocity


# %%
assert rc.exercises.check("sgd_momentum_step", sgd_momentum_step)

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
# **2b. Why** does the central difference's error in the plot of "The idea" grow again as
# $\epsilon$ shrinks below $10^{-5}$? Set `why_error_floor` to one letter:
#
# - **A** the truncation error of the central difference grows as $\epsilon$ shrinks;
# - **B** $f(x+\epsilon)$ and $f(x-\epsilon)$ agree in their leading digits, the subtraction
#   cancels those and leaves their rounding errors (about $10^{-16}$ of $f$ each), which dividing
#   by $2\epsilon$ magnifies;
# - **C** float64 cannot represent numbers as small as $10^{-8}$;
# - **D** `np.exp` is accurate to only about 8 digits.

# %% tags=["solution"]
why_error_floor = "B"

# %%
assert rc.exercises.check("why_error_floor", why_error_floor)

# %% [markdown]
# **3. Hard: a Hessian-vector product.** A network's Hessian $H$ has (number of
# parameters)$^2$ entries, too many to form, but second-order methods can work with products $Hv$
# alone: conjugate gradient solves $Hx = g$ that way, and TRPO's natural-gradient step does it
# with the Hessian of a KL divergence. $Hv$ is the derivative of the gradient along $v$, so
# central differences of two autodiff gradients give it. Write
# `hessian_vector_product(loss, w, v, eps=1e-5)` for a traced `loss` of a 1-D array `w`
# (`rc.grad(loss)` gives its gradient function). The check compares with the exact $Hv$ of each
# test loss.

# %% tags=["solution"]
def hessian_vector_product(loss, w, v, eps=1e-5):
    gradient = rc.grad(loss)
    return (gradient(w + eps * v) - gradient(w - eps * v)) / (2 * eps)


# %%
assert rc.exercises.check("hessian_vector_product", hessian_vector_product)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | agent, environment | "the AI and the world" | the policy that picks actions, and the system that answers each action with a reward and the next observation |
# | return | "the score" | the sum of an episode's rewards (lesson 02 adds a discount) |
# | terminated / truncated | "done" | the episode reached an end state / a time limit cut it; only after `terminated` is there no future to value |
# | `final_obs` | "the next state" | the last observation of a finished episode; `obs` then already starts the next one |
# | gradient check | "finite differences" | comparing a gradient with central differences in float64 |
# | autodiff | "the framework computes the gradient" | the program's operations are recorded and their local derivatives chained backwards; exact up to rounding, not numerical |
# | reverse mode | "backprop" | one backward pass gives the gradient of one number with respect to all parameters |
# | vjp | "the backward function" | vector-Jacobian product: maps the gradient of an op's output to the gradients of its inputs |
# | Adam | "the default optimiser" | per-parameter steps of about `lr`, from bias-corrected running means of the gradient and its square |
# | seed | "random state" | the integer that makes every random draw, and so every printed number, repeatable |
#
# ## Further reading
#
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed., chapter 3: the
#   agent-environment interface, returns and episodes; the textbook lessons 01-09 follow.
# - Gymnasium's documentation, *Handling time limits* and the `step` API: why `terminated` and
#   `truncated` are separate flags (`rlcourse`'s CartPole reproduces Gymnasium's CartPole-v1).
# - Baydin, Pearlmutter, Radul, Siskind (2018), *Automatic differentiation in machine learning: a
#   survey*, JMLR: forward and reverse mode, and why reverse mode suits a scalar loss.
# - Kingma & Ba (2015), *Adam: A method for stochastic optimization*, ICLR: the update and its
#   bias correction, in two pages.
# - Squire & Trapp (1998), *Using complex variables to estimate derivatives of real functions*,
#   SIAM Review: the complex step of exercise 2, and the test function its check uses.
# - Pearlmutter (1994), *Fast exact multiplication by the Hessian*, Neural Computation: exact
#   Hessian-vector products, the idea exercise 3 approximates.
# - Sutskever, Martens, Dahl, Hinton (2013), *On the importance of initialization and momentum in
#   deep learning*, ICML: momentum and Nesterov's variant in the form used today.
