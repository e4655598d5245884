"""Bad-input specs for rlcourse.posttrain.grpo, rlcourse.posttrain.preference,
rlcourse.posttrain.rlhf, rlcourse.posttrain.rollout, rlcourse.posttrain.sft,
rlcourse.posttrain.tasks, rlcourse.search.decoding.

``SPECS``: name -> (a function returning valid keyword arguments, the kind of each argument checked).
``EXEMPT``: name -> why it has no spec and where its input checks are tested instead.

The trainers take a tiny model (one block of width 8) on the reversal task over the alphabet
"abc" with words of 2 letters (vocabulary 7, prompts of 4 tokens), one iteration or step, a
batch of 2 and 3 new tokens, so every valid call takes milliseconds.
"""

from __future__ import annotations

import math

import numpy as np
from bad_input_kinds import EXTRA, KINDS, RNG, SHORT, F, ints_below, without  # noqa: F401

import rlcourse as rc

# ---------------------------------------------------------------------------------------------
# Fixtures: a tiny model on a tiny reversal task

TASK = rc.reversal_task(alphabet="abc", length=2, n_sft=2, n_test=2, seed=0)
V = TASK.tokenizer.vocab_size  # 7: PAD, BOS, EOS, a, b, c, >
MAX_NEW = 3


def model(seed=0, vocab=V, context=8):
    return rc.lm_init(vocab, context=context, dim=8, heads=1, layers=1, seed=seed)


def prompts():
    return TASK.prompt_ids(TASK.rl[:2])  # [2, 4]


def reward_fn(tokens, mask):
    return TASK.reward_fn(tokens, mask)


def pairs():
    """Two preference pairs: the right reversal is chosen, the word itself rejected."""
    words = TASK.sft[:2]
    chosen, chosen_mask = TASK.pairs(words)
    rejected, rejected_mask, _ = TASK.tokenizer.encode_pairs([TASK.prompt(w) for w in words],
                                                             list(words))
    return rc.PreferencePairs(chosen, chosen_mask, rejected, rejected_mask)


def rollout():
    return rc.sample_rollout(model(), model(seed=1), prompts(), MAX_NEW, RNG(0))


def adam_state():
    opt = rc.Adam(lr=1e-3)
    return opt, opt.init(model())


def rate(tokens, prompt_len):
    """A hidden scorer as ``rate_samples`` wants it: ``(scores [B], well_formed [B])``."""
    return TASK.reward_fn(tokens), np.ones(len(tokens), dtype=bool)


# a step function for beam search over 3 tokens (0 is EOS): log-probs [3]
BEAM_LOGP = np.log(np.array([0.2, 0.5, 0.3]))


def beam_step(tokens):
    return BEAM_LOGP


# ---------------------------------------------------------------------------------------------
# Kinds of the arguments that are models, callables, task objects and settings


def _model_bads(valid):
    """A language model's params gone wrong; the error must name the argument that holds it."""
    missing = dict(valid)
    del missing["head"]
    wrong_shape = dict(valid, head=valid["head"][:, :-1])
    nan = dict(valid, embed=valid["embed"].copy())
    nan["embed"][0, 0] = np.nan
    ints = dict(valid, embed=valid["embed"].astype(np.int64))
    return [("a key missing", missing), ("a leaf of the wrong shape", wrong_shape),
            ("a NaN weight", nan), ("integer weights", ints),
            ("a smaller vocabulary than the tokens", model(vocab=4)),
            ("a context too short for prompt and answer", model(context=4)),
            ("a string", "params"), ("None", None), ("the task, not a model", TASK)]


def _other_model_bads(valid):
    """A second model (a frozen reference) must also share the first model's vocabulary."""
    return _model_bads(valid) + [("a larger vocabulary than the policy", model(vocab=V + 2))]


def _prompt_bads(valid):
    """Prompt ids ``[N, P]`` for the model: any number of rows, but at least one."""
    arr = np.asarray(valid)
    return ints_below(V, SHORT)(valid) + [
        ("1-D", arr[0]), ("no rows", arr[:0]), ("too long for the context", np.tile(arr, (1, 3))),
        ("a string", "ba>")]


