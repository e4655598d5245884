"""Lesson 00's exercises.

- the worked example of the orientation: ``episode_return``;
- Build it: ``numerical_grad`` (central differences), ``matmul_vjp`` (one operation's
  vector-Jacobian product), ``backprop`` (reverse mode by hand through a two-layer network),
  ``adam_step``;
- Exercises: ``sgd_momentum_step`` and ``momentum_speedup`` (a number), ``complex_step_grad``,
  ``best_eps`` (the step that minimises the central difference's error, also checked against a
  measured sweep), ``newton_cg`` (a truncated Newton step by conjugate gradient on
  Hessian-vector products).

Each ``explain`` recomputes the typical wrong answers (a forward difference, a missing
transpose, a missing tanh derivative, a missing bias correction, another momentum convention,
...) and names the one that matches. ``forbid`` lists what would do an exercise for the reader
(``rc.Adam`` for ``adam_step``, ``np.linalg.solve`` for ``newton_cg``, ...).
"""

import weakref

import numpy as np

from ...core import autodiff as ad
from ...core.optim import SGD, Adam
from ..registry import Case, register

__all__: list[str] = []  # registers exercises on import; nothing to export


def _matches(got, candidate, rtol=1e-8, atol=1e-12) -> bool:
    """True if ``got`` has ``candidate``'s shape and values (a wrong answer we recognise)."""
    try:
        got, candidate = np.asarray(got, dtype=float), np.asarray(candidate, dtype=float)
    except (TypeError, ValueError):
        return False
    return (got.shape == candidate.shape and bool(np.all(np.isfinite(got)))
            and np.allclose(got, candidate, rtol=rtol, atol=atol))


def _compare_arrays(rtol, atol):
    """A compare for one real array: shape, dtype kind, then values within rtol/atol."""
    def compare(got, expected):
        expected = np.asarray(expected)
        if isinstance(got, tuple):
            return f"expected one array of shape {expected.shape}, got a tuple"
        got = np.asarray(got)
        if np.iscomplexobj(got):
            return "your result is a complex array: return the real gradient (a float array)"
        if got.shape != expected.shape:
            return f"expected shape {expected.shape} (the shape of x), got shape {got.shape}"
        if got.dtype.kind not in "fiu":
            return f"expected an array of floats, got dtype {got.dtype}"
        got = got.astype(float)
        if not np.all(np.isfinite(got)):
            return "your result contains inf or NaN"
        if not np.allclose(got, expected, rtol=rtol, atol=atol):
            worst = np.argmax(np.abs(got - expected) / (atol + rtol * np.abs(expected)))
            where = np.unravel_index(worst, expected.shape)
            return (f"entry {tuple(int(i) for i in where)}: expected {expected[where]:.12g}, "
                    f"got {got[where]:.12g}")
        return None
    return compare


# ------------------------------------------------------------ orientation: episode_return
# The worked example of how a check reads: the return of one episode from its rewards.

def _episode_return_reference(rewards):
    return float(np.sum(rewards))


def _episode_return_cases():
    return [
        Case("CartPole-like: eight rewards of 1", (np.ones(8),)),
        Case("FrozenLake-like: only the last step pays", (np.array([0.0, 0.0, 0.0, 1.0]),)),
        Case("CliffWalking-like: -1 a step, -100 for the cliff",
             (np.array([-1.0, -1.0, -100.0, -1.0, -1.0]),)),
    ]


def _episode_return_explain(case, got, expected):
    (rewards,) = case.args
    if _matches(got, len(rewards)):
        return ("you counted the steps: that equals the return only when every reward is 1, "
                "as in CartPole")
    if _matches(got, np.sum(rewards[:-1])):
        return "you left out the last reward: the reward of the final step belongs to the episode"
    if _matches(got, np.mean(rewards)):
        return "you averaged the rewards: the return is their sum"
    return None


register(
    "episode_return", _episode_return_reference, _episode_return_cases,
    explain=_episode_return_explain,
    hint="the return of an episode adds up every reward it received, whatever their values",
)


# ------------------------------------------------------------ Build it 1: numerical_grad

def _numerical_grad_reference(f, x, eps=1e-6):
    return ad.numerical_grad(f, x, eps=eps)


class _Mutated:
    """What a numerical_grad answer returned when it also changed the caller's x."""

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return "a result, after changing the caller's x"


def _numerical_grad_call(fn, f, x, **kwargs):
    """Run ``fn`` and also check that it left the caller's ``x`` as it found it."""
    before = np.array(x, copy=True)
    out = fn(f, x, **kwargs)
    if not (np.shape(x) == before.shape and np.array_equal(x, before)):
        return _Mutated(out)
    return out


def _sum_of_squares(x):
    return float(np.sum(x**2))


def _sum_exp3(x):
    return float(np.sum(np.exp(3 * x)))


def _matrix_fn(W):
    return float(np.sum(np.tanh(W @ np.array([1.0, -1.0, 0.5]))))


def _square_of_sum(x):
    return float(np.sum(x) ** 2 + x[0] * x[-1])


def _sum_pow_1_5(x):
    return float(np.sum(np.asarray(x, dtype=float) ** 1.5))


