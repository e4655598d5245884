"""Text to token ids and back for the tiny language models: characters or words, plus three
special tokens.

Token ids 0, 1, 2 are ``PAD``, ``BOS`` and ``EOS`` in every ``Tokenizer``; sequences start with
``BOS`` and a completion ends with ``EOS``. Batches of prompts of different lengths are stored
left-padded, completions right-padded.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_int_array, check_count
from .tokens import completion_mask

__all__ = ["PAD", "BOS", "EOS", "Tokenizer"]


PAD, BOS, EOS = 0, 1, 2


_SPECIALS = ("<pad>", "<bos>", "<eos>")


class Tokenizer:
    """A fixed vocabulary of characters or words, after ``PAD`` (0), ``BOS`` (1), ``EOS`` (2).

    ``Tokenizer("0123456789+=")`` splits text into characters; ``Tokenizer(["the", "cat"])``
    splits it on whitespace into words. An unknown symbol raises.
    """

    def __init__(self, symbols):
        if not isinstance(symbols, (str, list, tuple)):
            # a set or dict would number its symbols in an order that can change between runs
            raise TypeError(f"symbols: expected a string of characters or a list of words, got "
                            f"{type(symbols).__name__}")
        self.words = not isinstance(symbols, str)
        symbols = list(symbols)
        if self.words and any(not isinstance(s, str) or not s or s.split() != [s] for s in symbols):
            raise ValueError(f"symbols: words must be non-empty strings without spaces, got {symbols!r}")
        if len(set(symbols)) != len(symbols) or not symbols:
            raise ValueError(f"symbols: expected distinct symbols, got {symbols!r}")
        specials = sorted(set(symbols) & set(_SPECIALS))
        if specials:
            raise ValueError(f"symbols: {specials[0]!r} is the name of a special token; its text "
                             "would be read back as the token itself")
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
        if not isinstance(text, str):
            raise TypeError(f"text: expected a string, got {type(text).__name__}")
        pieces = text.split() if self.words else list(text)
        unknown = [p for p in pieces if p not in self.ids]
        if unknown:
            raise ValueError(f"text: {unknown[0]!r} is not in the vocabulary {self.symbols[3:]}")
        ids = [self.ids[p] for p in pieces]
        return np.array([BOS] * bos + ids + [EOS] * eos, dtype=np.int64)

    def decode(self, ids) -> str:
        """Text of ``ids``: ``PAD`` and ``BOS`` are skipped and decoding stops at ``EOS``."""
        ids = np.asarray(ids)
        ids = as_int_array("ids", ids if ids.size else ids.astype(np.int64), low=0, high=self.vocab_size)
        if ids.ndim != 1:
            raise ValueError(f"ids: expected one sequence [n], got shape {ids.shape}")
        out = []
        for i in ids.tolist():
            if i == EOS:
                break
            if i > EOS:
                out.append(self.symbols[i])
        return (" " if self.words else "").join(out)

    def encode_prompts(self, prompts: list[str]) -> np.ndarray:
        """``BOS + prompt`` for each prompt, left-padded with ``PAD`` to one length: ``[B, P]``."""
        if not isinstance(prompts, (list, tuple, np.ndarray)) or not len(prompts):
            raise TypeError(f"prompts: expected a non-empty list of strings, got {prompts!r:.60}")
        rows = [self.encode(p) for p in prompts]
        width = max(len(r) for r in rows)
        return np.stack([np.pad(r, (width - len(r), 0), constant_values=PAD) for r in rows])

    def encode_pairs(self, prompts: list[str], completions: list[str]):
        """Training sequences ``(tokens [B, L], mask [B, L], prompt_len)``.

        Each row is the left-padded prompt (``prompt_len`` = P columns), then the completion and
        ``EOS``, right-padded with ``PAD``. ``mask`` is True on the completion tokens and their
        ``EOS``: the tokens a fine-tuned or RL-trained model is scored on.
        """
        if not isinstance(completions, (list, tuple, np.ndarray)):
            raise TypeError(f"completions: expected a list of strings, got {completions!r:.60}")
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
        tokens = as_int_array("tokens", tokens, low=0, high=self.vocab_size)
        if tokens.ndim != 2:
            raise ValueError(f"tokens: expected shape [B, L], got {tokens.shape}")
        prompt_len = check_count("prompt_len", prompt_len, low=0)
        return [self.decode(row[prompt_len:]) for row in tokens]
