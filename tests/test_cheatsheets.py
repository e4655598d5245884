"""The cheat sheets stay true to the code: references resolve, quoted defaults are the real ones,
lessons exist, every topic of the brief is covered, and every sheet is linked from the index.

The convention (documented at the top of ``cheatsheets/README.md``):

- a code reference is ``rc.name`` or ``rc.module.name``, resolved by attribute lookup on
  ``import rlcourse as rc`` (anywhere in a sheet, fenced blocks included);
- a quoted default is an inline code span ``rc.func(param=value)``; ``value`` is read with
  ``ast.literal_eval`` and must equal ``inspect.signature(rc.func).parameters[param].default``;
- a lesson reference is ``Lesson NN`` and needs ``lessons/NN_*.ipynb`` or ``lessons/src/NN_*.py``.
"""

import ast
import inspect
import re
from pathlib import Path

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


# Every topic of /work/shared/cheatsheet-source.md, as words a sheet covering it must contain
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
