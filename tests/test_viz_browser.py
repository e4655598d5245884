"""The animation player as users see it: a saved page opened in headless Chromium.

It steps, plays and pauses the player, reads the canvas pixels and the frame counter, and
checks that the page made no network request. Needs ``chromium`` and ``chromedriver`` (Debian:
``apt-get install chromium chromium-driver``) and selenium (in the ``dev`` extra); without them
the tests are skipped, unless ``RLCOURSE_REQUIRE_BROWSER=1`` (set by ``.ci/run``) makes that a
failure. A screenshot of the player is saved in the test's tmp directory.
"""

import json
import os
import shutil
import time

import numpy as np
import pytest

import rlcourse as rc
from rlcourse.viz.player import _status
from rlcourse.viz.renderers import POLE_COLOUR, cartpole_geometry

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def _missing() -> list[str]:
    missing = []
    if not any(shutil.which(b) for b in BROWSERS):
        missing.append("chromium")
    if not shutil.which("chromedriver"):
        missing.append("chromedriver")
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium (pip install -e '.[test]')")
    return missing


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    missing = _missing()
    if missing:
        reason = (f"the player's browser test needs {', '.join(missing)} "
                  "(Debian: apt-get install chromium chromium-driver)")
        if os.environ.get("RLCOURSE_REQUIRE_BROWSER") == "1":
            pytest.fail(f"RLCOURSE_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = next(shutil.which(b) for b in BROWSERS if shutil.which(b))
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1280,720", "--force-device-scale-factor=1",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(flag)
    # The performance log carries the DevTools Network events: every request the page makes.
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def sweep_states(T=40):
    """A stored CartPole trajectory whose frames are known: x and theta sweep across their range."""
    t = np.linspace(0, 1, T)
    return np.stack([-1.5 + 3 * t, np.zeros(T), -0.15 + 0.3 * t, np.zeros(T)], axis=1)


CANVAS_JS = """
var c = document.querySelectorAll('canvas')[arguments[0]];
var d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data, h = 0;
for (var k = 0; k < d.length; k++) h = (h * 31 + d[k]) % 2147483647;
return h;
"""
PIXEL_JS = """
var c = document.querySelectorAll('canvas')[arguments[0]];
var s = c.width / arguments[3];
var x = Math.floor(arguments[1] * s), y = Math.floor(arguments[2] * s);
return Array.from(c.getContext('2d').getImageData(x, y, 1, 1).data);
"""


def open_page(driver, path):
    driver.get_log("performance")  # drop events from earlier pages
    driver.get(path.as_uri())
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 20).until(lambda d: d.find_elements("css selector", "canvas"))


def button(driver, label, k=0):
    return [b for b in driver.find_elements("css selector", "button") if b.text == label][k]


def counter(driver, k=0):
    spans = [s.text for s in driver.find_elements("css selector", "span") if s.text.startswith("frame ")]
    return spans[k]


def requests(driver) -> list[str]:
    """URLs our pages asked for, from the DevTools Network events (the page itself included).

    Requests made for the browser's own pages (its new-tab page, still loading its chrome://
    resources at start-up) are not the player's and are left out.
    """
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            params = message["params"]
            if not params.get("documentURL", "").startswith("chrome://"):
                urls.append(params["request"]["url"])
    return urls


