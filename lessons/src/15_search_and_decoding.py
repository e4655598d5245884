# %% [markdown]
# # 15 · Search and decoding
#
# *Prerequisites:* 00, 01, 12
# *Time:* 90 minutes
# *You will build:* the UCT score, the negamax backup and a Monte Carlo tree search, graded on positions where a broken search goes wrong, then nucleus filtering and beam search for a language model.

# %% [markdown]
# Every lesson so far learned a policy and then acted with it. This one spends computation at
# decision time instead: look ahead before you move, or generate several answers before you
# reply. The same idea, search, drives AlphaGo's moves and a language model's decoding, and
# the same questions come back in both: how much search is enough, what it optimises, and
# what a prior or a scorer adds.

# %%
import inspect
import itertools
import re
from collections import Counter

import matplotlib.pyplot as plt
import numpy as np

import rlcourse as rc
from rlcourse.search import mcts as mcts_module

SEED = 0
rng = np.random.default_rng(SEED)

game = rc.TicTacToe()
fns = (game.legal_actions, game.apply, game.is_terminal, game.reward)  # the protocol mcts takes


def after(moves):
    """The tic-tac-toe state after playing ``moves`` (cell indices 0..8, row by row)."""
    state = game.initial_state()
    for a in moves:
        state = game.apply(state, a)
    return state


# %% [markdown]
# ## The problem
#
# A policy that only looks at the current position cannot see a trap two moves ahead. Exact
# lookahead, minimax over the whole game tree, can, but the tree is huge even for a toy game.
# Count the distinct games of tic-tac-toe and the distinct positions:

# %%
def count_games(state, memo):
    """Number of distinct move sequences from ``state`` to the end of the game."""
    if game.is_terminal(state):
        return 1
    if state not in memo:
        memo[state] = sum(count_games(game.apply(state, a), memo)
                          for a in game.legal_actions(state))
    return memo[state]


memo = {}
n_games = count_games(game.initial_state(), memo)
positions = list(memo)  # every non-terminal position reachable from the start
print(f"games: {n_games}, non-terminal positions: {len(positions)}")

# %% [markdown]
# Minimax with memoisation handles these few thousand positions in a blink; chess has around
# $10^{44}$ positions and Go around $10^{170}$. Without lookahead a fixed policy fails: a player
# that moves at random loses most games against a perfect player (`rc.perfect_action`, exact
# memoised minimax, kept as the yardstick):

# %%
perfect_cache = {}  # minimax values, shared by every call in this notebook


def perfect_player(state):
    return rc.perfect_action(state, *fns, rng=rng, cache=perfect_cache)


def random_player(state):
    actions = game.legal_actions(state)
    return actions[int(rng.integers(len(actions)))]


def play(x_player, o_player):
    """Play one game; returns the list of states, first to last."""
    states = [game.initial_state()]
    while not game.is_terminal(states[-1]):
        mover = x_player if states[-1].player == 1 else o_player
        states.append(game.apply(states[-1], mover(states[-1])))
    return states


outcomes = [game.winner(play(random_player, perfect_player)[-1]) for _ in range(20)]
print(f"random (X) vs perfect (O), 20 games: X wins {outcomes.count(1)}, "
      f"draws {outcomes.count(0)}, O wins {outcomes.count(-1)}")
assert outcomes.count(1) == 0 and outcomes.count(-1) > len(outcomes) / 2

# %% [markdown]
# Decoding a language model has the same problem. The model gives next-token probabilities;
# the most likely *answer* is not found by taking the most likely *token* at each step. A toy
# model makes it plain: after the start token, "a" has probability 0.5 and "b" 0.4, but every
# continuation of "a" is unlikely while "b" is almost surely followed by "c".

# %%
WORDS = ["<eos>", "a", "b", "c", "<s>"]
TOY = np.array([          # TOY[previous token] = probabilities of the next one
    [1.0, 0.0, 0.0, 0.0, 0.0],     # after <eos> (never used: a finished sequence stops)
    [0.3, 0.25, 0.2, 0.25, 0.0],   # after "a": spread out
    [0.1, 0.0, 0.0, 0.9, 0.0],     # after "b": almost surely "c"
    [1.0, 0.0, 0.0, 0.0, 0.0],     # after "c": the end
    [0.1, 0.5, 0.4, 0.0, 0.0],     # after <s>
])
with np.errstate(divide="ignore"):  # log 0 = -inf marks an impossible token
    TOY_LOG = np.log(TOY)


def toy_step(tokens):
    """Next-token log-probabilities [V] after the sequence ``tokens``."""
    return TOY_LOG[tokens[-1]]


def words(tokens):
    return " ".join(WORDS[t] for t in tokens[1:])


greedy = [4]
while greedy[-1] != 0:
    greedy.append(int(np.argmax(toy_step(greedy))))
every = [(4, *seq) for n in (1, 2, 3) for seq in itertools.product(range(4), repeat=n)
         if seq[-1] == 0 and 0 not in seq[:-1]]  # every sequence that ends within 3 tokens
prob = {s: float(np.exp(sum(toy_step(s[:i])[s[i]] for i in range(1, len(s))))) for s in every}
best = max(prob, key=prob.get)
print(f"greedy: {words(greedy)!r} with probability {prob[tuple(greedy)]:.3f}; "
      f"most likely: {words(best)!r} with {prob[best]:.3f}")
assert prob[best] > prob[tuple(greedy)]

# %% [markdown]
# Both failures have one fix: search over *sequences* of choices rather than one choice, with a
# budget you choose, and measure what the budget buys.

# %% [markdown]
# ## The idea
#
# **Monte Carlo tree search** grows a tree of positions from the current one. Each node keeps a
# visit count $N$ and a total value $W$. One *simulation* has four phases:
#
# 1. **Selection**: from the root, while every move of the node has been tried, go to the child
#    $a$ with the highest UCT score (Kocsis & Szepesvári's *upper confidence bounds applied to
#    trees*):
#    $$\mathrm{UCT}(a) = \underbrace{\frac{W_a}{N_a}}_{\text{exploit}} + c\,\underbrace{\sqrt{\frac{\ln N}{N_a}}}_{\text{explore}},\qquad \mathrm{UCT}(a) = +\infty \text{ if } N_a = 0.$$
#    The exploration bonus shrinks as a child is visited and grows slowly with the parent's
#    visits, so no move is abandoned forever; it is lesson 01's UCB bandit at every node. The
#    constant $c$ lives on the scale of the values: here a game is worth $+1$, $0$ or $-1$.
# 2. **Expansion**: add one untried child.
# 3. **Rollout**: play random moves from it to the end of the game.
# 4. **Backup**: add the outcome to $W$ and 1 to $N$ of every node on the path. In a two-player
#    game the outcome is good for one player and bad for the other, so the sign flips at each
#    level (*negamax*): each node stores values for the player who moved into it.
#
# After the budget is spent, the visit counts at the root are the policy: play the most
# visited move (the usual "robust child" rule).
#
# **A prior over moves.** AlphaZero replaces UCT's bonus by one that follows a policy
# network's probabilities $P(a)$ (the *PUCT* rule), and the rollout by a value network:
# $$\mathrm{PUCT}(a) = \frac{W_a}{N_a} + c\,P(a)\,\frac{\sqrt{N}}{1 + N_a},$$
# with $W_a/N_a = 0$ while $N_a = 0$. A move the prior likes is tried early and often; a move
# it dislikes may wait a long time. `rc.mcts(..., prior=f)` uses this rule with any `f(state)`.
#
# **Decoding** is search over token sequences scored by $\log p(y) = \sum_t \log p(y_t \mid
# y_{<t})$. Greedy keeps one sequence; **beam search** keeps the $k$ best partial sequences at
# each step; **sampling** draws $y_t \sim \mathrm{softmax}(z/T)$, with $z$ the model's logits
# (its unnormalised log-probabilities) and $T$ the temperature, optionally restricted to the
# top-$k$ tokens or to the smallest *nucleus* whose mass reaches $p$. **Best-of-n** samples $n$
# answers and keeps the one a scorer (a verifier, a reward model) likes most; how its quality
# grows with $n$ is the *test-time compute curve*.
#
# The smallest example of the negamax sign: a two-move game where the second mover's outcome
# is 1.0 or 0.0 after the first move 0, and 0.6 either way after move 1. Backed up for two
# players, move 0 is bad for the first mover (the opponent takes 1.0); for one agent making
# both moves, it is best.

# %%
LEAVES = [[1.0, 0.0], [0.6, 0.6]]
tiny = (
    lambda s: [0, 1],
    lambda s, a: s + (a,),
    lambda s: len(s) == 2,
    lambda s: LEAVES[s[0]][s[1]] if len(s) == 2 else 0.0,
)
tiny_choice = {}
for two_player in (True, False):
    r = rc.mcts((), *tiny, simulations=400, c=0.5, seed=SEED, two_player=two_player)
    tiny_choice[two_player] = r.action
    values = {a: round(v, 2) for a, v in r.values.items()}
    print(f"two_player={two_player!s:5}: picks {r.action}, visits {r.visits}, values {values}")
assert tiny_choice == {True: 1, False: 0}

# %% [markdown]
# ## Build it
#
# **Step 1: the UCT score** of the children of one node, vectorised: their mean values, their
# visit counts, the node's own visit count $N$ and $c$. An unvisited child scores $+\infty$.

# %% tags=["solution"]
def my_uct_score(mean_values, visits, parent_visits, c=2.0):
    """UCT scores [K] of K children: mean + c * sqrt(ln N / n), +inf where n == 0."""
    q = np.asarray(mean_values, dtype=float)
    n = np.asarray(visits, dtype=float)
    score = np.full(q.shape, np.inf)
    seen = n > 0
    score[seen] = q[seen] + c * np.sqrt(np.log(max(parent_visits, 1)) / n[seen])
    return score


