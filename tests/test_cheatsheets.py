"""The cheat sheets stay true to the code: references resolve, quoted defaults are the real ones,
every quoted formula agrees numerically with the function that computes it, lessons exist, every
topic of the brief is covered, and every sheet is linked from the index.

The convention (documented at the top of ``cheatsheets/README.md``):

- a code reference is ``rc.name`` or ``rc.module.name``, resolved by attribute lookup on
  ``import rlcourse as rc`` (anywhere in a sheet, fenced blocks included);
- a quoted default is an inline code span ``rc.func(param=value)``; ``value`` is read with
  ``ast.literal_eval`` and must equal ``inspect.signature(rc.func).parameters[param].default``;
- a lesson reference is ``Lesson NN`` and needs ``lessons/NN_*.ipynb`` or ``lessons/src/NN_*.py``.
"""

import ast
import inspect
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import rlcourse as rc

ROOT = Path(__file__).resolve().parent.parent
SHEETS_DIR = ROOT / "cheatsheets"
INDEX = SHEETS_DIR / "README.md"
SHEETS = sorted(p for p in SHEETS_DIR.glob("*.md") if p.name != "README.md")

FENCE = re.compile(r"^```[^\n]*\n.*?^```", re.S | re.M)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
RC_NAME = re.compile(r"(?<![\w.])rc(?:\.[A-Za-z_]\w*)+")
RC_CALL_WITH_KEYWORD = re.compile(r"(?<![\w.])rc(?:\.[A-Za-z_]\w*)+\([^)]*=")
LESSON_WORD = re.compile(r"\b([Ll]essons?)\s+(\d+)")
MD_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def resolve(dotted: str):
    """The object ``rc.a.b`` names, by attribute lookup from the package; AttributeError if none."""
    obj = rc
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def lesson_exists(number: str, root: Path = ROOT) -> bool:
    return bool(list((root / "lessons").glob(f"{number}_*.ipynb"))
                or list((root / "lessons" / "src").glob(f"{number}_*.py")))


def _dotted(node) -> str | None:
    """``rc.a.b`` for an attribute chain rooted at the name ``rc``, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == "rc" and parts:
        return ".".join(["rc", *reversed(parts)])
    return None


def check_default_span(span: str) -> list[str]:
    """Problems with one inline span ``rc.func(param=value, ...)`` quoting defaults."""
    try:
        call = ast.parse(span, mode="eval").body
    except SyntaxError:
        return [f"`{span}`: not a Python expression"]
    name = _dotted(call.func) if isinstance(call, ast.Call) else None
    if name is None or call.args or not call.keywords or any(k.arg is None for k in call.keywords):
        return [f"`{span}`: a default must be quoted as `rc.func(param=value)` (keywords only)"]
    try:
        params = inspect.signature(resolve(name)).parameters
    except AttributeError:
        return []  # reported once, as an unknown name, by check_text
    except (TypeError, ValueError):
        return [f"`{span}`: {name} has no inspectable signature"]
    problems = []
    for keyword in call.keywords:
        try:
            value = ast.literal_eval(keyword.value)
        except ValueError:
            problems.append(f"`{span}`: {keyword.arg}= is not a literal")
            continue
        param = params.get(keyword.arg)
        if param is None:
            problems.append(f"`{span}`: {name} has no parameter {keyword.arg!r}")
        elif param.default is inspect.Parameter.empty:
            problems.append(f"`{span}`: {name}'s {keyword.arg!r} has no default (quoted {value!r})")
        elif not (param.default == value and isinstance(value, bool) == isinstance(param.default, bool)):
            problems.append(f"`{span}`: {name}'s default {keyword.arg}={param.default!r}, "
                            f"the sheet says {value!r}")
    return problems


def check_text(text: str, root: Path = ROOT) -> list[str]:
    """Every problem with the references in one sheet's markdown (an empty list if none)."""
    problems = []
    for name in sorted(set(RC_NAME.findall(text))):
        try:
            resolve(name)
        except AttributeError:
            problems.append(f"{name}: no such name in rlcourse")
    fenced = "\n".join(FENCE.findall(text))
    for call in RC_CALL_WITH_KEYWORD.findall(fenced):
        problems.append(f"{call}...: quote defaults in an inline span, not in a code block")
    for span in CODE_SPAN.findall(FENCE.sub("", text)):
        span = span.strip()
        if not RC_NAME.search(span) or RC_NAME.fullmatch(span):
            continue
        if not span.startswith("rc."):
            problems.append(f"`{span}`: a span naming rlcourse must start with `rc.`")
            continue
        problems.extend(check_default_span(span))
    for word, number in LESSON_WORD.findall(text):
        if word != "Lesson" or len(number) != 2:
            problems.append(f"'{word} {number}': write each reference as 'Lesson NN'")
        elif not lesson_exists(number, root):
            problems.append(f"Lesson {number}: no lessons/{number}_*.ipynb or lessons/src/{number}_*.py")
    return problems


# Every topic the cheat sheets must cover, as words a sheet covering it must contain
# (case-insensitive, across all sheets).
TOPICS = {
    "MDP and return": ["Markov property", "(\\mathcal S", "G_t"],
    "Bellman and value iteration": ["Bellman expectation", "Bellman optimality", "value iteration",
                                    "policy iteration"],
    "TD control": ["TD(0)", "Q-learning", "SARSA", "Expected SARSA"],
    "DQN loss": ["DQN", "target network", "Huber", "replay"],
    "n-step, TD(lambda), MC": ["n-step", "eligibility trace", "Monte Carlo return"],
    "policy gradient": ["policy gradient theorem", "baseline", "reward-to-go", "score function",
                        "e_a - \\pi"],
    "advantages": ["TD error", "GAE", "\\gamma\\lambda"],
    "PPO": ["ratio", "clipped surrogate", "value loss", "entropy bonus"],
    "reward models and RLHF": ["Bradley-Terry", "\\mathrm{KL}(\\pi_\\theta", "beta", "k1", "k3"],
    "DPO, IPO, GRPO": ["DPO", "IPO", "GRPO", "group-relative"],
    "importance sampling": ["importance weight", "ordinary", "weighted", "effective sample size"],
    "search": ["UCT", "selection", "expansion", "rollout", "backup", "beam search", "best-of-n",
               "temperature", "top-k", "top-p"],
    "token masks and aggregation": ["mask", "padding", "aggregat"],
    "PPO loop diagram": ["parallel", "rollout buffer", "epochs", "minibatch", "mean KL",
                         "clip fraction"],
    "RLHF stages diagram": ["SFT", "chosen", "rejected", "frozen reference", "reward hacking",
                            "nats"],
    "choosing a method": ["policy iteration", "Double DQN", "continuous control", "Gaussian", "SAC",
                          "TD3", "verifier", "MCTS", "AlphaZero", "board game"],
    "defaults and rules of thumb": ["0.99", "1/(1-\\gamma)", "0.01", "0.05", "group size",
                                    "normalise advantages", "exp(", "10 epochs", "64",
                                    "rule of thumb"],
    "troubleshooting": ["symptom", "overfitting the rollout", "reward hacking", "length-normalised",
                        "overestimat", "deadly triad", "entropy collapse", "fewer epochs"],
    "questions students ask": ["on-policy", "off-policy", "unbiased", "variance", "no critic",
                               "per-prompt", "why the KL"],
}


def missing_topics(text: str) -> list[str]:
    """``topic: keyword`` for every required keyword absent from ``text``."""
    lower = text.lower()
    return [f"{topic}: {word!r}" for topic, words in TOPICS.items() for word in words
            if word.lower() not in lower]


def fenced_blocks(text: str) -> list[str]:
    return FENCE.findall(text)


def all_sheets_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in [INDEX, *SHEETS])


# The checks themselves, planted: each must flag a made-up error and pass the real thing.

def test_checker_flags_an_unknown_name():
    problems = check_text("Use `rc.no_such_function` here, and rc.gae.no_such_attr there.")
    assert any("rc.no_such_function" in p for p in problems)
    assert any("rc.gae.no_such_attr" in p for p in problems)


def test_checker_flags_a_wrong_default():
    assert check_text("`rc.gae(lam=0.95)` and `rc.ppo_clip_loss(clip=0.2)`") == []
    assert any("clip=0.2" in p for p in check_text("`rc.ppo_clip_loss(clip=0.3)`"))
    assert any("lam=0.95" in p for p in check_text("`rc.gae(lam=0.9)`"))
    if hasattr(rc, "ppo"):
        assert check_text("`rc.ppo(clip=0.2)`") == []
        assert any("clip=0.2" in p for p in check_text("`rc.ppo(clip=0.3)`"))


