# %% [markdown]
# # 15 · Search and decoding
#
# *Prerequisites:* 00, 01, 12
# *Time:* 60 minutes
# *You will build:* Monte Carlo tree search that plays tic-tac-toe perfectly, greedy and beam decoding, filtered sampling, and best-of-n with its test-time compute curve.

# %% [markdown]
# Every lesson so far learned a policy and then acted with it. This one spends computation at
# decision time instead: look ahead before you move, or generate several answers before you
# reply. The same idea, search, drives AlphaGo's moves and a language model's decoding.

# %%
import inspect

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
print(f"games: {count_games(game.initial_state(), memo)}, non-terminal positions: {len(memo)}")

# %% [markdown]
# Minimax with memoisation handles the few thousand positions printed above in a blink; chess has around $10^{44}$ and
# Go around $10^{170}$. Without full lookahead, a fixed policy fails. A player that moves at
# random loses most games against a perfect player (`rc.perfect_action`, exact memoised
# minimax, kept for reference):

# %%
perfect_cache = {}  # minimax values, shared by every call in this notebook


def perfect_player(state):
    return rc.perfect_action(state, *fns, rng=rng, cache=perfect_cache)


def random_player(state):
    actions = game.legal_actions(state)
    return actions[int(rng.integers(len(actions)))]


def play(x_player, o_player):
    """Play one game; +1 if X wins, -1 if O wins, 0 for a draw."""
    state = game.initial_state()
    while not game.is_terminal(state):
        mover = x_player if state.player == 1 else o_player
        state = game.apply(state, mover(state))
    return game.winner(state)


outcomes = [play(random_player, perfect_player) for _ in range(20)]
print(f"random (X) vs perfect (O), 20 games: X wins {outcomes.count(1)}, "
      f"draws {outcomes.count(0)}, O wins {outcomes.count(-1)}")
assert outcomes.count(1) == 0 and outcomes.count(-1) > len(outcomes) / 2

# %% [markdown]
# Decoding has the same problem. A language model gives next-token probabilities; the most
# likely *sequence* is not found by taking the most likely *token* each step. Here is a toy
# next-token table (a bigram model: the next token depends on the last one only):

# %%
VOCAB = ["<eos>", "the", "a", "cat", "dog", "sat", "ran", "<bos>"]
EOS, BOS = 0, 7
NEXT = np.array([
    #  eos  the   a   cat   dog  sat  ran  bos
    [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],      # after <eos>: stays finished
    [0.1, 0.0, 0.0, 0.35, 0.35, 0.1, 0.1, 0.0],    # after "the": cat or dog, evenly
    [0.1, 0.0, 0.0, 0.9, 0.0, 0.0, 0.0, 0.0],      # after "a": almost surely "cat"
    [0.2, 0.0, 0.0, 0.0, 0.0, 0.5, 0.3, 0.0],      # after "cat"
    [0.2, 0.0, 0.0, 0.0, 0.0, 0.2, 0.6, 0.0],      # after "dog"
    [0.9, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],      # after "sat"
    [0.8, 0.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],      # after "ran"
    [0.1, 0.5, 0.4, 0.0, 0.0, 0.0, 0.0, 0.0],      # after <bos>
])
with np.errstate(divide="ignore"):  # log 0 = -inf marks impossible tokens
    LOG_NEXT = np.log(NEXT)


def step(tokens):
    """Next-token log-probabilities [V] given the sequence so far."""
    return LOG_NEXT[tokens[-1]]


def words(tokens):
    return " ".join(VOCAB[t] for t in tokens[1:])


greedy = [BOS]
while greedy[-1] != EOS:
    greedy.append(int(np.argmax(step(greedy))))  # ties go to the lower id
greedy_logp = sum(step(greedy[:i])[greedy[i]] for i in range(1, len(greedy)))
print(f"greedy: {words(greedy)!r}, probability {np.exp(greedy_logp):.4f}")
print(f"'a cat sat <eos>' has probability {0.4 * 0.9 * 0.5 * 0.9:.4f}")

# %% [markdown]
# Greedy took "the" (0.5 beats 0.4) and then had to spread over cat and dog; "a" would have
# led to an almost certain "cat". Both failures have one fix: search over sequences of choices
# rather than one choice, with a budget you choose.