def _reward_fn_bads(valid):
    """A reward function ``(tokens, mask) -> [B]`` gone wrong."""
    return [("a string", "fn"), ("None", None), ("the task, not its reward_fn", TASK),
            ("one reward short", lambda t, m: np.zeros(len(t) - 1)),
            ("NaN rewards", lambda t, m: np.full(len(t), np.nan)),
            ("rewards [B, 1]", lambda t, m: np.zeros((len(t), 1))),
            ("string rewards", lambda t, m: ["1"] * len(t)),
            ("the wrong signature", lambda t: np.zeros(len(t)))]


def _metric_bads(valid):
    return [b for b in _reward_fn_bads(valid) if b[0] not in ("None", "the task, not its reward_fn")]


def _rate_bads(valid):
    """A hidden scorer ``(tokens, prompt_len) -> (scores [B], well_formed [B])`` gone wrong."""
    ones = np.ones
    return [("a string", "rate"), ("None", None), ("the task, not its rate", rc.review_task()),
            ("scores only", lambda t, p: np.zeros(len(t))),
            ("one score short", lambda t, p: (np.zeros(len(t) - 1), ones(len(t), bool))),
            ("NaN scores", lambda t, p: (np.full(len(t), np.nan), ones(len(t), bool))),
            ("well_formed as floats", lambda t, p: (np.zeros(len(t)), np.full(len(t), 0.5)))]


def _callback_bads(valid):
    return [("a string", "fn"), ("a number", 3)]


def _flag_bads(valid):
    return [("a string", "yes"), ("an int", 2), ("None", None)]


def choice(*options):
    """An argument that is one of ``options`` (strings)."""
    def bads(valid):
        return [("unknown", "bogus"), ("None", None), ("a number", 1), ("upper case", options[0].upper())]
    return bads


def _scale_bads(valid):
    return [("unknown", "bogus"), ("None", None), ("a number", 1.0)]


def _coef_bads(valid):
    """A nonnegative coefficient; a string that looks like a number is still a string."""
    return KINDS["nonneg"](valid)


def _clip_bads(valid):
    return [("zero", 0.0), ("one", 1.0), ("negative", -0.2), ("NaN", math.nan), ("a string", "0.2")]


def _label_smoothing_bads(valid):
    return [("negative", -0.1), ("one half", 0.5), ("NaN", math.nan), ("a string", "0")]


def token_id(high=None, optional=False):
    """A token id in ``[0, high)`` (``high`` unknown: only its type and sign are checked);
    ``optional``: None is valid."""
    def bads(valid):
        out = [("negative", -1), ("a float", 2.5), ("a string", "2"), ("a bool", True)]
        out += [] if optional else [("None", None)]
        return out + ([("out of range", high)] if high is not None else [])
    return bads


def _opt_bads(valid):
    return [("a string", "adam"), ("None", None), ("the class, not an optimiser", rc.Adam)]


def _opt_state_bads(valid):
    other = rc.Adam(lr=1e-3).init(model(vocab=V + 2))
    return [("None", None), ("a string", "state"), ("the state of another model", other),
            ("an empty dict", {})]


def _pairs_bads(valid):
    chosen_mask = valid.chosen_mask.copy()
    chosen_mask[0] = False
    return [("a string", "pairs"), ("None", None), ("a plain tuple of three", tuple(valid)[:3]),
            ("a mask of the wrong shape", valid._replace(chosen_mask=valid.chosen_mask[:, :-1])),
            ("ids outside the vocabulary", valid._replace(chosen=np.full_like(valid.chosen, V))),
            ("float tokens", valid._replace(rejected=valid.rejected + 0.5)),
            ("float masks", valid._replace(rejected_mask=np.full(valid.rejected.shape, 0.5))),
            ("fewer rejected rows", valid._replace(rejected=valid.rejected[:-1],
                                                   rejected_mask=valid.rejected_mask[:-1])),
            ("a pair without chosen tokens", valid._replace(chosen_mask=chosen_mask)),
            ("no pairs", valid.take(slice(0, 0)))]