def _numerical_grad_cases():
    return [
        Case("sum(x**2) at [1, -2]", (_sum_of_squares, np.array([1.0, -2.0]))),
        Case("sum(exp(3x)) at [0.5, 1, -0.3]",
             (_sum_exp3, np.array([0.5, 1.0, -0.3]))),
        Case("a 2x3 matrix argument", (_matrix_fn, np.array([[0.1, -0.4, 0.3], [0.9, 0.2, -1.1]]))),
        Case("sum(x)**2 + x0*x2 at 3 points",
             (_square_of_sum, np.array([0.3, -1.2, 2.0]))),
        Case("an integer x = [1, 2, 3] of sum(x**1.5)", (_sum_pow_1_5, np.array([1, 2, 3]))),
        # eps = 1e-2 moves the answer of sum(exp(3x)) by eps**2 * 27 / 6 ~ 5e-4 relative: a
        # function that ignores eps (and uses 1e-6) is told apart
        Case("sum(exp(3x)) with eps = 1e-2 passed as a keyword",
             (_sum_exp3, np.array([0.2, -0.4])), {"eps": 1e-2}),
    ]


def _one_sided(f, x, eps, sign):
    x = np.array(x, dtype=float)
    g = np.zeros_like(x)
    base = f(x)
    for i in range(x.size):
        shifted = x.copy()
        shifted.flat[i] += sign * eps
        g.flat[i] = sign * (f(shifted) - base) / eps
    return g


def _not_restored(f, x, eps):
    """Central differences that leave x[i] at x[i] - eps before moving on to x[i+1]."""
    x = np.array(x, dtype=float)
    g = np.zeros_like(x)
    for i in range(x.size):
        old = x.flat[i]
        x.flat[i] = old + eps
        up = f(x)
        x.flat[i] = old - eps
        g.flat[i] = (up - f(x)) / (2 * eps)
    return g


def _numerical_grad_explain(case, got, expected):
    if isinstance(got, _Mutated):
        return ("your function changed the caller's x (the values are still there after it "
                "returned): perturb a copy, or put each entry back, so that x is as you found it")
    f, x = case.args
    eps = case.kwargs.get("eps", 1e-6)
    arr = np.asarray(got)
    if arr.shape != expected.shape:
        if arr.size == expected.size:
            return (f"shape {arr.shape}: return the gradient shaped like x {expected.shape} "
                    "(x.flat and g.flat index any shape)")
        return None
    if arr.dtype.kind in "iu" or (np.issubdtype(np.asarray(x).dtype, np.integer)
                                  and np.allclose(arr, np.round(arr))):
        return ("integer results: x came in as integers, so x + eps (or np.zeros_like(x)) rounds "
                "back to integers. Convert x to float64 first: np.array(x, dtype=np.float64)")
    if arr.dtype == np.float32:
        return ("a float32 result: float32 rounding, divided by 2*eps, swamps the derivative; "
                "compute in float64")
    if "eps" in case.kwargs:
        for other in (1e-4, 1e-5, 1e-6, 1e-7, 1e-8):
            if _matches(got, ad.numerical_grad(f, x, eps=other), rtol=1e-9):
                return (f"the eps passed in ({eps:g}) was ignored: a step of {other:g} was used. "
                        "Use the eps argument")
    if _matches(got, 2 * expected):
        return "twice the gradient: a central difference divides by 2*eps, not eps"
    xf = np.asarray(x, dtype=float)
    if _matches(got, np.full(xf.shape, (f(xf + eps) - f(xf - eps)) / (2 * eps))):
        return ("every entry is the same number: you moved all coordinates at once; move one "
                "coordinate at a time (x + eps * e_i)")
    if _matches(got, 0.5 * expected):
        return "half the gradient: divide f(x + eps) - f(x - eps) by 2*eps, not 4*eps"
    for sign, name in ((1, "forward"), (-1, "backward")):
        one_sided = _one_sided(f, x, eps, sign)
        if _matches(got, one_sided):
            return (f"that is a {name} difference: its error shrinks like eps, a central "
                    "difference's like eps**2. Use (f(x + eps e_i) - f(x - eps e_i)) / (2 eps)")
        if _matches(got, one_sided / 2):
            return (f"a {name} difference divided by 2*eps: step both ways, "
                    "f(x + eps e_i) - f(x - eps e_i)")
    if _matches(got, _not_restored(f, x, eps)):
        return ("x[i] is not restored after its two evaluations, so the next partial derivative "
                "is taken at a shifted point: put the old value back (or perturb a copy)")
    return None


register(
    "numerical_grad", _numerical_grad_reference, _numerical_grad_cases,
    compare=_compare_arrays(rtol=1e-7, atol=1e-9), explain=_numerical_grad_explain,
    call=_numerical_grad_call,
    forbid=[ad.numerical_grad, ad.value_and_grad, ad.grad],
    hint="move one coordinate at a time, the same small step both ways, and leave x as you found it",
)


# ------------------------------------------------------------ Build it 2: matmul_vjp
# The vector-Jacobian product of C = A @ B: from G = dL/dC to (dL/dA, dL/dB).

def _matmul_vjp_reference(G, A, B):
    _, (gA, gB) = ad.value_and_grad(lambda A, B: ad.sum((A @ B) * G), argnums=(0, 1))(A, B)
    return gA, gB


def _matmul_vjp_cases():
    rng = np.random.default_rng(6)
    return [
        Case("A 2x3, B 3x4", (rng.normal(size=(2, 4)), rng.normal(size=(2, 3)),
                              rng.normal(size=(3, 4)))),
        Case("square A and B, 3x3 (shapes cannot catch a missing transpose here)",
             (rng.normal(size=(3, 3)), rng.normal(size=(3, 3)), rng.normal(size=(3, 3)))),
        Case("one row: A 1x3, B 3x2", (rng.normal(size=(1, 2)), rng.normal(size=(1, 3)),
                                       rng.normal(size=(3, 2)))),
        Case("a column out: A 4x2, B 2x1", (rng.normal(size=(4, 1)), rng.normal(size=(4, 2)),
                                            rng.normal(size=(2, 1)))),
    ]


