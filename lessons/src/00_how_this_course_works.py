# %% [markdown]
# # 00 · How this course works
#
# *Prerequisites:* none (Python and numpy; derivatives from calculus)
# *Time:* 30 minutes
# *You will build:* a gradient by hand, a gradient check, and a small regression fitted with Adam on `rlcourse`'s numpy autodiff.

# %% [markdown]
# Every lesson is a notebook you run top to bottom. Each one builds a method by hand in a few
# small numpy steps, then compares your version with the reference in the `rlcourse` package,
# which is tested, readable and imported as `rc`. Every lesson has the same parts: the problem,
# the idea, build it, check it, use it, pitfalls, exercises (they grade themselves), key terms and
# further reading.
#
# First, make sure the package you have is the one this lesson was written for.

# %%
import inspect

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
# How the pieces fit:
#
# | you see | where it lives | what it is for |
# |---|---|---|
# | `lessons/NN_topic.ipynb` | the notebooks | reading, running, doing exercises |
# | `rc.some_function` | `rlcourse/*.py` | the tested reference each lesson compares against |
# | `rc.exercises.check("name", your_fn)` | `rlcourse/exercises.py` | grades your function on small cases and says *why* it is wrong |
# | `pytest` | `tests/`, and nbval over `lessons/` | proves the reference and every printed number are current |
#
# Deep RL needs gradients of losses with respect to network parameters. Most courses reach for
# PyTorch here; this one stays in numpy, with a small automatic-differentiation module you can read
# in one sitting. This lesson shows why that module exists and how to use it.

# %% [markdown]
# ## The problem
#
# Gradients by hand are easy for one formula and error-prone for a network. Take the loss of a
# linear model, $L(w, b) = \frac{1}{N}\sum_i (x_i \cdot w + b - y_i)^2$. Its gradient is
# $\nabla_w L = \frac{2}{N} X^\top (Xw + b - y)$. A common slip is to forget the factor 2 or the
# $1/N$. Nothing crashes; training is just slower or unstable, and you may never know why.

# %%
x = rng.normal(size=(32, 3))
true_w = np.array([1.5, -2.0, 0.5])
y = x @ true_w + 0.3 + 0.1 * rng.normal(size=32)


def linear_loss(w, b):
    return np.mean((x @ w + b - y) ** 2)


def grad_w_slipped(w, b):
    return x.T @ (x @ w + b - y) / len(y)  # the factor 2 is missing


w0, b0 = np.zeros(3), 0.0
print("slipped gradient:", np.round(grad_w_slipped(w0, b0), 4))

# %% [markdown]
# Is that right? You cannot tell by looking. You need a way to check any gradient, and a way to
# get gradients without deriving them at all.

# %% [markdown]
# ## The idea
#
# **Check** a gradient with central finite differences: for each coordinate $i$,
#
# $$\frac{\partial L}{\partial w_i} \approx \frac{L(w + \epsilon e_i) - L(w - \epsilon e_i)}{2\epsilon}.$$
#
# The error of this estimate shrinks like $\epsilon^2$, so with float64 and $\epsilon \approx 10^{-6}$
# it agrees with the true gradient to about 8 digits. It needs two loss evaluations per parameter,
# far too slow for training, but perfect for testing.
#
# **Compute** gradients with reverse-mode automatic differentiation. Run the loss once, recording
# every operation on a *tape*. Each operation knows its local derivative: its vector-Jacobian
# product (vjp), which turns the gradient of its output into gradients of its inputs. Walking the
# tape backwards applies the chain rule to the whole program, at about the cost of one more
# forward pass, whatever the number of parameters.
#
# The smallest example: $L = \tanh(w x)$. Forward: $u = wx$, $L = \tanh(u)$. Backward:
# $\bar L = 1$, $\bar u = \bar L\,(1 - \tanh^2 u)$, $\bar w = \bar u\, x$.

# %%
w_scalar, x_scalar = 0.7, 2.0
by_hand = (1 - np.tanh(w_scalar * x_scalar) ** 2) * x_scalar
value, by_autodiff = rc.value_and_grad(lambda w: rc.tanh(w * x_scalar))(np.array(w_scalar))
print(f"L = {value:.6f}   dL/dw by hand = {by_hand:.6f}   by value_and_grad = {float(by_autodiff):.6f}")

# %% [markdown]
# `rc.value_and_grad(f)` returns a function that gives both the value of `f` and the gradient with
# respect to its first argument. That argument can be a nested dict or list of arrays (the
# parameters of a network); the gradient comes back with the same structure. Inside `f`, use the
# `rc` versions of operations (`rc.tanh`, `rc.log_softmax`, `rc.mean`, ...) and the ordinary
# operators `+ - * / @ **`: they record themselves on the tape. Here is the whole backward pass:

# %%
print(inspect.getsource(rc.core.autodiff._backward))

# %% [markdown]
# ## Build it
#
# **Step 1: a finite-difference gradient.** Write it once; you will use it to test every
# gradient in the course.

# %%
def my_numerical_grad(f, w, eps=1e-6):
    w = np.array(w, dtype=np.float64)
    grad = np.zeros_like(w)
    for i in range(w.size):
        step = np.zeros_like(w)
        step.flat[i] = eps
        grad.flat[i] = (f(w + step) - f(w - step)) / (2 * eps)
    return grad


numeric = my_numerical_grad(lambda w: linear_loss(w, b0), w0)
print("finite differences:", np.round(numeric, 4))
print("slipped by hand:   ", np.round(grad_w_slipped(w0, b0), 4))

# %% [markdown]
# The check exposes the slip: the hand-derived gradient is half the true one. **Step 2: the
# gradient by hand, fixed**, and compared with the finite differences.

# %%
def grad_w_by_hand(w, b):
    return 2 * x.T @ (x @ w + b - y) / len(y)


np.testing.assert_allclose(grad_w_by_hand(w0, b0), numeric, rtol=1e-6)
print("hand gradient matches finite differences")

# %% [markdown]
# **Step 3: the same gradient from `value_and_grad`.** You write only the loss; parameters go in
# a dict, and the gradients come back in the same dict shape.

# %%
def traced_loss(params):
    prediction = x @ params["w"] + params["b"]
    return rc.mean(rc.square(prediction - y))


loss0, grads = rc.value_and_grad(traced_loss)({"w": w0, "b": np.array(b0)})
np.testing.assert_allclose(grads["w"], grad_w_by_hand(w0, b0), rtol=1e-10)
print(f"loss {loss0:.4f}; dL/dw = {np.round(grads['w'], 4)}; dL/db = {float(grads['b']):.4f}")

# %% [markdown]
# **Step 4: one Adam step by hand.** Adam keeps running means of the gradient ($m$) and of its
# square ($v$), corrects their bias toward zero in early steps, and moves each parameter by
# $\text{lr}\cdot\hat m / (\sqrt{\hat v} + \epsilon)$:

# %%
def my_adam_step(p, g, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g**2
    m_hat, v_hat = m / (1 - b1**t), v / (1 - b2**t)
    return p - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


p1, _, _ = my_adam_step(w0, grads["w"], np.zeros(3), np.zeros(3), t=1, lr=0.1)
opt = rc.Adam(lr=0.1)
ref, _ = opt.step({"w": w0}, {"w": grads["w"]}, opt.init({"w": w0}))
np.testing.assert_allclose(p1, ref["w"], rtol=1e-12)
print("first Adam step:", np.round(p1 - w0, 6))

# %% [markdown]
# The first step moves every parameter by almost exactly `lr` against the sign of its gradient,
# whatever the gradient's size. That is why Adam's learning rate is a step *length*.

# %% [markdown]
# ## Check it
#
# The invariants, asserted. A gradient check on a network (float64, so the finite differences are
# accurate), Adam's first step, and the same seed giving the same network bit for bit.

# %%
net = rc.mlp_init([3, 16, 1], seed=SEED, dtype=np.float64)
inputs = rng.normal(size=(8, 3))
targets = rng.normal(size=(8, 1))


def net_loss(params):
    return rc.mean(rc.square(rc.mlp(params, inputs) - targets))


_, net_grads = rc.value_and_grad(net_loss)(net)
first_w = net[0]["w"]
numeric_w = rc.numerical_grad(lambda w: net_loss([{"w": w, "b": net[0]["b"]}, net[1]]), first_w)
error = np.max(np.abs(numeric_w - net_grads[0]["w"]))
assert error < 1e-7, error
print(f"largest gradient-check error over {first_w.size} weights: below 1e-7")

step, _ = rc.Adam(lr=0.01, eps=1e-12).step(net, net_grads, rc.Adam(lr=0.01).init(net))
moved = step[0]["w"] - net[0]["w"]
assert np.allclose(moved, -0.01 * np.sign(net_grads[0]["w"]))
same = rc.mlp_init([3, 16, 1], seed=SEED, dtype=np.float64)
assert all(np.array_equal(a, b) for a, b in zip(rc.tree_leaves(net), rc.tree_leaves(same)))
print("Adam's first step is lr * sign(g); the same seed gives identical parameters")

# %% [markdown]
# ## Use it
#
# Fit a small network to a noisy curve: a 1-32-32-1 tanh MLP, Adam, 400 full-batch steps. This is
# the loop every deep-RL lesson repeats: loss, `value_and_grad`, optimiser step.

# %%
x_fit = np.linspace(-1, 1, 128)[:, None]
y_fit = np.sin(3 * x_fit) + 0.1 * rng.normal(size=x_fit.shape)
params = rc.mlp_init([1, 32, 32, 1], seed=SEED, dtype=np.float64)
opt = rc.Adam(lr=1e-2)
state = opt.init(params)


def fit_loss(params):
    return rc.mean(rc.square(rc.mlp(params, x_fit) - y_fit))


losses = []
for _ in range(400):
    loss, grads = rc.value_and_grad(fit_loss)(params)
    params, state = opt.step(params, grads, state)
    losses.append(loss)

noise_floor = 0.1**2
print(f"loss: start {losses[0]:.3f}, end {losses[-1]:.4f} (noise variance {noise_floor:.2f})")
assert losses[-1] < 2 * noise_floor

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3), dpi=72)
ax1.semilogy(losses)
ax1.set(xlabel="Adam step", ylabel="mean squared error", title="Loss falls to the noise level")
ax1.axhline(noise_floor, color="gray", ls="--", label="noise variance")
ax1.legend()
ax2.scatter(x_fit, y_fit, s=6, color="gray", label="data")
ax2.plot(x_fit, rc.mlp(params, x_fit), color="C1", label="network")
ax2.set(xlabel="x", ylabel="y", title="The fit follows sin(3x), not the noise")
ax2.legend()
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | `TypeError: operand 'Tensor' does not support ufuncs` | a plain numpy function (`np.tanh`, `np.exp`) applied to traced parameters | use the `rc` version: `rc.tanh`, `rc.exp`, `rc.log_softmax` |
# | `must return a scalar loss` | the loss is still an array | reduce it: `rc.mean(...)` or `rc.sum(...)` |
# | gradient check fails by ~1e-3 in float32 | finite differences need float64 | build the network with `dtype=np.float64` for checks |
# | a gradient check "passes" but training diverges | checked one parameter group only | check every leaf, or at least one per layer |
# | gradient exactly zero | the loss used `rc.stop_gradient`, a comparison, or `.value` on the parameter | keep the path from parameters to loss in `rc` operations |
#
# The first one, shown:

# %% tags=["raises-exception"]
rc.value_and_grad(lambda p: np.mean(np.tanh(p["w"])))({"w": np.ones(3)})

# %% [markdown]
# ## Exercises
#
# 1. **Easy: a softmax that never overflows.** `softmax(z)` along the last axis, correct even
#    for logits like 1000.
# 2. **Medium: a finite-difference gradient.** `numerical_grad(f, x)` for any shape of `x`,
#    with central differences and $\epsilon = 10^{-5}$.
# 3. **Hard: one Adam step.** `adam_step(params, grads, m, v, t, lr)` returning
#    `(new_params, new_m, new_v)`, with bias correction (defaults $\beta_1=0.9$,
#    $\beta_2=0.999$, $\epsilon=10^{-8}$).

# %% tags=["solution"]
def softmax(z):
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# %%
rc.exercises.check("softmax", softmax)

# %% tags=["solution"]
def numerical_grad(f, x, eps=1e-5):
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for i in range(x.size):
        step = np.zeros_like(x)
        step.flat[i] = eps
        grad.flat[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


# %%
rc.exercises.check("numerical_grad", numerical_grad)

# %% tags=["solution"]
def adam_step(params, grads, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    m = b1 * m + (1 - b1) * grads
    v = b2 * v + (1 - b2) * grads**2
    m_hat, v_hat = m / (1 - b1**t), v / (1 - b2**t)
    return params - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


# %%
rc.exercises.check("adam_step", adam_step)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | autodiff | "the framework computes the gradient" | the program's operations are recorded and their local derivatives chained backwards; exact up to floating point, not numerical |
# | reverse mode | "backprop" | one backward pass gives the gradient of one scalar with respect to all parameters |
# | vjp | "the backward function" | vector-Jacobian product: maps the gradient of an op's output to the gradients of its inputs |
# | gradient check | "finite differences" | comparing analytic gradients with central differences in float64 |
# | Adam | "the default optimiser" | per-parameter steps of about `lr`, scaled by running first and second moments of the gradient |
# | seed | "random state" | the integer that makes every random draw, and so every printed number, repeatable |
#
# ## Further reading
#
# - Baydin, Pearlmutter, Radul, Siskind (2018), *Automatic differentiation in machine learning: a
#   survey*, JMLR: forward and reverse mode, and why reverse mode suits a scalar loss.
# - Kingma & Ba (2015), *Adam: A method for stochastic optimization*, ICLR: the update and its
#   bias correction, in two pages.
# - Griewank & Walther (2008), *Evaluating Derivatives*, SIAM: the tape and the cost bound of
#   reverse mode, in depth.
# - Sutton & Barto (2018), *Reinforcement Learning: An Introduction*, 2nd ed.: the textbook this
#   course follows for lessons 01-09.