def _rollout_bads(valid):
    return [("a string", "rollout"), ("None", None), ("tokens and mask only", (valid.tokens, valid.mask)),
            ("a mask of the wrong shape", valid._replace(mask=valid.mask[:, :-1]))]


def _alphabet_bads(valid):
    return [("empty", ""), ("a repeated character", "aab"), ("with '>'", "ab>"),
            ("a list", list(valid)), ("None", None), ("a number", 5)]


def _length_bads(valid):
    return KINDS["count"](valid) + [("too many words to list", 40)]


def _n_bads(valid):
    """A number of examples, counted: also more than the task's words."""
    return KINDS["count"](valid) + [("all the words", 9)]


def _max_operand_bads(valid):
    return [("negative", -1), ("a float", 2.5), ("a bool", True), ("a string", "9")]


def _vocab_bads(valid):
    return KINDS["count"](valid) + [("below the largest token", 3)]


def _completions_bads(valid):
    return [("one string", "is very great ."), ("numbers", [1.0, 2.0]), ("None", None),
            ("nested lists", [["is", "very", "great", "."]])]


def _step_bads(valid):
    """``step(tokens) -> log-probs [V]`` gone wrong."""
    return [("a string", "step"), ("None", None),
            ("a matrix", lambda t: np.zeros((2, 3))),
            ("NaN", lambda t: np.array([0.0, np.nan, -1.0])),
            ("+inf", lambda t: np.array([0.0, np.inf, -1.0])),
            ("every token impossible", lambda t: np.full(3, -np.inf)),
            ("strings", lambda t: np.array(["a", "b", "c"])),
            ("complex", lambda t: BEAM_LOGP + 0j),
            ("empty", lambda t: np.zeros(0))]


def _start_bads(valid):
    return [("floats", [0.5]), ("strings", ["a"]), ("negative", [-1]), ("a string", "ab"),
            ("None", None), ("a number", 3), ("a matrix", [[1, 2]])]


def _candidates_bads(valid):
    return [("empty", []), ("None", None), ("a number", 5)]


def _score_bads(valid):
    return [("a string", "len"), ("None", None), ("returns NaN", lambda x: math.nan),
            ("returns an array", lambda x: np.ones(2)), ("returns a string", lambda x: "1"),
            ("returns None", lambda x: None)]


def _dist_probs_bads(valid):
    return KINDS["probs"](valid) + without("floats", "NaN", "complex")(valid)


# ---------------------------------------------------------------------------------------------
# Specs

MODEL, OTHER, PROMPTS, REWARD = _model_bads, _other_model_bads, _prompt_bads, _reward_fn_bads