def test_checker_flags_a_default_that_is_not_one():
    assert check_text("`rc.grpo_advantages(group_size=8)`"), "group_size has no default"
    assert check_text("`rc.gae(no_such_param=1)`")
    assert check_text("`rc.ppo_clip_loss(aggregate='sequence')`")
    assert check_text("`rc.grpo_advantages(scale=1)`"), "1 is not the bool True"


def test_checker_flags_malformed_spans_and_defaults_in_code_blocks():
    assert check_text("`rc.gae(0.9)`"), "positional values cannot be checked"
    assert check_text("`x = rc.gae(lam=0.9)`")
    assert check_text("```\nloss = rc.gae(lam=0.9)\n```")
    assert check_text("```\nGAE, see rc.gae\n```") == []


def test_checker_flags_missing_and_malformed_lesson_references():
    assert check_text("Lesson 00 and Lesson 01") == []
    assert any("Lesson 99" in p for p in check_text("see Lesson 99"))
    assert check_text("see lesson 5")
    assert check_text("see Lessons 04-05")


def test_coverage_check_flags_a_missing_topic():
    text = all_sheets_text()
    assert missing_topics(text) == []
    assert missing_topics(re.sub("(?i)uct", "", text)) == ["search: 'UCT'"]


# The sheets.

def test_there_are_sheets():
    assert INDEX.exists()
    assert len(SHEETS) >= 5


@pytest.mark.parametrize("path", [INDEX, *SHEETS], ids=lambda p: p.name)
def test_references_defaults_and_lessons_are_real(path):
    problems = check_text(path.read_text(encoding="utf-8"))
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", SHEETS, ids=lambda p: p.name)
def test_each_sheet_points_at_code_and_lessons(path):
    text = path.read_text(encoding="utf-8")
    assert RC_NAME.search(text), f"{path.name} names no rlcourse function"
    assert LESSON_WORD.search(text), f"{path.name} names no lesson"


@pytest.mark.parametrize("path", SHEETS, ids=lambda p: p.name)
def test_each_sheet_is_about_one_page(path):
    # Roughly one printed page of dense reference text (formulas take more characters than
    # they take room); a sheet past this has become a chapter and should be split.
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 110, f"{path.name}: {len(text.splitlines())} lines"


def test_every_topic_of_the_source_is_covered():
    missing = missing_topics(all_sheets_text())
    assert not missing, "not covered:\n" + "\n".join(missing)


def test_the_two_diagrams_are_drawn():
    blocks = [b for p in SHEETS for b in fenced_blocks(p.read_text(encoding="utf-8"))]
    ppo = [b for b in blocks if all(w in b for w in ("GAE", "epochs", "clip_fraction", "rollout"))]
    rlhf = [b for b in blocks if all(w in b for w in ("SFT", "Bradley-Terry", "beta", "PPO"))]
    assert ppo, "no code-block diagram of the PPO loop"
    assert rlhf, "no code-block diagram of the RLHF stages"


def test_index_links_every_sheet_and_only_real_files():
    links = MD_LINK.findall(INDEX.read_text(encoding="utf-8"))
    local = [link for link in links if "://" not in link]
    for link in local:
        assert (SHEETS_DIR / link).resolve().exists(), f"README links to missing {link}"
    for sheet in SHEETS:
        assert sheet.name in local, f"README does not link {sheet.name}"


# ============================================================================= formulas
#
# Every formula a sheet quotes is written out below in numpy, exactly as the sheet states it,
# and evaluated on an example against the rlcourse function that computes it (``check``). Each
# also has a planted wrong version (a dropped discount, a wrong sign, ddof=0, ...) that its
# check must reject, so no check passes by construction. ``snippets`` are LaTeX pieces of the
# formula that must appear on its sheet; every formula-looking span of every sheet must contain
# one of them (or be a plain definition listed in DEFINITIONS).

@dataclass(frozen=True)
class Formula:
    name: str
    sheets: tuple
    snippets: tuple
    right: Callable
    wrong: Callable
    check: Callable
    exact: tuple = field(default=())  # short spans (``G_t``) covered by this check


def close(a, b, tol=1e-6) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=tol, atol=tol))


def _softmax(z):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=float)))


GEN = np.random.default_rng(2024)  # the examples' numbers; fixed

# A 3-state MDP (state 2 terminal) with random dynamics and rewards, and a random policy.
_P = GEN.dirichlet(np.ones(3), size=(3, 2))
_P[2] = 0.0
_P[2, :, 2] = 1.0
_R = GEN.normal(size=(3, 2, 3))
_TERMINAL = np.array([False, False, True])
_PI = np.array([[0.3, 0.7], [0.6, 0.4], [0.5, 0.5]])
_GAMMA = 0.9


# -- returns, Bellman, DP --------------------------------------------------------------------

def _return_right(r, g):
    out, acc = np.zeros(len(r)), 0.0
    for t in reversed(range(len(r))):
        acc = r[t] + g * acc  # G_t = r_t + gamma G_{t+1}
        out[t] = acc
    return out


def _return_wrong(r, g):
    return np.array([sum(r[k] * g for k in range(t, len(r))) for t in range(len(r))])  # gamma once


def _return_check(f):
    r = GEN.normal(size=7)
    return close(f(r, 0.9), rc.mc_returns(r, 0.9))


def _bellman_right(V, P, R, pi, g):
    return np.einsum("sa,sat,sat->s", pi, P, R + g * V[None, None, :])


def _bellman_wrong(V, P, R, pi, g):
    return np.einsum("sa,sat->s", pi, P * R) + g * V  # gamma V(s), not V(s')


def _bellman_check(f):
    V = rc.policy_evaluation_exact(_P, _R, _PI, _GAMMA, terminal=_TERMINAL)
    return close(f(V, _P, _R, _PI, _GAMMA)[:2], V[:2])  # V is the fixed point (terminal: 0)


def _linear_right(P, R, pi, g):
    Ppi = np.einsum("sa,sat->st", pi, P)
    rpi = np.einsum("sa,sat,sat->s", pi, P, R)
    Ppi[_TERMINAL] = 0.0
    rpi[_TERMINAL] = 0.0
    return np.linalg.solve(np.eye(3) - g * Ppi, rpi)


def _linear_wrong(P, R, pi, g):
    Ppi = np.einsum("sa,sat->st", pi, P)
    rpi = np.einsum("sa,sat,sat->s", pi, P, R)
    Ppi[_TERMINAL] = 0.0
    rpi[_TERMINAL] = 0.0
    return np.linalg.solve(np.eye(3) + g * Ppi, rpi)  # sign


def _linear_check(f):
    return close(f(_P, _R, _PI, _GAMMA), rc.policy_evaluation_exact(_P, _R, _PI, _GAMMA,
                                                                    terminal=_TERMINAL))


def _lookahead_right(P, R, V, g):
    return np.einsum("sat,sat->sa", P, R + g * V[None, None, :])


def _lookahead_wrong(P, R, V, g):
    return np.einsum("sat,sat->sa", P, R) + g * V[:, None]  # V(s) instead of V(s')


def _lookahead_check(f):
    V = GEN.normal(size=3)
    V[2] = 0.0
    return close(f(_P, _R, V, _GAMMA)[:2], rc.q_from_v(_P, _R, V, _GAMMA, terminal=_TERMINAL)[:2])


def _optimality_check(f):
    V = GEN.normal(size=3)
    V[2] = 0.0
    return close(f(_P, _R, V, _GAMMA)[:2],
                 rc.bellman_optimality_backup(_P, _R, V, _GAMMA, terminal=_TERMINAL)[:2])


# -- TD, n-step, traces --------------------------------------------------------------------

def _td_right(r, v_next, v, g):
    return r + g * v_next - v  # delta_t = r_t + gamma V(s_{t+1}) - V(s_t)


def _td_wrong(r, v_next, v, g):
    return r + v_next - v  # no discount


def _td_check(f):
    return close(f(1.5, 2.0, 0.4, 0.9), rc.td_target(1.5, 2.0, False, 0.9) - 0.4)


def _nstep_right(r, v_n, g):
    n = len(r)
    return sum(g**k * r[k] for k in range(n)) + g**n * v_n


def _nstep_wrong(r, v_n, g):
    n = len(r)
    return sum(g**k * r[k] for k in range(n)) + g ** (n - 1) * v_n  # off-by-one power


def _nstep_check(f):
    r = GEN.normal(size=4)
    return close(f(r, 2.5, 0.9), rc.n_step_target(r, 2.5, False, 0.9))