# %%
assert rc.exercises.check("uct_score", my_uct_score)

# %% [markdown]
# **Step 2: whose win is it?** A rollout ends in a state whose `reward` is from the view of
# whoever made the *last* move. The leaf node on the tree's path belongs to the player who
# moved *into* it, so first convert: after an even number of rollout moves (zero included)
# that is the same player, after an odd number it is the opponent. Then walk up the path and
# flip the sign at every level. Return the value each node of the path gets, root first.

# %% tags=["solution"]
def my_path_values(reward, rollout_moves, path_length):
    """Values [path_length] added to the nodes root..leaf of one simulation (negamax)."""
    leaf = reward if rollout_moves % 2 == 0 else -reward
    return np.array([leaf * (-1.0) ** (path_length - 1 - i) for i in range(path_length)])


# %%
assert rc.exercises.check("path_values", my_path_values)

# %% [markdown]
# **Step 3: the search.** A node holds a state, the moves not yet tried, its children and its
# statistics; states are never copied, since `apply` returns a new one. Write the loop:
# select down by your UCT score while a node has no untried move (and is not terminal), expand
# one untried move chosen at random, roll out at random, add your path values to the nodes.
# Return the most visited move and the visit count of every legal move.

# %%
class Node:
    def __init__(self, state, legal_actions, is_terminal):
        self.state = state
        self.untried = [] if is_terminal(state) else list(legal_actions(state))
        self.children = {}  # action -> Node
        self.visits, self.total = 0, 0.0


# %% tags=["solution"]
def my_mcts(state, legal_actions, apply, is_terminal, reward, simulations, c=2.0, seed=0):
    """Monte Carlo tree search with UCT from ``state``: returns (action, {action: visits})."""
    rng = np.random.default_rng(seed)
    root = Node(state, legal_actions, is_terminal)
    for _ in range(simulations):
        node, path = root, [root]
        while not node.untried and node.children:  # selection
            kids = list(node.children.values())
            scores = my_uct_score([k.total / k.visits for k in kids], [k.visits for k in kids],
                                  node.visits, c)
            node = kids[int(np.argmax(scores))]
            path.append(node)
        if node.untried:  # expansion
            action = node.untried.pop(int(rng.integers(len(node.untried))))
            node.children[action] = Node(apply(node.state, action), legal_actions, is_terminal)
            node = node.children[action]
            path.append(node)
        leaf, moves = node.state, 0  # rollout
        while not is_terminal(leaf):
            actions = legal_actions(leaf)
            leaf = apply(leaf, actions[int(rng.integers(len(actions)))])
            moves += 1
        for node, value in zip(path, my_path_values(reward(leaf), moves, len(path))):  # backup
            node.visits += 1
            node.total += value
    visits = {a: (root.children[a].visits if a in root.children else 0)
              for a in legal_actions(state)}
    return max(visits, key=visits.get), visits


# %%
assert rc.exercises.check("mcts", my_mcts)

# %% [markdown]
# The checker compares your move with exact minimax on positions with one clearly right move
# (a win, a block, a fork) and on three quiet positions searched with 1000 simulations, where
# it also compares your whole visit distribution with the reference's. A search that reads the
# rollout's outcome from the wrong player's view, never counts the root's own visits, or takes
# the logarithm of the child's visits instead of the parent's finds the easy moves and fails
# there. The checker grades your search on a few positions; the exhaustive check in Use it is
# of the reference `rc.mcts`, the same algorithm with input checks, a `rollout_depth` cut-off,
# a single-agent mode and the PUCT rule. Its loop and the helpers it calls, without their
# docstrings. The lines at the top of `rc.mcts` (`check_*`, `as_rng`) only check the settings
# and the game's four functions; inside the loop, three helpers call the game's functions and
# check what they return: `play(apply, state, action)` is `apply(state, action)` (refused if it
# returns None), `legal_list(legal_actions, state)` is the legal actions as a list (any
# iterable is accepted; an empty one is refused), and `game_reward(reward, state)` is the reward
# as a finite number. Read them as the plain calls:

# %%
def show(fn):
    """Print a function's source without its docstring."""
    source = inspect.getsource(fn)
    print(re.sub(r'\n\s*"""(?:.|\n)*?"""\n', "\n", source, count=1))


for fn in (rc.mcts, mcts_module._select_and_expand, mcts_module._uct_child,
           mcts_module._select_and_expand_puct, mcts_module._rollout):
    show(fn)

# %% [markdown]
# **Step 4: nucleus (top-p) filtering.** Keep the smallest set of most likely tokens whose
# probability reaches $p$; set the other logits to $-\infty$. Work on `[V]` or `[B, V]`.
# The tie rule: a set whose mass equals $p$ already reaches it, so the next token is dropped.
# That is Hugging Face's `TopPLogitsWarper` rule, written there the other way round: sort
# ascending and remove the tokens whose cumulative probability is $\le 1 - p$. A
# floating-point sum can land a hair on either side of an exact tie, so the checker accepts
# both answers there. However small $p$ is, the most likely token is always kept.

# %% tags=["solution"]
def my_top_p_filter(logits, p):
    """Logits with every token outside the top-p nucleus set to -inf (last axis)."""
    logits = np.asarray(logits, dtype=float)
    probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    order = np.argsort(-probs, axis=-1, kind="stable")
    ranked = np.take_along_axis(probs, order, axis=-1)
    keep_ranked = np.cumsum(ranked, axis=-1) - ranked < p - 1e-9  # 1e-9: a float tie reaches p
    keep_ranked[..., 0] = True  # the most likely token, even for a p below that slack
    keep = np.zeros_like(keep_ranked)
    np.put_along_axis(keep, order, keep_ranked, axis=-1)
    return np.where(keep | (p >= 1.0), logits, -np.inf)


# %%
assert rc.exercises.check("top_p_filter", my_top_p_filter)

# %% [markdown]
# **Step 5: beam search.** `step(tokens)` gives the next token's log-probabilities. Keep the
# `beam_width` best hypotheses (whole sequences with their summed log-probabilities); a kept
# hypothesis that ends in `eos` is finished: it stops growing but keeps competing for a place
# in the beam. Stop after `max_len` generated tokens or when every kept hypothesis is
# finished; return them best first as `(tokens, score)`. Ties keep the earlier hypothesis and
# the lower token id; a token of log-probability $-\infty$ is never kept.

# %% tags=["solution"]
def my_beam_search(step, start, beam_width, max_len, eos):
    """Beam search: a list of (tokens, score), best first."""
    live, finished = [(tuple(start), 0.0)], []
    for _ in range(max_len):
        candidates = []
        for tokens, score in live:
            logp = np.asarray(step(tokens), dtype=float)
            candidates += [(tokens + (v,), score + logp[v]) for v in range(logp.size)
                           if logp[v] > -np.inf]
        candidates.sort(key=lambda h: -h[1])  # stable: earlier hypotheses win ties
        pool = sorted(finished + candidates[:beam_width], key=lambda h: -h[1])[:beam_width]
        finished = [h for h in pool if h[0][-1] == eos]
        live = [h for h in pool if h[0][-1] != eos]
        if not live:
            break
    return sorted(finished + live, key=lambda h: -h[1])


# %%
assert rc.exercises.check("beam_search", my_beam_search)

# %% [markdown]
# ## Check it
#
# The invariants, asserted on the reference. Visits sum to the budget, the same seed gives the
# same search, MCTS takes a win before blocking, blocks when it must, and the PUCT rule with a
# prior does the same:

# %%
for sims in (1, 50, 777):
    assert sum(rc.mcts(after([4]), *fns, simulations=sims).visits.values()) == sims
assert rc.mcts(after([4]), *fns, seed=3) == rc.mcts(after([4]), *fns, seed=3)


def uniform_prior(state):
    actions = game.legal_actions(state)
    return np.full(len(actions), 1.0 / len(actions))


win_or_block = after([0, 3, 1, 4])  # X can win at 2; O threatens 5
for prior in (None, uniform_prior):
    r = rc.mcts(win_or_block, *fns, simulations=300, seed=SEED, prior=prior)
    assert r.action == 2 and r.values[2] == 1.0  # every simulation through 2 is a win
    assert rc.mcts(after([0, 4, 1]), *fns, simulations=300, seed=SEED, prior=prior).action == 2
print(f"win beats block: plays {r.action}, value {r.values[2]:.2f}; O blocks at 2")

# %% [markdown]
# The PUCT score is the formula above. Unlike UCT, an unvisited move is not tried first: its
# bonus follows its prior. Here move 1 is unvisited but its prior is small, so PUCT goes back
# to a visited move while UCT must try move 1:

# %%
q, prior_p, n = np.array([0.2, 0.0, -0.1]), np.array([0.5, 0.05, 0.45]), np.array([5, 0, 4])
puct, uct = rc.puct_score(q, prior_p, n, 9, c=1.0), rc.uct_score(q, n, 9, c=1.0)
print("PUCT:", np.round(puct, 3).tolist(), "picks", int(np.argmax(puct)),
      "| UCT:", np.round(uct, 3).tolist(), "picks", int(np.argmax(uct)))
np.testing.assert_allclose(puct, q + prior_p * 3 / (1 + n))
assert np.argmax(uct) == 1 and np.argmax(puct) != 1

# %% [markdown]
# Beam search: width 1 is greedy, and a score is exactly the sum of the model's
# log-probabilities of the chosen tokens. But **a wider beam is not always better.** Here is a
# model (a tree of next-token probabilities) where width 2 finds a *worse* sequence than
# width 1: keeping B at the first step lets B's two children push A's good continuation out
# of the beam at the second.

