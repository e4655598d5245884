"""Toy tasks for the post-training lessons: data, hidden scorers and verifiers.

Each task is small enough to train on a laptop CPU in seconds, and each comes with the truth a
learned reward can be checked against (a verifier, or a hidden annotator's score).
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np

from ..core._checks import (
    as_bool_array,
    as_int_array,
    as_rng,
    check_count,
    check_nonnegative,
    check_shape,
)
from ..core.tokenizer import EOS, PAD, Tokenizer
from ..core.transformer import _check_tokens

__all__ = ["addition_data", "ReversalTask", "reversal_task", "token_counts", "STYLE_WORDS",
           "style_data", "style_quality", "style_preferences", "ReviewTask", "REVIEW_MALFORMED",
           "review_task"]


def addition_data(n: int, seed=0, max_operand: int = 9):
    """``n`` addition problems ``(prompts, answers)``: ``"3+4="`` and ``"7"``, operands uniform.

    A verifier-checkable toy task for ``Tokenizer("0123456789+=")``: the answer is right iff it
    equals ``str(a + b)``.
    """
    n = check_count("n", n)
    max_operand = check_count("max_operand", max_operand, low=0)
    rng = as_rng(seed)
    a, b = rng.integers(0, max_operand + 1, size=(2, n))
    return [f"{x}+{y}=" for x, y in zip(a, b)], [str(x + y) for x, y in zip(a, b)]


class ReversalTask(NamedTuple):
    """Reverse a string: the prompt ``"cabd>"`` is answered by ``"dbac"`` (lesson 14).

    ``tokenizer`` (characters: the alphabet and ``">"``); ``alphabet``, ``length``; three
    disjoint lists of words, ``sft`` (with answers, for supervised fine-tuning), ``rl`` (prompts
    only, for RL with the verifier) and ``test`` (held out: never trained on). Every prompt has
    exactly one right answer, so a model's probability of passing the verifier on a prompt is
    exactly ``pi(answer | prompt)`` (see ``pairs``), no sampling needed.
    """

    tokenizer: Tokenizer
    alphabet: str
    length: int
    sft: list
    rl: list
    test: list

    @staticmethod
    def prompt(word: str) -> str:
        return word + ">"

    @staticmethod
    def answer(word: str) -> str:
        return word[::-1]

    @staticmethod
    def verify(prompt: str, completion: str) -> float:
        """The verifier: 1.0 if ``completion`` is the prompt's word reversed, else 0.0."""
        return float(prompt.endswith(">") and completion == prompt[:-1][::-1])

    @property
    def prompt_len(self) -> int:
        """Columns a prompt takes (``BOS``, the word, ``">"``): every prompt has this length."""
        return self.length + 2

    def prompt_ids(self, words) -> np.ndarray:
        """``Tokenizer.encode_prompts`` of the words' prompts: ``[N, prompt_len]``."""
        return self.tokenizer.encode_prompts([self.prompt(w) for w in words])

    def pairs(self, words):
        """``(tokens, mask)`` of the words' prompts with their right answers (and EOS): the
        sequences ``rc.sft`` fits, and ``exp(rc.completion_log_prob(params, tokens, mask))`` is
        each prompt's exact probability of passing the verifier."""
        tokens, mask, _ = self.tokenizer.encode_pairs([self.prompt(w) for w in words],
                                                      [self.answer(w) for w in words])
        return tokens, mask

    def reward_fn(self, tokens, mask=None) -> np.ndarray:
        """The verifier on sampled sequences ``[B, L]`` (prompt in the first ``prompt_len``
        columns): ``[B]`` of 1.0 and 0.0, as ``rc.grpo_train`` wants it.

        Strict about tokens, not only text: a completion passes only if it is the answer's
        letters followed by ``EOS``. ``Tokenizer.decode`` skips ``PAD`` and ``BOS``, and a
        model can sample them (``generate`` does not forbid them), so decoding alone would pass
        ``d<pad>cba<eos>`` or an answer cut off without ``EOS``: a loophole RL would find.
        """
        tokens = np.asarray(tokens)
        p = self.prompt_len
        rewards = np.zeros(len(tokens))
        for i, row in enumerate(tokens):
            completion = row[p:]
            ends = np.flatnonzero(completion == EOS)
            if ends.size == 0 or (completion[:ends[0]] <= EOS).any():
                continue  # cut off before EOS, or a special token inside the answer
            rewards[i] = self.verify(self.tokenizer.decode(row[:p]), self.tokenizer.decode(completion))
        return rewards


_MAX_WORDS = 10**6  # every word is listed and shuffled: a million take about a second