# A deterministic chain 0 -> 1 -> 2 -> 3 (terminal) whatever the action, for trainer checks.
def _chain(rewards):
    S = len(rewards) + 1
    P = np.zeros((S, 2, S))
    R = np.zeros((S, 2, S))
    for s in range(S - 1):
        P[s, :, s + 1] = 1.0
        R[s, :, s + 1] = rewards[s]
    P[S - 1, :, S - 1] = 1.0
    terminal = np.zeros(S, dtype=bool)
    terminal[-1] = True
    start = np.zeros(S)
    start[0] = 1.0
    return rc.TabularMDP(P, R, terminal, start)


_CHAIN_R = [1.0, -0.5, 2.0]


def _td0_episode(update, V, alpha, g):
    """One episode of the chain with V updated by ``update(V, s, r, s_next, terminal)``."""
    V = V.copy()
    for s, r in enumerate(_CHAIN_R):
        update(V, s, r, s + 1, s + 1 == len(_CHAIN_R), alpha, g)
    return V


def _generic_right(V, s, r, s2, term, alpha, g):
    target = r + (0.0 if term else g * V[s2])
    V[s] = V[s] + alpha * (target - V[s])  # V(s_t) <- V(s_t) + alpha [target - V(s_t)]


def _generic_wrong(V, s, r, s2, term, alpha, g):
    target = r + (0.0 if term else g * V[s2])
    V[s] = V[s] + alpha * (V[s] - target)  # sign


def _generic_check(f):
    init = np.array([0.2, -0.4, 0.9, 0.0])
    policy = np.full((4, 2), 0.5)
    got = rc.td0(_chain(_CHAIN_R), policy, episodes=1, alpha=0.5, gamma=0.9, init=init).V
    return close(_td0_episode(f, init, 0.5, 0.9), got)


def _traces_right(rewards, V, alpha, g, lam, replacing=False):
    V, e = V.copy(), np.zeros_like(V)
    for s, r in enumerate(rewards):
        term = s + 1 == len(rewards)
        delta = r + (0.0 if term else g * V[s + 1]) - V[s]
        e *= g * lam  # e <- gamma lambda e
        e[s] = 1.0 if replacing else e[s] + 1.0  # e(s_t) += 1 (accumulating) or = 1 (replacing)
        V += alpha * delta * e  # V <- V + alpha delta_t e
    return V


def _traces_wrong(rewards, V, alpha, g, lam, replacing=False):
    V, e = V.copy(), np.zeros_like(V)
    for s, r in enumerate(rewards):
        term = s + 1 == len(rewards)
        delta = r + (0.0 if term else g * V[s + 1]) - V[s]
        e *= lam  # forgot gamma
        e[s] += 1.0
        V += alpha * delta * e
    return V


def _traces_check(f):
    init = np.array([0.2, -0.4, 0.9, 0.0])
    policy = np.full((4, 2), 0.5)
    ok = True
    for traces in ("accumulating", "replacing"):
        got = rc.td_lambda(_chain(_CHAIN_R), policy, episodes=1, lam=0.8, alpha=0.5, gamma=0.9,
                           traces=traces, init=init).V
        ok &= close(f(_CHAIN_R, init, 0.5, 0.9, 0.8, traces == "replacing"), got)
    return ok


# -- control: Q-learning, SARSA, Expected SARSA ---------------------------------------------
# A 2-step chain with 2 actions whose rewards differ; epsilon = 0.5 makes the actions random,
# and the one action updated in each state (the only changed entry) tells which were taken.
_CP = np.zeros((3, 2, 3))
_CP[0, :, 1] = 1.0
_CP[1, :, 2] = 1.0
_CP[2, :, 2] = 1.0
_CR = np.zeros((3, 2, 3))
_CR[0, 0, 1], _CR[0, 1, 1], _CR[1, 0, 2], _CR[1, 1, 2] = 1.0, -1.0, 2.0, 0.5
_CINIT = np.array([[0.3, -0.2], [0.7, 0.1], [0.0, 0.0]])


def _control_env():
    return rc.TabularMDP(_CP, _CR, np.array([False, False, True]), np.array([1.0, 0.0, 0.0]))


def _control_check(trainer, next_value, seeds=range(6)):
    """``next_value(Q_row_next, a_next, epsilon)``: the target's stand-in for the future."""
    alpha, g, eps = 0.5, 0.9, 0.5
    for seed in seeds:
        Q = trainer(_control_env(), episodes=1, alpha=alpha, gamma=g, epsilon=eps, seed=seed,
                    init=_CINIT).Q
        a0 = int(np.flatnonzero(Q[0] != _CINIT[0])[0])
        a1 = int(np.flatnonzero(Q[1] != _CINIT[1])[0])
        target0 = _CR[0, a0, 1] + g * next_value(_CINIT[1], a1, eps)
        want0 = _CINIT[0, a0] + alpha * (target0 - _CINIT[0, a0])
        want1 = _CINIT[1, a1] + alpha * (_CR[1, a1, 2] - _CINIT[1, a1])  # terminal: target r
        if not (close(Q[0, a0], want0) and close(Q[1, a1], want1)):
            return False
    return True


def _eps_greedy_mean(q, eps):
    return eps * q.mean() + (1 - eps) * q.max()


# -- bandits ---------------------------------------------------------------------------------

def _sample_average_right(Q, N, a, r):
    Q, N = Q.copy(), N.copy()
    N[a] += 1
    Q[a] += (r - Q[a]) / N[a]  # Q(a) <- Q(a) + 1/N(a) [r - Q(a)]
    return Q


def _sample_average_wrong(Q, N, a, r):
    Q, N = Q.copy(), N.copy()
    Q[a] += (r - Q[a]) / (N[a] + 2)  # off by one in the count
    return Q


def _sample_average_check(f):
    agent = rc.EpsilonGreedy(arms=3, epsilon=0.0)
    Q, N = np.zeros(3), np.zeros(3)
    for a, r in [(1, 2.0), (1, 0.5), (2, -1.0), (1, 1.0)]:
        agent.update(np.array([a]), np.array([r]))
        Q = f(Q, N, a, r)
        N[a] += 1
    return close(agent.Q[0], Q)


def _ucb_right(Q, N, t, c):
    return Q + c * np.sqrt(np.log(t) / N)


def _ucb_wrong(Q, N, t, c):
    return Q + c * np.sqrt(t / N)


def _ucb_check(f):
    Q, N = np.array([0.5, 0.2, 0.9]), np.array([3.0, 5.0, 1.0])
    return close(f(Q, N, 10, 2.0), rc.ucb_scores(Q, N, 10, c=2.0))


def _gradient_bandit_right(H, a, r, rbar, alpha):
    pi = _softmax(H)  # pi = softmax(H)
    return H + alpha * (r - rbar) * (np.eye(len(H))[a] - pi)  # H <- H + alpha (r - rbar)(e_a - pi)


def _gradient_bandit_wrong(H, a, r, rbar, alpha):
    return H + alpha * (r - rbar) * np.eye(len(H))[a]  # forgot - pi


def _gradient_bandit_check(f):
    agent = rc.GradientBandit(arms=3, alpha=0.1)
    H, seen = np.zeros(3), []
    for a, r in [(0, 1.0), (2, 0.5), (0, -0.5), (1, 2.0)]:
        rbar = np.mean(seen) if seen else r  # the first reward is its own baseline
        agent.update(np.array([a]), np.array([r]))
        H = f(H, a, r, rbar, 0.1)
        seen.append(r)
    return close(agent.H[0], H)


def _eps_greedy_probs_check(f):
    q = np.array([0.1, 0.9, 0.3, 0.2])
    return close(f(q, 0.2), rc.epsilon_greedy_probs(q, 0.2))


# -- deep RL ---------------------------------------------------------------------------------

def _dqn_right(r, term, q_online, q_target, g, double):
    a_star = (q_online if double else q_target).argmax(axis=-1)
    return r + g * (1 - term) * q_target[np.arange(len(r)), a_star]


def _dqn_wrong(r, term, q_online, q_target, g, double):
    a_star = (q_target if double else q_online).argmax(axis=-1)  # the two nets swapped
    return r + g * (1 - term) * q_target[np.arange(len(r)), a_star]


def _dqn_check(f):
    r, term = GEN.normal(size=6), np.array([0, 1, 0, 0, 1, 0])
    qo, qt = GEN.normal(size=(6, 3)), GEN.normal(size=(6, 3))
    return all(close(f(r, term, qo, qt, 0.99, d),
                     rc.dqn_targets(r, term.astype(bool), qo, qt, 0.99, double=d))
               for d in (False, True))