# %%
BRANCH = {  # prefix -> {next token: probability}; tokens: 0 <eos>, 1 A, 2 B, 3 C, 4..8 words
    (9,): {1: 0.5, 2: 0.45, 3: 0.05},
    (9, 1): {4: 0.4, 5: 0.3, 6: 0.3}, (9, 1, 4): {0: 1.0}, (9, 1, 5): {0: 1.0}, (9, 1, 6): {0: 1.0},
    (9, 2): {7: 0.5, 8: 0.5}, (9, 2, 7): {0: 0.5, 5: 0.5}, (9, 2, 8): {0: 0.5, 6: 0.5},
    (9, 3): {0: 1.0},
}


def branch_step(tokens):
    probs = np.zeros(10)
    for token, p in BRANCH.get(tuple(tokens), {}).items():
        probs[token] = p
    with np.errstate(divide="ignore"):
        return np.log(probs)


assert [h.tokens for h in rc.beam_search(toy_step, [4], 1, 8, 0)] == [tuple(greedy)]
found = {w: rc.beam_search(branch_step, [9], w, 3, 0)[0] for w in (1, 2, 3, 4)}
for w, h in found.items():
    print(f"width {w}: {h.tokens}, probability {np.exp(h.score):.4f}")
    logp = sum(branch_step(h.tokens[:i])[h.tokens[i]] for i in range(1, len(h.tokens)))
    assert np.isclose(h.score, logp)  # the score is the sum of the tokens' log-probs
assert found[2].score < found[1].score == found[3].score  # wider is not always better
# what *is* guaranteed: a beam that keeps every prefix (here 9 at most) is exact search
exact_branch = rc.beam_search(branch_step, [9], 100, 3, 0)[0]
assert all(h.score <= exact_branch.score for h in found.values())

# %% [markdown]
# Sampling filters keep their definitions: top-p keeps at least mass $p$ and no token it could
# drop, lowering the temperature lowers the entropy, and a filtered token is never drawn.

# %%
z = np.array([2.0, 1.0, 0.5, 0.0, -1.0])
probs = np.exp(z) / np.exp(z).sum()
kept = np.isfinite(rc.top_p_filter(z, 0.75))
assert probs[kept].sum() >= 0.75 and probs[kept].sum() - probs[kept].min() < 0.75


def entropy(logits):
    p = np.exp(logits - logits.max())
    p = p / p.sum()
    return float(-(p[p > 0] * np.log(p[p > 0])).sum())


ents = [entropy(rc.filter_logits(z, temperature=t)) for t in (0.5, 1.0, 2.0)]
assert ents[0] < ents[1] < ents[2]
draws = rc.sample_token(np.tile(z, (20000, 1)), rng, top_k=2)
assert set(np.unique(draws)) == {0, 1}
print(f"top-p 0.75 keeps tokens {np.flatnonzero(kept).tolist()} (mass {probs[kept].sum():.3f}); "
      f"entropy at T = 0.5, 1, 2: {[round(e, 3) for e in ents]}; top-2 draws: "
      f"{np.bincount(draws, minlength=5).tolist()}")

# %% [markdown]
# ## Use it
#
# **Visit counts are the policy.** After X takes two opposite corners around O's centre, O
# must answer on an edge: a corner reply loses to a fork. MCTS finds this from random
# rollouts; the colours show where its simulations went.

# %%
def show_visits(state, result, title):
    grid = np.zeros(9)
    for a, n in result.visits.items():
        grid[a] = n
    fig, ax = plt.subplots(figsize=(5, 3.8), dpi=100)
    im = ax.imshow(grid.reshape(3, 3), cmap="Blues", vmin=0)
    for cell in range(9):
        mark = {1: "X", -1: "O", 0: ""}[state.board[cell]]
        dark = grid[cell] > 0.55 * grid.max()
        ax.text(cell % 3, cell // 3, mark or f"{int(grid[cell])}", ha="center", va="center",
                fontsize=16 if mark else 11, color="white" if dark else "black")
    ax.set_xticks(range(3))
    ax.set_yticks(range(3))
    ax.set_xlabel("column")
    ax.set_ylabel("row")
    fig.colorbar(im, ax=ax, label="visits (simulations through the move)")
    ax.set_title(title, fontsize=10)
    plt.show()


fork_threat = after([0, 4, 8])
r = rc.mcts(fork_threat, *fns, seed=SEED)
optimal_here = {a for a, v in rc.minimax_values(fork_threat, *fns, cache=perfect_cache).items()
                if v == 0}
print(f"O plays {r.action}; visits {r.visits}; the moves that hold the draw: {sorted(optimal_here)}")
assert optimal_here == {1, 3, 5, 7} and r.action in optimal_here
show_visits(fork_threat, r, "O to move: the corners lose to a fork; the edges hold the draw")

# %% [markdown]
# **Does it ever make a mistake?** A handful of games cannot tell. Check every position
# instead: walk the whole game tree from the start with MCTS playing one side, the opponent
# trying *every* legal reply, and ask exact minimax at each position where MCTS is to move
# whether its move keeps the best outcome it can still force. That covers every game MCTS can
# ever play from the start, as X and as O.

# %%
def optimal_moves(state):
    q = rc.minimax_values(state, *fns, cache=perfect_cache)
    return {a for a, v in q.items() if v == max(q.values())}


def audit(policy, side):
    """Every position where ``side`` (1 = X, -1 = O) is to move, reachable when ``side`` plays
    ``policy`` and the opponent plays anything: (positions, real decisions, mistakes)."""
    seen, to_move, decisions, mistakes = set(), 0, 0, []
    stack = [game.initial_state()]
    while stack:
        state = stack.pop()
        if game.is_terminal(state) or state in seen:
            continue
        seen.add(state)
        if state.player != side:  # the opponent: every reply
            stack.extend(game.apply(state, a) for a in game.legal_actions(state))
            continue
        to_move += 1
        action = policy(state)
        best = optimal_moves(state)
        if len(best) < len(game.legal_actions(state)):  # a real decision: some move is worse
            decisions += 1
            if action not in best:
                mistakes.append(state)
        stack.append(game.apply(state, action))
    return to_move, decisions, mistakes


def audit_both(policy):
    """The audit as X and as O: {"X": (positions, decisions, mistakes), "O": ...}."""
    return {name: audit(policy, side) for side, name in ((1, "X"), (-1, "O"))}


def default_mcts(state):
    return rc.mcts(state, *fns).action  # every default: simulations, c, seed


default = inspect.signature(rc.mcts).parameters
DEFAULT_SIMS = default["simulations"].default
print(f"rc.mcts defaults: simulations={DEFAULT_SIMS}, c={default['c'].default}")
audits = {DEFAULT_SIMS: audit_both(default_mcts)}  # budget -> audit, seed 0
for name, (n_pos, n_dec, bad) in audits[DEFAULT_SIMS].items():
    print(f"MCTS as {name}: {n_pos} positions to move in, {n_dec} real decisions, "
          f"{len(bad)} mistakes")
    assert n_dec > 50 and bad == []

# %% [markdown]
# Zero mistakes from either side means no opponent can ever beat it, or draw a game it could
# have won. How much search does that take? The same audit at smaller budgets (same seed):

# %%
for budget in (100, 500, 1000):
    audits[budget] = audit_both(lambda s, b=budget: rc.mcts(s, *fns, simulations=b).action)
print("simulations   mistakes as X   mistakes as O   (real decisions as X / O)")
for budget in sorted(audits):
    a = audits[budget]
    print(f"{budget:11d}   {len(a['X'][2]):13d}   {len(a['O'][2]):13d}   "
          f"({a['X'][1]} / {a['O'][1]})")
n_mistakes = {b: len(a["X"][2]) + len(a["O"][2]) for b, a in audits.items()}
assert n_mistakes[100] > 0 and n_mistakes[500] > 0 and n_mistakes[1000] == 0

wrong_here = audits[100]["O"][2][0]
q_wrong = rc.minimax_values(wrong_here, *fns, cache=perfect_cache)
print(game.render(wrong_here))
print(f"O to move; 100 simulations play {rc.mcts(wrong_here, *fns, simulations=100).action}, "
      f"minimax values of the moves: { {a: int(v) for a, v in q_wrong.items()} }")

# %% [markdown]
# The mistakes are quiet defensive moves as O, where only one reply holds the draw and the
# random rollouts need many simulations to tell it apart. They stop between 500 and 1000
# simulations here (`tests/test_search.py` finds the same for seeds 1 and 2); the default
# doubles that for a margin.
#
# **What does a prior buy?** AlphaZero's policy network tells the search which moves look
# promising before any simulation. Three stand-ins for it: a *tactical* prior (a move that wins
# at once weighs 8, a block 4, the centre 2, a corner 1.5, an edge 1, normalised); the same
# weights inverted, a *misleading* prior; and a uniform one. First on a sample: 50 positions
# drawn at random from all those where some move is worse than another, searched with 3 seeds
# at each budget. A prior's budget-0 point is the *prior alone*: play its most likely move,
# no search (for UCT, which has no prior, that is a random move).

# %%
def tactical_weights(state):
    weights = []
    for a in game.legal_actions(state):
        opponent = rc.TicTacToeState(state.board, -state.player)
        if game.winner(game.apply(state, a)) != 0:
            weights.append(8.0)  # wins at once
        elif game.winner(game.apply(opponent, a)) != 0:
            weights.append(4.0)  # the opponent would win there: block
        else:
            weights.append({4: 2.0, 0: 1.5, 2: 1.5, 6: 1.5, 8: 1.5}.get(a, 1.0))
    return np.array(weights)