# %% [markdown]
# ## The idea
#
# **Monte Carlo tree search** grows a tree of positions from the current one. Each node keeps a
# visit count $N$ and a total value $W$. One *simulation* has four phases:
#
# 1. **Selection**: from the root, while every child of the node has been tried, go to the child
#    $a$ with the highest UCT score (Kocsis & Szepesvári's *upper confidence bounds applied to
#    trees*):
#    $$\mathrm{UCT}(a) = \underbrace{\frac{W_a}{N_a}}_{\text{exploit}} + c\,\underbrace{\sqrt{\frac{\ln N}{N_a}}}_{\text{explore}},\qquad \mathrm{UCT}(a) = +\infty \text{ if } N_a = 0.$$
#    The exploration bonus shrinks as a child is visited and grows slowly with the parent's
#    visits, so no move is abandoned forever; it is lesson 01's UCB bandit at every node.
# 2. **Expansion**: add one untried child.
# 3. **Rollout**: play random moves from it to the end of the game.
# 4. **Backup**: add the outcome to $W$ and 1 to $N$ of every node on the path. In a two-player
#    game the outcome is good for one player and bad for the other, so the sign flips at each
#    level (*negamax*): each node stores values for the player who moved into it.
#
# After the budget is spent, the visit counts at the root are the policy: play the most
# visited move. Counts are a more stable choice than means, which a lucky rollout can inflate.
#
# **Decoding** is search over token sequences scored by $\log p(y) = \sum_t \log p(y_t \mid
# y_{<t})$. Greedy keeps one sequence; **beam search** keeps the $k$ best partial sequences at
# each step; **sampling** draws $y_t \sim \mathrm{softmax}(z/T)$, optionally restricted to the
# top-$k$ tokens or to the smallest *nucleus* whose mass reaches $p$. **Best-of-n** samples $n$
# answers and keeps the one a reward function likes most: the answer can only improve as $n$
# grows, and how fast it improves is the *test-time compute curve*.
#
# The smallest example of the negamax sign: a two-move game where the second mover's outcome
# is 1.0 or 0.0 after the first move 0 and 0.6 either way after move 1. Backed up for two
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
for two_player in (True, False):
    r = rc.mcts((), *tiny, simulations=400, c=0.5, seed=SEED, two_player=two_player)
    values = {a: round(v, 2) for a, v in r.values.items()}
    print(f"two_player={two_player!s:5}: picks {r.action}, visits {r.visits}, values {values}")

# %% [markdown]
# ## Build it
#
# **Step 1: the UCT score.** Vectorised over the children of one node.

# %%
def my_uct_score(mean_values, visits, parent_visits, c=1.4):
    q = np.asarray(mean_values, dtype=float)
    n = np.asarray(visits, dtype=float)
    score = np.full(q.shape, np.inf)  # unvisited children first
    seen = n > 0
    score[seen] = q[seen] + c * np.sqrt(np.log(max(parent_visits, 1)) / n[seen])
    return score


print(np.round(my_uct_score([0.5, 0.0, 0.2], [4, 0, 1], 5), 3))
assert rc.exercises.check("uct_score", my_uct_score)

# %% [markdown]
# **Step 2: a node.** It holds a state, the moves not yet tried, its children and its
# statistics. States are never copied: `game.apply` returns a new one.

# %%
class Node:
    def __init__(self, state):
        self.state = state
        self.untried = [] if game.is_terminal(state) else list(game.legal_actions(state))
        self.children = {}  # action -> Node, in the order they were expanded
        self.visits, self.total = 0, 0.0


# %% [markdown]
# **Step 3: selection and expansion.** Descend by UCT while a node is fully expanded, then add
# one random untried child.

# %%
def select_and_expand(root, c, rng):
    node, path = root, [root]
    while node.untried == [] and node.children:
        kids = list(node.children.values())
        scores = my_uct_score([k.total / k.visits for k in kids], [k.visits for k in kids],
                              node.visits, c)
        node = kids[int(np.argmax(scores))]
        path.append(node)
    if node.untried:
        action = node.untried.pop(int(rng.integers(len(node.untried))))
        node.children[action] = Node(game.apply(node.state, action))
        path.append(node.children[action])
    return path


