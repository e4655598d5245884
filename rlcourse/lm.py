"""A tiny causal language model in numpy: a tokenizer, the model, fine-tuning and sampling.

The model reads a fixed window of the last ``context`` tokens: each token is embedded
(``embed`` ``[V, D]``), the ``context`` embeddings are concatenated and pass through one tanh
layer and a linear head to next-token logits. ``lm_logits(params, tokens)[:, t]`` depends on
``tokens[:, t-context+1 : t+1]`` only (causal), and predicts ``tokens[:, t+1]``. Positions
before the start of a sequence read as ``PAD``, so a prompt left-padded with ``PAD`` gets
exactly the logits of the unpadded prompt: batches of prompts of different lengths are stored
left-padded, completions right-padded.

Token ids 0, 1, 2 are ``PAD``, ``BOS`` and ``EOS`` in every ``Tokenizer``; sequences start with
``BOS`` and a completion ends with ``EOS``.
"""

from __future__ import annotations

import numpy as np

from . import autodiff as ad
from ._checks import as_bool_array, as_int_array, check_shape
from .blas import single_thread_blas
from .llm import completion_mask, sequence_log_prob, token_log_probs
from .nn import linear_init
from .optim import Adam
from .sampling import sample_token

__all__ = [
    "PAD", "BOS", "EOS", "Tokenizer", "lm_init", "lm_logits", "lm_next_logits", "lm_nll",
    "completion_log_prob", "sft", "generate", "token_counts", "addition_data", "STYLE_WORDS",
    "style_data", "style_quality", "style_preferences",
]

PAD, BOS, EOS = 0, 1, 2
_SPECIALS = ("<pad>", "<bos>", "<eos>")


class Tokenizer:
    """A fixed vocabulary of characters or words, after ``PAD`` (0), ``BOS`` (1), ``EOS`` (2).

    ``Tokenizer("0123456789+=")`` splits text into characters; ``Tokenizer(["the", "cat"])``
    splits it on whitespace into words. An unknown symbol raises.
    """

    def __init__(self, symbols):
        self.words = not isinstance(symbols, str)
        symbols = list(symbols)
        if len(set(symbols)) != len(symbols) or not symbols:
            raise ValueError(f"symbols: expected distinct symbols, got {symbols!r}")
        if self.words and any(not isinstance(s, str) or not s or s.split() != [s] for s in symbols):
            raise ValueError(f"symbols: words must be non-empty strings without spaces, got {symbols!r}")
        self.symbols = list(_SPECIALS) + symbols
        self.ids = {s: i for i, s in enumerate(self.symbols) if i > EOS}
        self.pad, self.bos, self.eos = PAD, BOS, EOS

    @property
    def vocab_size(self) -> int:
        return len(self.symbols)

    def __repr__(self):
        kind = "words" if self.words else "characters"
        return f"Tokenizer({self.vocab_size} tokens: 3 special + {self.vocab_size - 3} {kind})"

    def encode(self, text: str, bos: bool = True, eos: bool = False) -> np.ndarray:
        """Token ids of ``text`` (int64 ``[n]``), with ``BOS`` first / ``EOS`` last if asked."""
        pieces = text.split() if self.words else list(text)
        unknown = [p for p in pieces if p not in self.ids]
        if unknown:
            raise ValueError(f"text: {unknown[0]!r} is not in the vocabulary {self.symbols[3:]}")
        ids = [self.ids[p] for p in pieces]
        return np.array([BOS] * bos + ids + [EOS] * eos, dtype=np.int64)

    def decode(self, ids) -> str:
        """Text of ``ids``: ``PAD`` and ``BOS`` are skipped and decoding stops at ``EOS``."""
        out = []
        for i in np.asarray(ids).tolist():
            if i == EOS:
                break
            if i > EOS:
                out.append(self.symbols[i])
        return (" " if self.words else "").join(out)

    def encode_prompts(self, prompts: list[str]) -> np.ndarray:
        """``BOS + prompt`` for each prompt, left-padded with ``PAD`` to one length: ``[B, P]``."""
        rows = [self.encode(p) for p in prompts]
        width = max(len(r) for r in rows)
        return np.stack([np.pad(r, (width - len(r), 0), constant_values=PAD) for r in rows])

    def encode_pairs(self, prompts: list[str], completions: list[str]):
        """Training sequences ``(tokens [B, L], mask [B, L], prompt_len)``.

        Each row is the left-padded prompt (``prompt_len`` = P columns), then the completion and
        ``EOS``, right-padded with ``PAD``. ``mask`` is True on the completion tokens and their
        ``EOS``: the tokens a fine-tuned or RL-trained model is scored on.
        """
        if len(prompts) != len(completions):
            raise ValueError(f"completions: expected {len(prompts)} (one per prompt), got {len(completions)}")
        head = self.encode_prompts(prompts)
        tails = [self.encode(c, bos=False, eos=True) for c in completions]
        width = max(len(t) for t in tails)
        tail = np.stack([np.pad(t, (0, width - len(t)), constant_values=PAD) for t in tails])
        tokens = np.concatenate([head, tail], axis=1)
        prompt_len = head.shape[1]
        return tokens, completion_mask(tokens, prompt_len, EOS), prompt_len

    def decode_completions(self, tokens, prompt_len: int) -> list[str]:
        """The text after column ``prompt_len`` of each row of ``tokens`` ``[B, L]``."""
        return [self.decode(row[prompt_len:]) for row in np.asarray(tokens)]