def tactical_prior(state):
    w = tactical_weights(state)
    return w / w.sum()


def misleading_prior(state):
    w = 1.0 / tactical_weights(state)
    return w / w.sum()


def prior_alone(prior):
    """The prior's most likely move (the first of ties): no search at all."""
    return lambda state: game.legal_actions(state)[int(np.argmax(prior(state)))]


decisions = [s for s in positions if len(optimal_moves(s)) < len(game.legal_actions(s))]
sample = [decisions[i] for i in rng.choice(len(decisions), size=50, replace=False)]
optimal_in = [optimal_moves(s) for s in sample]
searches = {"UCT": None, "PUCT, uniform prior": uniform_prior,
            "PUCT, tactical prior": tactical_prior, "PUCT, misleading prior": misleading_prior}
BUDGETS = [4, 16, 64]
rate, picks_at_4 = {}, {}  # (search, budget) -> fraction of optimal moves per seed [3]
for name, prior in searches.items():
    for budget in BUDGETS:
        results = [[rc.mcts(s, *fns, simulations=budget, seed=seed, prior=prior) for s in sample]
                   for seed in range(3)]
        rate[name, budget] = np.array([np.mean([r.action in best for r, best in
                                                zip(row, optimal_in)]) for row in results])
        if budget == 4:
            picks_at_4[name] = results
random_right = np.array([len(best) / len(game.legal_actions(s)) for s, best in zip(sample, optimal_in)])
random_rate = random_right.mean()
alone = {name: np.mean([prior_alone(prior)(s) in best for s, best in zip(sample, optimal_in)])
         for name, prior in searches.items() if prior is not None}
print(f"{len(decisions)} positions with a real decision; in the 50 drawn, a random move is "
      f"optimal {random_rate:.0%} of the time")
print(f"{'':24} prior alone " + "".join(f"{b:>6}" for b in BUDGETS) + "   (medians of 3 seeds)")
for name in searches:
    first = f"{alone[name]:11.0%}" if name in alone else f"{'(random)':>11}"
    print(f"{name:24} {first} " + "".join(f"{np.median(rate[name, b]):6.0%}" for b in BUDGETS))

# %%
fig, ax = plt.subplots(figsize=(9, 3.8), dpi=100)
for name in searches:
    med = [np.median(rate[name, b]) for b in BUDGETS]
    line, = ax.semilogx(BUDGETS, med, "o-", base=2, label=name)
    ax.fill_between(BUDGETS, [rate[name, b].min() for b in BUDGETS],
                    [rate[name, b].max() for b in BUDGETS], color=line.get_color(), alpha=0.2)
    ax.plot(1, alone.get(name, random_rate), "s", mfc="none", ms=9, color=line.get_color())
ax.axhline(random_rate, color="gray", ls="--", label="random move")
ax.plot([], [], "s", mfc="none", color="black", label="prior alone (no search)")
ax.set_xticks([1] + BUDGETS)
ax.set_xticklabels(["prior\nalone"] + [str(b) for b in BUDGETS])
ax.set_ylim(0, 1.02)
ax.set_xlabel("simulations per move")
ax.set_ylabel("fraction of optimal moves")
ax.set_title("Search improves on every prior; a misleading prior costs simulations "
             "(band: 3 search seeds, one sample of 50 positions)", fontsize=9)
ax.legend(fontsize=9, loc="center left", bbox_to_anchor=(1.01, 0.5))
fig.tight_layout()
plt.show()

# %%
for name in searches:
    assert np.median(rate[name, 64]) > np.median(rate[name, 4])
for name in ("PUCT, tactical prior", "PUCT, misleading prior"):
    assert np.median(rate[name, 64]) >= alone[name]  # the search improves on its prior
assert np.median(rate["PUCT, misleading prior", 4]) > alone["PUCT, misleading prior"]
assert np.median(rate["PUCT, misleading prior", 4]) < random_rate
assert np.median(rate["PUCT, misleading prior", 64]) < np.median(rate["PUCT, tactical prior", 64])
# UCT at 4 simulations, split by how many moves the position has
few = np.array([len(game.legal_actions(s)) <= 4 for s in sample])
uct_right = np.array([[r.action in best for r, best in zip(row, optimal_in)]
                      for row in picks_at_4["UCT"]])  # [seed, position]
most_visits = max(max(r.visits.values()) for row in picks_at_4["UCT"]
                  for r, many in zip(row, ~few) if many)
print(f"UCT at 4 simulations, {few.sum()} positions with <= 4 legal moves: optimal "
      f"{np.median(uct_right[:, few].mean(1)):.0%} (random {random_right[few].mean():.0%}); "
      f"{(~few).sum()} with more: {np.median(uct_right[:, ~few].mean(1)):.0%} "
      f"(random {random_right[~few].mean():.0%}), largest visit count there: {most_visits}")
assert np.median(uct_right[:, few].mean(1)) > random_right[few].mean()
follows = np.mean([r.action == prior_alone(tactical_prior)(s)
                   for row in picks_at_4["PUCT, tactical prior"] for r, s in zip(row, sample)])
print(f"PUCT with the tactical prior at 4 simulations plays the prior's favourite in "
      f"{follows:.0%} of the searches")
assert alone["PUCT, tactical prior"] > 0.5 and follows > 0.5
assert alone["PUCT, misleading prior"] < random_rate - 0.1
binomial_sd = np.sqrt(0.25 / len(sample))
print(f"a sample of 50 positions alone moves a rate by about {binomial_sd:.0%} (binomial sd at 50%)")

# %% [markdown]
# Read the table from the left. The tactical prior alone already picks an optimal move on most
# of the sample; at 4 simulations PUCT mostly plays that prior's favourite (the first visits
# follow the prior), and the search adds to it as the budget grows. The misleading prior alone
# is far worse than a random move; the search improves on it, but it stays below random at 4
# simulations and behind the tactical prior at 64: it sends the early simulations to bad moves,
# and only the mean values $W_a/N_a$ overrule it. UCT at 4 simulations beats a random move only
# where a position has at most 4 legal moves: with more, 4 simulations cannot even try every
# move once, every tried move has one visit, and the tie goes to the first in legal order. Mind the
# band: it shows the search's own randomness on one fixed sample; another sample of 50 would
# move each rate by the binomial sd printed above.
#
# The sample is small; the exhaustive audit settles whether a good prior needs fewer
# simulations. Every position each search can face, as X and as O, at 100 simulations for 3
# seeds, and the tactical prior alone:

# %%
PRIOR_SIMS = 100
exhaustive = {("UCT", 0): audits[PRIOR_SIMS]}  # the sweep above ran UCT with seed 0
for seed in range(3):
    for name, prior in (("UCT", None), ("PUCT, tactical prior", tactical_prior)):
        if (name, seed) not in exhaustive:
            exhaustive[name, seed] = audit_both(lambda s, p=prior, sd=seed: rc.mcts(
                s, *fns, simulations=PRIOR_SIMS, seed=sd, prior=p).action)
exhaustive["tactical prior alone", None] = audit_both(prior_alone(tactical_prior))
total = {key: len(a["X"][2]) + len(a["O"][2]) for key, a in exhaustive.items()}
print(f"mistakes (as X + as O), {PRIOR_SIMS} simulations:")
for name in ("UCT", "PUCT, tactical prior"):
    print(f"  {name:22}", "  ".join(f"seed {sd}: {len(exhaustive[name, sd]['X'][2])} + "
                                     f"{len(exhaustive[name, sd]['O'][2])}" for sd in range(3)))
alone_audit = exhaustive["tactical prior alone", None]
print(f"  tactical prior alone    {len(alone_audit['X'][2])} + {len(alone_audit['O'][2])}")
fewer_than_alone = sum(total["PUCT, tactical prior", sd] < total["tactical prior alone", None]
                       for sd in range(3))
print(f"PUCT makes fewer mistakes than the prior alone for {fewer_than_alone} of 3 seeds")
for seed in range(3):
    assert total["PUCT, tactical prior", seed] < total["UCT", seed]
    assert total["PUCT, tactical prior", seed] <= total["tactical prior alone", None]
assert total["tactical prior alone", None] < min(total["UCT", sd] for sd in range(3))

# %% [markdown]
# With the tactical prior, 100 simulations make fewer mistakes than UCT's 100 for every seed,
# and never more than the prior alone (fewer on the seeds counted above; the margin is small
# enough that another seed can tie): a good prior needs fewer simulations, and the search
# usually corrects a few of the prior's mistakes rather than adding its own. The prior alone, a few lines of tactics, even beats UCT with 100 random
# rollouts per move. The rollouts stay random here; AlphaZero also replaces them by a value
# network.
#
# **Watch one game.** The default MCTS as X against the perfect player:

# %%
states = play(default_mcts, perfect_player)
game_anim = rc.animate(rc.TicTacToe(), states=states, caption="MCTS (X) vs perfect player (O)")
print(game_anim)  # summary, compared by nbval
assert game.winner(states[-1]) == 0

# %%
game_anim

# %% [markdown]
# ### Decoding a language model
#
# Now the same questions for the course's own language model (`rc.lm_init`, trained with
# `rc.sft` as in lesson 12). The task is one-digit addition, `"3+4="` answered by `"7"`, and a
# verifier checks an answer exactly. The model gets a short training run on the 100 sums, so
# that it has mostly learned the format (digits, then end of sequence) but is often wrong: a
# model worth searching.