# %% [markdown]
# **Step 4: rollout.** Random moves to the end. The reward belongs to whoever moved last; turn
# it into the view of the player who moved into the leaf.

# %%
def rollout(state, rng):
    moves = 0
    while not game.is_terminal(state):
        actions = game.legal_actions(state)
        state = game.apply(state, actions[int(rng.integers(len(actions)))])
        moves += 1
    return game.reward(state) if moves % 2 == 0 else -game.reward(state)


# %% [markdown]
# **Step 5: backup and the loop.** Flip the sign at every level on the way up.

# %%
def my_mcts(state, simulations, c=1.4, seed=0):
    rng = np.random.default_rng(seed)
    root = Node(state)
    for _ in range(simulations):
        path = select_and_expand(root, c, rng)
        value = rollout(path[-1].state, rng)
        for node in reversed(path):
            node.visits += 1
            node.total += value
            value = -value
    visits = {a: root.children[a].visits if a in root.children else 0
              for a in game.legal_actions(state)}
    return max(visits, key=visits.get), visits


state = after([0, 4, 1])  # X threatens the top row; O to move
action, visits = my_mcts(state, simulations=500, seed=SEED)
print(game.render(state))
print(f"my_mcts plays {action}; visits {visits}")

# %% [markdown]
# Your version consumes random numbers in the same order as `rc.mcts`, so on the same seed the
# visit counts must agree exactly:

# %%
reference = rc.mcts(state, *fns, simulations=500, seed=SEED)
assert reference.visits == visits and reference.action == action
print("identical visit counts to rc.mcts")

# %% [markdown]
# The reference is the same algorithm with input checks, a `rollout_depth` cut-off and a
# single-agent mode:

# %%
print(inspect.getsource(rc.mcts))

# %% [markdown]
# **Step 6: greedy decoding** is beam search with one beam. Compare your loop from *The
# problem* with the reference:

# %%
beam1 = rc.beam_search(step, [BOS], beam_width=1, max_len=8, eos=EOS)
assert list(beam1[0].tokens) == greedy
print(f"beam width 1: {words(beam1[0].tokens)!r}, log-prob {beam1[0].score:.4f}")

# %% [markdown]
# **Step 7: top-k filtering.** Keep the $k$ largest logits and every logit tied with the
# $k$-th; set the rest to $-\infty$ so they get probability 0.

# %%
def my_top_k_filter(logits, k):
    logits = np.asarray(logits, dtype=float)
    kth = np.sort(logits, axis=-1)[..., -k, None]
    return np.where(logits >= kth, logits, -np.inf)


z = np.array([1.0, 3.0, 1.0, 2.0, 1.0])
print(my_top_k_filter(z, 3), my_top_k_filter(z, 2))
np.testing.assert_array_equal(my_top_k_filter(z, 3), rc.top_k_filter(z, 3))
np.testing.assert_array_equal(my_top_k_filter(z, 2), rc.top_k_filter(z, 2))

# %% [markdown]
# ## Check it
#
# The invariants, asserted. Visits sum to the budget, the same seed gives the same search,
# MCTS takes a win before blocking and blocks when it must:

# %%
for sims in (1, 50, 777):
    assert sum(rc.mcts(after([4]), *fns, simulations=sims).visits.values()) == sims
assert rc.mcts(after([4]), *fns, seed=3) == rc.mcts(after([4]), *fns, seed=3)

win_or_block = after([0, 3, 1, 4])  # X can win at 2; O threatens 5
r = rc.mcts(win_or_block, *fns, simulations=500, seed=SEED)
assert r.action == 2 and r.values[2] == 1.0  # every simulation through 2 is an immediate win
assert rc.mcts(after([0, 4, 1]), *fns, simulations=500, seed=SEED).action == 2
print(f"win beats block: plays {r.action}, value {r.values[2]:.2f}")

# %% [markdown]
# Beam search keeps its promise: a wider beam never scores worse, and a score is exactly the
# sum of the model's log-probabilities of the chosen tokens. Sampling filters keep their
# definitions: top-p keeps at least mass $p$, and lowering the temperature lowers the entropy.