def _matmul_vjp_explain(case, got, expected):
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "return the pair (dL/dA, dL/dB)"
    G, A, B = case.args
    gA, gB = (np.asarray(g, dtype=float) for g in got)
    eA, eB = expected
    if gA.shape == eB.shape and gB.shape == eA.shape and _matches(gA, eB) and _matches(gB, eA):
        return "the pair is swapped: return (dL/dA, dL/dB), in the order of the inputs"
    for mine, right, name, shape in ((gA, eA, "dL/dA", A.shape), (gB, eB, "dL/dB", B.shape)):
        if _matches(mine, right):
            continue
        if mine.shape == right.T.shape and _matches(mine, right.T):
            return (f"{name} is transposed: it must have the shape of its input, {shape}; "
                    f"dL/dA = G @ B.T and dL/dB = A.T @ G")
        if name == "dL/dA" and G.shape[1] == B.shape[0] and _matches(mine, G @ B):
            return ("dL/dA = G @ B is missing a transpose: C_ij = sum_k A_ik B_kj, so "
                    "dL/dA_ik = sum_j G_ij B_kj, which is G @ B.T")
        if name == "dL/dB" and A.shape[0] == A.shape[1] and _matches(mine, A @ G):
            return ("dL/dB = A @ G is missing a transpose: dL/dB_kj = sum_i A_ik G_ij, which is "
                    "A.T @ G")
        if mine.shape != right.shape:
            return f"{name} must have its input's shape {shape}, got {mine.shape}"
        return None
    return None


def _matmul_vjp_explain_error(case, err):
    if "matmul" in str(err) or "shapes" in str(err) or "aligned" in str(err):
        G, A, B = case.args
        return (f"a shape mismatch: G is {G.shape} like C, A is {A.shape}, B is {B.shape}; "
                f"each gradient has its input's shape, so dL/dA = G @ B.T and dL/dB = A.T @ G")
    return None


register(
    "matmul_vjp", _matmul_vjp_reference, _matmul_vjp_cases, explain=_matmul_vjp_explain,
    explain_error=_matmul_vjp_explain_error,
    forbid=[ad.value_and_grad, ad.grad, ad.numerical_grad, "_matmul_grad_a", "_matmul_grad_b"],
    hint="write one entry, C_ij = sum_k A_ik B_kj, differentiate it, and let the shapes guide "
         "which matrix is transposed",
)


# ------------------------------------------------------------ Build it 3: backprop
# Reverse mode by hand through pred = tanh(X @ W1 + b1) @ W2 + b2, L = mean((pred - y)**2).

def _backprop_loss(params, X, y):
    hidden = ad.tanh(X @ params[0]["w"] + params[0]["b"])
    return ad.mean(ad.square(hidden @ params[1]["w"] + params[1]["b"] - y))


def _backprop_reference(params, X, y):
    return ad.grad(_backprop_loss)(params, X, y)


def _backprop_params(rng, d, k):
    return [{"w": rng.normal(size=(d, k)), "b": 0.3 * rng.normal(size=k)},
            {"w": rng.normal(size=(k, 1)) / np.sqrt(k), "b": 0.3 * rng.normal(size=1)}]


def _backprop_cases():
    rng = np.random.default_rng(7)
    return [
        Case("8 points, 3 inputs, 4 hidden units",
             (_backprop_params(rng, 3, 4), rng.normal(size=(8, 3)), rng.normal(size=(8, 1)))),
        Case("5 points, 2 inputs, 6 hidden units",
             (_backprop_params(rng, 2, 6), rng.normal(size=(5, 2)), rng.normal(size=(5, 1)))),
        Case("one point, 4 inputs, 3 hidden units",
             (_backprop_params(rng, 4, 3), rng.normal(size=(1, 4)), rng.normal(size=(1, 1)))),
    ]


def _backprop_variants(params, X, y):
    """The usual wrong backward passes, by name: the gradients each gives."""
    (W1, b1), (W2, b2) = (params[0]["w"], params[0]["b"]), (params[1]["w"], params[1]["b"])
    n = len(X)

    def forward(with_b1=True, with_b2=True):
        z = X @ W1 + (b1 if with_b1 else 0.0)
        h = np.tanh(z)
        return z, h, h @ W2 + (b2 if with_b2 else 0.0)

    z, h, pred = forward()

    def backward(dpred, local=None, bias=np.sum, h=h):
        dh = dpred @ W2.T
        dz = dh * ((1 - h**2) if local is None else local)
        return [{"w": X.T @ dz, "b": bias(dz, axis=0)},
                {"w": h.T @ dpred, "b": bias(dpred, axis=0)}]

    right = 2 * (pred - y) / n
    _, h_no_b1, pred_no_b1 = forward(with_b1=False)
    _, _, pred_no_b2 = forward(with_b2=False)
    return {
        "b1 is missing from the forward pass: z = X @ W1 + b1":
            backward(2 * (pred_no_b1 - y) / n, h=h_no_b1),
        "b2 is missing from the forward pass: pred = h @ W2 + b2":
            backward(2 * (pred_no_b2 - y) / n),
        "the tanh's vjp is missing: dL/dz = dL/dh * (1 - h**2), where h = tanh(z)":
            backward(right, local=np.ones_like(h)),
        "the tanh's derivative is 1 - tanh(z)**2 = 1 - h**2: you used 1 - z**2, with the "
        "layer's input z instead of its output h": backward(right, local=1 - z**2),
        "half the gradient: the derivative of (pred - y)**2 is 2 * (pred - y)":
            backward(right / 2),
        "N times the gradient: the loss is a mean over the N points, so dL/dpred = "
        "2 * (pred - y) / N": backward(right * n),
        "wrong sign: the residual is pred - y": backward(-right),
        "the biases' gradients are averaged over the points: the 1/N is already in dL/dpred, "
        "so sum over the points (the axis broadcasting added)": backward(right, bias=np.mean),
    }


