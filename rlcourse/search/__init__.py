"""Search at decision time: Monte Carlo tree search (``mcts``), the exact minimax player it is
measured against (``minimax``), and beam search and best-of-n over a language model's outputs
(``decoding``)."""