def _huber_right(x):
    return np.where(np.abs(x) <= 1, 0.5 * x**2, np.abs(x) - 0.5)


def _huber_wrong(x):
    return np.where(np.abs(x) <= 1, 0.5 * x**2, np.abs(x))


def _huber_check(f):
    x = np.linspace(-3, 3, 13)
    return close(f(x), rc.huber(x))


def _pg_right(z, rewards):
    """The policy-gradient theorem for one step: E_a[grad log pi(a) G(a)]."""
    pi = _softmax(z)
    return sum(pi[a] * rc.softmax_score(z[None], np.array([a]))[0] * rewards[a]
               for a in range(len(z)))


def _pg_wrong(z, rewards):
    pi = _softmax(z)
    return sum(rc.softmax_score(z[None], np.array([a]))[0] * rewards[a] for a in range(len(z))) \
        * pi.max()  # not weighted by pi(a)


def _pg_check(f):
    z, rewards = np.array([0.2, -0.5, 1.0]), np.array([1.0, 3.0, -2.0])
    J = lambda zz: float(_softmax(zz) @ rewards)  # noqa: E731
    eps = 1e-6
    grad = np.array([(J(z + eps * e) - J(z - eps * e)) / (2 * eps) for e in np.eye(3)])
    return close(f(z, rewards), grad, tol=1e-5)


def _baseline_right(z):
    pi = _softmax(z)
    return sum(pi[a] * rc.softmax_score(z[None], np.array([a]))[0] for a in range(len(z)))


def _baseline_wrong(z):
    return sum(rc.softmax_score(z[None], np.array([a]))[0] for a in range(len(z))) + 1.0


def _baseline_check(f):
    return close(f(np.array([0.3, -1.2, 0.8, 0.0])), np.zeros(4))


def _score_right(z, a):
    return np.eye(len(z))[a] - _softmax(z)


def _score_wrong(z, a):
    return _softmax(z) - np.eye(len(z))[a]


def _score_check(f):
    z = np.array([0.3, -1.2, 0.8])
    return all(close(f(z, a), rc.softmax_score(z[None], np.array([a]))[0]) for a in range(3))


def _gauss_right(mu, log_std, a):
    s = np.exp(log_std)
    return np.sum(-0.5 * ((a - mu) / s) ** 2 - np.log(s) - 0.5 * np.log(2 * np.pi), axis=-1)


def _gauss_wrong(mu, log_std, a):
    s = np.exp(log_std)
    return np.sum(-0.5 * ((a - mu) / s) ** 2 - 0.5 * np.log(2 * np.pi), axis=-1)  # no -log sigma


def _gauss_check(f):
    mu, log_std, a = GEN.normal(size=(4, 2)), np.array([0.3, -0.5]), GEN.normal(size=(4, 2))
    return close(f(mu, log_std, a), rc.gaussian_log_prob(mu, log_std, a))


def _tderr_right(r, v, v_next, term, g):
    return r + g * (1 - term) * v_next - v


def _tderr_wrong(r, v, v_next, term, g):
    return r + g * v_next - v  # bootstraps through the terminal


def _tderr_check(f):
    r, v, vn = np.array([1.0, 0.5, -1.0]), np.array([0.2, 0.4, 0.1]), np.array([0.4, 0.1, 0.9])
    term = np.array([0.0, 0.0, 1.0])
    adv, _ = rc.gae(r[:, None], v[:, None], vn[:, None], term[:, None].astype(bool),
                    np.zeros((3, 1), dtype=bool), gamma=0.9, lam=0.0)
    return close(f(r, v, vn, term, 0.9), adv[:, 0])


def _gae_right(r, v, vn, term, g, lam):
    delta = r + g * (1 - term) * vn - v
    A, acc = np.zeros_like(r), 0.0
    for t in reversed(range(len(r))):
        acc = delta[t] + g * lam * (1 - term[t]) * acc  # A_t = delta_t + gamma lambda (1 - done) A_{t+1}
        A[t] = acc
    return A


def _gae_wrong(r, v, vn, term, g, lam):
    delta = r + g * (1 - term) * vn - v
    A, acc = np.zeros_like(r), 0.0
    for t in reversed(range(len(r))):
        acc = delta[t] + lam * (1 - term[t]) * acc  # gamma missing
        A[t] = acc
    return A


def _gae_check(f):
    T = 8
    r, v, vn = GEN.normal(size=T), GEN.normal(size=T), GEN.normal(size=T)
    term = np.zeros(T)
    term[3] = 1.0
    vn[3] = 0.0
    adv, _ = rc.gae(r[:, None], v[:, None], vn[:, None], term[:, None].astype(bool),
                    np.zeros((T, 1), dtype=bool), gamma=0.9, lam=0.8)
    return close(f(r, v, vn, term, 0.9, 0.8), adv[:, 0])


def _ppo_ratio_right(logp, old, adv, eps):
    ratio = np.exp(logp - old)  # rho = exp(log pi - log pi_old)
    return -np.mean(np.minimum(ratio * adv, np.clip(ratio, 1 - eps, 1 + eps) * adv))


def _ppo_ratio_wrong(logp, old, adv, eps):
    ratio = logp / old  # a quotient of log-probs
    return -np.mean(np.minimum(ratio * adv, np.clip(ratio, 1 - eps, 1 + eps) * adv))


def _ppo_ratio_check(f):
    logp, old = -GEN.uniform(0.1, 2.0, size=(1, 9)), -GEN.uniform(0.1, 2.0, size=(1, 9))
    adv = GEN.normal(size=(1, 9))
    got = rc.ppo_clip_loss(logp, old, adv, np.ones((1, 9), dtype=bool), clip=0.2).loss
    return close(f(logp, old, adv, 0.2), float(got))


def _clip_right(ratio, adv, eps):
    return np.minimum(ratio * adv, np.clip(ratio, 1 - eps, 1 + eps) * adv)


def _clip_wrong(ratio, adv, eps):
    return np.maximum(ratio * adv, np.clip(ratio, 1 - eps, 1 + eps) * adv)


def _clip_check(f):
    ratio, adv = GEN.uniform(0.5, 1.5, size=20), GEN.normal(size=20)
    return close(f(ratio, adv, 0.2), rc.ppo_clip_objective(ratio, adv, 0.2))


def _entropy_right(z):
    p = _softmax(z)
    return -np.sum(p * np.log(p), axis=-1)


def _entropy_wrong(z):
    p = _softmax(z)
    return -np.sum(np.log(p), axis=-1) / z.shape[-1]


def _entropy_check(f):
    z = GEN.normal(size=(5, 4))
    return close(f(z), rc.categorical_entropy(z))


def _ev_right(v, ret):
    return 1 - np.var(ret - v) / np.var(ret)


def _ev_wrong(v, ret):
    return 1 - np.var(v) / np.var(ret)


def _ev_check(f):
    ret, v = GEN.normal(size=30), GEN.normal(size=30)
    v = 0.7 * ret + 0.3 * v
    return close(f(v, ret), rc.explained_variance(v, ret))


def _ppo_model(params, obs):
    return obs @ params["w"], obs @ params["v"]


def _ppo_total_right(logits, values, actions, old, adv, ret, eps, cv, ce):
    logp = np.log(_softmax(logits))[np.arange(len(actions)), actions]
    ratio = np.exp(logp - old)
    l_clip = np.mean(np.minimum(ratio * adv, np.clip(ratio, 1 - eps, 1 + eps) * adv))
    l_v = 0.5 * np.mean((values - ret) ** 2)  # L^V = 1/2 E[(V - R)^2]
    h = np.mean(-np.sum(_softmax(logits) * np.log(_softmax(logits)), axis=-1))
    return -l_clip + cv * l_v - ce * h  # total: -L^clip + c_v L^V - c_e H


def _ppo_total_wrong(logits, values, actions, old, adv, ret, eps, cv, ce):
    return _ppo_total_right(logits, values, actions, old, adv, ret, eps, cv, -ce)  # adds entropy


def _ppo_total_check(f):
    obs = GEN.normal(size=(8, 3))
    params = {"w": GEN.normal(size=(3, 2)), "v": GEN.normal(size=3)}
    actions, old = GEN.integers(0, 2, size=8), -GEN.uniform(0.2, 1.5, size=8)
    adv, ret = GEN.normal(size=8), GEN.normal(size=8)
    loss, stats = rc.ppo_loss(params, _ppo_model, obs, actions, old, adv, ret, clip=0.2,
                              vf_coef=0.5, ent_coef=0.01)
    logits, values = _ppo_model(params, obs)
    return close(f(logits, values, actions, old, adv, ret, 0.2, 0.5, 0.01), float(loss))


