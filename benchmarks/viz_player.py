"""Size and build time of the animation player: how heavy is watching an agent?

Run: ``python benchmarks/viz_player.py``. Prints, for a 500-step CartPole episode (alone, and
side by side with a second policy), the greedy cliff paths of two Q-tables and a tic-tac-toe
game: the player's HTML bytes (the notebook output and the saved page), the GIF bytes, and the
seconds to record, to write the HTML and to draw the GIF. The issue's budget: the whole player
well under 1 MB for a 500-step CartPole episode.
"""

import time

import numpy as np

import rlcourse as rc


def balance(obs):
    return (obs[:, 2] + 0.5 * obs[:, 3] > 0).astype(np.int64)


def wobble(obs):
    return (obs[:, 2] + 0.1 * obs[:, 3] > 0).astype(np.int64)


def cliff_tables():
    safe, edge = np.zeros((48, 4)), np.zeros((48, 4))
    safe[[36, 24, 12], rc.UP] = 1
    safe[0:11, rc.RIGHT] = 1
    safe[[11, 23, 35], rc.DOWN] = 1
    edge[36, rc.UP] = 1
    edge[24:35, rc.RIGHT] = 1
    edge[35, rc.DOWN] = 1
    return {"safe path": safe, "cliff edge": edge}


def game_states():
    game = rc.TicTacToe()
    states = [game.initial_state()]
    for move in (4, 0, 2, 6, 3, 5, 1, 7, 8):
        states.append(game.apply(states[-1], move))
    return game, states


def measure(name, make):
    t0 = time.perf_counter()
    anim = make()
    t1 = time.perf_counter()
    fragment, page = anim.to_html(), anim.to_html(page=True)
    t2 = time.perf_counter()
    gif = anim.gif()
    t3 = time.perf_counter()
    print(f"{name:<34} {anim.num_frames:>6} {len(fragment):>10,} {len(page):>10,} {len(gif):>10,} "
          f"{t1 - t0:>8.2f} {t2 - t1:>8.2f} {t3 - t2:>8.2f}")


def main():
    print(f"{'animation':<34} {'frames':>6} {'HTML':>10} {'page':>10} {'GIF':>10} "
          f"{'record s':>8} {'html s':>8} {'gif s':>8}")
    measure("CartPole, 500 steps", lambda: rc.animate(rc.CartPole(), balance, seed=0))
    measure("CartPole, 500 steps, two policies",
            lambda: rc.animate(rc.CartPole(), {"wobbly": wobble, "steady": balance}, seed=0))
    measure("CliffWalking, two Q-tables", lambda: rc.animate(rc.CliffWalking(), cliff_tables()))
    game, states = game_states()
    measure("TicTacToe, one game", lambda: rc.animate(game, states=states))


if __name__ == "__main__":
    main()