SPECS: dict[str, tuple] = {
    # posttrain.grpo
    "grpo_step": (
        lambda: dict(policy=model(), ref=model(seed=1), reward_fn=reward_fn, prompts=prompts(),
                     rng=RNG(0), opt=adam_state()[0], opt_state=adam_state()[1], group_size=2,
                     kl_coef=0.04, max_new=MAX_NEW, epochs=1, clip=0.2, aggregate="token",
                     scale=True, baseline="group", kl_correction=False),
        dict(policy=MODEL, ref=OTHER, reward_fn=REWARD, prompts=PROMPTS, rng="rng", opt=_opt_bads,
             opt_state=_opt_state_bads, group_size="count", kl_coef=_coef_bads, max_new="count",
             epochs="count", clip=_clip_bads, aggregate=choice("token", "sequence", "dapo"),
             scale=_scale_bads, baseline=choice("group", "leave_one_out"),
             kl_correction=_flag_bads)),
    "grpo_train": (
        lambda: dict(policy=model(), ref=model(seed=1), reward_fn=reward_fn, prompts=prompts(),
                     iterations=1, group_size=2, prompts_per_step=2, kl_coef=0.04, lr=1e-3,
                     seed=0, max_new=MAX_NEW, epochs=1, clip=0.2, aggregate="token", scale=True,
                     baseline="group", kl_correction=False, callback=None),
        dict(policy=MODEL, ref=OTHER, reward_fn=REWARD, prompts=PROMPTS, iterations="count",
             group_size="count", prompts_per_step="count", kl_coef=_coef_bads, lr="nonneg",
             seed="seed", max_new="count", epochs="count", clip=_clip_bads,
             aggregate=choice("token", "sequence", "dapo"), scale=_scale_bads,
             baseline=choice("group", "leave_one_out"), kl_correction=_flag_bads,
             callback=_callback_bads)),
    "rft_train": (
        lambda: dict(policy=model(), reward_fn=reward_fn, prompts=prompts(), iterations=1,
                     group_size=2, prompts_per_step=2, lr=1e-3, seed=0, max_new=MAX_NEW,
                     threshold=1.0, callback=None),
        dict(policy=MODEL, reward_fn=REWARD, prompts=PROMPTS, iterations="count",
             group_size="count", prompts_per_step="count", lr="nonneg", seed="seed",
             max_new="count", threshold="finite", callback=_callback_bads)),
    # posttrain.rlhf
    "penalize_missing_eos": (
        lambda: dict(scores=F(2), tokens=rollout().tokens, mask=rollout().mask, penalty=1.0,
                     eos=rc.EOS),
        dict(scores="floats", tokens="ints", mask="bools", penalty="positive", eos=token_id())),
    "rlhf_advantages": (lambda: dict(rewards=F(2, 3), mask=np.array([[1, 1, 0], [1, 1, 1]], bool)),
                        dict(rewards="floats", mask="bools")),
    "rlhf_step": (
        lambda: dict(policy=model(), ref=model(seed=1), reward_fn=reward_fn, prompts=prompts(),
                     rng=RNG(0), opt=adam_state()[0], opt_state=adam_state()[1], beta=0.05,
                     max_new=MAX_NEW, epochs=1, clip=0.2, kind="k1", missing_eos_penalty=None,
                     eos=rc.EOS),
        dict(policy=MODEL, ref=OTHER, reward_fn=REWARD, prompts=PROMPTS, rng="rng", opt=_opt_bads,
             opt_state=_opt_state_bads, beta=_coef_bads, max_new="count", epochs="count",
             clip=_clip_bads, kind=choice("k1", "k2", "k3"), missing_eos_penalty="positive",
             eos=token_id(V))),
    "rlhf_train": (
        lambda: dict(policy=model(), ref=model(seed=1), reward_fn=reward_fn, prompts=prompts(),
                     iterations=1, beta=0.05, lr=1e-3, seed=0, batch=2, max_new=MAX_NEW, epochs=1,
                     clip=0.2, kind="k1", metric=reward_fn, missing_eos_penalty=None),
        dict(policy=MODEL, ref=OTHER, reward_fn=REWARD, prompts=PROMPTS, iterations="count",
             beta=_coef_bads, lr="nonneg", seed="seed", batch="count", max_new="count",
             epochs="count", clip=_clip_bads, kind=choice("k1", "k2", "k3"), metric=_metric_bads,
             missing_eos_penalty="positive")),
    # posttrain.rollout
    "sample_rollout": (
        lambda: dict(policy=model(), ref=model(seed=1), prompts=prompts(), max_new=MAX_NEW,
                     rng=RNG(0)),
        dict(policy=MODEL, ref=OTHER, prompts=PROMPTS, max_new="count", rng="rng")),
    "policy_token_log_probs": (
        lambda: dict(params=model(), tokens=rollout().tokens),
        dict(params=MODEL, tokens=ints_below(V, SHORT))),
    "rollout_rewards": (lambda: dict(reward_fn=reward_fn, rollout=rollout()),
                        dict(reward_fn=REWARD, rollout=_rollout_bads)),
    # posttrain.sft
    "sft": (
        lambda: dict(params=model(), tokens=TASK.pairs(TASK.sft)[0], mask=TASK.pairs(TASK.sft)[1],
                     steps=1, lr=1e-3, seed=0, batch=2),
        dict(params=MODEL, tokens=ints_below(V), mask="bools", steps="count", lr="nonneg",
             seed="seed", batch="count")),
    # posttrain.preference
    "make_preference_pairs": (
        lambda: dict(tokens_a=pairs().chosen, mask_a=pairs().chosen_mask, tokens_b=pairs().rejected,
                     mask_b=pairs().rejected_mask, score_a=np.array([1.0, 0.0]),
                     score_b=np.array([0.0, 1.0])),
        dict(tokens_a="ints", mask_a="bools", tokens_b="ints", mask_b="bools", score_a="floats",
             score_b="floats")),
    "pair_log_probs": (lambda: dict(params=model(), pairs=pairs()),
                       dict(params=MODEL, pairs=_pairs_bads)),
    "evaluate_pairs": (
        lambda: dict(params=model(), ref_params=model(seed=1), pairs=pairs(), loss="dpo", beta=0.1,
                     tau=0.1, label_smoothing=0.0),
        dict(params=MODEL, ref_params=OTHER, pairs=_pairs_bads, loss=choice("dpo", "ipo"),
             beta="positive", tau="positive", label_smoothing=_label_smoothing_bads)),
    "train_on_preferences": (
        lambda: dict(params=model(), pairs=pairs(), loss="dpo", beta=0.1, tau=0.1,
                     label_smoothing=0.0, steps=1, lr=1e-3, batch=2, seed=0, callback=None),
        dict(params=MODEL, pairs=_pairs_bads, loss=choice("dpo", "ipo"), beta="positive",
             tau="positive", label_smoothing=_label_smoothing_bads, steps="count", lr="nonneg",
             batch="count", seed="seed", callback=_callback_bads)),
    "rate_samples": (
        lambda: dict(params=model(), ref_params=model(seed=1), prompts=prompts(), rate=rate,
                     rng=RNG(0), max_new=MAX_NEW),
        dict(params=MODEL, ref_params=OTHER, prompts=PROMPTS, rate=_rate_bads, rng="rng",
             max_new="count")),
    # posttrain.tasks
    "addition_data": (lambda: dict(n=3, seed=0, max_operand=9),
                      dict(n="count", seed="seed", max_operand=_max_operand_bads)),
    "reversal_task": (lambda: dict(alphabet="abc", length=2, n_sft=2, n_test=2, seed=0),
                      dict(alphabet=_alphabet_bads, length=_length_bads, n_sft=_n_bads,
                           n_test=_n_bads, seed="seed")),
    "token_counts": (lambda: dict(tokens=rollout().tokens, mask=rollout().mask, vocab=V),
                     dict(tokens=ints_below(V), mask="bools", vocab=_vocab_bads)),
    "style_data": (lambda: dict(n=3, seed=0), dict(n="count", seed="seed")),
    "style_quality": (lambda: dict(completions=["is very great .", "was bad ."]),
                      dict(completions=_completions_bads)),
    "style_preferences": (lambda: dict(n=3, seed=0, sharpness=4.0),
                          dict(n="count", seed="seed", sharpness="nonneg")),
    # search.decoding
    "beam_search": (lambda: dict(step=beam_step, start=[1], beam_width=2, max_len=3, eos=0),
                    dict(step=_step_bads, start=_start_bads, beam_width="count", max_len="count",
                         eos=token_id(3, optional=True))),
    "best_of_n": (lambda: dict(candidates=["ab", "abc"], score=len),
                  dict(candidates=_candidates_bads, score=_score_bads)),
    "best_of_n_distribution": (
        lambda: dict(probs=np.array([0.2, 0.5, 0.3]), rewards=np.array([1.0, 0.0, 2.0]), n=4),
        dict(probs=_dist_probs_bads, rewards="floats", n="count")),
}

EXEMPT: dict[str, str] = {
    "review_task": "takes no arguments; the rate it returns is checked as rate_samples' rate "
                   "here, its own prompt_len and token checks in tests/test_dpo.py",
}