def _approx_kl_right(logp, old):
    r = np.exp(logp - old)
    return np.mean((r - 1) - np.log(r))


def _approx_kl_wrong(logp, old):
    return np.mean(old - logp)


def _approx_kl_check(f):
    logp, old = -GEN.uniform(0.1, 2.0, size=(1, 9)), -GEN.uniform(0.1, 2.0, size=(1, 9))
    got = rc.ppo_clip_loss(logp, old, np.ones((1, 9)), np.ones((1, 9), dtype=bool)).approx_kl
    return close(f(logp, old), got)


def _horizon_right(g):
    return 1.0 / (1.0 - g)


def _horizon_wrong(g):
    return 1.0 / g


def _horizon_check(f):
    return close(f(0.99), rc.mc_returns(np.ones(20000), 0.99)[0], tol=1e-6)


# -- importance sampling ----------------------------------------------------------------------
_TARGET = np.array([0.6, 0.3, 0.1])
_BEHAVIOUR = np.array([0.2, 0.3, 0.5])


def _weight_right(pi, b, a):
    return pi[a] / b[a]


def _weight_wrong(pi, b, a):
    return b[a] / pi[a]


def _weight_check(f):
    a = np.array([0, 2, 1, 0])
    return close(f(_TARGET, _BEHAVIOUR, a), rc.importance_weights(_TARGET, _BEHAVIOUR, a))


def _estimates_right(w, G):
    return np.mean(w * G), np.sum(w * G) / np.sum(w), np.sum(w) ** 2 / np.sum(w**2)


def _estimates_wrong(w, G):
    return np.mean(w * G), np.mean(w * G) / np.mean(w) ** 2, np.sum(w) / np.sum(w**2)


def _estimates_check(f):
    w, G = GEN.uniform(0.1, 3.0, size=12), GEN.normal(size=12)
    est = rc.importance_estimate(G, w)
    return close(f(w, G), (est.ordinary, est.weighted, rc.effective_sample_size(w)))


# Two-step episodes: a_0, a_1 ~ b in {0, 1, 2}, reward r_t = REWARD[a_t] at each step, gamma 0.9.
_REWARD = np.array([1.0, -0.5, 2.0])


def _episodes():
    """Every two-step action sequence with its probability under b, weights and rewards."""
    for a0 in range(3):
        for a1 in range(3):
            actions = np.array([[a0], [a1]])  # [T, n]
            w = rc.importance_weights(np.tile(_TARGET, (2, 1, 1)), np.tile(_BEHAVIOUR, (2, 1, 1)),
                                      actions)[:, 0]
            yield _BEHAVIOUR[a0] * _BEHAVIOUR[a1], w, _REWARD[[a0, a1]]


def _per_decision_right(w, r, g):
    rho = np.cumprod(w)  # rho_{0:t}
    return sum(g**t * rho[t] * r[t] for t in range(len(r)))


def _per_decision_wrong(w, r, g):
    rho = np.concatenate([[1.0], np.cumprod(w)[:-1]])  # rho_{0:t-1}: one step short
    return sum(g**t * rho[t] * r[t] for t in range(len(r)))


def _per_decision_check(f):
    """Unbiased: its expectation under b is the target's value, computed exactly."""
    expected = sum(p * f(w, r, 0.9) for p, w, r in _episodes())
    true_value = _TARGET @ _REWARD * (1 + 0.9)
    return close(expected, true_value)


def _truncated_right(w, c):
    return np.minimum(w, c)


def _truncated_wrong(w, c):
    return np.clip(w, 1 / c, c)


def _truncated_check(f):
    a = np.array([0, 2, 1, 0, 0])
    w = rc.importance_weights(_TARGET, _BEHAVIOUR, a)
    return close(f(w, 2.0), rc.importance_weights(_TARGET, _BEHAVIOUR, a, clip=2.0))


def _second_moment_right(pi, b, T):
    chi2 = np.sum((pi - b) ** 2 / b)  # E_b[w^2] = 1 + chi^2(pi || b)
    return (1 + chi2) ** T


def _second_moment_wrong(pi, b, T):
    return (1 + np.sum((pi - b) ** 2 / b)) * T  # linear growth


def _second_moment_check(f):
    exact = sum(p * np.prod(w) ** 2 for p, w, _ in _episodes())  # T = 2, enumerated
    return close(f(_TARGET, _BEHAVIOUR, 2), exact)


# -- reward models, RLHF, KL ------------------------------------------------------------------

def _bt_right(r_c, r_r, m):
    return -np.mean(np.log(_sigmoid(r_c - r_r - m)))  # -E log sigma(r_c - r_r - m)


def _bt_wrong(r_c, r_r, m):
    return -np.mean(np.log(_sigmoid(r_c - r_r + m)))


def _bt_check(f):
    r_c, r_r = GEN.normal(size=6), GEN.normal(size=6)
    return close(f(r_c, r_r, 0.3), float(rc.preference_loss(r_c, r_r, margin=0.3)))


def _sigmoid_right(x):
    return 1 / (1 + np.exp(-x))


def _sigmoid_wrong(x):
    return 1 / (1 + np.exp(x))


def _sigmoid_check(f):
    x = np.linspace(-4, 4, 9)
    return close(f(x), rc.sigmoid(x)) and close(np.log(f(x)), rc.log_sigmoid(x))


def _optimum_right(ref, r, beta):
    p = ref * np.exp(r / beta)  # pi* proportional to pi_ref exp(r / beta)
    return p / p.sum()


def _optimum_wrong(ref, r, beta):
    p = ref * np.exp(beta * r)
    return p / p.sum()


def _objective(pi, ref, r, beta):
    kl = rc.exact_kl(np.log(pi)[None, None], np.log(ref)[None, None], np.ones((1, 2), dtype=bool))
    return float(pi @ r - beta * kl[0])


def _optimum_check(f):
    """pi* beats every other distribution on E[r] - beta KL(pi || ref), and its value is
    beta log sum ref e^{r / beta}."""
    ref, r, beta = np.array([0.5, 0.3, 0.15, 0.05]), np.array([0.0, 1.0, 0.5, 2.0]), 0.7
    star = f(ref, r, beta)
    best = _objective(star, ref, r, beta)
    others = [_objective(GEN.dirichlet(np.ones(4)), ref, r, beta) for _ in range(200)]
    return close(best, beta * np.log(ref @ np.exp(r / beta))) and best >= max(others)


def _kl_right(logp, ref_logp):
    d = ref_logp - logp
    return -d, d**2 / 2, np.exp(d) - d - 1


def _kl_wrong(logp, ref_logp):
    d = logp - ref_logp  # d with the wrong sign
    return -d, d**2 / 2, np.exp(d) - d - 1


def _kl_check(f):
    logp, ref = -GEN.uniform(0.1, 3.0, size=7), -GEN.uniform(0.1, 3.0, size=7)
    k1, k2, k3 = f(logp, ref)
    return (close(k1, rc.kl_estimate(logp, ref, kind="k1"))
            and close(k2, rc.kl_estimate(logp, ref, kind="k2"))
            and close(k3, rc.kl_estimate(logp, ref, kind="k3")))


def _rlhf_reward_right(score, k, mask, beta):
    rewards = np.where(mask, -beta * k, 0.0)
    last = mask.shape[1] - 1 - np.argmax(mask[:, ::-1], axis=1)
    rewards[np.arange(len(score)), last] += score  # the last token also gets r_phi
    return rewards


def _rlhf_reward_wrong(score, k, mask, beta):
    rewards = np.where(mask, -beta * k, 0.0)
    rewards[:, -1] += score  # the last column, padding or not
    return rewards


def _rlhf_reward_check(f):
    logp, ref = -GEN.uniform(0.1, 2.0, size=(2, 5)), -GEN.uniform(0.1, 2.0, size=(2, 5))
    mask = np.array([[True, True, True, False, False], [True, True, True, True, True]])
    score = np.array([1.5, -0.5])
    k = rc.kl_estimate(logp, ref, kind="k1")
    got = rc.kl_penalized_rewards(score, logp, ref, mask, beta=0.05, kind="k1")
    return close(f(score, k, mask, 0.05), got)


def _dpo_parts(beta=0.1):
    pc, pr = GEN.normal(size=5) - 3, GEN.normal(size=5) - 3
    rfc, rfr = GEN.normal(size=5) - 3, GEN.normal(size=5) - 3
    return pc, pr, rfc, rfr, beta


