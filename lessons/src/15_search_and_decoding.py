# %% [markdown]
# # 15 · Search and decoding
#
# *Prerequisites:* 00, 01, 12
# *Time:* 90 minutes
# *You will build:* the UCT score, the negamax backup and a Monte Carlo tree search that never makes a losing move at tic-tac-toe, then nucleus filtering and beam search for a language model.

# %% [markdown]
# Every lesson so far learned a policy and then acted with it. This one spends computation at
# decision time instead: look ahead before you move, or generate several answers before you
# reply. The same idea, search, drives AlphaGo's moves and a language model's decoding, and
# the same questions come back in both: how much search is enough, what it optimises, and
# what a prior or a scorer adds.

# %%
import inspect
import itertools

import matplotlib.pyplot as plt
import numpy as np

import rlcourse as rc

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
# each step; **sampling** draws $y_t \sim \mathrm{softmax}(z/T)$, optionally restricted to the
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
# The checker plays positions with one clearly right move (a win, a block, a fork) and
# compares your move with exact minimax. The reference `rc.mcts` is the same algorithm with
# input checks, a `rollout_depth` cut-off, a single-agent mode and the PUCT rule:

# %%
print(inspect.getsource(rc.mcts))

# %% [markdown]
# **Step 4: nucleus (top-p) filtering.** Keep the smallest set of most likely tokens whose
# probability reaches $p$; set the other logits to $-\infty$. Work on `[V]` or `[B, V]`.

# %% tags=["solution"]
def my_top_p_filter(logits, p):
    """Logits with every token outside the top-p nucleus set to -inf (last axis)."""
    logits = np.asarray(logits, dtype=float)
    probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probs /= probs.sum(axis=-1, keepdims=True)
    order = np.argsort(-probs, axis=-1, kind="stable")
    ranked = np.take_along_axis(probs, order, axis=-1)
    keep_ranked = np.cumsum(ranked, axis=-1) - ranked < p - 1e-9
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
# The PUCT score is the formula above; unlike UCT, an unvisited move is not tried first, its
# bonus follows its prior:

# %%
q, prior_p, n = np.array([0.2, 0.0, -0.1]), np.array([0.2, 0.7, 0.1]), np.array([5, 0, 4])
print("PUCT:", np.round(rc.puct_score(q, prior_p, n, 9, c=1.0), 3),
      " UCT:", np.round(rc.uct_score(q, n, 9, c=1.0), 3))
np.testing.assert_allclose(rc.puct_score(q, prior_p, n, 9, c=1.0), q + prior_p * 3 / (1 + n))

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


def default_mcts(state):
    return rc.mcts(state, *fns).action  # every default: simulations, c, seed


default = inspect.signature(rc.mcts).parameters
print(f"rc.mcts defaults: simulations={default['simulations'].default}, c={default['c'].default}")
for side, name in ((1, "X"), (-1, "O")):
    n_pos, n_dec, bad = audit(default_mcts, side)
    print(f"MCTS as {name}: {n_pos} positions to move in, {n_dec} real decisions, "
          f"{len(bad)} mistakes")
    assert n_dec > 50 and bad == []

# %% [markdown]
# Zero mistakes from either side means no opponent can ever beat it, or draw a game it could
# have won. That took the default budget; a search of 200 simulations (this library's old
# default) is not enough:

# %%
def small_mcts(state):
    return rc.mcts(state, *fns, simulations=200).action


small = {name: audit(small_mcts, side) for side, name in ((1, "X"), (-1, "O"))}
for name, (_, n_dec, bad) in small.items():
    print(f"200 simulations as {name}: {len(bad)} mistakes in {n_dec} decisions")
wrong_here = [s for _, _, bad in small.values() for s in bad]
assert wrong_here
q_wrong = rc.minimax_values(wrong_here[0], *fns, cache=perfect_cache)
print(game.render(wrong_here[0]))
print(f"{'XO'[wrong_here[0].player == -1]} to move; 200 simulations play "
      f"{small_mcts(wrong_here[0])}, minimax values of the moves: "
      f"{ {a: int(v) for a, v in q_wrong.items()} }")

# %% [markdown]
# **How many simulations, and what does a prior buy?** Take 50 positions at random from all
# those where some move is worse than another, and count how often each search picks an
# optimal move, over 3 seeds, against the budget. Four searches: UCT, and PUCT with three
# priors: uniform; a *tactical* prior that stands in for AlphaZero's policy network (a move
# that wins at once weighs 8, a block 4, the centre 2, a corner 1.5, an edge 1); and the same
# weights inverted, a *misleading* prior. The dashed line is a uniformly random move.