def test_saved_player_steps_plays_and_makes_no_request(browser, tmp_path):
    from selenium.webdriver.support.ui import WebDriverWait

    states = sweep_states()
    sweep = rc.animate(rc.CartPole(), states=states, caption="sweep", fps=25)
    falls = rc.animate(rc.CartPole(), lambda obs: np.ones(len(obs), dtype=np.int64), seed=0,
                       caption="push right")
    anim = rc.side_by_side(sweep, falls)
    short = len(falls.panels[0].scenes)
    assert short < len(states)
    page = anim.save(tmp_path / "player.html")
    open_page(browser, page)
    N = anim.num_frames
    assert counter(browser) == f"frame 1 / {N}"
    w = anim.panels[0].scenes[0].width

    # The canvas shows the pole where the state says (drawn by the browser, not by Pillow).
    def pole_pixel(frame, along=0.7):
        g = cartpole_geometry(states[frame])
        (px, py), (tx, ty) = g["pivot"], g["tip"]
        return browser.execute_script(PIXEL_JS, 0, px + along * (tx - px), py + along * (ty - py), w)[:3]

    pole = [int(POLE_COLOUR[i:i + 2], 16) for i in (1, 3, 5)]
    assert np.abs(np.array(pole_pixel(0)) - pole).max() <= 16
    first = [browser.execute_script(CANVAS_JS, k) for k in (0, 1)]

    button(browser, ">").click()
    assert counter(browser) == f"frame 2 / {N}"
    assert browser.execute_script(CANVAS_JS, 0) != first[0]  # the frame shown changed
    assert np.abs(np.array(pole_pixel(1)) - pole).max() <= 16
    statuses = [e.text for e in browser.find_elements("css selector", "canvas + div")]
    assert statuses == [_status(anim.panels[0], 1), _status(anim.panels[1], 1)]
    button(browser, "<").click()
    assert counter(browser) == f"frame 1 / {N}"
    assert [browser.execute_script(CANVAS_JS, k) for k in (0, 1)] == first  # same frame, same pixels

    # The shorter episode holds its last frame while the other goes on.
    for _ in range(short - 1):
        button(browser, ">").click()
    held = browser.execute_script(CANVAS_JS, 1)
    button(browser, ">|").click()
    assert counter(browser) == f"frame {N} / {N}"
    assert browser.execute_script(CANVAS_JS, 1) == held
    assert np.abs(np.array(pole_pixel(N - 1)) - pole).max() <= 16  # leaning right: theta = 0.15

    # Play runs on its own; pause stops it.
    button(browser, "|<").click()
    button(browser, "play").click()
    WebDriverWait(browser, 10, poll_frequency=0.05).until(
        lambda d: int(counter(d).split()[1]) >= 6)
    button(browser, "pause").click()
    stopped = counter(browser)
    time.sleep(0.4)
    assert counter(browser) == stopped and int(stopped.split()[1]) < N
    browser.save_screenshot(str(tmp_path / "player.png"))

    assert requests(browser) == [page.as_uri()]  # the page itself, nothing else
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert not [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]


def test_two_players_on_one_page_run_independently(browser, tmp_path):
    """As in a notebook: several players' fragments on one page, one animation shown twice."""
    cliff = rc.animate(rc.CliffWalking(), states=[36, 24, 25, 26, 27], caption="cliff")
    game = rc.TicTacToe()
    moves, states = [4, 0, 8], [game.initial_state()]
    for m in moves:
        states.append(game.apply(states[-1], m))
    ttt = rc.animate(game, states=states, caption="game")
    fragments = [cliff._repr_html_(), ttt._repr_html_(), cliff._repr_html_()]
    page = tmp_path / "notebook.html"
    page.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
                    + "<hr>".join(fragments) + "</body></html>", encoding="utf-8")
    open_page(browser, page)
    assert len(browser.find_elements("css selector", "canvas")) == 3
    assert [counter(browser, k) for k in range(3)] == ["frame 1 / 5", "frame 1 / 4", "frame 1 / 5"]
    before = [browser.execute_script(CANVAS_JS, k) for k in range(3)]
    assert before[0] == before[2]  # the same animation draws the same pixels
    button(browser, ">", 1).click()
    button(browser, ">", 1).click()
    assert [counter(browser, k) for k in range(3)] == ["frame 1 / 5", "frame 3 / 4", "frame 1 / 5"]
    after = [browser.execute_script(CANVAS_JS, k) for k in range(3)]
    assert after[0] == before[0] and after[2] == before[2] and after[1] != before[1]
    button(browser, ">", 2).click()
    assert [counter(browser, k) for k in range(3)] == ["frame 1 / 5", "frame 3 / 4", "frame 2 / 5"]
    browser.save_screenshot(str(tmp_path / "notebook.png"))
    assert requests(browser) == [page.as_uri()]
