"""Animations: record episodes of an environment (or take stored ones) and play them offline.

:func:`animate` runs a policy (or replays stored states) and returns an :class:`Animation`, which
Jupyter shows as an inline player and which ``save("x.html")`` writes as one self-contained file
(or ``save("x.gif")`` as a GIF drawn by Pillow). The player ships each frame as drawing
primitives (see :mod:`rlcourse.viz.scene`), each distinct shape once, and draws them on a
``<canvas>`` with a few dozen lines of inline JavaScript: no network, no fonts or scripts to
fetch, no ffmpeg, no display. Its HTML is a deterministic function of the animation (the element
id is a hash of the content), so strict nbval can compare it.
"""

from __future__ import annotations

import hashlib
import html
import io
import json
import numbers
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..core._checks import as_float_array, check_finite
from ..envs import Bandit, CartPole, GridWorld, TicTacToe, TicTacToeState
from ..envs.base import check_actions
from ._inputs import check_flag
from .renderers import board_of, cartpole_scene, gridworld_scene, tictactoe_scene
from .scene import Scene, check_scene, rasterize, shifted, text

__all__ = ["Animation", "animate", "side_by_side"]

ZOOM = 2  # the player shows one logical pixel as 2 CSS pixels ...
MAX_WIDTH = 960  # ... unless the panels side by side would be wider than this many CSS pixels
DEFAULT_FPS = {CartPole: 50, GridWorld: 4, TicTacToe: 1}  # CartPole's real time: one step is 0.02 s
CAPTION_H, STATUS_H, GAP = 18, 16, 16  # bands above and below each panel in a composed frame


class Panel(NamedTuple):
    """One side of a side-by-side animation.

    ``scenes`` one per frame; ``returns`` the return so far at each frame (``None`` if unknown);
    ``starts`` the frame index at which each episode starts (``(0,)`` for one); ``unit`` names a
    frame's step (``"step"`` or ``"move"``).
    """

    caption: str
    scenes: tuple
    returns: tuple | None
    starts: tuple
    unit: str


def _status(panel: Panel, f: int) -> str:
    """The line under a panel at frame ``f``; the player's JavaScript writes the same text."""
    f = min(f, len(panel.scenes) - 1)
    episode = sum(1 for s in panel.starts if s <= f)
    parts = [] if len(panel.starts) == 1 else [f"episode {episode}/{len(panel.starts)}"]
    parts.append(f"{panel.unit} {f - panel.starts[episode - 1]}")
    if panel.returns is not None:
        parts.append(f"return {panel.returns[f]}")  # str() of a _short number, as JavaScript's
    return " \u00b7 ".join(parts)


def _returns(name: str, rewards, frames: int) -> tuple | None:
    """Returns so far at each of ``frames`` frames from ``rewards [frames - 1]``."""
    if rewards is None:
        return None
    r = as_float_array(name, rewards)  # finite and real: no strings, complex, NaN
    if r.shape != (frames - 1,):
        raise ValueError(f"{name}: expected {frames - 1} finite rewards (one per transition between "
                         f"the {frames} frames), got shape {r.shape}")
    r = r.astype(np.float64)
    return tuple(_short(v) for v in np.concatenate([[0.0], np.cumsum(r)]))


def _short(v: float) -> float | int:
    """``v`` to 6 significant digits, as an int when whole: Python's ``str`` and JavaScript's
    ``String()`` then print the same text for the returns of the course's tasks."""
    v = float(f"{float(v):.6g}")
    return int(v) if v.is_integer() else v