# %%
decisions = [s for s in positions if len(optimal_moves(s)) < len(game.legal_actions(s))]
sample = [decisions[i] for i in rng.choice(len(decisions), size=50, replace=False)]


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


searches = {"UCT": None, "PUCT, uniform prior": uniform_prior,
            "PUCT, tactical prior": tactical_prior, "PUCT, misleading prior": misleading_prior}
BUDGETS = [4, 16, 64, 256]
rate = {}  # (search, budget) -> fraction of optimal moves per seed [3]
for name, prior in searches.items():
    for budget in BUDGETS:
        rate[name, budget] = np.array([np.mean([
            rc.mcts(s, *fns, simulations=budget, seed=seed, prior=prior).action in optimal_moves(s)
            for s in sample]) for seed in range(3)])
random_rate = np.mean([len(optimal_moves(s)) / len(game.legal_actions(s)) for s in sample])
print(f"{len(decisions)} positions with a real decision; in the 50 drawn, a random move is "
      f"optimal {random_rate:.0%} of the time")
for name in searches:
    print(f"{name:24}", "  ".join(f"{b}: {np.median(rate[name, b]):.0%}" for b in BUDGETS))

# %%
fig, ax = plt.subplots(figsize=(9, 3.8), dpi=100)
for name in searches:
    med = [np.median(rate[name, b]) for b in BUDGETS]
    lo = [rate[name, b].min() for b in BUDGETS]
    hi = [rate[name, b].max() for b in BUDGETS]
    line, = ax.semilogx(BUDGETS, med, "o-", base=2, label=name)
    ax.fill_between(BUDGETS, lo, hi, color=line.get_color(), alpha=0.2)
ax.axhline(random_rate, color="gray", ls="--", label="random move")
ax.set_ylim(0, 1.02)
ax.set_xlabel("simulations per move")
ax.set_ylabel("fraction of optimal moves")
ax.set_title("More simulations find more optimal moves; a good prior needs fewer, a bad one more "
             "(median and range of 3 seeds, 50 positions)", fontsize=9)
ax.legend(fontsize=9, loc="lower right")
plt.show()

# %%
for name in searches:
    assert np.median(rate[name, 256]) > np.median(rate[name, 4])
for name in ("UCT", "PUCT, uniform prior", "PUCT, tactical prior"):
    assert np.median(rate[name, 4]) > random_rate
assert np.median(rate["PUCT, misleading prior", 4]) < random_rate
assert np.median(rate["PUCT, tactical prior", 16]) > np.median(rate["UCT", 16])
assert np.median(rate["PUCT, misleading prior", 64]) < np.median(rate["PUCT, tactical prior", 64])

# %% [markdown]
# Every search improves with the budget. UCT and PUCT with an uninformed or a tactical prior
# beat a random move already at 4 simulations; the tactical prior puts the simulations where
# they matter and is ahead at small budgets. The misleading prior is *worse than random* at 4
# simulations: it sends them to the bad moves, and the search recovers only as the budget
# grows and the mean values $W_a/N_a$ overrule the prior. The rollouts stay random here;
# AlphaZero also replaces them by a value network.
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
# **Greedy, beam and exact.** Decode each prompt greedily, with beams of width 2 and 4, and
# exactly: with at most 3 new tokens there are only $13^2$ two-token prefixes (the padding and
# start tokens are never generated), so score them all and take the best third token. Count
# how often each finds the most likely answer and how often that answer is right.

# %%
NEVER = [tok.pad, tok.bos]  # a decoder never emits these two


def lm_step(tokens):
    """Next-token log-probabilities after ``tokens`` (prompt included), from the LM."""
    logp = log_softmax(np.asarray(rc.lm_next_logits(lm, np.array([tokens])), dtype=float)[0])
    logp[NEVER] = -np.inf
    return logp


def exact_best_scores():
    """The log-probability [100] of each prompt's most likely completion (<= MAX_NEW tokens)."""
    allowed = [t for t in range(tok.vocab_size) if t not in NEVER]
    prefixes = np.array(list(itertools.product(allowed, repeat=MAX_NEW - 1)))
    rows = np.concatenate([np.repeat(prompt_ids, len(prefixes), 0),
                           np.tile(prefixes, (len(prompts), 1))], axis=1)
    lp = log_softmax(np.asarray(rc.lm_logits(lm, rows), dtype=float))
    i = np.arange(len(rows))
    s1, s2 = lp[i, P - 1, rows[:, P]], lp[i, P, rows[:, P + 1]]
    best_third = lp[:, P + 1, allowed].max(axis=-1)
    score = np.where(rows[:, P] == tok.eos, s1,  # finished after one token
                     np.where(rows[:, P + 1] == tok.eos, s1 + s2, s1 + s2 + best_third))
    return score.reshape(len(prompts), -1).max(axis=1)