def _backprop_explain(case, got, expected):
    params, X, y = case.args
    try:
        shapes = [{k: np.shape(layer[k]) for k in ("w", "b")} for layer in got]
    except (TypeError, KeyError, IndexError):
        return ("return the gradients in the structure of params: a list of two dicts with "
                "keys 'w' and 'b'")
    for mine, right in zip(shapes, expected):
        if mine["b"] != right["b"].shape and len(mine["b"]) == 2:
            return ("a bias gradient has a batch axis: b was broadcast over the points, so its "
                    "gradient sums dL/dz over them (axis 0)")
        if mine["w"] != right["w"].shape and mine["w"] == right["w"].T.shape:
            return (f"a weight gradient is transposed ({mine['w']} for a {right['w'].shape} "
                    f"matrix): each gradient has its parameter's shape, dL/dW = input.T @ dL/dout")
    for why, variant in _backprop_variants(params, X, y).items():
        if all(_matches(g[k], w[k]) for g, w in zip(got, variant) for k in ("w", "b")):
            return why
    if all(_matches(got[1][k], expected[1][k]) for k in ("w", "b")):
        return ("the output layer is right, the hidden layer is not: dL/dh = dL/dpred @ W2.T, "
                "then through the tanh, then dL/dW1 = X.T @ dL/dz")
    return None


def _backprop_explain_error(case, err):
    if "matmul" in str(err) or "shapes" in str(err) or "aligned" in str(err):
        return ("a shape mismatch: each gradient has its input's shape; a matmul's vjp is "
                "G @ B.T for the left input and A.T @ G for the right one")
    if isinstance(err, (KeyError, TypeError, IndexError)):
        return "params is a list of two dicts, [{'w': W1, 'b': b1}, {'w': W2, 'b': b2}]"
    return None


register(
    "backprop", _backprop_reference, _backprop_cases, explain=_backprop_explain,
    explain_error=_backprop_explain_error,
    forbid=[ad.value_and_grad, ad.grad, ad.numerical_grad, ad.Tensor],
    hint="run the network forward and keep z, h and pred; then go backwards from dL/dpred, one "
         "vjp per operation, each gradient shaped like the array it belongs to",
)


# ------------------------------------------------------------ Build it 4: adam_step

def _adam_reference(params, grads, m, v, t, lr, b1=0.9, b2=0.999, eps=1e-8):
    opt = Adam(lr=lr, betas=(b1, b2), eps=eps)
    new, state = opt.step({"p": params}, {"p": grads}, {"t": t - 1, "m": {"p": m}, "v": {"p": v}})
    return new["p"], state["m"]["p"], state["v"]["p"]


def _adam_cases():
    rng = np.random.default_rng(1)
    p, g = rng.normal(size=3), rng.normal(size=3)
    return [
        Case("first step (t=1) from zero moments", (p, g, np.zeros(3), np.zeros(3), 1, 0.1)),
        Case("step t=5 with running moments",
             (p, g, 0.1 * rng.normal(size=3), np.abs(0.1 * rng.normal(size=3)), 5, 0.01)),
        Case("t=2, b1=0.5, b2=0.9, eps=0.01 (passed as keywords)",
             (p, g, 0.2 * rng.normal(size=3), 1e-4 * np.abs(rng.normal(size=3)), 2, 0.05),
             {"b1": 0.5, "b2": 0.9, "eps": 0.01}),
    ]


def _adam_variants(params, grads, m, v, t, lr, b1, b2, eps):
    """The usual wrong Adam steps, by name: (new_params, new_m, new_v) of each."""
    def step(m_new, v_new, m_hat, v_hat, p_new=None, state=None):
        p_out = params - lr * m_hat / (np.sqrt(v_hat) + eps) if p_new is None else p_new
        return (p_out, *(state or (m_new, v_new)))

    m1 = b1 * m + (1 - b1) * grads
    v1 = b2 * v + (1 - b2) * grads**2
    mh, vh = m1 / (1 - b1**t), v1 / (1 - b2**t)
    with np.errstate(divide="ignore", invalid="ignore"):
        return {
            "no bias correction: divide m by (1 - b1**t) and v by (1 - b2**t)":
                step(m1, v1, m1, v1),
            "bias correction with t + 1: the first step is t = 1, so divide by (1 - b**t)":
                step(m1, v1, m1 / (1 - b1 ** (t + 1)), v1 / (1 - b2 ** (t + 1))),
            "eps inside the square root: the step is m_hat / (sqrt(v_hat) + eps)":
                step(m1, v1, mh, vh, p_new=params - lr * mh / np.sqrt(vh + eps)),
            "eps is missing from the denominator: m_hat / (sqrt(v_hat) + eps) (it matters where "
            "v_hat is small, as in this case)":
                step(m1, v1, mh, vh, p_new=params - lr * mh / np.sqrt(vh)),
            "eps added to the uncorrected sqrt(v) (Kingma & Ba's 'efficient' form with "
            "eps_hat = eps): here eps is added to sqrt(v_hat), as rc.Adam and PyTorch do":
                step(m1, v1, mh, vh, p_new=params - lr * np.sqrt(1 - b2**t) / (1 - b1**t)
                     * m1 / (np.sqrt(v1) + eps)),
            "the correction of v is applied outside the square root: v_hat = v / (1 - b2**t), "
            "then sqrt(v_hat)":
                step(m1, v1, mh, vh, p_new=params - lr * mh / (np.sqrt(v1) / (1 - b2**t) + eps)),
            "v corrected with b1: v_hat = v / (1 - b2**t), with v's own b2":
                step(m1, v1, mh, v1 / (1 - b1**t)),
            "v must average the squared gradient g**2, not g or |g|":
                step(m1, b2 * v + (1 - b2) * np.abs(grads), mh,
                     (b2 * v + (1 - b2) * np.abs(grads)) / (1 - b2**t)),
            "the returned state must be the raw averages m and v, not the bias-corrected ones":
                step(m1, v1, mh, vh, state=(mh, vh)),
            "wrong sign: Adam moves against the gradient, params - lr * ...":
                step(m1, v1, mh, vh, p_new=params + lr * mh / (np.sqrt(vh) + eps)),
            "b1 and b2 swapped: m uses b1 (0.9 by default), v uses b2 (0.999)":
                _adam_reference(params, grads, m, v, t, lr, b2, b1, eps),
            "the keyword arguments b1, b2, eps were ignored: use the ones passed in":
                _adam_reference(params, grads, m, v, t, lr),
        }