# %%
tok = rc.Tokenizer("0123456789+=")
prompts = [f"{a}+{b}=" for a in range(10) for b in range(10)]
answers = [str(a + b) for a in range(10) for b in range(10)]
answer_tokens, answer_mask, P = tok.encode_pairs(prompts, answers)
prompt_ids = tok.encode_prompts(prompts)
truth = [tuple(tok.encode(a, bos=False, eos=True).tolist()) for a in answers]
MAX_NEW = 3  # two digits and <eos>
lm, _ = rc.sft(rc.lm_init(tok.vocab_size, context=8, dim=16, seed=SEED), answer_tokens,
               answer_mask, steps=120, lr=3e-3, seed=SEED, batch=32)


def log_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def completion(row):
    """The generated tokens of one row, up to and including the first <eos>."""
    out = []
    for t in row:
        out.append(int(t))
        if t == tok.eos:
            break
    return tuple(out)


def pass_probability(temperature=1.0):
    """Exact probability [100] that one sample at this temperature is the right answer."""
    logits = np.asarray(rc.lm_logits(lm, answer_tokens), dtype=float)[:, :-1] / temperature
    return np.exp(rc.sequence_log_prob(logits, answer_tokens, answer_mask))


p_right = pass_probability()

# the exact probability that a sample is well formed: one or two digits, then <eos>
well_formed = [str(k) for k in range(100)]
form_tokens, form_mask, _ = tok.encode_pairs([p for p in prompts for _ in well_formed],
                                             well_formed * len(prompts))
p_form = np.exp(rc.completion_log_prob(lm, form_tokens, form_mask)).reshape(len(prompts), -1).sum(1)

# %% tags=["nbval-ignore-output"]
print(f"one sample is right with probability {p_right.mean():.3f} on average "
      f"(quartiles {np.round(np.quantile(p_right, [0.25, 0.5, 0.75]), 3).tolist()}); "
      f"well formed with probability {p_form.mean():.3f}")

# %%
assert 0.05 < p_right.mean() < 0.8  # often wrong, but it knows something
assert p_form.mean() > 0.8  # the format is mostly learned

# %% [markdown]
# **Greedy, beam and exact.** With at most 3 new tokens the model's whole output distribution
# fits in one table: the next-token log-probabilities after every prefix of at most two
# generated tokens, for all 100 prompts, from one batched forward pass (13 tokens can be
# generated, since padding and start tokens never are, so there are $13^2$ two-token prefixes).
# A decoder's `step` looks its answer up there instead of running the model again; the cell
# checks a few lookups against `rc.lm_next_logits`. `P` is the prompt's length in tokens, so
# the logits at position `P - 1` predict the first generated token. Exact search scores every
# possible completion from the same table. Decode each prompt greedily, with beams of width 2
# and 4, and exactly; count how often each finds the most likely answer and how often that
# answer is right.

# %%
NEVER = [tok.pad, tok.bos]  # a decoder never emits these two
ALLOWED = [t for t in range(tok.vocab_size) if t not in NEVER]
slot = {t: j for j, t in enumerate(ALLOWED)}  # token -> its index among ALLOWED
K = len(ALLOWED)
prefixes = np.array(list(itertools.product(ALLOWED, repeat=2)))  # [K*K, 2], every two tokens
rows = np.concatenate([np.repeat(prompt_ids, len(prefixes), axis=0),  # prompt i, then prefix j
                       np.tile(prefixes, (len(prompts), 1))], axis=1)
table = log_softmax(np.asarray(rc.lm_logits(lm, rows), dtype=float))
table[..., NEVER] = -np.inf
table = table.reshape(len(prompts), K, K, rows.shape[1], tok.vocab_size)
first = table[:, 0, 0, P - 1]  # [100, V]: after the prompt (the same for every prefix)
second = table[:, :, 0, P]  # [100, K, V]: after one generated token t1
third = table[:, :, :, P + 1]  # [100, K, K, V]: after two generated tokens t1, t2


def lm_step_for(i):
    """``step(tokens)`` for prompt i: the model's next-token log-probabilities, looked up."""
    def step(tokens):
        g = [slot[t] for t in tokens[P:]]  # the generated tokens so far
        return first[i] if not g else second[i, g[0]] if len(g) == 1 else third[i, g[0], g[1]]
    return step


for i, n_gen in zip(rng.integers(len(prompts), size=6), [0, 1, 2, 0, 1, 2]):
    tokens = tuple(prompt_ids[i].tolist()) + tuple(int(t) for t in rng.choice(ALLOWED, n_gen))
    direct = log_softmax(np.asarray(rc.lm_next_logits(lm, np.array([tokens])), dtype=float)[0])
    direct[NEVER] = -np.inf
    assert np.allclose(lm_step_for(i)(tokens), direct, atol=1e-5)

# exact search: every completion of at most MAX_NEW tokens; one that has not ended by then
# is cut there, as beam search cuts it
E = slot[tok.eos]
one = [(tok.eos,)], first[:, [tok.eos]]  # <eos> at once
two = ([(t, tok.eos) for t in ALLOWED if t != tok.eos],
       np.delete(first[:, ALLOWED] + second[:, :, tok.eos], E, axis=1))
three_scores = (first[:, ALLOWED][:, :, None, None] + second[:, :, ALLOWED][:, :, :, None]
                + third[:, :, :, ALLOWED])  # [100, t1, t2, t3]
keep = np.array([[a != E and b != E for b in range(K)] for a in range(K)])
three = ([(ALLOWED[a], ALLOWED[b], ALLOWED[c]) for a in range(K) for b in range(K) if keep[a, b]
          for c in range(K)], three_scores[:, keep].reshape(len(prompts), -1))
completions = one[0] + two[0] + three[0]
all_scores = np.concatenate([one[1], two[1], three[1]], axis=1)  # [100, every completion]
exact = all_scores.max(axis=1)
exact_right = np.array([completions[j] == truth[i] for i, j in enumerate(all_scores.argmax(1))])

NS = [1, 2, 4, 8, 16, 32, 64]  # beam widths here, numbers of candidates below
beams = {k: [rc.beam_search(lm_step_for(i), tuple(prompt_ids[i].tolist()), k, MAX_NEW, tok.eos)
             for i in range(len(prompts))] for k in NS}
top_scores = {k: np.array([hyps[0].score for hyps in beams[k]]) for k in NS}
top_right = {k: np.array([hyps[0].tokens[P:] == truth[i] for i, hyps in enumerate(beams[k])])
             for k in NS}
for k in NS:
    assert (top_scores[k] <= exact + 1e-9).all()  # no beam beats exhaustive search
found = {k: np.mean(top_scores[k] >= exact - 1e-9) for k in NS}
worse = sum(int(np.sum(top_scores[b] < top_scores[a] - 1e-9)) for a, b in zip(NS, NS[1:]))
greedy_acc, exact_acc = top_right[1].mean(), exact_right.mean()

# %% tags=["nbval-ignore-output"]
for k in (1, 2, 4):
    print(f"beam width {k}{' (greedy)' if k == 1 else ''}: finds the most likely answer for "
          f"{found[k]:.0%} of prompts; its answer is right for {top_right[k].mean():.0%}")
print(f"exact search: the most likely answer is right for {exact_acc:.0%} of prompts")
print(f"prompts where a wider beam (widths {NS}) scored lower than the next narrower: {worse}")

# %%
assert found[4] > 0.9  # a narrow beam nearly always finds the most likely answer here
assert exact_acc < 0.9 and greedy_acc <= exact_acc + 0.1  # ... and it is often wrong

# %% [markdown]
# On this short task a narrow beam already finds the most likely answer, and that answer is
# often wrong: exact search returns the model's belief, not the truth. To do better you need a
# second opinion, a **verifier** that checks an answer (here: is it the sum?).
#
# **Spending more compute.** Give each prompt a budget of $k$ candidates. Sampling $k$ answers
# and decoding with a beam of width $k$ cost about the same: $k$ forward passes per generated
# token. Three ways to spend it:
#
# - **best-of-$k$ sampling with the verifier**: draw $k$ answers at $T = 1$ and keep one the
#   verifier accepts. If one sample is right with probability $p_x$ on prompt $x$, that is
#   right with probability $1 - (1 - p_x)^k$, exactly. The dots estimate it the way code-LLM
#   papers report pass@$k$ (Chen et al., 2021): draw $n = 128$ samples per prompt once, count
#   the $c$ right ones, and take $1 - \binom{n-c}{k} / \binom{n}{k}$, the fraction of the
#   $k$-subsets of the $n$ samples that hold a right one (`rc.pass_at_k`). It is unbiased for
#   every $k \le n$ (the plug-in $1 - (1 - c/n)^k$ is not), and as an average over subsets its
#   variance is at most $k/n$ times that of one group of $k$ (Hoeffding, 1948): the error bars.
# - **beam-$k$ with the verifier**: the verifier picks among the $k$ hypotheses of a width-$k$
#   beam (`rc.best_of_n` with the verifier as the score).
# - **majority vote of $k$ samples**, with no verifier (*self-consistency*, Wang et al., 2022):
#   answer the most frequent sample. It is best-of-$k$ with a score that counts agreement;
#   measured on every disjoint group of $k$ in the same pool.

# %%
N_POOL = 128


def verifier(i):
    """Scores a completion of prompt i: 1.0 if it is exactly the right answer, else 0.0."""
    return lambda tokens: float(tokens == truth[i])


def majority(samples):
    """Self-consistency: the most frequent answer (the first of ties)."""
    counts = Counter(samples)
    return rc.best_of_n(samples, lambda y: counts[y]).best