def _dpo_right(pc, pr, rfc, rfr, beta, eps=0.0):
    z = (pc - rfc) - (pr - rfr)  # the log-ratio margin
    return np.mean(-(1 - eps) * np.log(_sigmoid(beta * z)) - eps * np.log(_sigmoid(-beta * z)))


def _dpo_wrong(pc, pr, rfc, rfr, beta, eps=0.0):
    z = (pc - rfc) - (pr - rfr)
    return np.mean(-(1 - eps) * np.log(_sigmoid(beta * z)) - eps * np.log(_sigmoid(beta * z)))


def _dpo_check(f):
    pc, pr, rfc, rfr, beta = _dpo_parts()
    return all(close(f(pc, pr, rfc, rfr, beta, e),
                     float(rc.dpo_loss(pc, pr, rfc, rfr, beta=beta, label_smoothing=e).loss))
               for e in (0.0, 0.2))


def _dpo_grad_right(pc, pr, rfc, rfr, beta):
    z = (pc - rfc) - (pr - rfr)
    return -beta * _sigmoid(-beta * z) / len(z)  # d loss / d logp_chosen, per pair of the mean


def _dpo_grad_wrong(pc, pr, rfc, rfr, beta):
    z = (pc - rfc) - (pr - rfr)
    return -beta * _sigmoid(beta * z) / len(z)


def _dpo_grad_check(f):
    pc, pr, rfc, rfr, beta = _dpo_parts(beta=0.5)
    _, grad = rc.value_and_grad(lambda p: rc.dpo_loss(p, pr, rfc, rfr, beta=beta).loss)(pc)
    return close(f(pc, pr, rfc, rfr, beta), grad)


def _ipo_right(pc, pr, rfc, rfr, lc, lr_, tau):
    z = (pc - rfc) / lc - (pr - rfr) / lr_  # per-token averages (TRL's choice)
    return np.mean((z - 1 / (2 * tau)) ** 2)


def _ipo_wrong(pc, pr, rfc, rfr, lc, lr_, tau):
    z = (pc - rfc) - (pr - rfr)  # sums, not averages
    return np.mean((z - 1 / (2 * tau)) ** 2)


def _ipo_check(f):
    pc, pr, rfc, rfr, _ = _dpo_parts()
    lc, lr_ = np.array([3.0, 5, 2, 4, 6]), np.array([4.0, 2, 2, 7, 3])
    got = rc.ipo_loss(pc, pr, rfc, rfr, tau=0.1, chosen_lengths=lc, rejected_lengths=lr_).loss
    return close(f(pc, pr, rfc, rfr, lc, lr_, 0.1), float(got))


def _grpo_right(r, G, eps):
    g = r.reshape(-1, G)
    return ((g - g.mean(1, keepdims=True)) / (g.std(1, ddof=1, keepdims=True) + eps)).reshape(-1)


def _grpo_wrong(r, G, eps):
    g = r.reshape(-1, G)
    return ((g - g.mean(1, keepdims=True)) / (g.std(1, keepdims=True) + eps)).reshape(-1)  # ddof=0


def _grpo_check(f):
    r = GEN.integers(0, 2, size=12).astype(float)
    r[:4] = [1.0, 0.0, 0.0, 0.0]
    return close(f(r, 4, 1e-4), rc.grpo_advantages(r, 4, eps=1e-4))


def _grpo_loss_right(logp, old, ref, adv, mask, eps, beta):
    ratio = np.exp(logp - old)
    surrogate = np.minimum(ratio * adv[:, None], np.clip(ratio, 1 - eps, 1 + eps) * adv[:, None])
    d = ref - logp
    k3 = np.exp(d) - d - 1
    n = mask.sum()
    return -np.sum(surrogate * mask) / n + beta * np.sum(k3 * mask) / n  # -L^clip + beta E[k3]


def _grpo_loss_wrong(logp, old, ref, adv, mask, eps, beta):
    return _grpo_loss_right(logp, old, ref, adv, mask, eps, -beta)


def _grpo_loss_check(f):
    logp, old, ref = (-GEN.uniform(0.1, 2.0, size=(3, 4)) for _ in range(3))
    adv, mask = GEN.normal(size=3), np.array([[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]], bool)
    got = rc.grpo_loss(logp, old, ref, adv, mask, clip=0.2, kl_coef=0.04).loss
    return close(f(logp, old, ref, adv, mask, 0.2, 0.04), float(got))


# -- search -----------------------------------------------------------------------------------

def _uct_right(q, n, N, c):
    return np.where(n > 0, q + c * np.sqrt(np.log(N) / np.maximum(n, 1)), np.inf)


def _uct_wrong(q, n, N, c):
    return np.where(n > 0, q + c * np.sqrt(N / np.maximum(n, 1)), np.inf)


def _uct_check(f):
    q, n = np.array([0.5, 0.1, -0.2, 0.0]), np.array([4, 3, 3, 0])
    return close(f(q, n, 10, 2.0), rc.uct_score(q, n, 10, c=2.0))


def _puct_right(q, p, n, N, c):
    return q + c * p * np.sqrt(N) / (1 + n)


def _puct_wrong(q, p, n, N, c):
    return q + c * p * np.sqrt(np.log(N)) / (1 + n)


def _puct_check(f):
    q, p, n = np.array([0.5, 0.1, -0.2, 0.0]), np.array([0.1, 0.4, 0.2, 0.3]), np.array([4, 3, 3, 0])
    return close(f(q, p, n, 10, 1.5), rc.puct_score(q, p, n, 10, c=1.5))


def _visit_right(N, T):
    w = N ** (1 / T)
    return w / w.sum()


def _visit_wrong(N, T):
    w = N**T
    return w / w.sum()


def _visit_check(f):
    reference = rc.exercises.get("visit_policy").reference
    N = np.array([10.0, 30.0, 60.0])
    return close(f(N, 0.5), reference(N, 0.5)) and close(f(N, 2.0), reference(N, 2.0))


def _length_right(score, length, alpha):
    return score / length**alpha


def _length_wrong(score, length, alpha):
    return score * length**alpha


def _length_check(f):
    reference = rc.exercises.get("length_normalised").reference
    hyps = [((7, 1, 0), -1.2), ((7, 2, 3, 5, 0), -2.0), ((7, 0), -1.0)]
    want = dict(reference(hyps, 1, 0.6))
    return all(close(f(s, len(t) - 1, 0.6), want[t]) for t, s in hyps)


def _temperature_right(z, T):
    return _softmax(z / T)


def _temperature_wrong(z, T):
    return _softmax(z * T)


def _temperature_check(f):
    z = np.array([2.0, 1.0, -0.5, 0.3])
    return all(close(f(z, T), _softmax(rc.filter_logits(z, temperature=T))) for T in (0.5, 2.0))


def _best_of_n_right(p, n):
    return 1 - (1 - p) ** n


def _best_of_n_wrong(p, n):
    return min(1.0, n * p)


def _best_of_n_check(f):
    probs, right = np.array([0.1, 0.15, 0.5, 0.25]), np.array([1.0, 1.0, 0.0, 0.0])
    dist = rc.best_of_n_distribution(probs, right, 4)
    return close(f(0.25, 4), dist[right == 1].sum())


def _bon_kl_right(n):
    return math.log(n) - (n - 1) / n


def _bon_kl_wrong(n):
    return math.log(n)


def _bon_kl_check(f):
    """Reached without ties (4000 equally likely outcomes, distinct rewards), never exceeded."""
    p = np.full(4000, 1 / 4000)
    for n in (2, 8, 32):
        q = rc.best_of_n_distribution(p, np.arange(4000.0), n)
        if not close(np.sum(q * np.log(q / p)), f(n), tol=2e-3):
            return False
        ties = rc.best_of_n_distribution(np.array([0.5, 0.3, 0.2]), np.array([1.0, 1.0, 0.0]), n)
        if np.sum(ties * np.log(ties / np.array([0.5, 0.3, 0.2]))) > f(n) + 1e-9:
            return False
    return True