exact = exact_best_scores()
decoded = {}  # width -> (completions, scores [100])
for width in (1, 2, 4):
    hyps = [rc.beam_search(lm_step, tuple(prompt_ids[i].tolist()), width, MAX_NEW, tok.eos)[0]
            for i in range(len(prompts))]
    decoded[width] = ([h.tokens[P:] for h in hyps], np.array([h.score for h in hyps]))
right = {w: np.array([c == truth[i] for i, c in enumerate(comps)])
         for w, (comps, _) in decoded.items()}

# greedy by hand, the whole batch at once: the width-1 beam must be exactly this
rows = prompt_ids.copy()
for _ in range(MAX_NEW):
    logits = np.asarray(rc.lm_next_logits(lm, rows), dtype=float)
    logits[:, NEVER] = -np.inf
    rows = np.concatenate([rows, np.argmax(logits, axis=-1)[:, None]], axis=1)
greedy_out = [completion(r[P:]) for r in rows]
greedy_scores = np.array([sum(lm_step(tuple(prompt_ids[i]) + g[:k])[g[k]] for k in range(len(g)))
                          for i, g in enumerate(greedy_out)])
# the same sequences, up to float32 near-ties between a batched and a one-row forward pass
assert np.allclose(greedy_scores, decoded[1][1], atol=1e-5)
assert np.mean([g == b for g, b in zip(greedy_out, decoded[1][0])]) > 0.95
for _, scores in decoded.values():
    assert (scores <= exact + 1e-5).all()  # no beam beats exhaustive search
worse = int(np.sum(decoded[2][1] < decoded[1][1] - 1e-5)
            + np.sum(decoded[4][1] < decoded[2][1] - 1e-5))

# %% tags=["nbval-ignore-output"]
for width, (_, scores) in decoded.items():
    print(f"beam width {width}: finds the most likely answer for "
          f"{np.mean(scores >= exact - 1e-5):.0%} of prompts; the answer is right "
          f"for {right[width].mean():.0%}")
print(f"prompts where a wider beam scored lower than a narrower one: {worse}")

# %% [markdown]
# Read the printout: how often a narrow beam already finds the most likely answer on this short
# task, and how often that answer is right. The most likely answer is the model's belief, not
# the truth: even exact search is right only as often as the model's top answer is. To do
# better you need a second opinion: a verifier.
#
# **Best-of-n with a verifier** samples $n$ answers and keeps one the verifier accepts. If one
# sample is right with probability $p_x$ on prompt $x$, best-of-n is right with probability
# $1 - (1 - p_x)^n$: exact, since $p_x$ is the model's probability of the answer's tokens.
# Sampling at temperature $T$ changes $p_x$. The lines are that formula for three
# temperatures; the dots are measured at $T = 1$ with `rc.generate` and `rc.best_of_n`, with
# fresh samples for every $n$ (3 groups of $n$ per prompt, 300 groups in all).

# %%
NS = [1, 2, 4, 8, 16, 32, 64]
TEMPS = [0.5, 1.0, 1.5]
p_at = {t: pass_probability(t) for t in TEMPS}
predicted = {t: np.array([np.mean(1 - (1 - p_at[t]) ** n) for n in NS]) for t in TEMPS}


def verifier(i):
    """Scores a completion of prompt i: 1.0 if it is exactly the right answer, else 0.0."""
    return lambda tokens: float(tokens == truth[i])