exact_best_of = np.array([np.mean(1 - (1 - p_right) ** k) for k in NS])
# A child of the notebook's generator for the samples: how many numbers generate draws depends
# on the model, which can differ in the last bits between machines; the parent stream (used
# again below) must not.
lm_rng = rng.spawn(1)[0]
out, _ = rc.generate(lm, np.repeat(prompt_ids, N_POOL, axis=0), MAX_NEW, lm_rng)
pool = [[completion(r[P:]) for r in out[i * N_POOL:(i + 1) * N_POOL]] for i in range(len(prompts))]
n_right = np.array([sum(y == truth[i] for y in ys) for i, ys in enumerate(pool)])
pass_at = np.array([rc.pass_at_k(N_POOL, n_right, k).mean() for k in NS])
q = 1 - (1 - p_right[None, :]) ** np.array(NS)[:, None]  # [k, prompt]
sd_bound = np.sqrt(np.array(NS) / N_POOL * (q * (1 - q)).sum(axis=1)) / len(prompts)
vote = np.array([np.mean([majority(ys[j:j + k]) == truth[i] for i, ys in enumerate(pool)
                          for j in range(0, N_POOL, k)]) for k in NS])
beam_verified = np.array([np.mean([rc.best_of_n([h.tokens[P:] for h in hyps], verifier(i)).best
                                   == truth[i] for i, hyps in enumerate(beams[k])]) for k in NS])
beam_top = np.array([top_right[k].mean() for k in NS])

# %% tags=["nbval-ignore-output"]
print("k:                                  ", NS)
print("best-of-k sampling + verifier, exact", np.round(exact_best_of, 3).tolist())
print("  pass@k estimated from 128 samples ", np.round(pass_at, 3).tolist())
print("beam-k + verifier                   ", np.round(beam_verified, 3).tolist())
print("majority vote of k samples          ", np.round(vote, 3).tolist())
print("beam-k's top answer                 ", np.round(beam_top, 3).tolist())
print(f"greedy {greedy_acc:.2f}, exact search {exact_acc:.2f}; best-of-k sampling overtakes greedy "
      f"at k = {NS[int(np.argmax(exact_best_of > greedy_acc))]}")

# %%
fig, ax = plt.subplots(figsize=(9, 3.8), dpi=100)
ax.set_xscale("log", base=2)
ax.plot(NS, exact_best_of, "-", color="C0", label="best-of-k sampling + verifier (exact)")
ax.errorbar(NS, pass_at, yerr=2 * sd_bound, fmt="o", color="C0", ms=4,
            label="  the same: pass@k from 128 samples (±2 sd)")
ax.plot(NS, beam_verified, "s-", color="C1", label="beam-k + verifier")
ax.plot(NS, vote, "^--", color="C2", label="majority vote of k samples (no verifier)")
ax.plot(NS, beam_top, "v:", color="C3", label="beam-k's top answer (no verifier)")
ax.axhline(greedy_acc, color="gray", ls="-.", label="greedy")
ax.set_xticks(NS)
ax.set_xticklabels([str(k) for k in NS])
ax.set_ylim(0, 1.02)
ax.set_xlabel("k (candidates per prompt)")
ax.set_ylabel("fraction of prompts answered right")
ax.set_title("The verifier buys the accuracy: with it, k beams beat k samples;\n"
             "without it, voting climbs slowly towards the model's most likely answer", fontsize=9)
handles, labels = ax.get_legend_handles_labels()
order = [0, len(handles) - 1, *range(1, len(handles) - 1)]  # the error bars after their curve
ax.legend([handles[i] for i in order], [labels[i] for i in order], fontsize=9,
          loc="center left", bbox_to_anchor=(1.01, 0.5))
fig.tight_layout()
plt.show()

# %%
assert np.all(np.abs(pass_at - exact_best_of) < 4 * sd_bound + 0.005)
assert np.all(beam_verified >= exact_best_of - 0.02)
assert beam_verified[NS.index(4)] > exact_best_of[NS.index(4)] + 0.1
assert min(beam_verified[-1], exact_best_of[-1]) > 0.9  # with the verifier: nearly all solved
assert exact_best_of[0] < greedy_acc < exact_best_of[NS.index(8)]  # sampling + verifier overtakes greedy
assert vote[-1] < exact_best_of[-1] - 0.2 and vote[-1] < exact_acc + 0.05  # without it: not

# %% [markdown]
# Read the picture by what each method can use. Without a verifier (majority vote, a beam's
# top answer, greedy) all you can get is the model's most likely answer: voting climbs towards
# it as $k$ grows and stays below exact search's accuracy. With the verifier both methods
# nearly solve the task, so the verifier, not sampling, buys the accuracy. At equal $k$ the
# beam uses it better here: its $k$ hypotheses are $k$ *different* likely answers, while $k$
# samples repeat the likely ones. That is a property of this task (short answers, few
# plausible ones); Snell et al. (2024) compare verifier-guided beam search with best-of-$n$ on
# math problems and find that which wins depends on the question's difficulty and the budget.
#
# **Temperature.** Sampling at temperature $T$ changes each $p_x$; the curves below are
# $1 - (1 - p_x)^k$ again, computed exactly.

# %%
TEMPS = [0.5, 1.0, 1.5]
p_at = {t: pass_probability(t) for t in TEMPS}
predicted = {t: np.array([np.mean(1 - (1 - p_at[t]) ** k) for k in NS]) for t in TEMPS}
# prompts whose right answer is the most likely token at every step: there, lowering the
# temperature raises the probability of every one of its tokens, so of the whole answer
step_logits = np.asarray(rc.lm_logits(lm, answer_tokens), dtype=float)[:, :-1]
is_top = step_logits.argmax(axis=-1) == answer_tokens[:, 1:]
right_on_top = np.all(is_top | ~answer_mask[:, 1:], axis=1)
colder_hurts = p_at[0.5] < p_at[1.0]
print(f"prompts where the right answer is the top token at every step: {right_on_top.sum()}; "
      f"prompts where T = 0.5 makes the right answer less likely than T = 1: {colder_hurts.sum()}")
for t in TEMPS:
    print(f"T = {t}: right at k = 1: {predicted[t][0]:.3f}, at k = 64: {predicted[t][-1]:.3f}")

fig, ax = plt.subplots(figsize=(9, 3.5), dpi=100)
for t, style in zip(TEMPS, [":", "-", "--"]):
    ax.loglog(NS, np.maximum(1 - predicted[t], 1e-6), style, base=2, label=f"T = {t}")
ax.set_yscale("log", base=10)
ax.set_xticks(NS)
ax.set_xticklabels([str(k) for k in NS])
ax.set_xlabel("k (samples per prompt)")
ax.set_ylabel("fraction still wrong (log)")
ax.set_title("Best-of-k with the verifier (exact): the coldest sampling is best for one "
             "sample and worst for many", fontsize=9)
ax.legend(fontsize=9, loc="lower left", title="temperature", title_fontsize=9)
plt.show()

# %%
assert np.all(p_at[0.5][right_on_top] >= p_at[1.0][right_on_top] - 1e-9)
assert np.all(p_at[1.0][right_on_top] >= p_at[1.5][right_on_top] - 1e-9)
assert colder_hurts.sum() > 0
assert predicted[0.5][0] > predicted[1.0][0] > predicted[1.5][0]  # one sample: colder is better
assert predicted[0.5][-1] < min(predicted[1.0][-1], predicted[1.5][-1])  # 64: the coldest is worst

# %% [markdown]
# Temperature cuts both ways. Where the model's top answer is right, a low temperature makes
# every sample more likely to be right (asserted prompt by prompt). On other prompts it can
# make the right answer *less* likely (counted above), and with many samples those prompts
# decide: best-of-$k$ fails only where the right answer is rare, and cooling makes a rare
# answer rarer. So the best temperature rises with $k$, as Chen et al. (2021) found for
# pass@$k$.
#
# **How far does best-of-n move the policy?** Its output distribution $\pi_n$ differs from the
# model's $\pi$. The often quoted $\mathrm{KL}(\pi_n \,\|\, \pi) = \log n - \frac{n-1}{n}$ is
# only an upper bound: it is reached when no two answers share a score and no single answer is
# likely. A 0/1 verifier lumps all right answers into one level and all wrong ones into
# another, so best-of-n only moves mass between the two (within a level it keeps the model's
# proportions): its KL per prompt is $q \log\frac{q}{p} + (1-q)\log\frac{1-q}{1-p}$ with
# $q = 1 - (1-p)^n$. The printout shows how far below the bound it stays; exercise 3 asks
# where it levels off.

# %%
def verifier_kl(p, n):
    q = 1 - (1 - p) ** n
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = q * np.log(q / p) + (1 - q) * np.log((1 - q) / (1 - p))
    return np.nan_to_num(terms)  # 0 log 0 = 0


kl = np.array([verifier_kl(p_right, n).mean() for n in NS])
bound = np.log(NS) - (np.array(NS) - 1) / np.array(NS)

# %% tags=["nbval-ignore-output"]
print("n:", NS)
print("KL(best-of-n || model), verifier:", np.round(kl, 3).tolist())
print("log n - (n - 1)/n:               ", np.round(bound, 3).tolist())

# %%
assert np.all(kl <= bound + 1e-9)

# %% [markdown]
# **A scorer you cannot fully trust.** Everything above used an exact verifier. A learned
# reward model is a *proxy*: right on typical answers, wrong on some rare ones, and best-of-$n$
# with a large $n$ goes looking for exactly those. A stand-in: a lazy grader that checks only
# the last digit of the answer and, like many reward models, slightly prefers longer answers
# (score: 1 if the last digit matches, plus 0.1 per digit; 0 for a malformed answer). It
# agrees with the truth on most samples, but it rates "17" above "7" for 3+4. With the
# table of every completion's probability (renormalised over the completions a decoder can
# emit), `rc.best_of_n_distribution` gives the exact distribution of the kept answer for
# any $n$, so the proxy's score and the true accuracy (the gold standard) come without
# sampling noise. As a control, the same grader without its length bonus: it still cannot tell
# "17" from "7", but it no longer ranks one above the other.