def _adam_explain(case, got, expected):
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        return "return the triple (new_params, new_m, new_v)"
    params, grads, m, v, t, lr = case.args
    kw = {"b1": 0.9, "b2": 0.999, "eps": 1e-8, **case.kwargs}
    for why, variant in _adam_variants(params, grads, m, v, t, lr, kw["b1"], kw["b2"],
                                       kw["eps"]).items():
        if all(_matches(g, w, rtol=1e-9) for g, w in zip(got, variant)):
            return why
    b1, b2 = kw["b1"], kw["b2"]
    if t == 1 and not np.all(np.isfinite(np.asarray(got[0], dtype=float))):
        return ("inf or NaN at t = 1: the bias correction divided by zero; t counts from 1, so "
                "divide by (1 - b**t), not (1 - b**(t - 1))")
    if t > 1:
        m1 = b1 * m + (1 - b1) * grads
        v1 = b2 * v + (1 - b2) * grads**2
        mh, vh = m1 / (1 - b1 ** (t - 1)), v1 / (1 - b2 ** (t - 1))
        if _matches(got[0], params - lr * mh / (np.sqrt(vh) + kw["eps"]), rtol=1e-9):
            return "bias correction with t - 1: t counts from 1, so divide by (1 - b**t)"
    if all(_matches(g, e) for g, e in zip(got[1:], expected[1:])):
        return "m and v are right but the parameter step is not: p - lr * m_hat / (sqrt(v_hat) + eps)"
    return None


register(
    "adam_step", _adam_reference, _adam_cases, explain=_adam_explain, forbid=[Adam],
    hint="update both running averages first, correct each for its start at zero (it depends on t), "
         "then step each parameter against its corrected mean, scaled by its corrected spread",
)


# ------------------------------------------------------------ Exercise 1: sgd_momentum_step

def _momentum_reference(params, grads, velocity, lr, beta=0.9):
    new, state = SGD(lr=lr, momentum=beta).step({"p": params}, {"p": grads},
                                                {"velocity": {"p": velocity}})
    return new["p"], state["velocity"]["p"]


def _momentum_cases():
    rng = np.random.default_rng(2)
    p, g = rng.normal(size=4), rng.normal(size=4)
    return [
        Case("from zero velocity, lr 0.1", (p, g, np.zeros(4), 0.1)),
        Case("with a running velocity, lr 0.05", (p, g, rng.normal(size=4), 0.05)),
        Case("beta = 0.5 passed as a keyword, lr 0.2", (p, g, rng.normal(size=4), 0.2),
             {"beta": 0.5}),
    ]


def _momentum_explain(case, got, expected):
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "return the pair (new_params, new_velocity)"
    params, grads, velocity, lr = case.args
    beta = case.kwargs.get("beta", 0.9)
    v_new = beta * velocity + grads
    ema = beta * velocity + (1 - beta) * grads
    folded = beta * velocity + lr * grads
    sutskever = beta * velocity - lr * grads
    variants = {
        "params and velocity swapped: return (new_params, new_velocity)":
            (v_new, params - lr * v_new),
        "the (1 - beta) * g average is another convention; here v = beta * v + g (as in "
        "PyTorch's SGD and rc.SGD)": (params - lr * ema, ema),
        "the step used the old velocity: update v first, then params - lr * v_new":
            (params - lr * velocity, v_new),
        "wrong sign: move against the velocity, params - lr * v":
            (params + lr * v_new, v_new),
        "lr folded into the velocity (v = beta * v + lr * g, another convention): here the "
        "velocity is beta * v + g and lr multiplies it in the step": (params - folded, folded),
        "that is Sutskever et al.'s convention (v = beta * v - lr * g, then params + v): the "
        "velocity there holds -lr times the gradients. Here, as in rc.SGD and PyTorch, "
        "v = beta * v + g and the step is params - lr * v": (params + sutskever, sutskever),
        "the step is params - lr * (v + g) with the old v: beta is missing; the new velocity "
        "is beta * v + g": (params - lr * (velocity + grads), v_new),
        "that is Nesterov's look-ahead step (params - lr * (g + beta * v_new)); this exercise "
        "asks for plain momentum": (params - lr * (grads + beta * v_new), v_new),
        "beta passed as a keyword was ignored": _momentum_reference(params, grads, velocity, lr),
        "the velocity returned is the old one: return the updated velocity, the state of the "
        "next step": (params - lr * v_new, velocity),
    }
    for why, variant in variants.items():
        if all(_matches(a, b, rtol=1e-9) for a, b in zip(got, variant)):
            return why
    return None