def reversal_task(alphabet: str = "abcde", length: int = 4, n_sft: int = 32, n_test: int = 200,
                  seed=0) -> ReversalTask:
    """The string-reversal task with its three disjoint splits (see ``ReversalTask``).

    All ``len(alphabet) ** length`` words are shuffled with ``seed``; the first ``n_sft`` are the
    SFT set, the next ``n_test`` the held-out test set, the rest the RL prompts.
    """
    if (not isinstance(alphabet, str) or not alphabet or len(set(alphabet)) != len(alphabet)
            or ">" in alphabet):
        raise ValueError(f"alphabet: expected a string of distinct characters other than '>', "
                         f"got {alphabet!r}")
    length = check_count("length", length)
    if len(alphabet) ** length > _MAX_WORDS:
        raise ValueError(f"length: {len(alphabet)} letters make {len(alphabet)}**{length} words of "
                         f"length {length}, more than the {_MAX_WORDS:.0e} this task lists")
    words = ["".join(w) for w in itertools.product(alphabet, repeat=length)]
    n_sft, n_test = check_count("n_sft", n_sft), check_count("n_test", n_test)
    if n_sft + n_test >= len(words):
        raise ValueError(f"n_sft + n_test: expected fewer than the {len(words)} words, got "
                         f"{n_sft} + {n_test}")
    order = as_rng(seed).permutation(len(words))
    shuffled = [words[i] for i in order]
    return ReversalTask(Tokenizer(alphabet + ">"), alphabet, length, shuffled[:n_sft],
                        shuffled[n_sft + n_test:], shuffled[n_sft:n_sft + n_test])


def token_counts(tokens, mask, vocab: int) -> np.ndarray:
    """How often each token id occurs where ``mask`` is True: ``[B, V]`` floats (bag of words)."""
    vocab = check_count("vocab", vocab)
    tokens = as_int_array("tokens", tokens, low=0)
    if tokens.ndim != 2:
        raise ValueError(f"tokens: expected shape [B, L], got {tokens.shape}")
    if tokens.size and tokens.max() >= vocab:
        raise ValueError(f"tokens: expected ids below vocab={vocab}, got {tokens.max()}")
    mask = as_bool_array("mask", mask)
    check_shape("mask", mask, tokens.shape, "tokens")
    counts = np.zeros((len(tokens), vocab))
    np.add.at(counts, (np.nonzero(mask)[0], tokens[mask]), 1.0)
    return counts


# The "style" task: a prompt "the cat" is completed by "is very great ." and the like. The true
# quality of a completion is the warmth of its adjective, and 0 for a completion that breaks the
# grammar; a reward model that only counts words cannot see the grammar, which is what RL exploits.
_NOUNS, _VERBS, _ADVERBS = ("cat", "dog", "bird"), ("is", "was"), ("very", "quite")


_WARMTH = {"great": 1.0, "good": 0.7, "fine": 0.4, "bad": 0.0}


STYLE_WORDS = ["the", *_NOUNS, *_VERBS, *_ADVERBS, *_WARMTH, "."]


def style_data(n: int, seed=0):
    """``n`` grammatical examples ``(prompts, completions)`` of the style task, uniformly drawn:
    ``"the dog"`` -> ``"was quite fine ."``; the grammar is ``VERB [ADVERB] ADJECTIVE .``."""
    n = check_count("n", n)
    rng = as_rng(seed)
    nouns = rng.choice(_NOUNS, n)
    verbs = rng.choice(_VERBS, n)
    adverbs = rng.choice([*_ADVERBS, ""], n)
    adjectives = rng.choice(list(_WARMTH), n)
    prompts = [f"the {x}" for x in nouns]
    completions = [" ".join(w for w in parts if w) for parts in zip(verbs, adverbs, adjectives, ["."] * n)]
    return prompts, completions


def style_quality(completions: list[str]):
    """``(quality [n], fluent [n])``: warmth of the adjective in [0, 1] (0 if not fluent), and
    whether the completion follows the grammar ``VERB [ADVERB] ADJECTIVE .``."""
    if (not isinstance(completions, (list, tuple, np.ndarray))
            or not all(isinstance(c, str) for c in completions)):
        raise TypeError(f"completions: expected a list of strings, got {completions!r:.60}")
    quality, fluent = np.zeros(len(completions)), np.zeros(len(completions), dtype=bool)
    for i, text in enumerate(completions):
        w = text.split()
        fluent[i] = (len(w) in (3, 4) and w[0] in _VERBS and w[-1] == "." and w[-2] in _WARMTH
                     and (len(w) == 3 or w[1] in _ADVERBS))
        quality[i] = _WARMTH[w[-2]] if fluent[i] else 0.0
    return quality, fluent