def lm_init(vocab: int, context: int, dim: int, seed=0, hidden: int = 128, dtype=np.float32) -> dict:
    """Parameters ``{"embed": [V, D], "hidden": {"w": [C*D, H], "b"}, "out": {"w": [H, V], "b"}}``.

    The context length is read back from the shapes (``C = hidden.w.shape[0] // D``), so the
    tree holds arrays only. The head starts small (gain 0.1): an untrained model is close to
    uniform over the vocabulary.
    """
    for name, v in (("vocab", vocab), ("context", context), ("dim", dim), ("hidden", hidden)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name}: expected a positive integer, got {v!r}")
    if vocab <= EOS:
        raise ValueError(f"vocab: expected more than the 3 special tokens, got {vocab}")
    rng = np.random.default_rng(seed) if not isinstance(seed, np.random.Generator) else seed
    return {
        "embed": rng.normal(0.0, 1.0, (vocab, dim)).astype(dtype),
        "hidden": linear_init(context * dim, hidden, rng, scale=1.0, dtype=dtype),
        "out": linear_init(hidden, vocab, rng, scale=0.1, dtype=dtype),
    }


def _shape_of(params) -> tuple[int, int, int]:
    """``(vocab, context, dim)`` read from the parameter shapes."""
    vocab, dim = np.shape(params["embed"])
    fan_in = np.shape(params["hidden"]["w"])[0]
    if fan_in % dim:
        raise ValueError(f"params: hidden.w has {fan_in} rows, not a multiple of the embedding size {dim}")
    return vocab, fan_in // dim, dim


def _check_tokens(tokens, vocab: int) -> np.ndarray:
    tokens = as_int_array("tokens", tokens, low=0, high=vocab)
    if tokens.ndim != 2 or tokens.shape[1] == 0:
        raise ValueError(f"tokens: expected shape [B, L] with L >= 1, got {tokens.shape}")
    return tokens


def _forward(params, windows: np.ndarray):
    """Logits ``[N, V]`` for windows ``[N, C]`` of token ids (oldest first)."""
    vocab, context, dim = _shape_of(params)
    embed = params["embed"]
    # A one-hot matrix times the table is the embedding lookup as one matmul, whose gradient
    # is one matmul too (indexing would scatter-add row by row on the way back).
    onehot = np.eye(vocab, dtype=ad.stop_gradient(embed).dtype)[windows.reshape(-1)]
    x = ad.reshape(onehot @ embed, (windows.shape[0], context * dim))
    h = ad.tanh(x @ params["hidden"]["w"] + params["hidden"]["b"])
    return h @ params["out"]["w"] + params["out"]["b"]


def lm_logits(params, tokens):
    """Next-token logits ``[B, L, V]`` for ``tokens`` ``[B, L]``.

    ``logits[:, t]`` is the model's prediction of ``tokens[:, t+1]`` from ``tokens[:, :t+1]``
    (the last ``context`` of them); the prediction at the last position is of the token after
    the sequence. To score a sequence use ``logits[:, :-1]`` against ``tokens[:, 1:]``.
    """
    vocab, context, _ = _shape_of(params)
    tokens = _check_tokens(tokens, vocab)
    batch, length = tokens.shape
    padded = np.concatenate([np.full((batch, context - 1), PAD, dtype=tokens.dtype), tokens], axis=1)
    windows = padded[:, np.arange(length)[:, None] + np.arange(context)[None, :]]
    logits = _forward(params, windows.reshape(batch * length, context))
    return ad.reshape(logits, (batch, length, vocab))


def lm_next_logits(params, tokens) -> np.ndarray:
    """Logits ``[B, V]`` of the token that follows ``tokens`` ``[B, L]`` (``lm_logits(...)[:, -1]``)."""
    vocab, context, _ = _shape_of(params)
    tokens = _check_tokens(tokens, vocab)
    batch = tokens.shape[0]
    padded = np.concatenate([np.full((batch, context), PAD, dtype=tokens.dtype), tokens], axis=1)
    return _forward(params, padded[:, -context:])


def completion_log_prob(params, tokens, mask):
    """``log pi(completion | prompt)`` ``[B]`` under the model: the sum over ``mask[:, 1:]``."""
    return sequence_log_prob(lm_logits(params, tokens)[:, :-1], tokens, mask)


def lm_nll(params, tokens, mask):
    """Mean negative log-likelihood per counted token (``mask[:, 1:]``): a scalar, in nats."""
    mask = as_bool_array("mask", mask)
    lp = token_log_probs(lm_logits(params, tokens)[:, :-1], tokens)
    check_shape("mask", mask, np.shape(tokens), "tokens")
    counted = mask[:, 1:]
    if not counted.any():
        raise ValueError("mask: no position is True in mask[:, 1:]; there is nothing to fit")
    # a Python int keeps float32 float32 (a numpy int64 would promote the whole backward pass)
    return -ad.sum(ad.where(counted, lp, 0.0)) / int(counted.sum())


