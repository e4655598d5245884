"""Sampling completions from the transformer: ``rc.generate`` (key-value cache) against running
the whole sequence again for every new token, as the lessons sample (a batch of prompts, a few
new tokens each).

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/transformer_generate.py``. Prints the median CPU
milliseconds of one ``generate`` call for both (EOS is made impossible, so every row samples
all ``max_new`` tokens) and checks that they draw the same tokens from the same seed.
"""

import time

import numpy as np

import rlcourse as rc
from rlcourse.core.sampling import sample_token

CASES = [(64, 8), (512, 8), (512, 16)]  # (batch, max_new), prompts of 6 tokens
REPEATS = 5


def recompute(params, prompts, max_new, rng):
    """``generate`` without the cache: the next token's logits from the whole sequence so far."""
    tokens = np.concatenate([prompts, np.full((len(prompts), max_new), rc.PAD)], axis=1)
    done = np.zeros(len(prompts), dtype=bool)
    for t in range(prompts.shape[1], tokens.shape[1]):
        nxt = sample_token(rc.lm_next_logits(params, tokens[:, :t]), rng)
        tokens[:, t] = np.where(done, rc.PAD, nxt)
        done |= nxt == rc.EOS
    return tokens


def cpu_ms(fn) -> float:
    fn()
    samples = []
    for _ in range(REPEATS):
        start = time.process_time()
        fn()
        samples.append(time.process_time() - start)
    return float(np.median(samples)) * 1e3


def main():
    rc.keep_freed_memory()
    params = rc.lm_init(20, context=24, dim=32, seed=0)
    params["head"][:, rc.EOS] = -10.0  # no row stops early
    print(f"{'B':>4} {'new':>4} {'cache ms':>9} {'recompute ms':>13} {'speed-up':>9}")
    with rc.single_thread_blas():
        for batch, max_new in CASES:
            prompts = np.random.default_rng(0).integers(rc.EOS + 1, 20, size=(batch, 6))
            prompts[:, 0] = rc.BOS
            cached, _ = rc.generate(params, prompts, max_new, np.random.default_rng(0))
            assert np.array_equal(cached, recompute(params, prompts, max_new, np.random.default_rng(0)))
            fast = cpu_ms(lambda p=prompts, n=max_new: rc.generate(params, p, n, np.random.default_rng(0)))
            slow = cpu_ms(lambda p=prompts, n=max_new: recompute(params, p, n, np.random.default_rng(0)))
            print(f"{batch:4d} {max_new:4d} {fast:9.1f} {slow:13.1f} {slow / fast:9.1f}")


if __name__ == "__main__":
    main()
