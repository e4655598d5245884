"""rc.plot_grid: shared colour scales, cells outside the value scale, readable labels."""

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


def maze():
    return rc.GridWorld(layout=["S..", ".H.", "W.G"], hole_reward=-1.0)


def test_vmin_vmax_fix_the_colour_scale_and_colorbar_is_optional():
    env = maze()
    fig, ax = plt.subplots()
    rc.plot_grid(env, values=np.linspace(0, 1, 9), ax=ax, vmin=-2.0, vmax=3.0, colorbar=False)
    assert ax.images[0].get_clim() == (-2.0, 3.0)
    assert len(fig.axes) == 1  # no colour bar axes added
    fig, ax = plt.subplots()
    rc.plot_grid(env, values=np.linspace(0, 1, 9), ax=ax)
    assert len(fig.axes) == 2


def test_goal_hole_and_wall_are_outside_the_value_scale():
    env = maze()
    values = np.arange(9.0)
    fig, ax = plt.subplots()
    rc.plot_grid(env, values=values, ax=ax)
    shown = ax.images[0].get_array()
    masked = np.ma.getmaskarray(shown).ravel()
    cells = np.array(list("".join(env.layout)))
    np.testing.assert_array_equal(masked, np.isin(cells, ["G", "H", "W"]))
    # the colour scale is set by the cells you act in only
    assert ax.images[0].get_clim() == (values[~masked].min(), values[~masked].max())
    colours = {tuple(np.round(p.get_facecolor(), 3)) for p in ax.patches}
    assert len(colours) == 3  # goal, hole and wall each in a flat colour of their own
    # no value label on them; one on every other cell
    labels = [t.get_text() for t in ax.texts if t.get_text() not in "SGHWC"]
    assert len(labels) == (~masked).sum()


def test_labels_are_readable_and_contrast_with_their_cell():
    env = rc.GridWorld(size=3)
    fig, ax = plt.subplots()
    rc.plot_grid(env, values=np.array([0, 1, 2, 3, 4, 5, 6, 7, 0.0]), ax=ax, fmt="{:.1f}")
    labels = {t.get_text(): t for t in ax.texts if t.get_text() not in "SGHWC"}
    assert all(t.get_fontsize() >= 9 for t in ax.texts)
    # viridis is dark at the low end and light at the high end
    assert labels["0.0"].get_color() == "white" and labels["7.0"].get_color() == "black"


def test_tied_actions_drawn_as_probabilities():
    env = rc.GridWorld(size=3)
    probs = np.zeros((9, 4))
    probs[:, [rc.DOWN, rc.RIGHT]] = 0.5
    fig, ax = plt.subplots()
    rc.plot_grid(env, policy=probs, ax=ax)
    quivers = [c for c in ax.collections if hasattr(c, "U")]
    assert sum(len(q.U) for q in quivers) == 2 * 8  # two arrows in every cell but the goal


def test_nan_blanks_only_cells_without_a_value_of_their_own():
    """A NaN at a terminal or cliff cell (never drawn) is how lesson 06 blanks them; a NaN or
    inf at a cell that is drawn is an error naming ``values``."""
    import matplotlib.pyplot as plt

    env = rc.CliffWalking()
    values = np.zeros(env.num_states)
    values[env.terminal | (np.array(list("".join(env.layout))) == "C")] = np.nan
    fig, ax = plt.subplots()
    rc.plot_grid(env, values, ax=ax)
    plt.close(fig)
    values[0] = np.inf
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match="values"):
        rc.plot_grid(env, values, ax=ax)
    plt.close(fig)
