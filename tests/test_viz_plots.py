"""rc.learning_curve and rc.ppo_diagnostics: what they draw, and how they treat NaN.

NaN rule of the plots: ``learning_curve`` refuses NaN or inf (its moving average would spread
one over ``window`` points), ``ppo_diagnostics`` draws the history as it is (a NaN or inf
entry, e.g. a diverged update or ``mean_return`` before the first episode ends, is a gap in
its line). Bad input of every argument: tests/bad_input_viz.py.
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import rlcourse as rc  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def ppo_result(kl):
    u = len(kl)
    history = {"steps": np.arange(1, u + 1) * 100.0, "mean_return": np.full(u, np.nan),
               "approx_kl": np.asarray(kl, float), "clip_fraction": np.linspace(0, 0.2, u),
               "entropy": np.linspace(0.7, 0.5, u), "explained_variance": np.linspace(0, 0.9, u)}
    return rc.TrainResult(params=None, episode_returns=np.zeros(0), episode_end_steps=np.zeros(0),
                          steps=u * 100, history=history)


def test_ppo_diagnostics_draws_nan_and_inf_as_gaps():
    kl = [0.01, np.nan, 0.02, np.inf, 0.01]
    axes = rc.ppo_diagnostics(ppo_result(kl), labels="diverging")
    (line,) = axes[0, 0].lines
    np.testing.assert_array_equal(line.get_ydata(), kl)  # passed through, NaN included
    low, high = axes[0, 0].get_ylim()
    assert np.isfinite([low, high]).all() and high < 1  # the inf does not stretch the axis
    assert axes[0, 0].get_legend().get_texts()[0].get_text() == "diverging"


def test_learning_curve_takes_a_result_or_a_pair_and_refuses_nan():
    steps, returns = [10, 20, 35, 50], [1.0, 2.0, 3.0, 5.0]
    ax = rc.learning_curve([steps, returns], window=2, target=4)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [1.0, 1.5, 2.5, 4.0])
    res = ppo_result([0.01])
    res.episode_end_steps, res.episode_returns = np.array(steps), np.array(returns)
    ax2 = rc.learning_curve(res, window=2)
    np.testing.assert_array_equal(ax2.lines[0].get_ydata(), ax.lines[0].get_ydata())
    with pytest.raises(ValueError, match=r"result: expected finite values, got nan at index \(2,\)"):
        rc.learning_curve((steps, [1.0, 2.0, np.nan, 5.0]))
    assert not rc.learning_curve((np.zeros(0), np.zeros(0))).lines  # no episode yet: no line