register(
    "sgd_momentum_step", _momentum_reference, _momentum_cases, explain=_momentum_explain,
    forbid=[SGD],
    hint="the velocity is a decaying sum of past gradients (nothing damps the new one); the "
         "parameters then move against the new velocity",
)


def _speedup_reference():
    return 10.0


def _number_compare(got, expected):
    if isinstance(got, (bool, np.bool_)) or not isinstance(got, (int, float, np.integer,
                                                                 np.floating)):
        return f"answer with a number, got {got!r}"
    return None if np.isclose(float(got), expected, rtol=1e-6) else "not this number"


def _speedup_explain(case, got, expected):
    try:
        value = float(got)
    except (TypeError, ValueError):
        return None
    for number, why in ((9.0, "that is beta / (1 - beta): the newest gradient counts too, with "
                              "weight 1"),
                        (100.0, "that is 1 / (1 - beta)**2; the velocity is the geometric sum "
                                "1 + beta + beta**2 + ..."),
                        (1.0, "then momentum would change nothing on a steady slope; the velocity "
                              "sums the past gradients"),
                        (0.1, "that is 1 - beta; the sum 1 + beta + beta**2 + ... is larger than 1"),
                        (1.9, "that is 1 + beta: every older gradient still counts, not only the "
                              "last two")):
        if np.isclose(value, number):
            return why
    return None


register(
    "momentum_speedup", _speedup_reference, [Case("your number")], compare=_number_compare,
    explain=_speedup_explain,
    hint="write the velocity after k steps of the same gradient as a sum, and let k grow",
)


# ------------------------------------------------------------ Exercise 2: complex_step_grad

def _complex_step_reference(f, x, h=1e-20):
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros(x.shape)
    for i in range(x.size):
        z = x.astype(np.complex128)
        z.flat[i] += 1j * h
        g.flat[i] = np.imag(f(z)) / h
    return g


def _squire_trapp(x):
    return np.sum(np.exp(x) / np.sqrt(np.sin(x) ** 3 + np.cos(x) ** 3))


def _cubic_sine(x):
    return np.sum(x**3 * np.sin(x)) + np.prod(x)


def _matrix_exp(W):
    return np.sum(np.exp(W) @ np.array([1.0, -2.0]))


def _complex_step_cases():
    return [
        Case("Squire & Trapp's e^x / sqrt(sin^3 x + cos^3 x) at [1.5, 0.5]",
             (_squire_trapp, np.array([1.5, 0.5]))),
        Case("sum(x**3 sin x) + prod(x) at 3 points", (_cubic_sine, np.array([0.3, -1.2, 2.0]))),
        Case("a 2x2 matrix argument", (_matrix_exp, np.array([[0.1, -0.4], [0.9, 0.2]]))),
    ]


def _complex_step_variant(f, x, h, part=np.imag, sign=1.0):
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros(x.shape)
    for i in range(x.size):
        z = x.astype(np.complex128)
        z.flat[i] += sign * 1j * h
        g.flat[i] = part(f(z)) / h
    return g


def _complex_step_explain(case, got, expected):
    f, x = case.args
    if np.iscomplexobj(got):
        return ("a complex result: the derivative is the imaginary part divided by h, a real "
                "number; np.zeros(x.shape) (float) holds it")
    arr = np.asarray(got, dtype=float)
    if arr.shape != expected.shape:
        return None
    if not np.any(arr):
        return ("all zeros: the imaginary step was dropped. Make the perturbed x complex "
                "(x.astype(complex)) before adding 1j * h; a float array discards it")
    if _matches(arr, expected / 2):
        return "half the derivative: divide the imaginary part by h, not 2h"
    if _matches(arr, -expected):
        return ("minus the derivative: the step is x + i h (with x - i h, divide the imaginary "
                "part by -h)")
    xf = np.asarray(x, dtype=float)
    if _matches(arr, np.full(xf.shape, np.imag(f(xf + 1e-20j)) / 1e-20), rtol=1e-9):
        return ("every entry is the same number: you moved all coordinates at once; step one "
                "coordinate at a time, x + i h e_k")
    for h in (1e-20, 1e-10, 1e-8, 1e-6, 1e-5, 1e-4):
        if _matches(arr, _complex_step_variant(f, x, h, part=np.real), rtol=1e-9):
            return ("the real part: f(x + i h) = f(x) + i h f'(x) + ..., so h f'(x) is in the "
                    "imaginary part, np.imag(...)")
    for eps in (1e-4, 1e-5, 1e-6, 1e-7, 1e-8):
        if _matches(arr, ad.numerical_grad(lambda z: float(np.real(f(z))), x, eps=eps), rtol=1e-9):
            return ("that is a central finite difference (correct to about 10 digits); the "
                    "complex step f(x + i h e_k) needs no subtraction and is exact to ~16")
    for h in (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6):
        if _matches(arr, _complex_step_variant(f, x, h), rtol=1e-12):
            return (f"a complex step with h = {h:g}: its error, about h**2 |f'''| / 6, shows at "
                    "12 digits. Nothing is subtracted, so h can be tiny: h = 1e-20 costs nothing")
    return None


def _complex_step_explain_error(case, err):
    if "complex" in str(err).lower() or "single item" in str(err):
        return ("x is a float array, which cannot hold x + 1j * h: perturb a complex copy, "
                "x.astype(complex)")
    return None