# %%
def sequence_log_prob(tokens):
    return float(sum(step(tokens[:i])[tokens[i]] for i in range(1, len(tokens))))


scores = [rc.beam_search(step, [BOS], w, 8, EOS)[0].score for w in (1, 2, 4, 8)]
assert all(b >= a for a, b in zip(scores, scores[1:]))
beam2 = rc.beam_search(step, [BOS], beam_width=2, max_len=8, eos=EOS)
assert np.isclose(beam2[0].score, sequence_log_prob(beam2[0].tokens))
print("best score by beam width 1, 2, 4, 8:", [round(s, 4) for s in scores])

probs = np.exp(LOG_NEXT[1])  # the spread-out row after "the"
kept = np.isfinite(rc.top_p_filter(LOG_NEXT[1], 0.75))
assert probs[kept].sum() >= 0.75 and probs[kept].sum() - probs[kept].min() < 0.75


def entropy(logits):
    p = np.exp(logits - logits.max())
    p = p / p.sum()
    return float(-(p[p > 0] * np.log(p[p > 0])).sum())


ents = [entropy(rc.filter_logits(LOG_NEXT[1], temperature=t)) for t in (0.5, 1.0, 2.0)]
assert ents[0] < ents[1] < ents[2]
print(f"top-p 0.75 keeps {[VOCAB[i] for i in np.flatnonzero(kept)]}; "
      f"entropy at T = 0.5, 1, 2: {[round(e, 3) for e in ents]}")

# %% [markdown]
# ## Use it
#
# **Visit counts are the policy.** After X takes two opposite corners around O's centre, O
# must answer on an edge: a corner reply loses to a fork. MCTS finds this from random rollouts.

# %%
def show_visits(state, result, title):
    grid = np.zeros(9)
    for a, n in result.visits.items():
        grid[a] = n
    fig, ax = plt.subplots(figsize=(5, 3), dpi=72)
    ax.imshow(grid.reshape(3, 3), cmap="Blues")
    for cell in range(9):
        mark = {1: "X", -1: "O", 0: ""}[state.board[cell]]
        text = mark or f"{int(grid[cell])}"
        ax.text(cell % 3, cell // 3, text, ha="center", va="center",
                fontsize=16 if mark else 10, color="darkred" if mark else "black")
    ax.set_xticks(range(3))
    ax.set_yticks(range(3))
    ax.set_xlabel("column")
    ax.set_ylabel("row")
    ax.set_title(title, fontsize=10)
    plt.show()


fork_threat = after([0, 4, 8])
r = rc.mcts(fork_threat, *fns, simulations=2000, c=1.0, seed=SEED)
print(f"O plays {r.action}; visits {r.visits}")
assert r.action in (1, 3, 5, 7)
show_visits(fork_threat, r, "O to move: corners lose; most visits go to edges")

# %% [markdown]
# **MCTS against a random player and a perfect one.** With 2000 simulations per move and
# $c = 1$ (values lie in $[-1, 1]$, so the exploration term should be of that size), MCTS
# plays each opponent from both sides.

# %%
def mcts_player(simulations, c=1.0):
    counter = iter(range(10**6))  # a fresh seed for every move keeps games varied yet repeatable

    def player(state):
        return rc.mcts(state, *fns, simulations=simulations, c=c, seed=next(counter)).action
    return player


def mcts_record(opponent, games, simulations=2000):
    """Wins, draws and losses of MCTS, alternating who moves first."""
    me = mcts_player(simulations)
    record = [0, 0, 0]
    for i in range(games):
        mcts_is_x = i % 2 == 0
        winner = play(me, opponent) if mcts_is_x else play(opponent, me)
        mine = winner if mcts_is_x else -winner
        record[1 - mine] += 1  # +1 -> wins, 0 -> draws, -1 -> losses
    return record


vs_random = mcts_record(random_player, games=10)
vs_perfect = mcts_record(perfect_player, games=6)
print(f"vs random : wins {vs_random[0]}, draws {vs_random[1]}, losses {vs_random[2]}")
print(f"vs perfect: wins {vs_perfect[0]}, draws {vs_perfect[1]}, losses {vs_perfect[2]}")
assert vs_random[2] == 0 and vs_perfect == [0, 6, 0]