FORMULAS = [
    Formula("return", ("README.md", "tabular.md"), ("r_t + \\gamma G_{t+1}",),
            _return_right, _return_wrong, _return_check, exact=("G_t",)),
    Formula("bellman expectation", ("tabular.md",), ("V^\\pi(s) = \\sum_a \\pi(a \\mid s) \\sum_{s'}",),
            _bellman_right, _bellman_wrong, _bellman_check),
    Formula("bellman linear system", ("tabular.md",), ("(I - \\gamma P_\\pi) V^\\pi = r_\\pi",),
            _linear_right, _linear_wrong, _linear_check),
    Formula("one-step look-ahead", ("tabular.md",),
            ("Q(s,a) = \\sum_{s'} P(s' \\mid s,a)\\,[R(s,a,s') + \\gamma V(s')]",),
            _lookahead_right, _lookahead_wrong, _lookahead_check),
    Formula("bellman optimality", ("tabular.md",), ("V_{k+1}(s) = \\max_a \\sum_{s'}",),
            lambda P, R, V, g: _lookahead_right(P, R, V, g).max(axis=-1),
            lambda P, R, V, g: _lookahead_right(P, R, V, g).mean(axis=-1), _optimality_check),
    Formula("td error", ("tabular.md",), ("\\delta_t = r_t + \\gamma V(s_{t+1}) - V(s_t)",
                                          "r_t + \\gamma V(s_{t+1})"),
            _td_right, _td_wrong, _td_check),
    Formula("n-step return", ("tabular.md",), ("G_{t:t+n} = \\sum_{k=0}^{n-1}",),
            _nstep_right, _nstep_wrong, _nstep_check),
    Formula("prediction update", ("tabular.md",), ("V(s_t) \\leftarrow V(s_t) + \\alpha",),
            _generic_right, _generic_wrong, _generic_check),
    Formula("eligibility traces", ("tabular.md",),
            ("e \\leftarrow \\gamma\\lambda e", "e(s_t) \\mathrel{+}= 1",
                                                   "V \\leftarrow V + \\alpha\\,\\delta_t\\,e"),
            _traces_right, _traces_wrong, _traces_check),
    Formula("q-learning", ("tabular.md",), ("r_t + \\gamma \\max_{a'} Q(s_{t+1}, a')",
                                            "Q(s_t,a_t) \\leftarrow Q(s_t,a_t) + \\alpha"),
            lambda q, a, eps: q.max(), lambda q, a, eps: q[a],
            lambda f: _control_check(rc.q_learning, f)),
    Formula("sarsa", ("tabular.md",), ("r_t + \\gamma Q(s_{t+1}, a_{t+1})",),
            lambda q, a, eps: q[a], lambda q, a, eps: q.max(),
            lambda f: _control_check(rc.sarsa, f)),
    Formula("expected sarsa", ("tabular.md",),
            ("r_t + \\gamma \\sum_{a'} \\pi(a' \\mid s_{t+1})\\, Q(s_{t+1}, a')",),
            lambda q, a, eps: _eps_greedy_mean(q, eps),
            lambda q, a, eps: q.mean(), lambda f: _control_check(rc.expected_sarsa, f)),
    Formula("epsilon-greedy probabilities", ("tabular.md",), ("\\varepsilon/|\\mathcal A|",),
            lambda q, e: e / len(q) + (1 - e) * (q == q.max()), lambda q, e: (1 - e) * (q == q.max()),
            _eps_greedy_probs_check),
    Formula("sample average", ("tabular.md",), ("Q(a) \\leftarrow Q(a) + \\tfrac{1}{N(a)}",),
            _sample_average_right, _sample_average_wrong, _sample_average_check),
    Formula("ucb", ("tabular.md",), ("a = \\arg\\max_a Q(a) + c\\sqrt{\\ln t / N(a)}",),
            _ucb_right, _ucb_wrong, _ucb_check),
    Formula("gradient bandit", ("tabular.md",), ("H \\leftarrow H + \\alpha\\,(r - \\bar r)\\,(e_a - \\pi)",
                                                 "\\pi = \\mathrm{softmax}(H)"),
            _gradient_bandit_right, _gradient_bandit_wrong, _gradient_bandit_check),
    Formula("dqn target", ("deep_rl.md",), ("y = r + \\gamma\\,(1-\\text{term})\\,Q_{\\theta^-}",
                                            "a^{\\star} = \\arg\\max_{a'} Q_{\\theta^-}(s',a')",
                                            "a^{\\star} = \\arg\\max_{a'} Q_\\theta(s',a')"),
            _dqn_right, _dqn_wrong, _dqn_check),
    Formula("huber", ("deep_rl.md",), ("\\tfrac12 x^2",), _huber_right, _huber_wrong, _huber_check,
            exact=("|x| \\le 1",)),
    Formula("policy gradient theorem", ("deep_rl.md",), ("\\nabla_\\theta J = \\mathbb E_{\\pi_\\theta}",),
            _pg_right, _pg_wrong, _pg_check),
    Formula("baseline is unbiased", ("deep_rl.md", "choosing_and_troubleshooting.md"),
            ("\\mathbb E_{a \\sim \\pi}[\\nabla_\\theta \\log \\pi_\\theta(a \\mid s)]\\,b(s) = b(s)",
             "b(s)\\sum_a \\nabla\\pi(a \\mid s) = b(s)\\,\\nabla 1 = 0"),
            _baseline_right, _baseline_wrong, _baseline_check),
    Formula("softmax score", ("deep_rl.md",),
            ("\\nabla_z \\log \\pi(a \\mid s) = e_a - \\pi(\\cdot \\mid s)",),
            _score_right, _score_wrong, _score_check),
    Formula("gaussian log-prob", ("deep_rl.md",), ("\\log \\pi = \\sum_d -\\tfrac12",),
            _gauss_right, _gauss_wrong, _gauss_check),
    Formula("td error as advantage", ("deep_rl.md",),
            ("\\delta_t = r_t + \\gamma(1-\\text{term}_t)\\,V(s_{t+1}) - V(s_t)",),
            _tderr_right, _tderr_wrong, _tderr_check),
    Formula("gae", ("deep_rl.md",), ("\\hat A_t = \\sum_{k \\ge 0} (\\gamma\\lambda)^k \\delta_{t+k}",),
            _gae_right, _gae_wrong, _gae_check),
    Formula("ppo ratio", ("deep_rl.md",), ("\\rho_t = \\exp\\big(",),
            _ppo_ratio_right, _ppo_ratio_wrong, _ppo_ratio_check),
    Formula("clipped surrogate", ("deep_rl.md",), ("L^{\\text{clip}} = \\mathbb E\\big[\\min(",),
            _clip_right, _clip_wrong, _clip_check),
    Formula("ppo total loss", ("deep_rl.md",), ("L^V = \\tfrac12", "-L^{\\text{clip}} + c_v L^V - c_e H"),
            _ppo_total_right, _ppo_total_wrong, _ppo_total_check),
    Formula("entropy", ("deep_rl.md",), ("H = \\mathbb E\\big[-\\sum_a",),
            _entropy_right, _entropy_wrong, _entropy_check),
    Formula("approx kl", ("deep_rl.md",), ("(\\rho - 1) - \\log\\rho",),
            _approx_kl_right, _approx_kl_wrong, _approx_kl_check),
    Formula("explained variance", ("deep_rl.md",), ("1 - \\mathrm{Var}(\\hat R - V)/\\mathrm{Var}(\\hat R)",),
            _ev_right, _ev_wrong, _ev_check),
    Formula("horizon", ("choosing_and_troubleshooting.md",), ("1/(1-\\gamma) = 100",),
            _horizon_right, _horizon_wrong, _horizon_check),
    Formula("importance weight", ("llm_post_training.md",), ("w_i = \\pi(a_i)/b(a_i)",
                                                            "\\rho_{0:T-1} = \\prod_{t}"),
            _weight_right, _weight_wrong, _weight_check),
    Formula("ordinary, weighted, ess", ("llm_post_training.md",),
            ("\\frac1n \\sum_i w_i G_i", "\\sum_i w_i G_i / \\sum_i w_i",
             "\\text{ESS} = (\\sum_i w_i)^2 / \\sum_i w_i^2"),
            _estimates_right, _estimates_wrong, _estimates_check),
    Formula("per-decision is", ("llm_post_training.md",), ("\\gamma^t \\rho^{(i)}_{0:t}\\, r^{(i)}_t",),
            _per_decision_right, _per_decision_wrong, _per_decision_check),
    Formula("truncated is", ("llm_post_training.md",), ("\\bar w = \\min(w, c)",),
            _truncated_right, _truncated_wrong, _truncated_check),
    Formula("weight variance growth", ("llm_post_training.md",),
            ("\\mathbb E_b\\big[\\rho_{0:T-1}^2\\big] = \\big(\\mathbb E_b[w^2]\\big)^T",
             "\\mathbb E_b[w^2] = 1 + \\chi^2(\\pi \\,\\|\\, b)"),
            _second_moment_right, _second_moment_wrong, _second_moment_check),
    Formula("bradley-terry", ("llm_post_training.md",),
            ("P(y_c \\succ y_r \\mid x) = \\sigma",
             "\\log\\sigma\\big(r_\\phi(x,y_c) - r_\\phi(x,y_r) - m\\big)"),
            _bt_right, _bt_wrong, _bt_check),
    Formula("sigmoid", ("README.md",), ("\\sigma(x) = 1/(1+e^{-x})",),
            _sigmoid_right, _sigmoid_wrong, _sigmoid_check),
    Formula("kl-regularised optimum", ("llm_post_training.md", "choosing_and_troubleshooting.md"),
            ("\\pi^\\star(y \\mid x) \\propto \\pi_{\\text{ref}}(y \\mid x)\\, e^{r_\\phi(x,y)/\\beta}",
             "\\pi^\\star \\propto \\pi_{\\text{ref}}\\,e^{r/\\beta}"),
            _optimum_right, _optimum_wrong, _optimum_check),
    Formula("rlhf per-token reward", ("llm_post_training.md",), ("-\\beta\\,\\hat k_t",),
            _rlhf_reward_right, _rlhf_reward_wrong, _rlhf_reward_check),
    Formula("kl estimators", ("llm_post_training.md",),
            ("d_t = \\log\\pi_{\\text{ref}}(y_t) - \\log\\pi_\\theta(y_t)", "= -d_t", "= d_t^2/2",
             "= e^{d_t} - d_t - 1"),
            _kl_right, _kl_wrong, _kl_check),
    Formula("dpo and cdpo", ("llm_post_training.md",),
            ("z = \\big[\\log\\pi_\\theta(y_c \\mid x) - \\log\\pi_{\\text{ref}}(y_c \\mid x)\\big]",
             "-\\mathbb E\\,\\log\\sigma(\\beta z)",
             "-(1-\\varepsilon)\\log\\sigma(\\beta z) - \\varepsilon\\log\\sigma(-\\beta z)"),
            _dpo_right, _dpo_wrong, _dpo_check),
    Formula("dpo gradient", ("llm_post_training.md",),
            ("\\nabla_\\theta \\mathcal L = -\\beta\\,\\sigma(-\\beta z)\\,\\nabla_\\theta z",),
            _dpo_grad_right, _dpo_grad_wrong, _dpo_grad_check),
    Formula("ipo", ("llm_post_training.md",), ("\\big(z' - \\tfrac{1}{2\\tau}\\big)^2",),
            _ipo_right, _ipo_wrong, _ipo_check),
    Formula("grpo advantage", ("llm_post_training.md",),
            ("\\hat A_i = \\frac{r_i - \\operatorname{mean}(r_{1..G})}"
             "{\\operatorname{std}(r_{1..G}) + \\varepsilon}",),
            _grpo_right, _grpo_wrong, _grpo_check),
    Formula("grpo loss", ("llm_post_training.md",),
            ("-L^{\\text{clip}} + \\beta_{\\text{KL}}\\,\\mathbb E[k3]",),
            _grpo_loss_right, _grpo_loss_wrong, _grpo_loss_check),
    Formula("uct", ("search.md",), ("\\text{UCT}_j = \\bar Q_j + c\\,\\sqrt{\\frac{\\ln N}{n_j}}",),
            _uct_right, _uct_wrong, _uct_check),
    Formula("puct", ("search.md",), ("\\text{PUCT}_j = \\bar Q_j + c\\,P(j)\\,\\frac{\\sqrt{N}}{1 + n_j}",),
            _puct_right, _puct_wrong, _puct_check),
    Formula("visit-count policy", ("search.md",), ("\\pi(a) \\propto N(a)^{1/T}",),
            _visit_right, _visit_wrong, _visit_check),
    Formula("length penalty", ("search.md",), ("\\log p(y) / |y|^{\\alpha}",),
            _length_right, _length_wrong, _length_check),
    Formula("temperature", ("search.md",), ("\\mathrm{softmax}(z/T)",),
            _temperature_right, _temperature_wrong, _temperature_check),
    Formula("best-of-n with a verifier", ("search.md",), ("1 - (1-p)^n",),
            _best_of_n_right, _best_of_n_wrong, _best_of_n_check),
    Formula("best-of-n kl", ("search.md",), ("\\le \\log n - \\frac{n-1}{n}",),
            _bon_kl_right, _bon_kl_wrong, _bon_kl_check),
]