register(
    "complex_step_grad", _complex_step_reference, _complex_step_cases,
    compare=_compare_arrays(rtol=1e-12, atol=0.0), explain=_complex_step_explain,
    explain_error=_complex_step_explain_error,
    hint="for an analytic f, f(x + i h) = f(x) + i h f'(x) + O(h**2): the derivative sits in the "
         "imaginary part, with nothing subtracted",
)


# ------------------------------------------------------------ Exercise 2b: best_eps
# The step that minimises the central difference's error model
#   E(eps) = eps**2 |f'''| / 6 + u |f| / eps    (truncation + rounding),
# and, as one case, the best eps measured by a fine sweep on e^x.

_SWEEP = "sweep"  # marks the case graded against a measurement, not the formula


def _best_eps_reference(f_x, f3_x, u=2.0**-53):
    return (3 * u * abs(f_x) / abs(f3_x)) ** (1 / 3)


class _Measured(float):
    """The best eps a sweep measured: an answer within a factor 2 of it passes."""


def _measured_best_eps() -> float:
    """The eps with the smallest median relative error of central differences of e^x, over 401
    points in [-1, 1] and 61 steps from 1e-7 to 1e-4 (a few ms)."""
    x = np.linspace(-1, 1, 401)
    steps = 10.0 ** np.linspace(-7, -4, 61)
    errors = [np.median(np.abs((np.exp(x + e) - np.exp(x - e)) / (2 * e) / np.exp(x) - 1))
              for e in steps]
    return float(steps[int(np.argmin(errors))])


def _best_eps_call(fn, f_x, f3_x, u=2.0**-53, against=None):
    if against == _SWEEP and fn is _best_eps_reference:
        return _Measured(_measured_best_eps())
    return fn(f_x, f3_x, u=u)


def _best_eps_cases():
    return [
        Case("e^x at x = 0: |f| = |f'''| = 1, float64", (1.0, 1.0)),
        Case("|f| = 10, |f'''| = 0.001", (10.0, 1e-3)),
        Case("f = -2, f''' = 8 (signs differ)", (-2.0, 8.0)),
        Case("float32: u = 2**-24 passed as a keyword", (1.0, 4.0), {"u": 2.0**-24}),
        Case("e^x on [-1, 1]: your eps against the best one a fine sweep measures "
             "(within a factor 2)", (1.0, 1.0), {"against": _SWEEP}),
    ]


def _best_eps_compare(got, expected):
    try:
        value = float(got)
    except (TypeError, ValueError):
        return f"answer with a number, got {got!r}"
    if not np.isfinite(value) or value <= 0:
        return f"a step must be a positive number, got {got!r}"
    if isinstance(expected, _Measured):
        ratio = value / float(expected)
        return None if 0.5 <= ratio <= 2 else (
            f"your eps {value:.2g} is {max(ratio, 1 / ratio):.1f} times "
            f"{'larger' if ratio > 1 else 'smaller'} than the measured best {float(expected):.2g}")
    return None if np.isclose(value, expected, rtol=1e-6) else \
        f"expected {float(expected):.6g}, got {value:.6g}"


def _best_eps_explain(case, got, expected):
    if isinstance(expected, _Measured):
        return None
    f_x, f3_x = case.args
    u = case.kwargs.get("u", 2.0**-53)
    if np.iscomplexobj(got) or (np.isreal(got) and float(np.real(got)) < 0):
        return ("f / f''' is negative here: the two errors add up in size, so the model uses "
                "|f| and |f'''|")
    try:
        value = float(got)
    except (TypeError, ValueError):
        return None
    ratio = abs(f_x) / abs(f3_x)
    variants = {
        "you set the two terms equal (eps**3 = 6 u |f| / |f'''|): balancing them is not "
        "minimising their sum; set dE/deps = eps |f'''| / 3 - u |f| / eps**2 to zero":
            (6 * u * ratio) ** (1 / 3),
        "the factor 3 is missing: dE/deps = 0 gives eps**3 = 3 u |f| / |f'''|":
            (u * ratio) ** (1 / 3),
        "a square root: that is the forward difference's optimum (its truncation error is "
        "linear in eps); the central difference's error is quadratic, so a cube root":
            (2 * u * ratio) ** 0.5,
        "|f| and |f'''| are inverted: a larger |f| means more rounding, so a larger eps":
            (3 * u / ratio) ** (1 / 3),
        "the float64 u was used: the u passed in (here float32's) sets the rounding":
            (3 * 2.0**-53 * ratio) ** (1 / 3),
    }
    for why, wrong in variants.items():
        if np.isclose(value, wrong, rtol=1e-6):
            return why
    return None


def _best_eps_explain_error(case, err):
    if isinstance(err, TypeError) and "u" in str(err):
        return "best_eps takes u as a keyword argument, best_eps(f_x, f3_x, u=2**-53)"
    return None


register(
    "best_eps", _best_eps_reference, _best_eps_cases, compare=_best_eps_compare,
    explain=_best_eps_explain, call=_best_eps_call, explain_error=_best_eps_explain_error,
    hint="one term grows with eps and the other shrinks: the best eps is where the derivative of "
         "their sum is zero",
)


# ------------------------------------------------------------ Exercise 3: newton_cg
# A truncated Newton step: `iters` steps of conjugate gradient on H x = -g, with H v products
# from central differences of autodiff gradients. The test losses are plain functions; their
# exact Hessians stay here, out of the reader's reach.

_EXACT_HESSIANS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _conjugate_gradient(matvec, g, iters):
    """``iters`` steps of CG on H x = -g from x = 0, with H v = matvec(v)."""
    x = np.zeros_like(g)
    r = -g
    p = r.copy()
    rr = r @ r
    for _ in range(iters):
        Hp = matvec(p)
        alpha = rr / (p @ Hp)
        x = x + alpha * p
        r = r - alpha * Hp
        rr_new = r @ r
        p = r + (rr_new / rr) * p
        rr = rr_new
    return x