# %% [markdown]
# **How many simulations does it need?** Take positions from random play in which some moves
# are worse than others (by exact minimax), and count how often MCTS picks a best move.

# %%
positions = []
while len(positions) < 16:
    state = game.initial_state()
    for _ in range(int(rng.integers(0, 6))):
        state = game.apply(state, random_player(state))
    if not game.is_terminal(state) and state not in positions:
        q = rc.minimax_values(state, *fns, cache=perfect_cache)
        if len(set(q.values())) > 1:  # a real decision
            positions.append(state)


def best_move_rate(simulations):
    hits = 0
    for i, s in enumerate(positions):
        q = rc.minimax_values(s, *fns, cache=perfect_cache)
        a = rc.mcts(s, *fns, simulations=simulations, c=1.0, seed=i).action
        hits += q[a] == max(q.values())
    return hits / len(positions)


budgets = [4, 16, 64, 256, 1024]
rates = [best_move_rate(n) for n in budgets]
for n, rate in zip(budgets, rates):
    print(f"{n:5d} simulations: best move in {rate:.0%} of positions")
assert rates[-1] == 1.0

fig, ax = plt.subplots(figsize=(5, 3), dpi=72)
ax.semilogx(budgets, rates, "o-", base=2)
ax.set_xlabel("simulations per move")
ax.set_ylabel("fraction of best moves")
ax.set_title("MCTS needs hundreds of simulations per move")
plt.show()

# %% [markdown]
# A few hundred simulations find the best move in most positions; the rare hard ones (a quiet
# move that avoids a fork) need a couple of thousand before a whole game is safe against
# perfect play.
#
# **Decoding as search.** Beam search finds what greedy missed:

# %%
for width in (1, 2, 4):
    top = rc.beam_search(step, [BOS], beam_width=width, max_len=8, eos=EOS)[0]
    print(f"beam {width}: {words(top.tokens)!r:22} probability {np.exp(top.score):.4f}")
best_beam = rc.beam_search(step, [BOS], beam_width=2, max_len=8, eos=EOS)[0]
assert words(best_beam.tokens) == "a cat sat <eos>"
assert np.isclose(np.exp(best_beam.score), 0.162)

# %% [markdown]
# Likelihood is not what we usually want, though. Say a reward model prefers stories about a
# dog that ran, finished with `<eos>`, and short:

# %%
def reward(tokens):
    tokens = list(tokens)
    finished = tokens[-1] == EOS
    return (1.0 * (4 in tokens) + 1.0 * (6 in tokens) + 0.5 * finished
            - 0.1 * (len(tokens) - 1))


def sample_sequences(count, max_len=8, **filters):
    """``count`` sampled sequences [count, max_len + 1], padded with <eos> once finished."""
    seqs = np.full((count, max_len + 1), EOS)
    seqs[:, 0] = BOS
    for t in range(max_len):
        nxt = rc.sample_token(LOG_NEXT[seqs[:, t]], rng, **filters)
        seqs[:, t + 1] = np.where(seqs[:, t] == EOS, EOS, nxt)  # finished rows stay finished
    return seqs


def trim(row):
    """A padded row as a tuple ending at its first <eos> (or at max_len)."""
    ends = np.flatnonzero(row[1:] == EOS)
    return tuple(int(t) for t in (row[: ends[0] + 2] if ends.size else row))


print(f"reward of greedy {reward(greedy):.2f}, of the beam's best {reward(best_beam.tokens):.2f}, "
      f"of 'the dog ran <eos>' {reward([BOS, 1, 4, 6, EOS]):.2f}")

# %% [markdown]
# Sampling settings trade likelihood against diversity. For 2000 samples each:

# %%
settings = {"T=0.5": {"temperature": 0.5}, "T=1": {}, "T=1.5": {"temperature": 1.5},
            "top-k 2": {"top_k": 2}, "top-p 0.8": {"top_p": 0.8}}
for name, kw in settings.items():
    seqs = [trim(row) for row in sample_sequences(2000, **kw)]
    mean_logp = np.mean([sequence_log_prob(s) for s in seqs])
    mean_r = np.mean([reward(s) for s in seqs])
    print(f"{name:10} distinct {len(set(seqs)):3d}  mean log-prob {mean_logp:6.3f}  "
          f"mean reward {mean_r:5.3f}")