# %%
completion_probs = np.exp(all_scores)
completion_probs /= completion_probs.sum(axis=1, keepdims=True)  # pad and bos are never emitted
completion_texts = [tok.decode(list(c)) for c in completions]
is_number = np.array([re.fullmatch(r"\d{1,2}", t) is not None for t in completion_texts])
last_digit = np.array([t[-1] if t else "" for t in completion_texts])
n_digits = np.array([len(t) for t in completion_texts])
NS_PROXY = [1, 4, 16, 64, 256, 1024]
proxy_score, gold = np.zeros(len(NS_PROXY)), np.zeros(len(NS_PROXY))  # means over prompts
gold_no_bonus = np.zeros(len(NS_PROXY))  # the control: last digit only, no length bonus
for i in range(len(prompts)):
    digit_ok = is_number & (last_digit == answers[i][-1])
    lazy = np.where(is_number, digit_ok + 0.1 * n_digits, 0.0)
    right = np.array([c == truth[i] for c in completions], dtype=float)
    for j, n in enumerate(NS_PROXY):
        kept = rc.best_of_n_distribution(completion_probs[i], lazy, n)
        proxy_score[j] += kept @ lazy / len(prompts)
        gold[j] += kept @ right / len(prompts)
        kept = rc.best_of_n_distribution(completion_probs[i], digit_ok.astype(float), n)
        gold_no_bonus[j] += kept @ right / len(prompts)

# %% tags=["nbval-ignore-output"]
print("n:                               ", NS_PROXY)
print("lazy grader's score of the kept  ", np.round(proxy_score, 3).tolist())
print("kept answer right (gold)         ", np.round(gold, 3).tolist())
print("gold, grader without length bonus ", np.round(gold_no_bonus, 3).tolist())
print(f"gold peaks at n = {NS_PROXY[int(np.argmax(gold))]}: {gold.max():.3f}; "
      f"at n = {NS_PROXY[-1]}: {gold[-1]:.3f}; without the bonus: {gold_no_bonus[-1]:.3f}")

# %%
# a check of the code, not evidence: the expected best-of-n score cannot fall as n grows
assert np.all(np.diff(proxy_score) > 0)
# the evidence: gold peaks inside the range and falls ...
assert 0 < np.argmax(gold) < len(NS_PROXY) - 1 and gold[-1] < gold.max() - 0.03
# ... and without the bonus it does not fall (no more than 0.005 between doublings)
assert np.all(np.diff(gold_no_bonus) > -0.005) and gold_no_bonus[-1] > gold[-1] + 0.03

# %% [markdown]
# The proxy's score rises with every doubling of $n$ (it must: the best of more draws), while
# the true accuracy climbs, peaks and falls: past the peak the extra samples mostly find answers
# the grader overrates. The control names the cause: the fall comes entirely from the length
# bonus, which ranks a wrong "17" *above* the right "7". The grader without it is just as blind
# to "17", but it scores the two equal, and best-of-$n$ keeps tied answers in the model's own
# proportions, so its gold never falls. A proxy is over-optimised where it *prefers* a wrong
# answer, not merely where it cannot tell. This is the over-optimisation Gao et al. (2022)
# measure with learned reward models, in miniature: the fix is a gold evaluation held out from
# the scorer, and an $n$ (or a KL budget) chosen on it.

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix | where shown |
# |---|---|---|---|
# | MCTS loses to a random player | backup without the sign flip: the search helps the opponent | negate the value at each level (negamax), or store values per player | the cell below |
# | MCTS finds wins and blocks but misplays quiet positions | the rollout's reward read from the wrong player's view | convert the outcome to the view of the player who moved into the leaf (Step 2) | Step 3's checker (quiet positions) |
# | the search never explores, or never settles | $c$ on the wrong scale for the rewards | $c$ of the order of the value range; rescale rewards or tune $c$ (here 2 for values in $[-1, 1]$) | below, after the first row |
# | a few mistakes in quiet positions | too few simulations for quiet defensive moves | measure exhaustively where you can; raise the budget (here 500 was not enough) or add a prior | the budget sweep |
# | PUCT searches a good move late | the prior gives it little mass (the misleading prior above) | a better prior; mix the root prior with a little noise, as AlphaZero does | the prior study |
# | the tree changes under you | `apply` mutates the state in place | states immutable, `apply` returns a new one | not shown |
# | a wider beam gives a worse answer | beam search prunes greedily at every step | it is a heuristic: compare widths, or search exactly when you can | Check it |
# | beam search prefers short, bland outputs | summed log-probabilities penalise every extra token | length-normalise scores (exercise 2) | not shown (exercise 2 builds the fix) |
# | top-p drops the token that crosses $p$ | keeping tokens while the cumulative mass *including* them is below $p$ | keep a token while the mass *before* it is below $p$ | Step 4's checker |
# | `ZeroDivisionError` or NaN at $T=0$ | temperature divides logits | use the argmax for greedy decoding | not shown (`rc.filter_logits` refuses $T = 0$) |
# | best-of-n score keeps rising but answers get worse | the scorer is a proxy and $n$ over-optimises it (Gao et al., 2022) | hold out a gold evaluation; report the curve against it | the lazy grader |
# | more samples stop helping without a verifier | majority voting converges to the model's most likely answer | a verifier, or a better model; voting only removes sampling noise | the verifier plot |
# | pass@$k$ reported from exactly $k$ samples, or as $1 - (1 - c/n)^k$ | a noisy or biased estimate | draw $n > k$ samples and use $1 - \binom{n-c}{k}/\binom{n}{k}$ (`rc.pass_at_k`) | the verifier plot (dots: the unbiased estimate, on the exact curve); the plug-in's bias: `tests/test_search.py` |
#
# The first row, shown: with the single-agent backup on a two-player game, every win counts
# as good, the opponent's included, so MCTS playing O happily sets up X's wins, even a
# random X's.

# %%
wrong = iter(range(10**6))


def wrong_sign_player(state):
    return rc.mcts(state, *fns, simulations=300, seed=next(wrong), two_player=False).action


outcomes = [game.winner(play(random_player, wrong_sign_player)[-1]) for _ in range(10)]
print(f"random (X) vs wrong-sign MCTS (O): X wins {outcomes.count(1)}, "
      f"draws {outcomes.count(0)}, O wins {outcomes.count(-1)}")
assert outcomes.count(1) >= 3

# %% [markdown]
# The third row, shown on the fork threat from Use it (O must take an edge), with the default
# 2000 simulations and 3 seeds: $c = 0$ never explores, $c = 100$ (fifty times the value range)
# never settles.

# %%
c_share, c_move = {}, {}  # (c, seed) -> the largest share of the visits one move got; the move
for c in (0.0, 2.0, 100.0):
    for seed in range(3):
        r = rc.mcts(fork_threat, *fns, c=c, seed=seed)
        c_share[c, seed] = max(r.visits.values()) / sum(r.visits.values())
        c_move[c, seed] = r.action
        print(f"c = {c:5}: seed {seed} plays {r.action} "
              f"({'holds the draw' if r.action in optimal_here else 'loses'}), "
              f"largest visit share {c_share[c, seed]:.2f}")
        if c == 2.0:
            assert r.action in optimal_here
for seed in range(3):
    assert c_share[0.0, seed] > 0.9  # all on one move: the first that happened to look good
    assert c_share[100.0, seed] < 0.2  # about 1/6 each: the values are drowned by the bonus
    assert c_move[100.0, seed] not in optimal_here  # and what tilt is left picks a losing corner

# %% [markdown]
# $c = 2$ holds the draw for every seed, and $c = 100$ plays a losing corner for every seed. At
# $c = 0$ the one move the search locks on is whichever first looked good, so whether it holds
# is the luck of the seed's first rollouts: the outcomes printed for it are not a property of
# $c = 0$, and nothing is asserted about them.

# %% [markdown]
# ## Exercises
#
# 1. **Easy: AlphaZero's move distribution.** AlphaZero does not always play the most visited
#    move: in self-play it samples from $\pi(a) \propto N(a)^{1/T}$, and $\pi$ is the policy
#    network's training target. Write `visit_policy(visits, temperature)` for visit counts
#    `[K]`; `temperature = 0` is the limit (the most visited moves, ties split evenly). Beware
#    large counts and a small $T$.

# %% tags=["solution"]
def visit_policy(visits, temperature):
    n = np.asarray(visits, dtype=float)
    if temperature == 0:
        top = n == n.max()
        return top / top.sum()
    w = (n / n.max()) ** (1.0 / temperature)
    return w / w.sum()


# %%
assert rc.exercises.check("visit_policy", visit_policy)

# %% [markdown]
# 2. **Easy: length-normalised beam scores.** Summed log-probabilities favour short outputs.
#    Hugging Face's `generate` ranks finished beams by $\log p(y) / |y|^{\alpha}$ with
#    `length_penalty` $\alpha$ (default 1.0). Here $|y|$ counts every generated token, the
#    final `eos` included, as recent `transformers` versions count it (older ones left the
#    `eos` out). Write
#    `length_normalised(hypotheses, start_len, alpha)`: re-rank `(tokens, score)` pairs whose
#    first `start_len` tokens are the prompt; return `(tokens, normalised score)`, best first.