def _newton_cg_reference(loss, w, iters):
    H = _EXACT_HESSIANS[loss](w)
    return _conjugate_gradient(lambda v: H @ v, ad.grad(loss)(w), iters)


def _quadratic(rng, d):
    M = rng.normal(size=(d, d))
    A = M @ M.T / d + np.eye(d)
    b = rng.normal(size=d)

    def loss(w):
        return 0.5 * ad.sum(w * (A @ w)) + ad.sum(b * w)

    _EXACT_HESSIANS[loss] = lambda w: A
    return loss


def _logistic(rng, n, d, l2=0.1):
    X = rng.normal(size=(n, d))
    labels = (X @ rng.normal(size=d) + rng.normal(size=n) > 0).astype(float)

    def loss(w):
        z = X @ w
        nll = -ad.mean(labels * ad.log_sigmoid(z) + (1 - labels) * ad.log_sigmoid(-z))
        return nll + 0.5 * l2 * ad.sum(w * w)

    def hessian(w):
        p = 1 / (1 + np.exp(-(X @ w)))
        return X.T @ (X * (p * (1 - p))[:, None]) / n + l2 * np.eye(d)

    _EXACT_HESSIANS[loss] = hessian
    return loss


def _quartic(rng, d):
    M = rng.normal(size=(d, d))
    A = M @ M.T / d + 0.5 * np.eye(d)
    a = rng.normal(size=d)

    def loss(w):
        return ad.sum(w**4) / 4 + 0.5 * ad.sum(w * (A @ w)) + ad.sum(a * w)

    _EXACT_HESSIANS[loss] = lambda w: np.diag(3 * w**2) + A
    return loss


def _newton_cg_cases():
    rng = np.random.default_rng(8)
    quadratic, logistic, quartic = _quadratic(rng, 3), _logistic(rng, 60, 4), _quartic(rng, 5)
    return [
        Case("a quadratic, 3 weights, iters = 3: CG ends at the exact Newton step",
             (quadratic, rng.normal(size=3), 3)),
        Case("logistic regression, 4 weights, iters = 4", (logistic, 0.5 * rng.normal(size=4), 4)),
        Case("logistic regression, iters = 1 (one step: the best step along -g)",
             (logistic, 0.5 * rng.normal(size=4), 1)),
        Case("w**4 / 4 + a quadratic, 5 weights, iters = 2 (stopped early)",
             (quartic, 0.5 * rng.normal(size=5), 2)),
    ]


def _newton_cg_explain(case, got, expected):
    loss, w, iters = case.args
    arr = np.asarray(got, dtype=float)
    if arr.shape != expected.shape:
        return f"return one step shaped like w, {expected.shape}, got {arr.shape}"
    H = _EXACT_HESSIANS[loss](w)
    gradient = ad.grad(loss)
    g = gradient(w)

    def steepest(matvec):  # CG without conjugation: p = r each time
        x, r = np.zeros_like(g), -g
        for _ in range(iters):
            Hr = matvec(r)
            alpha = (r @ r) / (r @ Hr)
            x, r = x + alpha * r, r - alpha * Hr
        return x

    def forward(eps):
        return lambda v: (gradient(w + eps * v) - g) / eps

    variants = {
        "wrong sign: the Newton step solves H x = -g (it goes downhill)": -expected,
        "that is -g, a plain gradient step: the Newton step solves H x = -g": -g,
        "you solved H x = -g completely: iters limits conjugate gradient to that many steps "
        "(a truncated Newton step)": np.linalg.solve(H, -g),
        "the search directions are not conjugated: with p = r every time it is steepest "
        "descent; p_new = r_new + (r_new.r_new / r.r) p": steepest(lambda v: H @ v),
    }
    for why, wrong in variants.items():
        if _matches(arr, wrong, rtol=1e-6, atol=1e-9):
            return why
    for eps in (1e-4, 1e-5, 1e-6, 1e-7):
        if _matches(arr, _conjugate_gradient(forward(eps), g, iters), rtol=1e-7, atol=1e-10):
            return ("H v by a forward difference of gradients: its error shrinks only like eps; "
                    "use (g(w + eps v) - g(w - eps v)) / (2 eps)")
    for eps in (1e-1, 1e-2, 1e-3):
        central = lambda v, eps=eps: (gradient(w + eps * v) - gradient(w - eps * v)) / (2 * eps)
        if _matches(arr, _conjugate_gradient(central, g, iters), rtol=1e-7, atol=1e-10):
            return (f"H v by central differences with eps = {eps:g}: too large a step, its error "
                    "(about eps**2 times the third derivative) shows; a step near 1e-5 is right")
    for other in (iters - 1, iters + 1):
        if other >= 1 and _matches(arr, _conjugate_gradient(lambda v: H @ v, g, other),
                                   rtol=1e-6, atol=1e-9):
            return (f"{other} iterations instead of {iters}: each pass of the loop is one CG "
                    "iteration, and iters of them are asked for")
    return None


register(
    "newton_cg", _newton_cg_reference, _newton_cg_cases,
    compare=_compare_arrays(rtol=1e-6, atol=1e-9), explain=_newton_cg_explain,
    forbid=[np.linalg.solve, np.linalg.inv, np.linalg.pinv, np.linalg.lstsq, ad.numerical_grad,
            "hessian", "_EXACT_HESSIANS"],
    hint="conjugate gradient needs H only as a function v -> H v, and H v is how fast the "
         "gradient changes along v",
)