# %% [markdown]
# **Best-of-n and the test-time compute curve.** Draw $n$ samples at $T=1$, keep the one the
# reward scores highest, and average over 300 repetitions:

# %%
NS = [1, 2, 4, 8, 16, 32, 64]
pool = sample_sequences(300 * NS[-1]).reshape(300, NS[-1], -1)
curve = []
for n in NS:
    picks = [rc.best_of_n([trim(row) for row in pool[i, :n]], reward) for i in range(300)]
    curve.append(np.mean([p.scores[p.index] for p in picks]))
print("n:", NS)
print("mean best-of-n reward:", [round(float(v), 3) for v in curve])
assert all(b >= a for a, b in zip(curve, curve[1:]))
assert curve[-1] > 1.5 * curve[0]
gains = np.diff(curve)
assert all(b < a for a, b in zip(gains[1:], gains[2:]))  # from n = 2 on, each doubling buys less
assert reward(best_beam.tokens) < curve[0]  # beam search: below even a single sample, on average

fig, ax = plt.subplots(figsize=(5, 3), dpi=72)
ax.semilogx(NS, curve, "o-", base=2, label="best-of-n")
ax.axhline(reward(best_beam.tokens), color="gray", ls="--", label="beam search (width 2)")
ax.axhline(reward([BOS, 1, 4, 6, EOS]), color="green", ls=":", label="best possible")
ax.set_xlabel("n (samples per prompt)")
ax.set_ylabel("reward of the kept sample")
ax.set_title("More samples, better answers, diminishing returns")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# After the first doubling, each doubling of $n$ buys less than the one before (compare the
# steps between the numbers printed above): the chance that none of $n$ samples is the best
# answer falls geometrically, and the curve flattens at the best answer the model can produce.
# Beam search optimises the model's likelihood, not the reward, and lands below even a single
# sample's average.

# %% [markdown]
# ## Pitfalls
#
# | symptom | cause | fix |
# |---|---|---|
# | MCTS loses to a random player | backup without the sign flip: the search helps the opponent | negate the value at each level (negamax), or store values per player |
# | MCTS blunders obvious wins | the reward read from the wrong player's view (the player to move instead of the one who just moved) | convert the rollout outcome to the view of the player who moved into the leaf |
# | a move with 2 visits is played | choosing the child with the highest mean value | play the most visited child; counts are robust to lucky rollouts |
# | search never explores, or never settles | $c$ on the wrong scale for the rewards | $c \approx 1$ for values in $[-1, 1]$; rescale rewards or tune $c$ |
# | the tree changes under you | `apply` mutates the state in place | states immutable, `apply` returns a new one |
# | beam search prefers short, bland outputs | summed log-probabilities penalise every extra token | length-normalise scores, or add a length bonus |
# | top-p drops the token that crosses $p$ | keeping tokens while the cumulative mass *including* them is below $p$ | keep a token while the mass *before* it is below $p$ |
# | `ZeroDivisionError` or NaN at $T=0$ | temperature divides logits | use the argmax for greedy decoding |
# | best-of-n reward keeps rising but answers get worse | the reward model is a proxy and $n$ over-optimises it | hold out a gold evaluation; report the curve against it |
#
# The first row, shown: with the single-agent backup on a two-player game, every win counts
# as good, the opponent's included, so MCTS playing O happily sets up X's wins, even a random X's.

# %%
wrong = iter(range(10**6))


def wrong_sign_player(state):
    return rc.mcts(state, *fns, simulations=300, seed=next(wrong), two_player=False).action


outcomes = [play(random_player, wrong_sign_player) for _ in range(10)]
print(f"random (X) vs wrong-sign MCTS (O): X wins {outcomes.count(1)}, "
      f"draws {outcomes.count(0)}, O wins {outcomes.count(-1)}")
assert outcomes.count(1) >= 3