# A child of the notebook's generator for the samples: how many numbers generate draws depends
# on the model, which can differ in the last bits between machines; the parent stream (used
# again below) must not.
lm_rng = rng.spawn(1)[0]
measured, sd = [], []
for n in NS:
    prompt_of = np.repeat(np.arange(len(prompts)), 3 * n)  # 3 independent groups of n each
    out, _ = rc.generate(lm, prompt_ids[prompt_of], MAX_NEW, lm_rng)
    samples = [completion(r[P:]) for r in out]
    picks = [rc.best_of_n(samples[k * n:(k + 1) * n], verifier(prompt_of[k * n]))
             for k in range(len(prompt_of) // n)]
    measured.append(np.mean([p.best == truth[prompt_of[k * n]] for k, p in enumerate(picks)]))
    q = 1 - (1 - p_at[1.0]) ** n
    sd.append(np.sqrt(3 * np.sum(q * (1 - q))) / 300)  # exact sd of the mean of 300 outcomes
measured, sd = np.array(measured), np.array(sd)
greedy_acc, beam_acc = right[1].mean(), right[4].mean()

# %% tags=["nbval-ignore-output"]
print("n:                ", NS)
print("measured, T = 1:  ", np.round(measured, 3).tolist())
print("predicted, T = 1: ", np.round(predicted[1.0], 3).tolist())
for t in TEMPS:
    print(f"T = {t}: right at n = 1: {predicted[t][0]:.3f}, at n = 64: {predicted[t][-1]:.3f}")
print(f"greedy: {greedy_acc:.2f}, beam 4: {beam_acc:.2f}; best-of-n at T = 1 overtakes greedy "
      f"at n = {NS[int(np.argmax(predicted[1.0] > greedy_acc))]}")

# %%
fig, ax = plt.subplots(figsize=(9, 3.8), dpi=100)
for t, style in zip(TEMPS, [":", "-", "--"]):
    ax.semilogx(NS, predicted[t], style, base=2, label=f"best-of-n, T = {t} (exact)")
ax.errorbar(NS, measured, yerr=2 * sd, fmt="o", color="C1",
            label="best-of-n, T = 1 (measured, ±2 sd)")
ax.axhline(greedy_acc, color="gray", ls="-.", label="greedy")
ax.axhline(beam_acc, color="black", ls=(0, (1, 3)), label="beam search, width 4")
ax.set_ylim(0, 1.02)
ax.set_xlabel("n (samples per prompt)")
ax.set_ylabel("fraction of prompts answered right")
ax.set_title("With a verifier, sampling more beats decoding better; the measured points follow "
             "1 - (1 - p)^n", fontsize=9)
ax.legend(fontsize=9, loc="lower right")
plt.show()

# %%
assert np.all(np.abs(measured - predicted[1.0]) < 4 * sd + 0.01)
assert predicted[1.0][-1] > max(greedy_acc, beam_acc) + 0.1
# prompts whose right answer is the most likely token at every step: there, lowering the
# temperature raises the probability of every one of its tokens, so of the whole answer
step_logits = np.asarray(rc.lm_logits(lm, answer_tokens), dtype=float)[:, :-1]
is_top = step_logits.argmax(axis=-1) == answer_tokens[:, 1:]
top_right = np.all(is_top | ~answer_mask[:, 1:], axis=1)
assert np.all(p_at[0.5][top_right] >= p_at[1.0][top_right] - 1e-9)
assert np.all(p_at[1.0][top_right] >= p_at[1.5][top_right] - 1e-9)

# %% [markdown]
# What to read off. The curve climbs fast and then flattens: the chance that all $n$ samples
# are wrong falls geometrically, so once most prompts are solved a doubling has little left to
# add. Temperature cuts both ways: where the model's top answer is right, a low temperature
# makes every sample more likely to be right (asserted above, prompt by prompt); where the top
# answer is wrong, a low temperature moves probability *towards* that wrong answer. Best-of-n
# with a large $n$ needs only that the right answer keeps some probability; Chen et al. (2021)
# found the best sampling temperature for pass@$k$ rising with $k$ for the same reason.
# Compare the printed values at $n = 1$ and $n = 64$. And all of it needs the verifier:
# without one, nothing tells best-of-n which sample is right.
#
# **How far does best-of-n move the policy?** Its output distribution $\pi_n$ differs from the
# model's $\pi$. The often quoted $\mathrm{KL}(\pi_n \,\|\, \pi) = \log n - \frac{n-1}{n}$ is
# only an upper bound: it is reached when no two answers share a score and no single answer is
# likely (exercise 3 computes both cases). A 0/1 verifier lumps all right answers into one
# level and all wrong ones into another, so best-of-n only moves mass between the two (within
# a level it keeps the model's proportions): its KL per prompt is
# $q \log\frac{q}{p} + (1-q)\log\frac{1-q}{1-p}$ with $q = 1 - (1-p)^n$. The printout shows
# how far below the bound it stays.

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
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | MCTS loses to a random player | backup without the sign flip: the search helps the opponent | negate the value at each level (negamax), or store values per player |
# | MCTS blunders obvious wins | the rollout's reward read from the wrong player's view | convert the outcome to the view of the player who moved into the leaf (Step 2) |
# | the search never explores, or never settles | $c$ on the wrong scale for the rewards | $c$ of the order of the value range; rescale rewards or tune $c$ (here 2 for values in $[-1, 1]$) |
# | a few mistakes in quiet positions | too few simulations for deep tactics | measure exhaustively where you can; raise the budget (here 200 was not enough) |
# | PUCT searches a good move late | the prior gives it little mass (the misleading prior above) | a better prior; mix the root prior with a little noise, as AlphaZero does |
# | the tree changes under you | `apply` mutates the state in place | states immutable, `apply` returns a new one |
# | a wider beam gives a worse answer | beam search prunes greedily at every step | it is a heuristic: compare widths, or search exactly when you can |
# | beam search prefers short, bland outputs | summed log-probabilities penalise every extra token | length-normalise scores (exercise 2) |
# | top-p drops the token that crosses $p$ | keeping tokens while the cumulative mass *including* them is below $p$ | keep a token while the mass *before* it is below $p$ |
# | `ZeroDivisionError` or NaN at $T=0$ | temperature divides logits | use the argmax for greedy decoding |
# | best-of-n score keeps rising but answers get worse | the scorer is a learned proxy and $n$ over-optimises it | hold out a gold evaluation; report the curve against it |
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
#    final `eos` included. Write
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
# 3. **Medium: the exact distribution of best-of-n, and its KL.** For a model with outcome
#    probabilities `probs` `[K]` and `rewards` `[K]`, write `best_of_n_probs(probs, rewards, n)`:
#    the probability that best-of-n (the first of the tied best) returns each outcome. Then
#    compute $\mathrm{KL}(\pi_8 \,\|\, \pi)$ for 1000 equally likely answers, once with a
#    reward that scores every answer differently and once with a 0/1 verifier that passes 30%
#    of them, and answer with a letter: (a) both reach $\log 8 - 7/8$; (b) the reward without
#    ties reaches about $\log 8 - 7/8$, the verifier stays below it; (c) the verifier moves the
#    policy further than $\log 8 - 7/8$.

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


def kl_to_base(probs, rewards, n):
    """KL(best-of-n || base) in nats, from your best_of_n_probs."""
    p_n, p = best_of_n_probs(probs, rewards, n), np.asarray(probs, dtype=float)
    kept = p_n > 0
    return float(np.sum(p_n[kept] * np.log(p_n[kept] / p[kept])))


thousand = np.full(1000, 1e-3)  # 1000 equally likely answers
kl_no_ties = kl_to_base(thousand, np.arange(1000.0), 8)  # every answer scored differently
kl_verifier = kl_to_base(thousand, (np.arange(1000) < 300).astype(float), 8)  # 30% pass
print(f"KL no ties {kl_no_ties:.3f}, verifier {kl_verifier:.3f}, log 8 - 7/8 = {np.log(8) - 7 / 8:.3f}")


def kl_answer():
    return "b"


# %%
assert rc.exercises.check("best_of_n_probs", best_of_n_probs)
assert rc.exercises.check("best_of_n_kl_question", kl_answer)

# %% [markdown]
# 4. **Hard: exact decoding.** Beam search is a heuristic; with log-probabilities $\le 0$,
#    exact search is not hopeless. Write `best_first_decode(step, start, max_len, eos)`:
#    keep a priority queue of partial hypotheses ordered by score and always extend the best;
#    the first *complete* hypothesis (ending in `eos`, or `max_len` tokens long) you pop is
#    the most likely one. Why? Return `(tokens, score)`. Try it on `branch_step`, where a
#    beam of width 2 failed.

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

# %% [markdown]
# ## Further reading
#
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
#   beam search; Meister, Cotterell, Vieira (2020), *If beam search is the answer, what was the
#   question?*, EMNLP: why exact search can be worse than beam search for text quality.
# - Chen et al. (2021), *Evaluating large language models trained on code* (Codex): pass@$k$,
#   its unbiased estimator, and why the best temperature grows with $k$.
# - Stiennon et al. (2020), *Learning to summarize from human feedback*, NeurIPS: best-of-n
#   against a reward model as a baseline for RLHF.
# - Gao, Schulman, Hilton (2022), *Scaling laws for reward model overoptimization*: how best-of-n
#   and RL overfit a proxy reward as $n$ or the KL budget grows.
# - Beirami et al. (2024), *Theoretical guarantees on the best-of-n alignment policy*: the
#   KL of best-of-n and why $\log n - (n-1)/n$ is only an upper bound.
# - Snell et al. (2024), *Scaling LLM test-time compute optimally can be more effective than
#   scaling model parameters*: test-time compute curves for best-of-n and search with verifiers.