# %% tags=["solution"]
def length_normalised(hypotheses, start_len, alpha=1.0):
    scored = [(tuple(tokens), float(score) / (len(tokens) - start_len) ** alpha)
              for tokens, score in hypotheses]
    return sorted(scored, key=lambda h: -h[1])


# %%
assert rc.exercises.check("length_normalised", length_normalised)

# %% [markdown]
# 3. **Medium: the exact distribution of best-of-n, and where its KL levels off.** For a model
#    with outcome probabilities `probs` `[K]` and `rewards` `[K]`, write
#    `best_of_n_probs(probs, rewards, n)`: the probability that best-of-n (the first of the
#    tied best) returns each outcome.

# %% tags=["solution"]
def best_of_n_probs(probs, rewards, n):
    p, r = np.asarray(probs, dtype=float), np.asarray(rewards, dtype=float)
    out = np.zeros_like(p)
    for level in np.unique(r):
        at = r == level
        below, mass = p[r < level].sum(), p[at].sum()
        if mass > 0:
            out[at] = p[at] / mass * ((below + mass) ** n - below**n)
    return out


# %%
assert rc.exercises.check("best_of_n_probs", best_of_n_probs)

# %% [markdown]
#    Then use it. Take 1000 equally likely answers and a 0/1 verifier that passes 200 of them,
#    and compute $\mathrm{KL}(\pi_n \,\|\, \pi)$ for $n = 8, 64, 512$ beside
#    $\log n - \frac{n-1}{n}$. The bound keeps growing; the verifier's KL levels off. At what
#    value, in nats? Put the number in `kl_limit`, and say in a comment why it is that value.

# %% tags=["solution"]
def kl_to_base(probs, rewards, n):
    """KL(best-of-n || base) in nats, from your best_of_n_probs."""
    p_n, p = best_of_n_probs(probs, rewards, n), np.asarray(probs, dtype=float)
    kept = p_n > 0
    return float(np.sum(p_n[kept] * np.log(p_n[kept] / p[kept])))


thousand = np.full(1000, 1e-3)  # 1000 equally likely answers
passes = (np.arange(1000) < 200).astype(float)  # the verifier passes 200 of them
for n_draws in (8, 64, 512):
    print(f"n = {n_draws}: KL {kl_to_base(thousand, passes, n_draws):.3f}, "
          f"log n - (n - 1)/n = {np.log(n_draws) - (n_draws - 1) / n_draws:.3f}")
# as n grows all the mass moves to the 200 passing answers, uniformly (the verifier cannot
# tell them apart), so the KL tends to log(1 / 0.2)
kl_limit = float(np.log(1000 / 200))

# %%
assert rc.exercises.check("best_of_n_kl_limit", kl_limit)

# %% [markdown]
# 4. **Hard: exact decoding.** Beam search is a heuristic; this exercise finds the most
#    likely answer exactly. Write `best_first_decode(step, start, max_len, eos)`:
#    keep a priority queue of partial hypotheses ordered by score and always extend the best;
#    the first *complete* hypothesis (ending in `eos`, or `max_len` tokens long) you pop is
#    the most likely one. Return `(tokens, score)`. Try it on `branch_step`, where a beam of
#    width 2 failed.

# %% tags=["solution"]
def best_first_decode(step, start, max_len, eos):
    import heapq

    start = tuple(int(t) for t in start)
    queue = [(0.0, start)]
    while queue:
        neg, tokens = heapq.heappop(queue)
        if (len(tokens) > len(start) and tokens[-1] == eos) or len(tokens) - len(start) == max_len:
            return tokens, -neg
        logp = np.asarray(step(tokens), dtype=float)
        for v in np.flatnonzero(logp > -np.inf):
            heapq.heappush(queue, (neg - float(logp[v]), tokens + (int(v),)))
    raise ValueError("no complete hypothesis")


# %%
assert rc.exercises.check("best_first_decode", best_first_decode)

# %% [markdown]
#    Why is the first complete hypothesis you pop the most likely one? Put a letter in
#    `why_first_popped`: (a) every extension adds a log-probability $\le 0$, so nothing
#    scores more than the prefix it grew from: when a complete hypothesis is popped, everything
#    still in the queue, and everything it could grow into, scores at most as much; (b) shorter
#    sequences always score higher, and the first complete hypothesis popped is the shortest;
#    (c) it is the hypothesis a width-1 beam finds, and a width-1 beam is exact.

# %% tags=["solution"]
why_first_popped = "a"

# %%
assert rc.exercises.check("best_first_why", why_first_popped)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | MCTS | "tree search with random playouts" | repeated simulations of selection, expansion, rollout and backup that grow an asymmetric tree towards promising moves |
# | UCT | "UCB on a tree" | child score $W_a/N_a + c\sqrt{\ln N / N_a}$; unvisited children first; $c$ on the scale of the values |
# | PUCT | "AlphaZero's formula" | $W_a/N_a + c\,P(a)\sqrt{N}/(1 + N_a)$: the exploration bonus follows a prior $P$, typically a policy network |
# | rollout | "playout", "simulation" | moves by a cheap default policy (here uniform random) from a new leaf to the end of the game |
# | negamax backup | "flip the sign" | each node stores values for the player who moved into it, so the value changes sign at every level |
# | visit counts | "the MCTS policy" | how often the search went through each root move; play the most visited, or sample $\propto N^{1/T}$ (AlphaZero's training target) |
# | minimax | "perfect play" | the exact game value, each player maximising their own outcome; feasible only for small games |
# | beam search | "better greedy" | keep the $k$ highest-likelihood partial sequences; width 1 is greedy; a heuristic: a wider beam can score worse |
# | temperature | "creativity" | logits divided by $T$: $T<1$ sharpens, $T>1$ flattens the distribution |
# | top-k / top-p | "truncation sampling" | sample only from the $k$ most likely tokens, or from the smallest set with mass $\ge p$ (nucleus) |
# | best-of-n | "rejection sampling" (it is not) | draw $n$ answers, keep the one a scorer rates highest; rejection sampling instead accepts samples at random to match a target distribution |
# | test-time compute | "thinking longer" | spending more inference computation (simulations, samples) per decision to get better answers |
# | verifier | "a reward model" | a check of an answer (here exact: is it the sum?); what lets more samples or beams turn into more right answers |
# | pass@$k$ | "accuracy with $k$ tries" | the probability that at least one of $k$ samples is right; estimate it from $n \ge k$ samples as $1 - \binom{n-c}{k}/\binom{n}{k}$ |
# | self-consistency | "majority voting" | answer the most frequent of $k$ samples; needs no verifier and tends to the model's most likely answer |
# | over-optimisation | "reward hacking" | pushing harder on a proxy scorer (more samples, more RL steps) past where it agrees with the real goal: the proxy's score keeps rising while the true quality falls |

# %% [markdown]
# ## Further reading
#
# - Sutton & Barto (2018), *Reinforcement learning: an introduction*, 2nd ed., sections
#   8.8-8.11: planning at decision time, rollout algorithms and MCTS in the book's terms.
# - Kocsis & Szepesvári (2006), *Bandit based Monte-Carlo planning*, ECML: UCT, the bandit view
#   of tree search, and why its exploration term makes the search consistent.
# - Browne et al. (2012), *A survey of Monte Carlo tree search methods*, IEEE TCIAIG: the four
#   phases, the many variants and where each one helps.
# - Rosin (2011), *Multi-armed bandits with episode context*, AMAI: PUCB, the bandit with a
#   prior that PUCT adapts.
# - Silver et al. (2017), *Mastering the game of Go without human knowledge*, Nature (AlphaGo
#   Zero), and Silver et al. (2018), *A general reinforcement learning algorithm that masters
#   chess, shogi and Go through self-play*, Science (AlphaZero): PUCT with a policy network's
#   prior, a value network instead of rollouts, visit counts as the policy's training target.
# - Holtzman et al. (2019), *The curious case of neural text degeneration*, ICLR 2020: why the
#   most likely text is bland and repetitive, and nucleus (top-p) sampling.
# - Fan, Lewis, Dauphin (2018), *Hierarchical neural story generation*, ACL: top-k sampling.
# - Wu et al. (2016), *Google's neural machine translation system*: the length penalty for
#   beam search, $((5 + |y|)/6)^\alpha$ (Hugging Face's `generate` divides by $|y|^\alpha$
#   instead); Meister, Cotterell, Vieira (2020), *If beam search is the answer, what was the
#   question?*, EMNLP: why exact search can be worse than beam search for text quality.
# - Chen et al. (2021), *Evaluating large language models trained on code* (Codex): pass@$k$,
#   its unbiased estimator, and why the best temperature grows with $k$.
# - Hoeffding (1948), *A class of statistics with asymptotically normal distribution*, Annals
#   of Mathematical Statistics: U-statistics, such as the pass@$k$ estimate, and the bound on
#   their variance used for the error bars.
# - Wang et al. (2022), *Self-consistency improves chain of thought reasoning in language
#   models*, ICLR 2023: majority voting over sampled answers, with no verifier.
# - Stiennon et al. (2020), *Learning to summarize from human feedback*, NeurIPS: best-of-n
#   against a reward model as a baseline for RLHF.
# - Gao, Schulman, Hilton (2022), *Scaling laws for reward model overoptimization*: how best-of-n
#   and RL overfit a proxy reward as $n$ or the KL budget grows.
# - Beirami et al. (2024), *Theoretical guarantees on the best-of-n alignment policy*: the
#   KL of best-of-n and why $\log n - (n-1)/n$ is only an upper bound.
# - Snell et al. (2024), *Scaling LLM test-time compute optimally can be more effective than
#   scaling model parameters*: test-time compute curves for best-of-n and verifier-guided beam
#   search, and how the better one depends on the question's difficulty and the budget.