# %% [markdown]
# ## Exercises
#
# 1. **Easy: best-of-n.** `best_of_n(candidates, score)` returns `(best, index, scores)`: the
#    scores of all candidates as a float array and the first candidate with the highest score.
# 2. **Medium: nucleus filtering.** `top_p_filter(logits, p)` for logits `[V]` or `[B, V]`:
#    keep the smallest set of most likely tokens whose probability reaches `p`, set the others
#    to `-inf`.
# 3. **Hard: beam search.** `beam_search(step, start, beam_width, max_len, eos)` returning a
#    list of `(tokens, score)` best first, as described in *The idea* and `rc.beam_search`'s
#    docstring: finished hypotheses compete for the beam and stop growing; ties keep the
#    earlier hypothesis and the lower token id; tokens with log-probability $-\infty$ are
#    never kept.

# %% tags=["solution"]
def best_of_n(candidates, score):
    candidates = list(candidates)
    scores = np.array([float(score(x)) for x in candidates])
    index = int(np.argmax(scores))
    return candidates[index], index, scores


# %%
assert rc.exercises.check("best_of_n", best_of_n)

# %% tags=["solution"]
def top_p_filter(logits, p):
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
assert rc.exercises.check("top_p_filter", top_p_filter)

# %% tags=["solution"]
def beam_search(step, start, beam_width, max_len, eos):
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
assert rc.exercises.check("beam_search", beam_search)

# %% [markdown]
# ## Key terms
#
# | term | what people say | what it actually means |
# |---|---|---|
# | MCTS | "tree search with random playouts" | repeated simulations of selection, expansion, rollout and backup that grow an asymmetric tree towards promising moves |
# | UCT | "UCB on a tree" | child score $W_a/N_a + c\sqrt{\ln N / N_a}$; unvisited children first |
# | rollout | "playout", "simulation" | moves by a cheap default policy (here uniform random) from a new leaf to the end of the game |
# | negamax backup | "flip the sign" | each node stores values for the player who moved into it, so the value changes sign at every level |
# | visit counts | "the MCTS policy" | how often the search went through each root move; play the most visited, or sample in proportion (AlphaZero's training target) |
# | minimax | "perfect play" | the exact game value, each player maximising their own outcome; feasible only for small games |
# | beam search | "better greedy" | keep the $k$ highest-likelihood partial sequences; width 1 is greedy; finds likely, not good, outputs |
# | temperature | "creativity" | logits divided by $T$: $T<1$ sharpens, $T>1$ flattens the distribution |
# | top-k / top-p | "truncation sampling" | sample only from the $k$ most likely tokens, or from the smallest set with mass $\ge p$ (nucleus) |
# | best-of-n | "rejection sampling" | draw $n$ answers, keep the one a reward scores highest |
# | test-time compute | "thinking longer" | spending more inference computation (simulations, samples) per decision to get better answers |

# %% [markdown]
# ## Further reading
#
# - Kocsis & Szepesvári (2006), *Bandit based Monte-Carlo planning*, ECML: UCT, the bandit view
#   of tree search, and why its exploration term makes the search consistent.
# - Browne et al. (2012), *A survey of Monte Carlo tree search methods*, IEEE TCIAIG: the four
#   phases, the many variants and where each one helps.
# - Silver et al. (2017), *Mastering the game of Go without human knowledge*, Nature (AlphaGo
#   Zero): a network replaces rollouts, and visit counts become the policy's training target.
# - Silver et al. (2016), *Mastering the game of Go with deep neural networks and tree search*,
#   Nature: the first program to combine MCTS with learned policy and value networks.
# - Holtzman et al. (2019), *The curious case of neural text degeneration*, ICLR 2020: why the
#   most likely text is bland and repetitive, and nucleus (top-p) sampling.
# - Fan, Lewis, Dauphin (2018), *Hierarchical neural story generation*, ACL: top-k sampling.
# - Stiennon et al. (2020), *Learning to summarize from human feedback*, NeurIPS: best-of-n
#   against a reward model as a baseline for RLHF.
# - Gao, Schulman, Hilton (2022), *Scaling laws for reward model overoptimization*: how best-of-n
#   and RL overfit a proxy reward as $n$ or the KL budget grows.
# - Snell et al. (2024), *Scaling LLM test-time compute optimally can be more effective than
#   scaling model parameters*: test-time compute curves for best-of-n and search with verifiers.