@single_thread_blas()  # the model's matrices are tiny: BLAS threads only wait for busy cores
def sft(params, tokens, mask, steps: int = 300, lr: float = 3e-3, seed=0, batch: int = 64):
    """Supervised fine-tuning: Adam on ``lm_nll`` over random minibatches of rows.

    ``tokens``/``mask`` ``[N, L]`` as from ``Tokenizer.encode_pairs``: only the masked tokens
    (the completions) are fitted. Returns ``(params, losses)``, ``losses`` ``[steps]`` being each
    minibatch's loss before its update. Every row must have a counted token.
    """
    vocab, _, _ = _shape_of(params)
    tokens = _check_tokens(tokens, vocab)
    mask = as_bool_array("mask", mask)
    check_shape("mask", mask, tokens.shape, "tokens")
    empty = np.flatnonzero(~mask[:, 1:].any(axis=1))
    if empty.size:
        raise ValueError(f"mask: row {int(empty[0])} has no token to fit in mask[:, 1:]")
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ValueError(f"steps: expected a positive integer, got {steps!r}")
    rng = np.random.default_rng(seed) if not isinstance(seed, np.random.Generator) else seed
    opt = Adam(lr=lr)
    state = opt.init(params)
    step = ad.value_and_grad(lm_nll)
    losses = np.empty(steps)
    size = min(batch, len(tokens))
    for i in range(steps):
        rows = rng.choice(len(tokens), size=size, replace=False)
        losses[i], grads = step(params, tokens[rows], mask[rows])
        params, state = opt.step(params, grads, state)
    return params, losses


@single_thread_blas()
def generate(params, prompts, max_new: int, rng: np.random.Generator, temperature: float = 1.0,
             top_k: int | None = None, top_p: float | None = None, eos: int = EOS):
    """Sample up to ``max_new`` tokens after each prompt: ``(tokens [B, P+max_new], mask)``.

    ``prompts`` ``[B, P]`` (left-padded, see ``Tokenizer.encode_prompts``). Each row samples
    from ``sample_token(logits, rng, temperature, top_k, top_p)`` until it draws ``eos``; later
    columns hold ``PAD``. ``mask`` ``[B, P+max_new]`` is True on the sampled tokens (``eos``
    included): the actions a policy-gradient loss is computed on. With ``temperature=1`` and no
    filtering, the tokens are drawn from exactly the distribution ``lm_logits`` scores.
    """
    vocab, _, _ = _shape_of(params)
    prompts = _check_tokens(prompts, vocab)
    if isinstance(max_new, bool) or not isinstance(max_new, (int, np.integer)) or max_new < 1:
        raise ValueError(f"max_new: expected a positive integer, got {max_new!r}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a np.random.Generator, got {type(rng).__name__}")
    batch, prompt_len = prompts.shape
    tokens = np.concatenate([prompts, np.full((batch, max_new), PAD, dtype=prompts.dtype)], axis=1)
    done = np.zeros(batch, dtype=bool)
    for t in range(prompt_len, prompt_len + max_new):
        logits = lm_next_logits(params, tokens[:, :t])
        nxt = np.asarray(sample_token(logits, rng, temperature, top_k, top_p))
        tokens[:, t] = np.where(done, PAD, nxt)
        done |= nxt == eos
        if done.all():
            break
    return tokens, completion_mask(tokens, prompt_len, eos)


def addition_data(n: int, seed=0, max_operand: int = 9):
    """``n`` addition problems ``(prompts, answers)``: ``"3+4="`` and ``"7"``, operands uniform.

    A verifier-checkable toy task for ``Tokenizer("0123456789+=")``: the answer is right iff it
    equals ``str(a + b)``.
    """
    rng = np.random.default_rng(seed) if not isinstance(seed, np.random.Generator) else seed
    a, b = rng.integers(0, max_operand + 1, size=(2, n))
    return [f"{x}+{y}=" for x, y in zip(a, b)], [str(x + y) for x, y in zip(a, b)]


def token_counts(tokens, mask, vocab: int) -> np.ndarray:
    """How often each token id occurs where ``mask`` is True: ``[B, V]`` floats (bag of words)."""
    tokens = _check_tokens(tokens, vocab)
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
    rng = np.random.default_rng(seed) if not isinstance(seed, np.random.Generator) else seed
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
    rng = np.random.default_rng(seed) if not isinstance(seed, np.random.Generator) else seed
    prompts, first = style_data(n, rng)
    _, second = style_data(n, rng)
    q1, _ = style_quality(first)
    q2, _ = style_quality(second)
    prefer_first = rng.random(n) < 1.0 / (1.0 + np.exp(-sharpness * (q1 - q2)))
    chosen = [a if p else b for a, b, p in zip(first, second, prefer_first)]
    rejected = [b if p else a for a, b, p in zip(first, second, prefer_first)]
    return prompts, chosen, rejected