def style_preferences(n: int, seed=0, sharpness: float = 4.0):
    """``n`` preference pairs ``(prompts, chosen, rejected)`` labelled by simulated people.

    Two grammatical completions of one prompt are drawn; the first is preferred with the
    Bradley-Terry probability ``sigmoid(sharpness * (quality_1 - quality_2))``, so labels are
    noisy where the qualities are close, as human labels are.
    """
    n = check_count("n", n)
    sharpness = check_nonnegative("sharpness", sharpness)
    rng = as_rng(seed)
    prompts, first = style_data(n, rng)
    _, second = style_data(n, rng)
    q1, _ = style_quality(first)
    q2, _ = style_quality(second)
    prefer_first = rng.random(n) < 1.0 / (1.0 + np.exp(-sharpness * (q1 - q2)))
    chosen = [a if p else b for a, b, p in zip(first, second, prefer_first)]
    rejected = [b if p else a for a, b, p in zip(first, second, prefer_first)]
    return prompts, chosen, rejected


class ReviewTask(NamedTuple):
    """A toy preference task: "praise film" or "roast plot", answered by three adjectives.

    ``tokenizer`` (word level), ``prompts`` (the 8 instructions), ``words`` (the 9 words an
    answer is made of: 3 positive, 3 negative, 3 neutral), and the hidden annotator, which the
    model never sees:

    - ``score(prompt, completion)`` rates an answer's text. A well-formed answer (exactly three
      of ``words``) scores its tone: positive minus negative words for "praise", the opposite
      for "roast", from -3 to 3. Anything else ("", "great", "plot plot plot", four words)
      scores ``MALFORMED`` = -4, below every well-formed answer.
    - ``rate(tokens, prompt_len)`` rates sampled token rows ``[B, L]`` (prompt in the first
      ``prompt_len`` columns, as ``rc.generate`` returns them): ``(scores [B] float,
      well_formed [B] bool)``. A row is well-formed when its completion is three answer words
      followed by ``EOS`` (nothing else: no special token, no missing ``EOS``); its score is
      ``score``'s tone, and ``MALFORMED`` otherwise.
    """

    tokenizer: Tokenizer
    prompts: list
    words: list
    score: object
    rate: object


_POSITIVE, _NEGATIVE, _NEUTRAL = ("good", "great", "fun"), ("bad", "dull", "awful"), ("very", "quite", "and")
REVIEW_MALFORMED = -4.0


def _review_tone(prompt: str, words: list) -> int:
    tone = sum(w in _POSITIVE for w in words) - sum(w in _NEGATIVE for w in words)
    return tone if prompt.split()[0] == "praise" else -tone


def _review_score(prompt: str, completion: str) -> float:
    words = completion.split()
    if len(words) != 3 or not all(w in _POSITIVE + _NEGATIVE + _NEUTRAL for w in words):
        return REVIEW_MALFORMED
    return float(_review_tone(prompt, words))


def review_task() -> ReviewTask:
    """The praise/roast task of lesson 13 (see ``ReviewTask``)."""
    subjects = ["film", "plot", "cast", "music"]
    words = list(_POSITIVE + _NEGATIVE + _NEUTRAL)
    tokenizer = Tokenizer(["praise", "roast"] + subjects + words)
    prompts = [f"{mode} {s}" for mode in ("praise", "roast") for s in subjects]
    answer_ids = np.array([tokenizer.ids[w] for w in words])

    def rate(tokens, prompt_len: int):
        tokens = _check_tokens(tokens, tokenizer.vocab_size)
        prompt_len = check_count("prompt_len", prompt_len)
        if tokens.ndim != 2 or not 0 < prompt_len <= tokens.shape[1] - 4:
            raise ValueError(f"tokens: expected [B, L] rows with a prompt of prompt_len={prompt_len} "
                             f"columns and room for 3 words and EOS after it, got shape {tokens.shape}")
        completion = tokens[:, prompt_len:]
        well_formed = (np.isin(completion[:, :3], answer_ids).all(axis=1) & (completion[:, 3] == EOS)
                       & (completion[:, 4:] == PAD).all(axis=1))
        scores = np.full(len(tokens), REVIEW_MALFORMED)
        for i in np.flatnonzero(well_formed):
            prompt = tokenizer.decode(tokens[i, :prompt_len])
            scores[i] = _review_tone(prompt, [tokenizer.symbols[t] for t in completion[i, :3]])
        return scores, well_formed

    return ReviewTask(tokenizer, prompts, words, _review_score, rate)