class Animation:
    """Frames of one or more panels, shown side by side on one timeline.

    ``Animation(scenes, caption, fps=10, rewards=None)`` makes one panel from a list of
    :class:`Scene` (e.g. ``rc.bandit_scene`` of each step); ``rewards [len(scenes) - 1]`` adds the
    return so far under it. :func:`animate` and :func:`side_by_side` build the usual ones. A panel
    shorter than the others holds its last frame. Scenes may differ in size: a panel is as large
    as its largest scene, each drawn from the top-left corner (so every frame, and a GIF, has one
    size). ``fps`` is a number in (0, 1000]. In Jupyter the animation displays as a player
    (play/pause, step, speed, a frame slider and counter); ``save("x.html")`` writes it as a
    self-contained page, ``save("x.gif")`` as a GIF; ``frame(i)`` is frame ``i`` as an RGB array.
    """

    def __init__(self, scenes, caption: str = "", fps: float = 10, rewards=None):
        if isinstance(scenes, Scene):
            scenes = (scenes,)
        elif isinstance(scenes, (str, bytes, np.ndarray)) or not hasattr(scenes, "__iter__"):
            raise TypeError(f"scenes: expected a list of Scenes (e.g. rc.bandit_scene of each step), "
                            f"got {type(scenes).__name__}")
        scenes = tuple(scenes)
        if not scenes:
            raise ValueError("scenes: expected at least one Scene, got none")
        for t, scene in enumerate(scenes):
            check_scene(f"scenes[{t}]", scene)
        panel = Panel(str(caption), scenes, _returns("rewards", rewards, len(scenes)), (0,), "step")
        self._init((panel,), fps)

    def _init(self, panels: tuple, fps) -> None:
        if isinstance(fps, bool) or not isinstance(fps, numbers.Real) or not 0 < fps <= 1000:
            raise ValueError(f"fps: expected frames per second in (0, 1000], got {fps!r}")
        self.panels = tuple(panels)
        self.fps = _short(fps)
        self._panel_sizes = None

    @classmethod
    def _of(cls, panels, fps) -> Animation:
        anim = cls.__new__(cls)
        anim._init(panels, fps)
        return anim

    @property
    def num_frames(self) -> int:
        """Frames on the timeline: the longest panel's."""
        return max(len(p.scenes) for p in self.panels)

    def __repr__(self) -> str:
        panels = ", ".join(f"{p.caption or 'panel'!r}: {len(p.scenes)}" for p in self.panels)
        return f"<Animation: {self.num_frames} frames at {self.fps:g} fps; frames per panel {{{panels}}}>"

    # -- one frame as an image -----------------------------------------------------------------
    def scene(self, i: int) -> Scene:
        """Frame ``i`` of every panel in one :class:`Scene`: panels left to right, each with its
        caption above and its status line (step, return) below, as the player shows them. Every
        frame has the same size (a GIF needs it)."""
        i = self._index(i)
        shapes, x, height = [], 0.0, 0
        for p, (width, inner) in zip(self.panels, self._sizes()):
            f = min(i, len(p.scenes) - 1)
            s = p.scenes[f]
            shapes.append(text(x, CAPTION_H / 2, p.caption, "#222222", 11, align=0))
            shapes.extend(shifted(shape, x, CAPTION_H) for shape in s.shapes)
            shapes.append(text(x, CAPTION_H + inner + STATUS_H / 2, _status(p, f), "#555555", 9, align=0))
            x += width + GAP
            height = max(height, CAPTION_H + inner + STATUS_H)
        return Scene(round(x - GAP), height, tuple(shapes))

    def _sizes(self) -> list:
        """Width and height of each panel's area in a composed frame, the same for every frame;
        text widths are estimated (about 0.56 em per character) to leave room for them."""
        if self._panel_sizes is None:
            self._panel_sizes = [
                (max(max(sc.width for sc in p.scenes), 6.2 * len(p.caption),
                     5.1 * max(len(_status(p, g)) for g in range(len(p.scenes)))),
                 max(sc.height for sc in p.scenes))
                for p in self.panels]
        return self._panel_sizes

    def frame(self, i: int, scale: float = 2.0) -> np.ndarray:
        """Frame ``i`` as ``uint8 [H, W, 3]`` (see :meth:`scene`), e.g. for ``plt.imshow``."""
        return rasterize(self.scene(i), scale)

    def _index(self, i) -> int:
        n = self.num_frames
        if isinstance(i, bool) or not isinstance(i, numbers.Integral) or not -n <= i < n:
            raise IndexError(f"i: expected a frame index in [0, {n}), got {i!r}")
        return int(i) % n

    # -- output --------------------------------------------------------------------------------
    def gif(self, scale: float = 1.0) -> bytes:
        """The animation as GIF bytes (Pillow), one image per frame at the animation's fps.

        Every frame maps to one palette (median cut over a sample of frames that includes each
        panel's last one): one shared palette is fast to apply, compresses well, and keeps a
        colour that only an episode's end shows (the fallen pole's red) from being dropped.
        """
        from PIL import Image

        n = self.num_frames
        frames = [self.frame(i, scale) for i in range(n)]
        picks = {int(k) for k in np.linspace(0, n - 1, min(n, 16)).round()}
        picks |= {len(p.scenes) - 1 for p in self.panels}
        sample = Image.fromarray(np.concatenate([frames[k] for k in sorted(picks)], axis=0))
        palette = sample.quantize(colors=128, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        images = [Image.fromarray(f).quantize(palette=palette, dither=Image.Dither.NONE) for f in frames]
        buffer = io.BytesIO()
        images[0].save(buffer, format="GIF", save_all=True, append_images=images[1:],
                       duration=max(20, round(1000 / self.fps)), loop=0)
        return buffer.getvalue()

    def save(self, path, scale: float = 1.0) -> Path:
        """Write ``path``: a self-contained HTML page (``.html``/``.htm``) that plays offline in any
        browser, or a GIF (``.gif``, drawn at ``scale``). Returns the path."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix in (".html", ".htm"):
            path.write_text(self.to_html(page=True), encoding="utf-8")
        elif suffix == ".gif":
            path.write_bytes(self.gif(scale))
        else:
            raise ValueError(f"path: expected a name ending in .html or .gif, got {str(path)!r}")
        return path

    def _repr_html_(self) -> str:
        return self.to_html()

    def to_html(self, page: bool = False) -> str:
        """The player as HTML: a ``<div>`` and an inline ``<script>`` (``page=True``: a whole
        document whose Content-Security-Policy forbids every network request). Deterministic:
        the same animation gives the same text, its element id a hash of the content."""
        data = _encode(self)
        digest = hashlib.sha1(data.encode("ascii")).hexdigest()[:12]
        # Shown where the script does not run: Jupyter runs a stored output's script only in a
        # trusted notebook, and static viewers never do.
        fallback = (f"Animation of {self.num_frames} frames: run this cell to play it (a notebook "
                    "opened from disk runs stored JavaScript only once trusted), or open the page "
                    "written by save(&quot;name.html&quot;).")
        script = _PLAYER_JS.replace("__ID__", digest).replace("__DATA__", data)
        fragment = (f'<div data-rlc="{digest}" style="font:13px/1.4 sans-serif;color:#222">'
                    f"{fallback}</div>\n<script>{script}</script>")
        if not page:
            return fragment
        title = html.escape(" | ".join(p.caption for p in self.panels if p.caption) or "animation")
        csp = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'"
        return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
                f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
                f"<title>{title}</title>\n</head>\n<body style=\"margin:16px\">\n{fragment}\n"
                "</body>\n</html>\n")


def _encode(anim: Animation) -> str:
    """The player's data as compact JSON: every distinct style and shape once, each frame a list of
    shape indices, and the indices every frame of a panel starts with (its static background)
    stored once per panel as ``base``. ``<`` is escaped so the text is safe inside ``<script>``."""
    styles: dict = {}
    shapes: dict = {}

    def index(shape):
        if shape not in shapes:
            kind, st, *values = shape
            if st not in styles:
                styles[st] = len(styles)
            shapes[shape] = (len(shapes), [kind, styles[st], *values])
        return shapes[shape][0]

    panels = []
    for p in anim.panels:
        frames = [[index(s) for s in scene.shapes] for scene in p.scenes]
        base = frames[0]
        for f in frames[1:]:
            k = 0
            while k < len(base) and k < len(f) and base[k] == f[k]:
                k += 1
            base = base[:k]
        panels.append({
            "caption": p.caption, "unit": p.unit, "starts": list(p.starts),
            "w": max(s.width for s in p.scenes), "h": max(s.height for s in p.scenes),
            "returns": None if p.returns is None else list(p.returns),
            "base": base, "frames": [f[len(base):] for f in frames],
        })
    # Shrink rather than wrap: side-by-side panels are for comparing, so they stay in one row.
    widths = sum(p["w"] for p in panels)
    zoom = min(ZOOM, round((MAX_WIDTH - GAP * (len(panels) - 1)) / widths, 2))
    payload = {"fps": anim.fps, "zoom": zoom, "styles": [list(s) for s in styles],
               "shapes": [encoded for _, encoded in shapes.values()], "panels": panels}
    return json.dumps(payload, separators=(",", ":")).replace("<", "\\u003c")


def side_by_side(*animations: Animation, fps: float | None = None) -> Animation:
    """The panels of ``animations`` next to each other on one timeline (the first one's fps unless
    ``fps`` is given); shorter panels hold their last frame."""
    if not animations:
        raise ValueError("animations: expected at least one Animation, got none")
    for j, a in enumerate(animations):
        if not isinstance(a, Animation):
            raise TypeError(f"animations[{j}]: expected an Animation, got {type(a).__name__}")
    panels = tuple(p for a in animations for p in a.panels)
    return Animation._of(panels, animations[0].fps if fps is None else fps)


# -- recording ---------------------------------------------------------------------------------
def animate(env, policy=None, *, states=None, rewards=None, episodes: int = 1, seed: int = 0,
            max_steps: int = 500, fps: float | None = None, caption: str | None = None,
            **options) -> Animation:
    """Watch ``env`` under ``policy``, or replay stored ``states``; returns an :class:`Animation`.

    ``env``: a CartPole, a GridWorld (FrozenLake, CliffWalking) or a TicTacToe game.

    ``policy`` (run ``episodes`` episodes from ``env.reset(seed=seed)``, recording copy 0):
    ``policy(obs [n, ...]) -> actions [n]`` for CartPole and grid worlds; for a grid world also
    an action table ``[S]`` (ints) or a Q-table ``[S, A]`` (floats: greedy, lowest index among
    ties), whose greedy arrows are drawn under the agent. For TicTacToe ``policy(state) ->
    action``, called for both players (``state.player`` says whose turn it is). An episode is
    cut after ``max_steps`` steps (grid worlds may have no time limit). The last frame of an
    episode is its real end (``final_obs``), not the next episode's start. The env is reset
    and stepped: its episode statistics grow.

    ``states`` (replay): CartPole ``[T, 4]`` states or observations; grid world ``[T]`` cells;
    TicTacToe a list of states or 9-int boards. ``rewards [T - 1]`` optionally adds the return.

    A dict ``{caption: policy}`` (or ``{caption: states}``, with ``rewards`` a dict of the same
    keys) gives panels side by side, each run from the same seed. ``caption`` labels a single
    panel; the caption gets the outcome appended ("return -13", "X wins"). ``fps`` defaults to
    50 for CartPole (real time), 4 for grid worlds, 1 for TicTacToe. ``options`` go to the
    renderer (grid worlds: ``values [S]``, ``policy [S]`` arrows, ``trail=False`` to hide the
    dots on the cells visited so far).
    """
    if (policy is None) == (states is None):
        raise TypeError("animate: pass a policy (to run episodes) or states= (to replay stored "
                        "ones), exactly one of them")
    source, what = (policy, "policy") if states is None else (states, "states")
    if rewards is not None and states is None:
        raise TypeError("rewards: only with states= (a run policy's rewards come from the env)")
    if isinstance(source, dict):
        if not source:
            raise ValueError(f"{what}: expected at least one entry {{caption: {what}}}, got an empty dict")
        if caption is not None:
            raise TypeError(f"caption: with a dict of {what}, its keys are the captions; "
                            f"got caption={caption!r}")
        if rewards is not None and (not isinstance(rewards, dict) or set(rewards) != set(source)):
            raise ValueError(f"rewards: with a dict of states, expected a dict with the same keys "
                             f"{list(source)}, got {rewards!r}")
        parts = [animate(env, **{what: item}, rewards=None if rewards is None else rewards[label],
                         episodes=episodes, seed=seed, max_steps=max_steps, fps=fps,
                         caption=str(label), **options) for label, item in source.items()]
        return side_by_side(*parts)
    kind = next((k for k in DEFAULT_FPS if isinstance(env, k)), None)
    if kind is None:
        hint = (" (a bandit has no states to animate: build frames with rc.bandit_scene and pass "
                "them to rc.Animation)" if isinstance(env, Bandit) else "")
        raise TypeError(f"env: expected a CartPole, GridWorld (FrozenLake, CliffWalking) or TicTacToe, "
                        f"got {type(env).__name__}{hint}")
    fps = DEFAULT_FPS[kind] if fps is None else fps
    episodes = _positive("episodes", episodes)
    max_steps = _positive("max_steps", max_steps)
    if kind is TicTacToe:
        if episodes != 1:
            raise ValueError(f"episodes: a TicTacToe animation shows one game, got {episodes}")
        panel = _game_panel(env, policy, states, max_steps, caption)
    else:
        if states is None:
            act = _actor(env, policy, options)
            frames, returns, starts, summary = _record(env, act, episodes, seed, max_steps)
        else:
            frames = _check_states(env, states)
            returns, starts = _returns("rewards", rewards, len(frames)), (0,)
            summary = "" if returns is None else f"return {returns[-1]:g}"
        scenes = _scenes(env, frames, starts, options)
        label = "" if caption is None else str(caption)
        panel = Panel(" \u2014 ".join(t for t in (label, summary) if t), scenes, returns, starts, "step")
    return Animation._of((panel,), fps)


def _positive(name: str, value) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name}: expected a positive int, got {value!r}")
    return int(value)


def _actor(env, policy, options: dict):
    """``obs [n] -> actions [n]`` from a callable or (grid worlds) an action or Q-table; a table's
    greedy actions also become the arrows drawn, unless ``options`` already has a ``policy``."""
    if callable(policy):
        return policy
    if not isinstance(policy, (np.ndarray, list, tuple)):
        raise TypeError(f"policy: expected a function obs -> actions, an action table or a Q-table, "
                        f"got {type(policy).__name__}")
    if not isinstance(env, GridWorld):
        raise TypeError(f"policy: a table policy needs a grid world env; for a {type(env).__name__} env "
                        "pass a function obs -> actions")
    table = np.asarray(policy)
    S, A = env.num_states, env.num_actions
    if table.shape == (S, A) and table.dtype.kind == "f" and np.isfinite(table).all():
        table = table.argmax(axis=1)
    elif table.shape != (S,) or table.dtype.kind not in "iu" or (table.min() < 0 or table.max() >= A):
        raise ValueError(f"policy: expected an action table [{S}] of ints in [0, {A}) or a Q-table "
                         f"[{S}, {A}] of finite floats (the states and actions of env), got shape "
                         f"{table.shape} dtype {table.dtype}")
    options.setdefault("policy", table)
    return lambda obs: table[obs]


def _record(env, act, episodes: int, seed: int, max_steps: int):
    """Frames of copy 0 over ``episodes`` episodes: ``(states, returns, starts, summary)``.

    Each step records ``final_obs[0]``: the observation the step reached, which for a finished
    episode is its real last state (``obs`` would already be the next episode's start).
    """
    obs = env.reset(seed=seed)
    states, returns, starts, totals, cut_any = [np.array(obs[0])], [0], [0], [], False
    for e in range(episodes):
        total, cut = 0.0, True
        for _ in range(max_steps):
            step = env.step(_actions(env, act, obs))
            total += float(step.reward[0])
            states.append(np.array(step.final_obs[0]))
            returns.append(_short(total))
            obs = step.obs
            if step.terminated[0] or step.truncated[0]:
                cut = False
                break
        totals.append(total)
        cut_any |= cut
        if e + 1 < episodes:
            if cut:  # the env's episode goes on: start a fresh one, as the next episode
                obs = env.reset()
            starts.append(len(states))
            states.append(np.array(obs[0]))
            returns.append(0)
    note = f" (cut at {max_steps} steps)" if cut_any else ""
    if episodes == 1:
        summary = f"return {_short(totals[0]):g}{note}"
    else:
        summary = f"mean return {_short(np.mean(totals)):g} over {episodes} episodes{note}"
    return states, tuple(returns), tuple(starts), summary


def _actions(env, act, obs) -> np.ndarray:
    """``act(obs)`` checked as ``[n]`` int actions in range, an error naming ``policy`` if not."""
    actions = act(obs)
    try:
        return check_actions(actions, env.n, env.num_actions)
    except (TypeError, ValueError) as err:
        raise type(err)(f"policy: returned {actions!r} for observations of shape {np.shape(obs)}, "
                        f"not actions env can take ({err})") from None


def _check_states(env, states) -> list:
    """Stored states as a list of per-frame states, with errors naming ``states``."""
    if isinstance(env, CartPole):
        arr = np.asarray(states) if not isinstance(states, str) else np.array(states)
        if arr.dtype == object or arr.dtype.kind not in "iuf" or arr.ndim != 2 or arr.shape[1:] != (4,):
            raise ValueError("states: expected CartPole states of shape [T, 4] (x, x_dot, theta, "
                             f"theta_dot per frame), got shape {arr.shape} dtype {arr.dtype}")
        check_finite("states", arr)
    else:
        arr = np.asarray(states) if not isinstance(states, str) else np.array(states)
        if arr.ndim != 1 or arr.dtype.kind not in "iu" or (arr.size and not (
                0 <= arr.min() and arr.max() < env.num_states)):
            got = f"values {arr.min()}..{arr.max()}" if arr.ndim == 1 and arr.dtype.kind in "iu" \
                else f"shape {arr.shape} dtype {arr.dtype}"
            raise ValueError(f"states: expected the visited cells [T] as ints in [0, {env.num_states}), "
                             f"got {got}")
    if len(arr) == 0:
        raise ValueError("states: expected at least one state, got an empty trajectory")
    return list(arr)


def _scenes(env, frames, starts, options) -> tuple:
    if isinstance(env, CartPole):
        if options:
            raise TypeError(f"{sorted(options)[0]}: not an option of a CartPole env's renderer (it "
                            f"takes none), got options {sorted(options)}")
        return tuple(cartpole_scene(s) for s in frames)
    trail = check_flag("trail", options.pop("trail", True))
    scenes, visited, starts = [], set(), set(starts)
    for t, s in enumerate(frames):
        if t in starts:
            visited = set()
        scenes.append(gridworld_scene(env, s, visited=tuple(visited) if trail else (), **options))
        visited.add(int(s))
    return tuple(scenes)


def _game_panel(game, policy, states, max_steps: int, caption) -> Panel:
    """One game of TicTacToe: played by ``policy(state) -> action`` for both sides, or stored."""
    if states is None:
        if not callable(policy):
            raise TypeError(f"policy: expected a function state -> action, got {type(policy).__name__}")
        state, states = game.initial_state(), [game.initial_state()]
        while not game.is_terminal(state) and len(states) <= max_steps:
            action = policy(state)
            try:
                state = game.apply(state, action)
            except (TypeError, ValueError) as err:
                raise type(err)(f"policy: returned {action!r} for {state!r}, not a legal move "
                                f"({err})") from None
            states.append(state)
    elif isinstance(states, (str, bytes)) or not hasattr(states, "__len__"):
        raise ValueError(f"states: expected a list of TicTacToe states or 9-int boards, got {states!r}")
    elif len(states) == 0:
        raise ValueError("states: expected at least one state, got an empty trajectory")
    scenes, previous = [], None
    for t, state in enumerate(states):
        board, _ = board_of(state, f"states[{t}]")
        # the move just made: the one cell filled since the previous frame (none at the start)
        new = [] if previous is None else [c for c in range(9) if previous[c] == 0 and board[c] != 0]
        scenes.append(tictactoe_scene(state, last=new[0] if len(new) == 1 else None))
        previous = board
    outcome = game.winner(TicTacToeState(previous, 1))
    result = {1: "X wins", -1: "O wins"}.get(outcome) or ("draw" if 0 not in previous
                                                         else f"{len(states) - 1} moves")
    label = "" if caption is None else str(caption)
    return Panel(" \u2014 ".join(t for t in (label, result) if t), tuple(scenes), None, (0,), "move")


# The player. Data D: styles [fill, stroke, width, align]; shapes [kind, style, ...values];
# panels {caption, w, h, base, frames, returns, starts, unit}. Every container with this content's
# id that is not yet running gets a player (so showing one animation twice is harmless).
_PLAYER_JS = r"""
(function () {
  var D = __DATA__, id = "__ID__";
  var roots = document.querySelectorAll('div[data-rlc="' + id + '"]:not([data-rlc-on])');
  for (var r = 0; r < roots.length; r++) player(roots[r]);

  function el(tag, css, parent, txt) {
    var e = document.createElement(tag);
    if (css) e.style.cssText = css;
    if (txt !== undefined) e.textContent = txt;
    parent.appendChild(e);
    return e;
  }
  function shape(c, s) {
    var st = D.styles[s[1]], k = s[0], j;
    if (k === "t") {
      c.font = st[2] + "px sans-serif";
      c.textAlign = ["left", "center", "right"][st[3]];
      c.textBaseline = "middle";
      c.fillStyle = st[0];
      c.fillText(s[4], s[2], s[3]);
      return;
    }
    c.beginPath();
    if (k === "r") c.rect(s[2], s[3], s[4], s[5]);
    else if (k === "c") c.arc(s[2], s[3], s[4], 0, 2 * Math.PI);
    else {
      c.moveTo(s[2], s[3]);
      for (j = 4; j < s.length; j += 2) c.lineTo(s[j], s[j + 1]);
      if (k === "p") c.closePath();
    }
    if (st[0] && k !== "l") { c.fillStyle = st[0]; c.fill(); }
    if (st[1]) { c.strokeStyle = st[1]; c.lineWidth = st[2]; c.stroke(); }
  }
  function status(p, f) {
    var e = 0, parts = [];
    while (e + 1 < p.starts.length && p.starts[e + 1] <= f) e++;
    if (p.starts.length > 1) parts.push("episode " + (e + 1) + "/" + p.starts.length);
    parts.push(p.unit + " " + (f - p.starts[e]));
    if (p.returns) parts.push("return " + p.returns[f]);
    return parts.join(" \u00b7 ");
  }
  function player(root) {
    var N = 0, i = 0, playing = false, timer = null, t0 = 0, f0 = 0, speed = 1;
    var z = D.zoom * (window.devicePixelRatio || 1);
    root.setAttribute("data-rlc-on", "1");
    root.textContent = "";
    var row = el("div", "display:flex;gap:16px;align-items:flex-start", root);
    var views = D.panels.map(function (p) {
      N = Math.max(N, p.frames.length);
      var box = el("div", "", row);
      el("div", "font-weight:600;margin-bottom:2px", box, p.caption);
      var cv = el("canvas", "display:block;border:1px solid #ccc;width:" + p.w * D.zoom +
                  "px;height:" + p.h * D.zoom + "px", box);
      cv.width = Math.round(p.w * z);
      cv.height = Math.round(p.h * z);
      return {p: p, c: cv.getContext("2d"), line: el("div", "color:#555;font-size:12px", box)};
    });
    var bar = el("div", "display:flex;align-items:center;gap:6px;margin-top:6px;max-width:640px", root);
    function button(label, title, act) {
      var b = el("button", "font:inherit;padding:0 8px", bar, label);
      b.title = title;
      b.onclick = act;
      return b;
    }
    button("|<", "first frame", function () { pause(); show(0); });
    button("<", "step back (left arrow)", function () { pause(); show(i - 1); });
    var play_button = button("play", "play / pause (space)", function () { playing ? pause() : play(); });
    button(">", "step forward (right arrow)", function () { pause(); show(i + 1); });
    button(">|", "last frame", function () { pause(); show(N - 1); });
    var speeds = el("select", "font:inherit", bar);
    speeds.title = "speed";
    [0.25, 0.5, 1, 2, 4].forEach(function (v) {
      var o = el("option", "", speeds, v + "x");
      o.value = v;
      o.selected = v === 1;
    });
    speeds.onchange = function () { speed = +speeds.value; if (playing) { t0 = performance.now(); f0 = i; } };
    var slider = el("input", "flex:1;min-width:60px", bar);
    slider.type = "range";
    slider.min = 0;
    slider.max = N - 1;
    slider.oninput = function () { pause(); show(+slider.value); };
    var counter = el("span", "font-variant-numeric:tabular-nums;white-space:nowrap", bar);
    root.tabIndex = 0;
    root.style.outline = "none";
    root.onkeydown = function (ev) {
      if (ev.target.tagName === "SELECT" || ev.target.tagName === "INPUT") return;
      if (ev.key === " ") playing ? pause() : play();
      else if (ev.key === "ArrowLeft") { pause(); show(i - 1); }
      else if (ev.key === "ArrowRight") { pause(); show(i + 1); }
      else return;
      ev.preventDefault();
    };
    function show(f) {
      i = Math.max(0, Math.min(N - 1, f));
      views.forEach(function (v) {
        var p = v.p, g = Math.min(i, p.frames.length - 1), c = v.c, j;
        c.setTransform(z, 0, 0, z, 0, 0);
        c.fillStyle = "#ffffff";
        c.fillRect(0, 0, p.w, p.h);
        c.lineCap = "butt";
        c.lineJoin = "round";
        for (j = 0; j < p.base.length; j++) shape(c, D.shapes[p.base[j]]);
        for (j = 0; j < p.frames[g].length; j++) shape(c, D.shapes[p.frames[g][j]]);
        v.line.textContent = status(p, g);
      });
      slider.value = i;
      counter.textContent = "frame " + (i + 1) + " / " + N;
    }
    function tick() {
      if (!playing) return;
      var f = f0 + Math.floor((performance.now() - t0) * D.fps * speed / 1000);
      if (f >= N - 1) { show(N - 1); pause(); return; }
      if (f !== i) show(f);
      timer = setTimeout(tick, Math.max(4, 500 / (D.fps * speed)));
    }
    function play() {
      if (i >= N - 1) show(0);
      playing = true;
      play_button.textContent = "pause";
      t0 = performance.now();
      f0 = i;
      tick();
    }
    function pause() {
      playing = false;
      clearTimeout(timer);
      play_button.textContent = "play";
    }
    show(0);
  }
})();
"""