# Spans that look like formulas but define notation; nothing in the code computes them.
DEFINITIONS = {
    "\\gamma \\in [0, 1]": "the range of the discount",
    "V^\\pi(s) = \\mathbb E_\\pi[G_t \\mid s_t = s]": "definition of V",
    "Q^\\pi(s,a) = \\mathbb E_\\pi[G_t \\mid s_t = s, a_t = a]": "definition of Q",
    "J(\\theta) = \\mathbb E_{\\pi_\\theta}[G_0]": "definition of the objective",
    "z = W\\phi(s)": "definition of a linear-softmax policy",
    "\\text{target}": "placeholder in the generic update",
    "\\mathcal L = \\mathbb E\\,\\big(z' - \\tfrac{1}{2\\tau}\\big)^2": "IPO, checked through its snippet",
}


def formula_spans(text: str) -> list[str]:
    """Display math, inline math that states a relation, and the math in the formula/target
    column of a table: what a reader would call a formula."""
    spans = [m.strip() for m in re.findall(r"\$\$(.+?)\$\$", text, re.S)]
    inline_text = re.sub(r"\$\$.+?\$\$", "", text, flags=re.S)
    for line in inline_text.splitlines():
        for m in re.findall(r"(?<!\$)\$([^$\n]+?)\$(?!\$)", line):
            relation = re.search(r"=|\\leftarrow|\\propto|\\le\b|\\ge\b", m)
            a_setting = re.fullmatch(r"[\\\w{}]+\s*=\s*-?[\d.]+", m.strip())  # lambda = 0
            if relation and len(m.strip()) >= 10 and not a_setting:
                spans.append(m.strip())
    for table in re.findall(r"(?:^\|.*\n)+", inline_text, re.M):
        rows = table.strip().splitlines()
        header = [c.strip().lower() for c in rows[0].strip("|").split("|")]
        cols = [i for i, h in enumerate(header) if h in ("formula", "target")]
        for row in rows[2:]:
            cells = row.strip("|").split("|")
            for i in cols:
                first = re.search(r"\$([^$]+?)\$", cells[i]) if i < len(cells) else None
                if first:  # the formula leads the cell; later math is commentary
                    spans.append(first.group(1).strip())
    return spans


def unchecked_formulas(text: str) -> list[str]:
    covered = [s for f in FORMULAS for s in f.snippets]
    exact = {e for f in FORMULAS for e in f.exact}
    return [span for span in formula_spans(text)
            if span not in DEFINITIONS and span not in exact
            and not any(snip in span or span in snip for snip in covered)]


@pytest.mark.parametrize("formula", FORMULAS, ids=lambda f: f.name)
def test_formula_is_on_its_sheets(formula):
    for sheet in formula.sheets:
        text = (SHEETS_DIR / sheet).read_text(encoding="utf-8")
        on_sheet = [s for s in formula.snippets if s in text]
        assert on_sheet, f"{sheet}: none of {formula.snippets} is on the sheet"


@pytest.mark.parametrize("formula", FORMULAS, ids=lambda f: f.name)
def test_formula_agrees_with_the_code(formula):
    with np.errstate(all="ignore"):
        assert formula.check(formula.right), f"{formula.name}: the sheet's formula disagrees with rlcourse"


@pytest.mark.parametrize("formula", FORMULAS, ids=lambda f: f.name)
def test_planted_wrong_formula_is_caught(formula):
    with np.errstate(all="ignore"):
        assert not formula.check(formula.wrong), f"{formula.name}: the check cannot tell a wrong formula"


def test_every_formula_on_the_sheets_is_checked():
    missing = {p.name: unchecked_formulas(p.read_text(encoding="utf-8")) for p in [INDEX, *SHEETS]}
    missing = {k: v for k, v in missing.items() if v}
    assert not missing, f"formulas without a numerical check: {missing}"


def test_the_coverage_check_flags_a_new_formula():
    assert unchecked_formulas("$$x_t = y_t + z_t$$") == ["x_t = y_t + z_t"]
    assert unchecked_formulas("where $A_t = \\delta_t + 2$ holds") == ["A_t = \\delta_t + 2"]
    table = "| m | target |\n|---|---|\n| new | $r_t + Q(s')$ |\n"
    assert unchecked_formulas(table) == ["r_t + Q(s')"]
    assert unchecked_formulas("$$\\text{UCT}_j = \\bar Q_j + c\\,\\sqrt{\\frac{\\ln N}{n_j}}$$") == []
    assert unchecked_formulas("with $\\lambda = 0.95$ and $w > c$") == []  # settings, not formulas
